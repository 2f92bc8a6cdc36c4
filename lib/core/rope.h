// rope.h - rotary positions: one set of frequencies (RopeSpec, filled by an architecture
// from its config, scaled or not) and the cos/sin tables every backend builds from it (each
// copies them where its kernels read them).
#pragma once

#include <cstdint>
#include <vector>

namespace gpt {

// The rotation of one kind of layer. The first rot_dim dimensions of each q and k head
// rotate (rotate-half: pair i with i + rot_dim / 2); the rest pass through.
struct RopeSpec {
    uint32_t rot_dim = 0;            // even, <= head_dim
    std::vector<double> inv_freq;    // [rot_dim / 2]: angle(pos, i) = pos * inv_freq[i]
    // Frequencies a context uses instead when its max_seq exceeds long_after (Phi-3's
    // longrope: the choice is made per context, as llama.cpp does); empty: none.
    std::vector<double> inv_freq_long;
    uint32_t long_after = 0;
    float attention_factor = 1.0f;   // cos and sin are multiplied by it (longrope, YaRN)

    uint32_t half() const { return rot_dim / 2; }
    // The frequencies a context of max_seq positions uses.
    const std::vector<double> &freqs_for(uint32_t max_seq) const {
        return !inv_freq_long.empty() && max_seq > long_after ? inv_freq_long : inv_freq;
    }
};

// Unscaled RoPE: inv_freq[i] = theta^(-2i / rot_dim).
RopeSpec rope_default(double theta, uint32_t rot_dim);

// cos/sin tables [n_pos][spec.half()] for a context of n_pos positions: angle = pos *
// inv_freq[i] in double, times attention_factor, rounded once.
void rope_tables(const RopeSpec &spec, uint32_t n_pos, float *cos, float *sin);

} // namespace gpt
