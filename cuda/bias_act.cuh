// bias_act.cuh - the GEMM epilogue: add a bias and optionally apply GELU (tanh), in place.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// v = act(y[r][i] + bias[i]) for r < rows, i < n; stored back to y, or, when residual is
// given, added to residual[r][i] (f32) instead. y in act_dtype; bias f32 (may be null);
// gelu != 0 applies 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))).
cudaError_t launch_bias_act(void *y, const float *bias, int gelu, float *residual, uint32_t rows, uint32_t n,
                            int act_dtype, cudaStream_t stream);
