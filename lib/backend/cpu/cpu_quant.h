// cpu_quant.h - matrix products with q8/q4 weights (core/quant.h) read straight from their
// packed bytes: no dequantized row is written. Three kernels compute the same sum in the same
// order: a portable one (plain C++), AVX2 (+FMA, F16C; picked at run time on x86-64) and NEON
// (aarch64). Per output o and row r of x, with g the group size:
//   16 partial sums p[l] (l < 16) per group: p[l] += q[c] * x[c] for the group's columns c
//   with c % 16 == l, in column order; then eight group sums a[l] = p[l] + p[l + 8];
//   eight running totals t[l] += a[l] * scale (scale: the group's f16 scale as f32), in group
//   order; then y = ((t0 + t4) + (t2 + t6)) + ((t1 + t5) + (t3 + t7)), plus the bias.
// AVX2 and NEON fuse each multiply-add (one rounding); the portable kernel fuses them too where
// the compiler says fma is fast (FP_FAST_FMAF: aarch64, x86 built for FMA), so there it gives
// the same bits as the SIMD kernel, and elsewhere (baseline x86-64, where std::fma would be a
// library call) rounds the product and the sum separately. Against the exact sum of the
// dequantized products the error is within about (g / 16 + K / g + 4) * 2^-24 * sum |x * w|
// (each term passes through at most that many roundings; twice that unfused); the tests hold
// every kernel to (K + 3) * 2^-24 * sum |x * w|, the f32 dot product's bound.
#pragma once

#include "backend/backend.h"
#include "core/tensor.h"

#include <cstdint>

namespace gpt::cpu {

enum class QuantKernel {
    Portable, // plain C++, any CPU
    Simd,     // AVX2 + FMA + F16C on x86-64, NEON on aarch64
};

// Whether this CPU (and build) can run the kernel; Portable always can.
bool quant_kernel_available(QuantKernel k);
// The fastest available kernel (checked once).
QuantKernel best_quant_kernel();
// Whether the portable kernel fuses its multiply-adds (then it matches Simd bit for bit).
bool quant_portable_fused();

// y[r][o] = x[r][:] . w[o][:] (+ bias[o]) for rows r < n_rows and outputs o in [o_begin,
// o_end), w quantized (Q8 or Q4, group dividing w.cols, a multiple of 32). x: [n_rows][w.cols],
// y: [n_rows][y_stride]. scratch: w.cols floats (the portable kernel widens each output's
// integers there once for all rows). An unavailable `kernel` runs the portable one.
void quant_matmul(QuantKernel kernel, const float *x, uint32_t n_rows, const Weight &w, const float *bias,
                  uint64_t o_begin, uint64_t o_end, float *y, uint64_t y_stride, float *scratch);

// x86-64: whether the CPU has AVX2, FMA and F16C (checked once); false elsewhere. The 16-bit
// float paths of cpu_ops.cpp use it too.
bool have_avx2_fma_f16c();

} // namespace gpt::cpu
