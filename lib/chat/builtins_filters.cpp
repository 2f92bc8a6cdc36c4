// builtins_filters.cpp - jinja2's filters, with transformers' tojson (see builtins.h).
#include "chat/builtins.h"

#include "chat/text.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpt::chat {

namespace {

bool bool_arg(CallArgs &a, size_t idx, const char *name, bool dflt) {
    const Value *v = arg(a, idx, name);
    return v ? truthy(*v) : dflt;
}

// jinja2's soft_str: str(value), Undefined as "".
std::string text_of(const Value &v) { return to_str(v); }

int64_t length_of(const Value &v) {
    switch (v.kind) {
    case Kind::Undefined: return 0;
    case Kind::Str: return (int64_t)code_point_count(v.text());
    case Kind::List: return (int64_t)v.l->size();
    case Kind::Dict: return (int64_t)v.d->size();
    case Kind::Namespace: return (int64_t)v.ns->attrs.size();
    default: fail(GPT_ERR_FORMAT, "object of type '%s' has no len()", type_name(v));
    }
}

// An attribute path "a.b.0" looked up item-first, as jinja2's make_attrgetter does.
Value attr_path(Runtime &rt, const Value &v, const std::string &path) {
    Value cur = v;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
        cur = get_item(rt, cur, numeric ? Value::integer(std::atoll(part.c_str())) : Value::str(part));
        if (dot == std::string::npos) return cur;
        start = dot + 1;
    }
}

// Lower-cased copy of a string for case-insensitive comparisons (sort, unique, min, max).
Value fold_case(const Value &v, bool case_sensitive) {
    if (case_sensitive || !v.is_str()) return v;
    std::string out;
    if (!ascii_lower(v.text(), out)) fail(GPT_ERR_UNSUPPORTED, "case-insensitive comparison of non-ASCII text");
    return Value::str(std::move(out));
}

Value html_escape(const Value &v) {
    std::string out;
    for (char c : text_of(v)) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return Value::str(std::move(out));
}

// Python's str.splitlines() line breaks, for the indent filter.
std::vector<std::string> split_lines(const std::string &s) {
    std::vector<std::string> out;
    std::string cur;
    for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        const uint32_t cp = next_code_point(s, &pos);
        const bool brk = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
                         cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!brk) {
            cur.append(s, start, pos - start);
            continue;
        }
        if (cp == '\r' && pos < s.size() && s[pos] == '\n') pos++;
        out.push_back(std::move(cur));
        cur.clear();
    }
    if (!cur.empty()) out.push_back(std::move(cur));
    return out;
}

Value indent_filter(Runtime &rt, const Value &in, CallArgs &a) {
    const Value *w = arg(a, 0, "width");
    std::string ind;
    if (!w) ind = "    ";
    else if (w->is_str()) ind = w->text();
    else if (w->kind == Kind::Int) ind = std::string((size_t)std::clamp<int64_t>(w->i, 0, 4096), ' ');
    else fail(GPT_ERR_FORMAT, "indent: width must be an integer or a string");
    const bool first = bool_arg(a, 1, "first", false), blank = bool_arg(a, 2, "blank", false);
    const std::vector<std::string> lines = split_lines(text_of(in) + "\n");
    std::string out;
    for (size_t k = 0; k < lines.size(); k++) {
        if (k) {
            out += '\n';
            if (blank || !lines[k].empty()) out += ind;
        }
        out += lines[k];
        rt.check_bytes(out.size());
    }
    if (first) out = ind + out;
    return rt.make_str(std::move(out));
}

Value tojson_filter(Runtime &rt, const Value &in, CallArgs &a) {
    const bool ensure_ascii = bool_arg(a, 0, "ensure_ascii", false);
    const Value *ind = arg(a, 1, "indent");
    const Value *seps = arg(a, 2, "separators");
    const bool sort_keys = bool_arg(a, 3, "sort_keys", false);
    std::string indent;
    const bool has_indent = ind && ind->kind != Kind::None;
    if (has_indent) {
        if (ind->is_str()) indent = ind->text();
        else if (ind->kind == Kind::Int) indent = std::string((size_t)std::clamp<int64_t>(ind->i, 0, 4096), ' ');
        else fail(GPT_ERR_FORMAT, "tojson: indent must be an integer or a string");
    }
    std::string item_sep = has_indent ? "," : ", ", key_sep = ": ";
    if (seps && seps->kind != Kind::None) {
        if (seps->kind != Kind::List || seps->l->size() != 2 || !(*seps->l)[0].is_str() || !(*seps->l)[1].is_str())
            fail(GPT_ERR_FORMAT, "tojson: separators must be two strings");
        item_sep = (*seps->l)[0].text();
        key_sep = (*seps->l)[1].text();
    }
    return rt.make_str(to_json(rt, in, ensure_ascii, has_indent ? &indent : nullptr, item_sep, key_sep, sort_keys));
}

