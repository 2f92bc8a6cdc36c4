// value.h - the values a chat template computes with, modelled on the Python objects jinja2
// hands around: None, bool, int, float, str, list (and tuple), dict (insertion-ordered, string
// keys), jinja2's Undefined, namespace() objects and callables (macros, bound methods).
// Strings, lists and dicts are immutable and shared, so copying a value is O(1); a namespace
// is shared and mutable, as in Python.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gpt::chat {

struct Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>; // insertion order, unique keys
struct Namespace;
struct Callable;

enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, Str, List, Dict, Namespace, Callable };

struct Value {
    Kind kind = Kind::Undefined;
    bool tuple = false; // a List that Python would hold as a tuple (repr with parentheses)
    uint16_t depth = 0; // nesting of lists and dicts, bounded (kMaxValueDepth) so that printing,
                        // comparing and JSON never recurse deeply
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::shared_ptr<const std::string> s;
    std::shared_ptr<const List> l;
    std::shared_ptr<const Dict> d;
    std::shared_ptr<Namespace> ns;
    std::shared_ptr<const Callable> fn;
    // s of an Undefined: the name that was looked up (may be null), for messages.

    static Value undefined(std::string name = "") {
        Value v;
        if (!name.empty()) v.s = std::make_shared<const std::string>(std::move(name));
        return v;
    }
    static Value none() { Value v; v.kind = Kind::None; return v; }
    static Value boolean(bool x) { Value v; v.kind = Kind::Bool; v.b = x; return v; }
    static Value integer(int64_t x) { Value v; v.kind = Kind::Int; v.i = x; return v; }
    static Value real(double x) { Value v; v.kind = Kind::Float; v.f = x; return v; }
    static Value str(std::string x) {
        Value v;
        v.kind = Kind::Str;
        v.s = std::make_shared<const std::string>(std::move(x));
        return v;
    }
    static Value list(List x, bool is_tuple = false);
    static Value dict(Dict x);

    bool is_undefined() const { return kind == Kind::Undefined; }
    bool is_str() const { return kind == Kind::Str; }
    bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
    const std::string &text() const { return *s; } // kind Str only
};

// Lists and dicts nest at most this deep (a template building [[[...]]] in a loop is refused).
inline constexpr uint16_t kMaxValueDepth = 64;

struct Namespace {
    Dict attrs;
};

// Arguments of a call: positional, then keyword.
struct CallArgs {
    List positional;
    Dict keyword;
};

struct Callable {
    std::string name; // for messages: "macro foo", "str.strip"
    std::function<Value(CallArgs &)> call;
};

// Looks a key up in a dict; nullptr when absent.
const Value *dict_find(const Dict &d, const std::string &key);

// Python's truthiness (Undefined is falsy).
bool truthy(const Value &v);
// Python's str(v) as jinja2 prints it ({{ v }}, ~, |string): Undefined is "". Throws
// GPT_ERR_UNSUPPORTED for values Python prints as object addresses (namespace, callables).
std::string to_str(const Value &v);
// Python's repr(v).
std::string to_repr(const Value &v);
// Python's == (1 == 1.0 == True; lists and dicts element-wise; Undefined equals Undefined).
// work, when given, is increased by the elements visited (the interpreter charges them).
bool equal(const Value &a, const Value &b, uint64_t *work = nullptr);
// Python's <; throws gpt::Error (GPT_ERR_FORMAT) where Python raises TypeError.
bool less(const Value &a, const Value &b, uint64_t *work = nullptr);
// Python's float repr ("1.0", "1e-05", "inf").
std::string float_repr(double x);
// The type name Python would print in an error ("str", "int", "list", "dict", ...).
const char *type_name(const Value &v);

} // namespace gpt::chat
