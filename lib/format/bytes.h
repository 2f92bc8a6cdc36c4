// bytes.h - little-endian encoding helpers and a bounds-checked reading cursor.
// Every read from file bytes goes through Cursor, which fails with GPT_ERR_FORMAT naming
// the section instead of reading past its end.
#pragma once

#include "core/error.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace gpt::format {

inline uint32_t load_u32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
inline uint64_t load_u64(const uint8_t *p) { return (uint64_t)load_u32(p) | (uint64_t)load_u32(p + 4) << 32; }
inline void store_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
inline void store_u64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

class Cursor {
public:
    Cursor(const uint8_t *data, uint64_t size, const char *section, const std::string &source)
        : p_(data), end_(data + size), section_(section), source_(source) {}

    uint64_t remaining() const { return (uint64_t)(end_ - p_); }
    const uint8_t *need(uint64_t n) {
        if (n > remaining())
            fail(GPT_ERR_FORMAT, "%s: %s section ends early (needs %llu more bytes, has %llu)", source_.c_str(),
                 section_, (unsigned long long)n, (unsigned long long)remaining());
        const uint8_t *q = p_;
        p_ += n;
        return q;
    }
    uint8_t u8() { return *need(1); }
    uint16_t u16() { const uint8_t *q = need(2); return (uint16_t)(q[0] | q[1] << 8); }
    uint32_t u32() { return load_u32(need(4)); }
    uint64_t u64() { return load_u64(need(8)); }
    float f32() { uint32_t u = u32(); float f; std::memcpy(&f, &u, 4); return f; }
    std::string str(uint64_t n) { const uint8_t *q = need(n); return std::string((const char *)q, (size_t)n); }

private:
    const uint8_t *p_;
    const uint8_t *end_;
    const char *section_;
    const std::string &source_;
};

} // namespace gpt::format