Value int_filter(const Value &in, CallArgs &a) {
    const Value *d = arg(a, 0, "default");
    const Value dflt = d ? *d : Value::integer(0);
    if (arg(a, 1, "base")) fail(GPT_ERR_UNSUPPORTED, "the int filter's base argument");
    switch (in.kind) {
    case Kind::Int: return in;
    case Kind::Bool: return Value::integer(in.b);
    case Kind::Float:
        if (!std::isfinite(in.f) || std::fabs(in.f) >= 9.2e18) return dflt;
        return Value::integer((int64_t)in.f);
    case Kind::Str: {
        std::string s = py_strip(in.text(), StripSide::Both, nullptr), digits;
        size_t k = 0;
        bool neg = false;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) neg = s[k++] == '-';
        bool ok = k < s.size();
        for (; k < s.size() && ok; k++) {
            if (s[k] >= '0' && s[k] <= '9') digits += s[k];
            else if (!(s[k] == '_' && !digits.empty() && k + 1 < s.size() && s[k + 1] >= '0' && s[k + 1] <= '9')) ok = false;
        }
        if (ok && digits.size() <= 18) return Value::integer(neg ? -std::atoll(digits.c_str()) : std::atoll(digits.c_str()));
        char *end = nullptr;
        const double f = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(f) && std::fabs(f) < 9.2e18) return Value::integer((int64_t)f);
        return dflt;
    }
    default: return dflt;
    }
}

Value float_filter(const Value &in, CallArgs &a) {
    const Value *d = arg(a, 0, "default");
    const Value dflt = d ? *d : Value::real(0.0);
    if (in.kind == Kind::Float) return in;
    if (in.kind == Kind::Int) return Value::real((double)in.i);
    if (in.kind == Kind::Bool) return Value::real(in.b);
    if (in.is_str()) {
        std::string s = py_strip(in.text(), StripSide::Both, nullptr);
        s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
        char *end = nullptr;
        const double f = std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size() && s.find_first_of("xX") == std::string::npos) return Value::real(f);
    }
    return dflt;
}

Value round_filter(const Value &in, CallArgs &a) {
    if (!in.is_number()) fail(GPT_ERR_FORMAT, "round: expected a number, got %s", type_name(in));
    const double x = in.kind == Kind::Float ? in.f : in.kind == Kind::Int ? (double)in.i : in.b;
    const Value *p = arg(a, 0, "precision");
    const int64_t prec = p && p->kind == Kind::Int ? std::clamp<int64_t>(p->i, -300, 300) : 0;
    const Value *m = arg(a, 1, "method");
    const std::string method = m && m->is_str() ? m->text() : "common";
    const double scale = std::pow(10.0, (double)prec);
    if (method == "ceil") return Value::real(std::ceil(x * scale) / scale);
    if (method == "floor") return Value::real(std::floor(x * scale) / scale);
    if (method != "common") fail(GPT_ERR_FORMAT, "round: method must be 'common', 'ceil' or 'floor'");
    if (prec < 0 || !std::isfinite(x)) return Value::real(std::nearbyint(x * scale) / scale);
    // Python rounds the exact binary value half-to-even at the decimal place, as printf does.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
    return Value::real(std::strtod(buf, nullptr));
}

Value select_like(Runtime &rt, const std::string &name, const Value &in, CallArgs &a) {
    const bool by_attr = name == "selectattr" || name == "rejectattr";
    const bool keep_true = name == "select" || name == "selectattr";
    size_t k = 0;
    std::string attr;
    if (by_attr) {
        if (a.positional.empty() || !a.positional[0].is_str()) fail(GPT_ERR_FORMAT, "%s needs an attribute name", name.c_str());
        attr = a.positional[k++].text();
    }
    std::string test;
    if (k < a.positional.size()) {
        if (!a.positional[k].is_str()) fail(GPT_ERR_FORMAT, "%s: the test must be named by a string", name.c_str());
        test = a.positional[k++].text();
    }
    CallArgs targs;
    targs.positional.assign(a.positional.begin() + (long)k, a.positional.end());
    List out;
    for (const Value &item : iterate(rt, in)) {
        rt.charge(1);
        const Value v = by_attr ? attr_path(rt, item, attr) : item;
        bool ok;
        if (test.empty()) ok = truthy(v);
        else {
            CallArgs copy = targs;
            ok = apply_test(rt, test, v, copy);
        }
        if (ok == keep_true) out.push_back(item);
    }
    return Value::list(std::move(out));
}

