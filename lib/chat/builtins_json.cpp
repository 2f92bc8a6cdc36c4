// builtins_json.cpp - json.dumps as transformers' tojson filter calls it (ensure_ascii=False by
// default, indent, separators, sort_keys). Nesting is bounded by Value::depth.
#include "chat/builtins.h"

#include "chat/text.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpt::chat {

namespace {

void json_string(const std::string &s, bool ensure_ascii, std::string &out) {
    out += '"';
    char buf[16];
    for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        const uint32_t cp = next_code_point(s, &pos);
        switch (cp) {
        case '"': out += "\\\""; continue;
        case '\\': out += "\\\\"; continue;
        case '\n': out += "\\n"; continue;
        case '\r': out += "\\r"; continue;
        case '\t': out += "\\t"; continue;
        case '\b': out += "\\b"; continue;
        case '\f': out += "\\f"; continue;
        default: break;
        }
        if (cp < 0x20 || (ensure_ascii && cp > 0x7E)) {
            if (cp >= 0x10000) { // a surrogate pair, as Python writes it
                const uint32_t v = cp - 0x10000;
                std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
                out += buf;
            } else {
                std::snprintf(buf, sizeof buf, "\\u%04x", (unsigned)cp);
                out += buf;
            }
        } else {
            out.append(s, start, pos - start);
        }
    }
    out += '"';
}

struct JsonWriter {
    Runtime &rt;
    bool ensure_ascii;
    const std::string *indent;
    const std::string &item_sep, &key_sep;
    bool sort_keys;
    std::string out;

    void newline(int level) {
        out += '\n';
        for (int k = 0; k < level; k++) out += *indent;
        rt.check_bytes(out.size());
    }

    void write(const Value &v, int level) {
        rt.charge(1);
        switch (v.kind) {
        case Kind::None: out += "null"; return;
        case Kind::Bool: out += v.b ? "true" : "false"; return;
        case Kind::Int: out += std::to_string(v.i); return;
        case Kind::Float:
            if (std::isnan(v.f)) out += "NaN";
            else if (std::isinf(v.f)) out += v.f < 0 ? "-Infinity" : "Infinity";
            else out += float_repr(v.f);
            return;
        case Kind::Str:
            rt.charge(v.s->size() / 16);
            json_string(*v.s, ensure_ascii, out);
            rt.check_bytes(out.size());
            return;
        case Kind::List: {
            if (v.l->empty()) {
                out += "[]";
                return;
            }
            out += '[';
            for (size_t k = 0; k < v.l->size(); k++) {
                if (k) out += item_sep;
                if (indent) newline(level + 1);
                write((*v.l)[k], level + 1);
            }
            if (indent) newline(level);
            out += ']';
            return;
        }
        case Kind::Dict: {
            if (v.d->empty()) {
                out += "{}";
                return;
            }
            std::vector<const std::pair<std::string, Value> *> items;
            for (const auto &kv : *v.d) items.push_back(&kv);
            if (sort_keys)
                std::sort(items.begin(), items.end(), [](auto *a, auto *b) { return a->first < b->first; });
            out += '{';
            for (size_t k = 0; k < items.size(); k++) {
                if (k) out += item_sep;
                if (indent) newline(level + 1);
                json_string(items[k]->first, ensure_ascii, out);
                out += key_sep;
                write(items[k]->second, level + 1);
            }
            if (indent) newline(level);
            out += '}';
            return;
        }
        default:
            fail(GPT_ERR_FORMAT, "tojson: Object of type %s is not JSON serializable", type_name(v));
        }
    }
};

} // namespace

std::string to_json(Runtime &rt, const Value &v, bool ensure_ascii, const std::string *indent, const std::string &item_sep,
                    const std::string &key_sep, bool sort_keys) {
    JsonWriter w{rt, ensure_ascii, indent, item_sep, key_sep, sort_keys, {}};
    w.write(v, 0);
    rt.check_bytes(w.out.size());
    return std::move(w.out);
}

} // namespace gpt::chat
