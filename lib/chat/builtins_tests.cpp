// builtins_tests.cpp - jinja2's tests ("x is defined", "n is odd", ...; see builtins.h).
#include "chat/builtins.h"

#include "core/error.h"

#include <string>

namespace gpt::chat {

bool apply_test(Runtime &rt, const std::string &name, const Value &in, CallArgs &a) {
    rt.charge(1);
    const Value *x = arg(a, 0, "other");
    auto need = [&]() -> const Value & {
        if (!x) fail(GPT_ERR_FORMAT, "the test '%s' needs an argument", name.c_str());
        return *x;
    };
    if (name == "defined") return !in.is_undefined();
    if (name == "undefined") return in.is_undefined();
    if (name == "none") return in.kind == Kind::None;
    if (name == "boolean") return in.kind == Kind::Bool;
    if (name == "true") return in.kind == Kind::Bool && in.b;
    if (name == "false") return in.kind == Kind::Bool && !in.b;
    if (name == "integer") return in.kind == Kind::Int;
    if (name == "float") return in.kind == Kind::Float;
    if (name == "number") return in.is_number();
    if (name == "string") return in.is_str();
    if (name == "mapping") return in.kind == Kind::Dict;
    if (name == "iterable") return in.kind == Kind::Str || in.kind == Kind::List || in.kind == Kind::Dict || in.is_undefined();
    if (name == "sequence") return in.kind == Kind::Str || in.kind == Kind::List || in.kind == Kind::Dict || in.is_undefined();
    if (name == "callable") return in.kind == Kind::Callable;
    if (name == "escaped") return false;
    if (name == "odd" || name == "even") {
        if (in.kind != Kind::Int && in.kind != Kind::Bool) fail(GPT_ERR_FORMAT, "the test '%s' needs an integer", name.c_str());
        const int64_t v = in.kind == Kind::Int ? in.i : in.b;
        return (v % 2 != 0) == (name == "odd");
    }
    if (name == "divisibleby") {
        const Value &d = need();
        if ((in.kind != Kind::Int && in.kind != Kind::Bool) || d.kind != Kind::Int) fail(GPT_ERR_UNSUPPORTED, "divisibleby on non-integers");
        if (d.i == 0) fail(GPT_ERR_FORMAT, "integer division or modulo by zero");
        const int64_t v = in.kind == Kind::Int ? in.i : in.b;
        return d.i == -1 || v % d.i == 0;
    }
    if (name == "eq" || name == "equalto" || name == "==") return rt.eq(in, need());
    if (name == "ne" || name == "!=") return !rt.eq(in, need());
    if (name == "lt" || name == "lessthan" || name == "<") return rt.lt(in, need());
    if (name == "le" || name == "<=") return !rt.lt(need(), in);
    if (name == "gt" || name == "greaterthan" || name == ">") return rt.lt(need(), in);
    if (name == "ge" || name == ">=") return !rt.lt(in, need());
    if (name == "sameas") {
        const Value &o = need();
        if (in.kind != o.kind) return false;
        switch (in.kind) {
        case Kind::None:
        case Kind::Undefined: return true;
        case Kind::Bool: return in.b == o.b;
        case Kind::Str: return in.text() == o.text(); // equal literals are one interned object in CPython
        case Kind::List: return in.l == o.l;
        case Kind::Dict: return in.d == o.d;
        case Kind::Namespace: return in.ns == o.ns;
        case Kind::Callable: return in.fn == o.fn;
        default: return rt.eq(in, o) && in.kind == o.kind; // small ints are shared objects in CPython
        }
    }
    if (name == "in") {
        const Value &seq = need();
        if (seq.is_str()) {
            if (!in.is_str()) fail(GPT_ERR_FORMAT, "'in <string>' requires string as left operand, not %s", type_name(in));
            return seq.text().find(in.text()) != std::string::npos;
        }
        for (const Value &v : iterate(rt, seq))
            if (rt.eq(v, in)) return true;
        return false;
    }
    if (name == "lower" || name == "upper") {
        if (!in.is_str()) return false;
        bool cased = false;
        for (char c : in.text()) {
            if ((unsigned char)c >= 0x80) fail(GPT_ERR_UNSUPPORTED, "the test '%s' on non-ASCII text", name.c_str());
            const bool up = c >= 'A' && c <= 'Z', lo = c >= 'a' && c <= 'z';
            if ((name == "lower" && up) || (name == "upper" && lo)) return false;
            cased = cased || up || lo;
        }
        return cased;
    }
    fail(GPT_ERR_UNSUPPORTED, "the test '%s'", name.c_str());
}

} // namespace gpt::chat
