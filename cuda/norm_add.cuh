// norm_add.cuh - a norm after a sublayer (Gemma's post-norms): the residual stream gains the
// normed sublayer output.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// For each row r < rows: x[r] += norm(in[r]) * w, with LayerNorm (no bias) or RMSNorm
// (rms != 0) over d. x: f32 [rows][d]; in: [rows][d] in act_dtype; w: f32 [d].
cudaError_t launch_norm_add(float *x, const void *in, const float *w, float eps, int rms, uint32_t rows, uint32_t d,
                            int act_dtype, cudaStream_t stream);
