// json_excerpt.h - a short rendering of a JSON value for error messages. json::dump()
// recurses once per nesting level, so quoting a hostile file's [[[[...]]]] (hundreds of
// thousands deep) in the message that rejects it overflowed the stack; this stops at a few
// levels and about 120 characters.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gpt::convert {

namespace detail {
inline void json_excerpt_into(const nlohmann::json &v, std::string &out, int depth, size_t max_len) {
    if (!v.is_structured()) {
        const std::string s = v.dump(); // a scalar: no recursion
        out += s.size() > 64 ? s.substr(0, 61) + "..." : s;
        return;
    }
    const bool arr = v.is_array();
    if (depth == 0) {
        out += arr ? "[...]" : "{...}";
        return;
    }
    out += arr ? '[' : '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ',';
        first = false;
        if (out.size() > max_len) {
            out += "...";
            break;
        }
        if (!arr) {
            json_excerpt_into(nlohmann::json(it.key()), out, 0, max_len);
            out += ':';
        }
        json_excerpt_into(*it, out, depth - 1, max_len);
    }
    out += arr ? ']' : '}';
}
} // namespace detail

inline std::string json_excerpt(const nlohmann::json &v) {
    std::string s;
    detail::json_excerpt_into(v, s, 4, 120);
    return s;
}

} // namespace gpt::convert
