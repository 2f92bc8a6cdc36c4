// utf8.h - strict UTF-8 decoding for the tokenizer: one unit at a time, never reading past
// the end. Overlong forms, surrogates, values past U+10FFFF and truncated sequences are
// invalid, and then the unit is the single offending byte (so every input byte belongs to
// exactly one unit and encode never loses or invents bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpt::utf8 {

constexpr uint32_t kInvalid = 0xFFFFFFFFu;  // the code point of an invalid byte's unit

struct Unit {
    uint32_t cp;  // kInvalid for an invalid byte
    uint32_t len; // 1..4 bytes
};

inline Unit decode(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    if (c < 0x80) return {c, 1};
    uint32_t len, cp, min;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return {kInvalid, 1};
    if (n < len) return {kInvalid, 1};
    for (uint32_t i = 1; i < len; ++i) {
        if ((s[i] & 0xC0) != 0x80) return {kInvalid, 1};
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kInvalid, 1};
    return {cp, len};
}

inline void append(std::string &out, uint32_t cp) {
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

// Length of the longest prefix of s[0..n) after which no UTF-8 sequence is left incomplete:
// a trailing lead byte whose continuation bytes so far are valid, but too few, is held back
// (an invalid tail is not: it can never become valid).
inline size_t complete_prefix(const unsigned char *s, size_t n) {
    size_t back = n < 3 ? n : 3;
    for (size_t k = 1; k <= back; ++k) {
        unsigned char c = s[n - k];
        if ((c & 0xC0) == 0x80) continue;   // a continuation byte: look further back
        uint32_t need = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
        if (need <= k) return n;            // ASCII, invalid lead, or a complete sequence
        // The second byte's range is restricted for E0, ED, F0, F4: an impossible one
        // means the sequence is already invalid and nothing needs holding back.
        if (k >= 2) {
            unsigned char c1 = s[n - k + 1];
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
                return n;
        }
        return n - k;
    }
    return n;
}

} // namespace gpt::utf8