Value map_filter(Runtime &rt, const Value &in, CallArgs &a) {
    List out;
    if (const Value *attr = dict_find(a.keyword, "attribute")) {
        if (!attr->is_str()) fail(GPT_ERR_FORMAT, "map: attribute must be a string");
        const Value *dflt = dict_find(a.keyword, "default");
        for (const Value &item : iterate(rt, in)) {
            rt.charge(1);
            Value v = attr_path(rt, item, attr->text());
            out.push_back(v.is_undefined() && dflt ? *dflt : v);
        }
        return Value::list(std::move(out));
    }
    if (a.positional.empty() || !a.positional[0].is_str()) fail(GPT_ERR_FORMAT, "map needs a filter name or attribute=");
    const std::string filter = a.positional[0].text();
    CallArgs fargs;
    fargs.positional.assign(a.positional.begin() + 1, a.positional.end());
    fargs.keyword = a.keyword;
    for (const Value &item : iterate(rt, in)) {
        rt.charge(1);
        CallArgs copy = fargs;
        out.push_back(apply_filter(rt, filter, item, copy));
    }
    return Value::list(std::move(out));
}

Value sort_like(Runtime &rt, const std::string &name, const Value &in, CallArgs &a) {
    const bool sort = name == "sort";
    const bool reverse = sort && bool_arg(a, 0, "reverse", false);
    const bool case_sensitive = bool_arg(a, sort ? 1 : 0, "case_sensitive", false);
    const Value *attr = arg(a, sort ? 2 : 1, "attribute");
    List items = iterate(rt, in);
    rt.charge(items.size() * 8);
    auto key = [&](const Value &v) { return fold_case(attr && attr->is_str() ? attr_path(rt, v, attr->text()) : v, case_sensitive); };
    if (sort) {
        std::stable_sort(items.begin(), items.end(), [&](const Value &x, const Value &y) {
            return reverse ? rt.lt(key(y), key(x)) : rt.lt(key(x), key(y));
        });
        return Value::list(std::move(items));
    }
    if (name == "unique") {
        List out, seen;
        for (const Value &v : items) {
            const Value k = key(v);
            rt.charge(seen.size());
            if (std::none_of(seen.begin(), seen.end(), [&](const Value &s) { return rt.eq(s, k); })) {
                seen.push_back(k);
                out.push_back(v);
            }
        }
        return Value::list(std::move(out));
    }
    if (items.empty()) return Value::undefined();
    size_t best = 0;
    for (size_t k = 1; k < items.size(); k++) {
        const bool better = name == "min" ? rt.lt(key(items[k]), key(items[best])) : rt.lt(key(items[best]), key(items[k]));
        if (better) best = k;
    }
    return items[best];
}

} // namespace

