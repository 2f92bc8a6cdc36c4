// rope.cpp - rotary position tables.
#include "core/rope.h"

#include <cmath>

namespace gpt {

RopeSpec rope_default(double theta, uint32_t rot_dim) {
    RopeSpec s;
    s.rot_dim = rot_dim;
    s.inv_freq.resize(rot_dim / 2);
    for (uint32_t i = 0; i < rot_dim / 2; i++) s.inv_freq[i] = std::pow(theta, -2.0 * i / rot_dim);
    return s;
}

void rope_tables(const RopeSpec &spec, uint32_t n_pos, float *cos, float *sin) {
    const std::vector<double> &f = spec.freqs_for(n_pos);
    const uint32_t half = spec.half();
    for (uint32_t i = 0; i < half; i++) {
        for (uint32_t p = 0; p < n_pos; p++) {
            const double a = p * f[i];
            cos[(uint64_t)p * half + i] = (float)(std::cos(a) * spec.attention_factor);
            sin[(uint64_t)p * half + i] = (float)(std::sin(a) * spec.attention_factor);
        }
    }
}

} // namespace gpt
