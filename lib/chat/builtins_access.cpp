// builtins_access.cpp - x.name, x[key], x[a:b:c], iteration, and the methods of str, dict and
// list that templates call, with jinja2's lookup rules and Python's semantics.
#include "chat/builtins.h"

#include "chat/text.h"
#include "core/error.h"

#include <algorithm>
#include <cstring>

namespace gpt::chat {

namespace {

[[noreturn]] void undefined_error(const Value &v) {
    if (v.s) fail(GPT_ERR_FORMAT, "'%s' is undefined", v.s->c_str());
    fail(GPT_ERR_FORMAT, "a value is undefined");
}

std::string str_arg(CallArgs &a, size_t idx, const char *name, const char *what) {
    const Value *v = arg(a, idx, name);
    if (!v || !v->is_str()) fail(GPT_ERR_FORMAT, "%s: argument '%s' must be a string", what, name);
    return v->text();
}

int64_t int_arg(CallArgs &a, size_t idx, const char *name, int64_t dflt, const char *what) {
    const Value *v = arg(a, idx, name);
    if (!v || v->kind == Kind::None) return dflt;
    if (v->kind != Kind::Int && v->kind != Kind::Bool) fail(GPT_ERR_FORMAT, "%s: argument '%s' must be an integer", what, name);
    return v->kind == Kind::Int ? v->i : v->b;
}

bool in_list(const char *name, std::initializer_list<const char *> names) {
    for (const char *n : names)
        if (std::strcmp(n, name) == 0) return true;
    return false;
}

Value bound(std::string name, std::function<Value(CallArgs &)> f) {
    Value v;
    v.kind = Kind::Callable;
    v.fn = std::make_shared<const Callable>(Callable{std::move(name), std::move(f)});
    return v;
}

// str.startswith / endswith: a prefix or a tuple of them.
bool affix_match(const std::string &s, const Value &a, bool start) {
    auto one = [&](const Value &p) {
        if (!p.is_str()) fail(GPT_ERR_FORMAT, "str.%s: the argument must be a string or a tuple of strings", start ? "startswith" : "endswith");
        const std::string &x = p.text();
        if (x.size() > s.size()) return false;
        return start ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
    };
    if (a.kind == Kind::List && a.tuple) {
        for (const Value &p : *a.l)
            if (one(p)) return true;
        return false;
    }
    return one(a);
}

Value str_method(Runtime &rt, const Value &self, const std::string &name) {
    const std::string where = "str." + name;
    auto need_ascii = [&](bool ok) {
        if (!ok) fail(GPT_ERR_UNSUPPORTED, "%s on non-ASCII text (Unicode case mapping is not carried by this renderer)", where.c_str());
    };
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const StripSide side = name == "strip" ? StripSide::Both : name == "lstrip" ? StripSide::Left : StripSide::Right;
        return bound(where, [&rt, self, side, where](CallArgs &a) {
            const Value *c = arg(a, 0, "chars");
            if (c && c->kind != Kind::None && !c->is_str()) fail(GPT_ERR_FORMAT, "%s: chars must be a string", where.c_str());
            const std::string *chars = c && c->is_str() ? &c->text() : nullptr;
            return rt.make_str(py_strip(self.text(), side, chars));
        });
    }
    if (name == "split") {
        return bound(where, [&rt, self](CallArgs &a) {
            const Value *sep = arg(a, 0, "sep");
            const std::string *sp = sep && sep->is_str() ? &sep->text() : nullptr;
            if (sep && !sp && sep->kind != Kind::None) fail(GPT_ERR_FORMAT, "str.split: sep must be a string");
            List out;
            for (std::string &part : py_split(self.text(), sp, int_arg(a, 1, "maxsplit", -1, "str.split"), rt.max_items()))
                out.push_back(rt.make_str(std::move(part)));
            return Value::list(std::move(out));
        });
    }
    if (name == "startswith" || name == "endswith") {
        const bool start = name == "startswith";
        return bound(where, [self, start, where](CallArgs &a) {
            const Value *p = arg(a, 0, "prefix");
            if (!p) fail(GPT_ERR_FORMAT, "%s takes one argument", where.c_str());
            return Value::boolean(affix_match(self.text(), *p, start));
        });
    }
    if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
        return bound(where, [&rt, self, name, need_ascii](CallArgs &) {
            std::string out;
            const std::string &x = self.text();
            need_ascii(name == "upper" ? ascii_upper(x, out) : name == "lower" ? ascii_lower(x, out) :
                       name == "title" ? py_title(x, out) : py_capitalize(x, out));
            return rt.make_str(std::move(out));
        });
    }
    if (name == "replace") {
        return bound(where, [&rt, self](CallArgs &a) {
            const std::string from = str_arg(a, 0, "old", "str.replace"), to = str_arg(a, 1, "new", "str.replace");
            return rt.make_str(py_replace(self.text(), from, to, int_arg(a, 2, "count", -1, "str.replace"), rt.max_bytes()));
        });
    }
    if (name == "find" || name == "count") {
        const bool find = name == "find";
        return bound(where, [self, find, where](CallArgs &a) {
            const std::string sub = str_arg(a, 0, "sub", where.c_str());
            if (a.positional.size() > 1) fail(GPT_ERR_UNSUPPORTED, "%s with start/end arguments", where.c_str());
            const std::string &x = self.text();
            if (find) {
                const size_t at = x.find(sub);
                return Value::integer(at == std::string::npos ? -1 : (int64_t)code_point_count(std::string_view(x).substr(0, at)));
            }
            if (sub.empty()) return Value::integer((int64_t)code_point_count(x) + 1);
            int64_t n = 0;
            for (size_t at = x.find(sub); at != std::string::npos; at = x.find(sub, at + sub.size())) n++;
            return Value::integer(n);
        });
    }
    if (name == "join") {
        return bound(where, [&rt, self](CallArgs &a) {
            const Value *items = arg(a, 0, "iterable");
            if (!items) fail(GPT_ERR_FORMAT, "str.join takes one argument");
            std::string out;
            bool first = true;
            for (const Value &v : iterate(rt, *items)) {
                if (!v.is_str()) fail(GPT_ERR_FORMAT, "str.join: sequence item is %s, not str", type_name(v));
                if (!first) out += self.text();
                first = false;
                out += v.text();
                rt.check_bytes(out.size());
            }
            return rt.make_str(std::move(out));
        });
    }
    static const char *const others[] = {"casefold", "center", "encode", "expandtabs", "format", "format_map", "index",
                                         "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower",
                                         "isnumeric", "isprintable", "isspace", "istitle", "isupper", "ljust", "maketrans",
                                         "partition", "removeprefix", "removesuffix", "rfind", "rindex", "rjust", "rpartition",
                                         "rsplit", "splitlines", "swapcase", "translate", "zfill"};
    for (const char *o : others)
        if (name == o) fail(GPT_ERR_UNSUPPORTED, "the string method %s", o);
    return Value::undefined(name);
}

