// add_norm.cuh - residual add fused with LayerNorm or RMSNorm: one pass over the row.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// For each row r < rows: if delta: x[r] += delta[r] + delta_bias (delta in act_dtype, the
// bias f32 [d] or null: a projection's bias, added here instead of in a kernel of its own);
// h[r] = norm(x[r]) * w (+ b), h in act_dtype. rms != 0 selects RMSNorm (b ignored).
// x: f32 [rows][d]; w, b: f32 [d] (b may be null).
cudaError_t launch_add_norm(float *x, const void *delta, const float *delta_bias, const float *w, const float *b, float eps, int rms,
                            uint32_t rows, uint32_t d, void *h, int act_dtype, cudaStream_t stream);
