// bias_act.cuh - the GEMM epilogue: add a bias and optionally apply an activation, in place.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// v = act(y[r][i] + bias[i]) for r < rows, i < n; stored back to y, or, when residual is
// given, added to residual[r][i] (f32) instead. y in act_dtype; bias f32 (may be null);
// act is an activation code (dtype.cuh's ActCode): 0 none, 1 GELU tanh
// 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))), 2 GELU erf 0.5 v (1 + erf(v / sqrt(2))),
// 3 ReLU, 4 SiLU.
cudaError_t launch_bias_act(void *y, const float *bias, int act, float *residual, uint32_t rows, uint32_t n,
                            int act_dtype, cudaStream_t stream);