Value dict_method(Runtime &rt, const Value &self, const std::string &name) {
    if (name == "items" || name == "keys" || name == "values") {
        return bound("dict." + name, [&rt, self, name](CallArgs &) {
            List out;
            rt.charge(self.d->size());
            for (const auto &kv : *self.d) {
                if (name == "items") out.push_back(Value::list({Value::str(kv.first), kv.second}, true));
                else if (name == "keys") out.push_back(Value::str(kv.first));
                else out.push_back(kv.second);
            }
            return Value::list(std::move(out));
        });
    }
    if (name == "get") {
        return bound("dict.get", [self](CallArgs &a) {
            const Value *k = arg(a, 0, "key");
            if (!k) fail(GPT_ERR_FORMAT, "dict.get takes a key");
            const Value *found = k->is_str() ? dict_find(*self.d, k->text()) : nullptr;
            if (found) return *found;
            const Value *d = arg(a, 1, "default");
            return d ? *d : Value::none();
        });
    }
    return Value();
}

bool is_dict_method(const std::string &name) {
    return in_list(name.c_str(), {"items", "keys", "values", "get", "copy", "pop", "popitem", "setdefault", "update", "clear", "fromkeys"});
}

Value unsafe_method(const std::string &type, const std::string &name) {
    return bound(type + "." + name, [type, name](CallArgs &) -> Value {
        fail(GPT_ERR_UNSUPPORTED, "%s.%s (transformers' sandbox forbids changing a %s, and this renderer implements no other)",
             type.c_str(), name.c_str(), type.c_str());
    });
}

} // namespace

void Runtime::check_bytes(size_t n) const {
    if (n > max_bytes()) fail(GPT_ERR_UNSUPPORTED, "a string over %zu bytes (the renderer's limit)", max_bytes());
}

void Runtime::check_items(size_t n) const {
    if (n > max_items()) fail(GPT_ERR_UNSUPPORTED, "a list over %zu items (the renderer's limit)", max_items());
}

