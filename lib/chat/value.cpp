// value.cpp - Python's str/repr/==/< over template values (see value.h).
#include "chat/value.h"

#include "chat/text.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpt::chat {

namespace {

// Characters Python's repr escapes although they are not ASCII controls: C1 controls, the
// no-break and other Unicode spaces, line/paragraph separators and format characters.
bool repr_escapes(uint32_t cp) {
    if (cp < 0x20 || cp == 0x7F) return true;
    if (cp >= 0x80 && cp <= 0xA0) return true;
    if (cp == 0xAD || cp == 0x1680 || cp == 0x3000 || cp == 0xFEFF) return true;
    if (cp >= 0x2000 && cp <= 0x200F) return true;
    if (cp >= 0x2028 && cp <= 0x202F) return true;
    if (cp >= 0x205F && cp <= 0x206F) return true;
    return cp >= 0xFFF9 && cp <= 0xFFFB;
}

std::string str_repr(const std::string &s) {
    const bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        const uint32_t cp = next_code_point(s, &pos);
        char buf[16];
        if (cp == '\\') out += "\\\\";
        else if (cp == (uint32_t)quote) (out += '\\') += quote;
        else if (cp == '\n') out += "\\n";
        else if (cp == '\r') out += "\\r";
        else if (cp == '\t') out += "\\t";
        else if (repr_escapes(cp)) {
            std::snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02x" : "\\u%04x", (unsigned)cp);
            out += buf;
        } else out.append(s, start, pos - start);
    }
    out += quote;
    return out;
}

std::string list_repr(const Value &v) {
    std::string out(v.tuple ? "(" : "[");
    for (size_t k = 0; k < v.l->size(); k++) {
        if (k) out += ", ";
        out += to_repr((*v.l)[k]);
    }
    if (v.tuple && v.l->size() == 1) out += ',';
    out += v.tuple ? ")" : "]";
    return out;
}

std::string dict_repr(const Dict &d) {
    std::string out("{");
    for (size_t k = 0; k < d.size(); k++) {
        if (k) out += ", ";
        out += str_repr(d[k].first);
        out += ": ";
        out += to_repr(d[k].second);
    }
    return out + "}";
}

double as_double(const Value &v) { return v.kind == Kind::Float ? v.f : v.kind == Kind::Int ? (double)v.i : (v.b ? 1.0 : 0.0); }
int64_t as_int(const Value &v) { return v.kind == Kind::Int ? v.i : (v.b ? 1 : 0); }

} // namespace

namespace {
uint16_t nested_depth(uint16_t child_max) {
    if (child_max + 1 > kMaxValueDepth)
        fail(GPT_ERR_UNSUPPORTED, "lists and dicts nested over %u deep (the renderer's limit)", (unsigned)kMaxValueDepth);
    return (uint16_t)(child_max + 1);
}
} // namespace

Value Value::list(List x, bool is_tuple) {
    uint16_t m = 0;
    for (const Value &e : x) m = std::max(m, e.depth);
    Value v;
    v.kind = Kind::List;
    v.tuple = is_tuple;
    v.depth = nested_depth(m);
    v.l = std::make_shared<const List>(std::move(x));
    return v;
}

Value Value::dict(Dict x) {
    uint16_t m = 0;
    for (const auto &kv : x) m = std::max(m, kv.second.depth);
    Value v;
    v.kind = Kind::Dict;
    v.depth = nested_depth(m);
    v.d = std::make_shared<const Dict>(std::move(x));
    return v;
}

const Value *dict_find(const Dict &d, const std::string &key) {
    for (const auto &kv : d)
        if (kv.first == key) return &kv.second;
    return nullptr;
}

const char *type_name(const Value &v) {
    switch (v.kind) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::List: return v.tuple ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
    }
    return "?";
}

bool truthy(const Value &v) {
    switch (v.kind) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return v.b;
    case Kind::Int: return v.i != 0;
    case Kind::Float: return v.f != 0.0;
    case Kind::Str: return !v.s->empty();
    case Kind::List: return !v.l->empty();
    case Kind::Dict: return !v.d->empty();
    case Kind::Namespace:
    case Kind::Callable: return true;
    }
    return false;
}

