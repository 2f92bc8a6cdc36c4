// softcap.cuh - logit soft-capping after a GEMM (Gemma-2): y = cap * tanh(y / cap). The
// decode GEMV fuses the same step (GemvArgs::softcap).
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// y: n f32 values, capped in place; cap > 0 (nothing is launched for cap <= 0).
cudaError_t launch_softcap(float *y, uint64_t n, float cap, cudaStream_t stream);
