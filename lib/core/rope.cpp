// rope.cpp - rotary position tables.
#include "core/rope.h"

#include <cmath>

namespace gpt {

void rope_tables(float theta, uint32_t head_dim, uint32_t n_pos, float *cos, float *sin) {
    const uint32_t half = head_dim / 2;
    for (uint32_t i = 0; i < half; i++) {
        const double inv_freq = std::pow((double)theta, -2.0 * i / head_dim);
        for (uint32_t p = 0; p < n_pos; p++) {
            const double a = p * inv_freq;
            cos[(uint64_t)p * half + i] = (float)std::cos(a);
            sin[(uint64_t)p * half + i] = (float)std::sin(a);
        }
    }
}

} // namespace gpt
