// text.cpp - Python str semantics over UTF-8 (see text.h).
#include "chat/text.h"

#include "core/error.h"

namespace gpt::chat {

namespace {

size_t sequence_length(unsigned char c) {
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 0;
}

bool is_ascii(std::string_view s) {
    for (unsigned char c : s)
        if (c >= 0x80) return false;
    return true;
}

bool in_chars(uint32_t cp, const std::vector<uint32_t> &set) {
    for (uint32_t c : set)
        if (c == cp) return true;
    return false;
}

std::vector<uint32_t> decode_all(std::string_view s) {
    std::vector<uint32_t> out;
    for (size_t pos = 0; pos < s.size();) out.push_back(next_code_point(s, &pos));
    return out;
}

} // namespace

bool valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = (unsigned char)s[i];
        const size_t n = sequence_length(c);
        if (n == 0 || i + n > s.size()) return false;
        uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
        for (size_t k = 1; k < n; k++) {
            const unsigned char cc = (unsigned char)s[i + k];
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3Fu);
        }
        // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n;
    }
    return true;
}

uint32_t next_code_point(std::string_view s, size_t *pos) {
    const unsigned char c = (unsigned char)s[*pos];
    size_t n = sequence_length(c);
    if (n == 0 || *pos + n > s.size()) n = 1; // not reached for valid input; never overrun
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1Fu) : n == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (size_t k = 1; k < n; k++) cp = (cp << 6) | ((unsigned char)s[*pos + k] & 0x3Fu);
    *pos += n;
    return cp;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
    std::vector<size_t> out;
    for (size_t pos = 0; pos < s.size();) {
        out.push_back(pos);
        next_code_point(s, &pos);
    }
    out.push_back(s.size());
    return out;
}

size_t code_point_count(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

void append_utf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
        out += (char)cp;
    } else if (cp < 0x800) {
        out += (char)(0xC0 | (cp >> 6));
        out += (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += (char)(0xE0 | (cp >> 12));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    } else {
        out += (char)(0xF0 | (cp >> 18));
        out += (char)(0x80 | ((cp >> 12) & 0x3F));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    }
}

// Python's str.isspace(): the characters of Unicode category Zs and bidi classes WS, B, S.
bool is_py_space(uint32_t cp) {
    if (cp >= 0x09 && cp <= 0x0D) return true;
    if (cp >= 0x1C && cp <= 0x20) return true;
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
    }
}

std::string py_strip(std::string_view s, StripSide side, const std::string *chars) {
    const std::vector<uint32_t> set = chars ? decode_all(*chars) : std::vector<uint32_t>{};
    auto strippable = [&](uint32_t cp) { return chars ? in_chars(cp, set) : is_py_space(cp); };
    const std::vector<size_t> off = code_point_offsets(s);
    size_t first = 0, last = off.size() - 1; // code point range [first, last)
    if (side != StripSide::Right)
        while (first < last) {
            size_t p = off[first];
            if (!strippable(next_code_point(s, &p))) break;
            first++;
        }
    if (side != StripSide::Left)
        while (last > first) {
            size_t p = off[last - 1];
            if (!strippable(next_code_point(s, &p))) break;
            last--;
        }
    return std::string(s.substr(off[first], off[last] - off[first]));
}

std::vector<std::string> py_split(std::string_view s, const std::string *sep, int64_t maxsplit, size_t max_parts) {
    std::vector<std::string> out;
    auto check = [&] {
        if (out.size() >= max_parts) fail(GPT_ERR_UNSUPPORTED, "str.split makes over %zu parts (the renderer's limit)", max_parts);
    };
    if (sep) {
        if (sep->empty()) fail(GPT_ERR_FORMAT, "str.split: empty separator");
        size_t start = 0;
        while (maxsplit < 0 || (int64_t)out.size() < maxsplit) {
            const size_t at = s.find(*sep, start);
            if (at == std::string_view::npos) break;
            check();
            out.emplace_back(s.substr(start, at - start));
            start = at + sep->size();
        }
        out.emplace_back(s.substr(start));
        return out;
    }
    // Runs of whitespace separate; leading and trailing whitespace gives no empty parts.
    size_t pos = 0;
    while (pos < s.size()) {
        size_t p = pos;
        if (is_py_space(next_code_point(s, &p))) {
            pos = p;
            continue;
        }
        if (maxsplit >= 0 && (int64_t)out.size() == maxsplit) {
            // The rest, with its trailing whitespace stripped, is the last part.
            out.push_back(py_strip(s.substr(pos), StripSide::Right, nullptr));
            return out;
        }
        size_t end = pos;
        while (end < s.size()) {
            size_t q = end;
            if (is_py_space(next_code_point(s, &q))) break;
            end = q;
        }
        check();
        out.emplace_back(s.substr(pos, end - pos));
        pos = end;
    }
    return out;
}

bool ascii_upper(std::string_view s, std::string &out) {
    if (!is_ascii(s)) return false;
    out.assign(s);
    for (char &c : out)
        if (c >= 'a' && c <= 'z') c = (char)(c - 32);
    return true;
}

bool ascii_lower(std::string_view s, std::string &out) {
    if (!is_ascii(s)) return false;
    out.assign(s);
    for (char &c : out)
        if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
    return true;
}

bool py_title(std::string_view s, std::string &out) {
    if (!is_ascii(s)) return false;
    out.assign(s);
    bool prev_cased = false;
    for (char &c : out) {
        const bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
        if (upper && prev_cased) c = (char)(c + 32);
        if (lower && !prev_cased) c = (char)(c - 32);
        prev_cased = upper || lower;
    }
    return true;
}

bool py_capitalize(std::string_view s, std::string &out) {
    if (!ascii_lower(s, out)) return false;
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = (char)(out[0] - 32);
    return true;
}

std::string py_replace(std::string_view s, std::string_view from, std::string_view to, int64_t count, size_t max_bytes) {
    // Count first, so an oversized result is refused before it is built.
    size_t n = 0;
    if (from.empty()) {
        n = code_point_count(s) + 1;
    } else {
        for (size_t at = s.find(from); at != std::string_view::npos; at = s.find(from, at + from.size())) n++;
    }
    if (count >= 0 && (uint64_t)count < n) n = (size_t)count;
    const long double size = (long double)s.size() + (long double)n * ((long double)to.size() - (long double)from.size());
    if (size > (long double)max_bytes)
        fail(GPT_ERR_UNSUPPORTED, "str.replace would make a string over the renderer's limit of %zu bytes", max_bytes);
    std::string out;
    out.reserve((size_t)size);
    if (from.empty()) {
        size_t pos = 0, done = 0;
        while (done < n) {
            out += to;
            done++;
            if (pos >= s.size()) break;
            const size_t start = pos;
            next_code_point(s, &pos);
            out += s.substr(start, pos - start);
        }
        out += s.substr(pos);
        return out;
    }
    size_t start = 0, done = 0;
    while (done < n) {
        const size_t at = s.find(from, start);
        if (at == std::string_view::npos) break;
        out += s.substr(start, at - start);
        out += to;
        start = at + from.size();
        done++;
    }
    out += s.substr(start);
    return out;
}

} // namespace gpt::chat
