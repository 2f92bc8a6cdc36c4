// gemv_epilogue.cuh - what the GEMV kernels (float and quantized) apply to each output sum
// after the bias: the activation, the GLU's product with the up row, the soft-cap.
#pragma once

#include "common.cuh"

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

} // namespace gpt_cuda
