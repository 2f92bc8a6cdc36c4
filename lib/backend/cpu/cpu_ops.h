// cpu_ops.h - the reference math, one plain function per op, single-threaded over the rows
// it is given. The CPU executor runs them in parallel; the CUDA kernel tests use them as
// the oracle. Activations are f32; matrix weights may be f32, f16 or bf16 (widened here), or q8/q4
// (core/quant.h; their products are cpu_quant.h's kernels).
#pragma once

#include "backend/backend.h"
#include "core/tensor.h"

#include <cstdint>

namespace gpt::cpu {

// dst[0..n) = src[0..n) widened to f32.
void widen(const void *src, DType dtype, uint64_t n, float *dst);
// sum a[i] * b[i] (vectorised; summation order differs from a naive loop).
float dot(const float *a, const float *b, uint64_t n);

// out[0..w.cols) = row `row` of a matrix weight (any dtype, quantized ones dequantized) in f32.
void embedding_row(const Weight &w, uint64_t row, float *out);

// y[r][o] = x[r][:] . w[o][:] (+ bias[o]) for rows r in [0, n_rows) and outputs o in
// [o_begin, o_end). x: [n_rows][w.cols], y: [n_rows][y_stride]. scratch: w.cols floats (used
// for f16/bf16 weights: each row is widened there once; for quantized ones, cpu_quant.h).
void matmul_block(const float *x, uint32_t n_rows, const Weight &w, const float *bias, uint64_t o_begin,
                  uint64_t o_end, float *y, uint64_t y_stride, float *scratch);

// One row: out = (x - mean) / sqrt(var + eps) * w + b.
void layer_norm(const float *x, const float *w, const float *b, float eps, uint32_t d, float *out);
// One row: out = x / sqrt(mean(x^2) + eps) * w.
void rms_norm(const float *x, const float *w, float eps, uint32_t d, float *out);

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): GELU, tanh approximation.
float gelu_tanh(float x);
// 0.5 x (1 + erf(x / sqrt(2))): GELU, exact (PyTorch's nn.GELU()).
float gelu_erf(float x);
// x * sigmoid(x)
float silu(float x);
// The FFN activation `a` applied to x (NONE: x).
float activate(Activation a, float x);

// Rotate-half RoPE on the first rot_dim entries of one head vector, with cos/sin[rot_dim / 2]
// for its position (entries past rot_dim are left as they are).
void rope_rotate_half(float *v, uint32_t rot_dim, const float *cos, const float *sin);

// Attention of one query head over the keys/values it sees, [0, n_keys):
// out[hd] = softmax(s_t) weighted sum of v_t, s_t = q . k_t * scale, soft-capped to
// softcap * tanh(s_t / softcap) when softcap > 0. k, v: [n_keys][hd] contiguous.
// scores: n_keys floats of scratch.
void attend(const float *q, const float *k, const float *v, uint32_t n_keys, uint32_t hd, float scale, float softcap,
            float *scores, float *out);

} // namespace gpt::cpu
