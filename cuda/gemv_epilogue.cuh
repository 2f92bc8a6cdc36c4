// gemv_epilogue.cuh - what the GEMV kernels (float and quantized) apply to each output sum
// after the bias: the activation, the GLU's product with the up row, the soft-cap; and the
// quantized kernels' whole store of an output.
#pragma once

#include "common.cuh"
#include "gemv.cuh"

namespace gpt_cuda {

// Out of line: one copy of the activation code serves every kernel of a file (it runs once
// per output). act is a run-time code (GELU tanh or erf, ReLU, SiLU), so no activation adds a
// kernel. pair: act(v) * up (the GLU's gate); else act(v); then the soft-cap when softcap > 0.
static __device__ __noinline__ float gemv_epilogue(float v, float up, bool pair, int act, float softcap) {
    v = activate(v, act);
    if (pair) v *= up;
    if (softcap > 0.0f) v = soft_cap(v, softcap);
    return v;
}

// One output (row r, column col) of a quantized GEMV: its sum (pair: the gate's, and the up
// row's) + bias, the epilogue, then stored as launch_gemv's arguments ask (added to the
// residual, f32 or f16).
__device__ __forceinline__ void store_quant_output(const GemvArgs &a, bool pair, uint32_t col, uint32_t r, float sum, float up) {
    float v = sum + (a.bias ? a.bias[col] : 0.0f);
    if (pair) { // gate and up rounded to f16 first, as the unfused path stores them
        v = gemv_epilogue(__half2float(__float2half_rn(v)), __half2float(__float2half_rn(up)), true, a.act, a.softcap);
    } else if (a.act || a.softcap > 0.0f) {
        v = gemv_epilogue(v, 0.0f, false, a.act, a.softcap);
    }
    const uint64_t o = (uint64_t)r * a.n + col;
    if (a.residual) a.residual[o] += v;
    else if (a.y_f32) static_cast<float *>(a.y)[o] = v;
    else static_cast<__half *>(a.y)[o] = __float2half_rn(v);
}

} // namespace gpt_cuda
