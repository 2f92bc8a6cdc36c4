// builtins.h - jinja2's filters and tests, Python's str/dict/list methods, and the globals
// transformers' environment defines (range, namespace, dict, raise_exception, strftime_now),
// with the semantics of jinja2 3.x and CPython. Anything not implemented is
// GPT_ERR_UNSUPPORTED naming it; what Python would raise (a TypeError, an UndefinedError) is
// GPT_ERR_FORMAT; raise_exception is GPT_ERR_INVALID_ARG with the template's message.
#pragma once

#include "chat/runtime.h"
#include "chat/value.h"

#include <string>

namespace gpt::chat {

// Argument idx of a call, positional or by keyword name; nullptr when not given.
inline const Value *arg(CallArgs &a, size_t idx, const char *name) {
    if (idx < a.positional.size()) return &a.positional[idx];
    return dict_find(a.keyword, name);
}

Value apply_filter(Runtime &rt, const std::string &name, const Value &in, CallArgs &args);
bool apply_test(Runtime &rt, const std::string &name, const Value &in, CallArgs &args);
// jinja2's getattr (x.name: attribute first, then item) and getitem (x[key]: item first,
// then attribute). A missing one is Undefined; on an Undefined it is an error.
Value get_attr(Runtime &rt, const Value &obj, const std::string &name);
Value get_item(Runtime &rt, const Value &obj, const Value &key);
// Python's obj[start:stop:step]; null bounds are None.
Value get_slice(Runtime &rt, const Value &obj, const Value *start, const Value *stop, const Value *step);
// A global function by name (range, namespace, dict, raise_exception, strftime_now);
// Undefined when there is none.
Value global_function(Runtime &rt, const std::string &name);
// Iterating a value as a for loop does: list items, dict keys, string characters; Undefined
// is empty. Throws GPT_ERR_FORMAT for what Python cannot iterate.
List iterate(Runtime &rt, const Value &v);
// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as transformers' tojson filter calls it.
std::string to_json(Runtime &rt, const Value &v, bool ensure_ascii, const std::string *indent, const std::string &item_sep,
                    const std::string &key_sep, bool sort_keys);

} // namespace gpt::chat