std::string float_repr(double x) {
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x < 0 ? "-inf" : "inf";
    // The shortest mantissa that reads back as x, as Python's repr picks.
    char buf[40];
    int prec = 1;
    for (; prec <= 17; prec++) {
        std::snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
        if (std::strtod(buf, nullptr) == x) break;
    }
    // buf: [-]d[.ddd]e[+-]XX
    std::string s(buf);
    const bool neg = s[0] == '-';
    if (neg) s.erase(0, 1);
    const size_t e = s.find('e');
    const int exp10 = std::atoi(s.c_str() + e + 1);
    std::string digits;
    for (size_t k = 0; k < e; k++)
        if (s[k] != '.') digits += s[k];
    while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
    const int decpt = exp10 + 1; // x = 0.DIGITS * 10^decpt
    std::string out = neg ? "-" : "";
    if (decpt <= -4 || decpt > 16) {
        out += digits[0];
        if (digits.size() > 1) out += "." + digits.substr(1);
        std::snprintf(buf, sizeof buf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
        return out + buf;
    }
    if (decpt <= 0) return out + "0." + std::string((size_t)-decpt, '0') + digits;
    if ((size_t)decpt >= digits.size()) return out + digits + std::string((size_t)decpt - digits.size(), '0') + ".0";
    return out + digits.substr(0, (size_t)decpt) + "." + digits.substr((size_t)decpt);
}

std::string to_str(const Value &v) {
    switch (v.kind) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return v.b ? "True" : "False";
    case Kind::Int: return std::to_string(v.i);
    case Kind::Float: return float_repr(v.f);
    case Kind::Str: return *v.s;
    case Kind::List: return list_repr(v);
    case Kind::Dict: return dict_repr(*v.d);
    case Kind::Namespace:
    case Kind::Callable: break;
    }
    fail(GPT_ERR_UNSUPPORTED, "printing a %s (Python prints its address)", type_name(v));
}

std::string to_repr(const Value &v) {
    if (v.kind == Kind::Str) return str_repr(*v.s);
    if (v.kind == Kind::Undefined) fail(GPT_ERR_UNSUPPORTED, "printing Undefined inside a list or dict");
    return to_str(v);
}

bool equal(const Value &a, const Value &b, uint64_t *work) {
    if (work) ++*work;
    if (a.is_number() && b.is_number()) {
        if (a.kind != Kind::Float && b.kind != Kind::Float) return as_int(a) == as_int(b);
        return as_double(a) == as_double(b);
    }
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::Str: return *a.s == *b.s;
    case Kind::List:
        if (a.tuple != b.tuple || a.l->size() != b.l->size()) return false;
        for (size_t k = 0; k < a.l->size(); k++)
            if (!equal((*a.l)[k], (*b.l)[k], work)) return false;
        return true;
    case Kind::Dict:
        if (a.d->size() != b.d->size()) return false;
        for (const auto &kv : *a.d) {
            const Value *o = dict_find(*b.d, kv.first);
            if (work) *work += a.d->size(); // the key lookup
            if (!o || !equal(kv.second, *o, work)) return false;
        }
        return true;
    case Kind::Namespace: return a.ns == b.ns;
    case Kind::Callable: return a.fn == b.fn;
    default: return false;
    }
}

bool less(const Value &a, const Value &b, uint64_t *work) {
    if (work) ++*work;
    if (a.is_number() && b.is_number()) {
        if (a.kind != Kind::Float && b.kind != Kind::Float) return as_int(a) < as_int(b);
        return as_double(a) < as_double(b);
    }
    if (a.kind == Kind::Str && b.kind == Kind::Str) return *a.s < *b.s; // UTF-8 byte order is code point order
    if (a.kind == Kind::List && b.kind == Kind::List && a.tuple == b.tuple) {
        const size_t n = std::min(a.l->size(), b.l->size());
        for (size_t k = 0; k < n; k++) {
            if (equal((*a.l)[k], (*b.l)[k], work)) continue;
            return less((*a.l)[k], (*b.l)[k], work);
        }
        return a.l->size() < b.l->size();
    }
    fail(GPT_ERR_FORMAT, "'<' not supported between instances of '%s' and '%s'", type_name(a), type_name(b));
}

} // namespace gpt::chat
