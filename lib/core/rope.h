// rope.h - rotary position tables, shared by every backend (each copies them where its
// kernels read them).
#pragma once

#include <cstdint>

namespace gpt {

// cos/sin tables [n_pos][head_dim / 2]: angle = pos * theta^(-2i / head_dim), computed in
// double and rounded once.
void rope_tables(float theta, uint32_t head_dim, uint32_t n_pos, float *cos, float *sin);

} // namespace gpt