Value apply_filter(Runtime &rt, const std::string &name, const Value &in, CallArgs &a) {
    rt.charge(1);
    if (name == "safe") return in;
    if (name == "string") return rt.make_str(text_of(in));
    if (name == "length" || name == "count") return Value::integer(length_of(in));
    if (name == "default" || name == "d") {
        const Value *d = arg(a, 0, "default_value");
        const bool boolean = bool_arg(a, 1, "boolean", false);
        if (in.is_undefined() || (boolean && !truthy(in))) return d ? *d : Value::str("");
        return in;
    }
    if (name == "trim") {
        const Value *c = arg(a, 0, "chars");
        const std::string *chars = c && c->is_str() ? &c->text() : nullptr;
        return rt.make_str(py_strip(text_of(in), StripSide::Both, chars));
    }
    if (name == "upper" || name == "lower" || name == "capitalize") {
        std::string out;
        const std::string s = text_of(in);
        const bool ok = name == "upper" ? ascii_upper(s, out) : name == "lower" ? ascii_lower(s, out) : py_capitalize(s, out);
        if (!ok) fail(GPT_ERR_UNSUPPORTED, "the %s filter on non-ASCII text (Unicode case mapping is not carried)", name.c_str());
        return rt.make_str(std::move(out));
    }
    if (name == "title") { // jinja2's own rule: words begin after whitespace, -, (, {, [ or <
        std::string s = text_of(in), low, out;
        if (!ascii_lower(s, low)) fail(GPT_ERR_UNSUPPORTED, "the title filter on non-ASCII text");
        bool start = true;
        for (char c : low) {
            const bool sep = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '-' ||
                             c == '(' || c == '{' || c == '[' || c == '<';
            out += start && !sep && c >= 'a' && c <= 'z' ? (char)(c - 32) : c;
            start = sep;
        }
        return rt.make_str(std::move(out));
    }
    if (name == "replace") {
        const Value *from = arg(a, 0, "old"), *to = arg(a, 1, "new"), *count = arg(a, 2, "count");
        if (!from || !to) fail(GPT_ERR_FORMAT, "replace needs old and new");
        const int64_t n = count && count->kind == Kind::Int ? count->i : -1;
        return rt.make_str(py_replace(text_of(in), text_of(*from), text_of(*to), n, rt.max_bytes()));
    }
    if (name == "join") {
        const Value *sep = arg(a, 0, "d");
        const Value *attr = arg(a, 1, "attribute");
        const std::string s = sep ? text_of(*sep) : "";
        std::string out;
        bool first = true;
        for (const Value &v : iterate(rt, in)) {
            if (!first) out += s;
            first = false;
            out += text_of(attr && attr->is_str() ? attr_path(rt, v, attr->text()) : v);
            rt.check_bytes(out.size());
        }
        return rt.make_str(std::move(out));
    }
    if (name == "first" || name == "last") {
        if (in.is_str()) {
            if (in.text().empty()) return Value::undefined();
            return get_item(rt, in, Value::integer(name == "first" ? 0 : -1));
        }
        const List items = iterate(rt, in);
        if (items.empty()) return Value::undefined();
        return name == "first" ? items.front() : items.back();
    }
    if (name == "list") return Value::list(iterate(rt, in));
    if (name == "items") {
        if (in.is_undefined()) return Value::list({});
        if (in.kind != Kind::Dict) fail(GPT_ERR_FORMAT, "items: expected a mapping, got %s", type_name(in));
        List out;
        for (const auto &kv : *in.d) out.push_back(Value::list({Value::str(kv.first), kv.second}, true));
        return Value::list(std::move(out));
    }
    if (name == "reverse") {
        if (in.is_str()) {
            const Value step = Value::integer(-1);
            return get_slice(rt, in, nullptr, nullptr, &step);
        }
        List items = iterate(rt, in);
        std::reverse(items.begin(), items.end());
        return Value::list(std::move(items));
    }
    if (name == "tojson") return tojson_filter(rt, in, a);
    if (name == "indent") return indent_filter(rt, in, a);
    if (name == "int") return int_filter(in, a);
    if (name == "float") return float_filter(in, a);
    if (name == "round") return round_filter(in, a);
    if (name == "abs") {
        if (in.kind == Kind::Int) {
            if (in.i == INT64_MIN) fail(GPT_ERR_UNSUPPORTED, "an integer past 64 bits");
            return Value::integer(in.i < 0 ? -in.i : in.i);
        }
        if (in.kind == Kind::Bool) return Value::integer(in.b);
        if (in.kind == Kind::Float) return Value::real(std::fabs(in.f));
        fail(GPT_ERR_FORMAT, "bad operand type for abs(): '%s'", type_name(in));
    }
    if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") return select_like(rt, name, in, a);
    if (name == "map") return map_filter(rt, in, a);
    if (name == "sort" || name == "unique" || name == "min" || name == "max") return sort_like(rt, name, in, a);
    if (name == "sum") {
        const Value *attr = arg(a, 0, "attribute");
        const Value *start = arg(a, 1, "start");
        int64_t acc_i = start && start->kind == Kind::Int ? start->i : 0;
        double acc_f = 0;
        bool is_float = start && start->kind == Kind::Float;
        if (is_float) acc_f = start->f;
        for (const Value &v0 : iterate(rt, in)) {
            const Value v = attr && attr->is_str() ? attr_path(rt, v0, attr->text()) : v0;
            if (!v.is_number()) fail(GPT_ERR_FORMAT, "sum: unsupported operand type '%s'", type_name(v));
            if (v.kind == Kind::Float && !is_float) {
                is_float = true;
                acc_f = (double)acc_i;
            }
            if (is_float) acc_f += v.kind == Kind::Float ? v.f : v.kind == Kind::Int ? (double)v.i : v.b;
            else if (__builtin_add_overflow(acc_i, v.kind == Kind::Int ? v.i : (int64_t)v.b, &acc_i))
                fail(GPT_ERR_UNSUPPORTED, "an integer past 64 bits");
        }
        return is_float ? Value::real(acc_f) : Value::integer(acc_i);
    }
    if (name == "attr") {
        const Value *n = arg(a, 0, "name");
        if (!n || !n->is_str()) fail(GPT_ERR_FORMAT, "attr needs a name");
        return get_attr(rt, in, n->text());
    }
    if (name == "escape" || name == "e" || name == "forceescape") return rt.make_str(html_escape(in).text());
    fail(GPT_ERR_UNSUPPORTED, "the filter '%s'", name.c_str());
}

} // namespace gpt::chat
