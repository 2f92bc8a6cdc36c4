// half.h - IEEE fp16 and bfloat16 <-> fp32 conversions, bit-exact, no hardware needed.
// Rounding is round-to-nearest-even; NaN stays NaN; overflow gives infinity.
#pragma once

#include <cstdint>
#include <cstring>

namespace gpt {

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float f16_to_f32(uint16_t h) {
    // Move exponent and mantissa into place and rebias; subnormals go through a normal-float
    // subtraction so the result does not depend on the caller's denormals-are-zero mode.
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13;
    const uint32_t exp = o & 0x0f800000u;
    o += (127u - 15u) << 23;
    if (exp == 0x0f800000u) {
        o += (128u - 16u) << 23; // inf / nan
    } else if (exp == 0) {
        o += 1u << 23;
        o = f32_bits(bits_f32(o) - bits_f32(113u << 23));
    }
    return bits_f32(o | sign);
}

inline uint16_t f32_to_f16(float f) {
    const uint32_t u = f32_bits(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); // nan, quiet
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                          // overflow -> inf
    if (a < 0x38800000u) {
        // Subnormal or zero: let the FPU round by adding 0.5 (as float) to align the bits.
        float r = bits_f32(a) + 0.5f;
        return (uint16_t)(sign | (f32_bits(r) - 0x3f000000u));
    }
    const uint32_t odd = (a >> 13) & 1u;
    a += 0xc8000fffu + odd; // rebias exponent (-112 << 23) and round to nearest even
    return (uint16_t)(sign | (a >> 13));
}

inline float bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

inline uint16_t f32_to_bf16(float f) {
    const uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); // quiet nan
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

} // namespace gpt
