// swiglu.cuh - SwiGLU or GeGLU: ff = act(gate) * up from the fused gate|up projection.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// gu: [rows][2 * f] (gate columns then up columns); ff: [rows][f]; both act_dtype.
// act: the gate's activation code (dtype.cuh's ActCode): ACT_SILU (SwiGLU) or
// ACT_GELU_TANH (GeGLU).
cudaError_t launch_swiglu(const void *gu, void *ff, uint32_t rows, uint32_t f, int act, int act_dtype, cudaStream_t stream);