Value get_attr(Runtime &rt, const Value &obj, const std::string &name) {
    switch (obj.kind) {
    case Kind::Undefined: undefined_error(obj);
    case Kind::Str: return str_method(rt, obj, name);
    case Kind::Dict: {
        if (is_dict_method(name)) {
            Value m = dict_method(rt, obj, name);
            return m.kind == Kind::Callable ? m : unsafe_method("dict", name);
        }
        rt.charge(obj.d->size() / 8); // a linear lookup (dicts in templates are small)
        const Value *v = dict_find(*obj.d, name);
        return v ? *v : Value::undefined(name);
    }
    case Kind::List:
        if (in_list(name.c_str(), {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", "copy", "index", "count"}))
            return unsafe_method("list", name);
        return Value::undefined(name);
    case Kind::Namespace: {
        const Value *v = dict_find(obj.ns->attrs, name);
        return v ? *v : Value::undefined(name);
    }
    default: return Value::undefined(name);
    }
}

Value get_item(Runtime &rt, const Value &obj, const Value &key) {
    if (obj.kind == Kind::Undefined) undefined_error(obj);
    if ((obj.kind == Kind::List || obj.kind == Kind::Str) && (key.kind == Kind::Int || key.kind == Kind::Bool)) {
        int64_t i = key.kind == Kind::Int ? key.i : key.b;
        if (obj.kind == Kind::List) {
            const int64_t n = (int64_t)obj.l->size();
            if (i < 0) i += n;
            return i >= 0 && i < n ? (*obj.l)[(size_t)i] : Value::undefined();
        }
        const std::vector<size_t> off = code_point_offsets(obj.text());
        const int64_t n = (int64_t)off.size() - 1;
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value::undefined();
        return Value::str(obj.text().substr(off[(size_t)i], off[(size_t)i + 1] - off[(size_t)i]));
    }
    if (obj.kind == Kind::Dict && key.is_str()) {
        rt.charge(obj.d->size() / 8);
        const Value *v = dict_find(*obj.d, key.text());
        if (v) return *v;
    }
    if (key.is_str()) return get_attr(rt, obj, key.text()); // jinja2 falls back to the attribute
    return Value::undefined();
}

Value get_slice(Runtime &rt, const Value &obj, const Value *start, const Value *stop, const Value *step) {
    if (obj.kind == Kind::Undefined) undefined_error(obj);
    auto as_index = [](const Value *v, const char *what) -> const Value * {
        if (!v || v->kind == Kind::None) return nullptr;
        if (v->kind != Kind::Int && v->kind != Kind::Bool) fail(GPT_ERR_FORMAT, "slice %s must be an integer or None", what);
        return v;
    };
    const Value *a = as_index(start, "start"), *b = as_index(stop, "stop"), *c = as_index(step, "step");
    const int64_t st = c ? (c->kind == Kind::Int ? c->i : c->b) : 1;
    if (st == 0) fail(GPT_ERR_FORMAT, "slice step cannot be zero");
    std::vector<size_t> off;
    int64_t n;
    if (obj.kind == Kind::List) n = (int64_t)obj.l->size();
    else if (obj.kind == Kind::Str) {
        off = code_point_offsets(obj.text());
        n = (int64_t)off.size() - 1;
    } else {
        return Value::undefined(); // jinja2: a TypeError from the item lookup becomes Undefined
    }
    // CPython's PySlice_AdjustIndices.
    auto adjust = [&](const Value *v, int64_t dflt) {
        if (!v) return dflt;
        int64_t i = v->kind == Kind::Int ? v->i : v->b;
        if (i < 0) {
            i = i < -n ? (st < 0 ? -1 : 0) : i + n;
        } else if (i >= n) {
            i = st < 0 ? n - 1 : n;
        }
        return i;
    };
    const int64_t lo = adjust(a, st > 0 ? 0 : n - 1), hi = adjust(b, st > 0 ? n : -1);
    const int64_t count = st > 0 ? (hi > lo ? (hi - lo + st - 1) / st : 0) : (lo > hi ? (lo - hi - st - 1) / -st : 0);
    rt.charge((uint64_t)count);
    if (obj.kind == Kind::List) {
        rt.check_items((size_t)count);
        List out;
        out.reserve((size_t)count);
        for (int64_t k = 0, i = lo; k < count; k++, i += st) out.push_back((*obj.l)[(size_t)i]);
        return Value::list(std::move(out), obj.tuple);
    }
    std::string out;
    for (int64_t k = 0, i = lo; k < count; k++, i += st) out.append(obj.text(), off[(size_t)i], off[(size_t)i + 1] - off[(size_t)i]);
    return rt.make_str(std::move(out));
}

List iterate(Runtime &rt, const Value &v) {
    switch (v.kind) {
    case Kind::Undefined: return {};
    case Kind::List: rt.charge(v.l->size()); return *v.l;
    case Kind::Dict: {
        List out;
        rt.charge(v.d->size());
        for (const auto &kv : *v.d) out.push_back(Value::str(kv.first));
        return out;
    }
    case Kind::Str: {
        List out;
        const std::vector<size_t> off = code_point_offsets(v.text());
        rt.check_items(off.size() - 1);
        rt.charge(off.size());
        for (size_t k = 0; k + 1 < off.size(); k++) out.push_back(Value::str(v.text().substr(off[k], off[k + 1] - off[k])));
        return out;
    }
    default: fail(GPT_ERR_FORMAT, "'%s' object is not iterable", type_name(v));
    }
}

} // namespace gpt::chat
