// printable.cpp - one pass over the bytes, decoding UTF-8 only to tell its C1 controls apart.
#include "core/printable.h"

#include <cstdint>
#include <cstdio>

namespace gpt {

namespace {

// Length of the valid UTF-8 sequence at s[0..n) (shortest form, no surrogates, <= U+10FFFF),
// or 0; *cp gets the code point.
size_t utf8_length(const unsigned char *s, size_t n, uint32_t *cp) {
    const unsigned char c = s[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) return *cp = c, 1;
    if ((c & 0xe0) == 0xc0) len = 2, v = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0) len = 3, v = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0) len = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

} // namespace

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    const unsigned char *s = reinterpret_cast<const unsigned char *>(text.data());
    const size_t n = text.size();
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        const size_t len = utf8_length(s + i, n - i, &cp);
        const bool control = cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f);
        if (len == 0 || control) {
            char esc[5];
            std::snprintf(esc, sizeof esc, "\\x%02x", s[i]);
            out += esc;
            i += 1;
        } else {
            out.append(text.data() + i, len);
            i += len;
        }
    }
    return out;
}

} // namespace gpt
