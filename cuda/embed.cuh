// embed.cuh - token (+ learned position) embedding into the f32 residual stream.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

// x[r][0..d) = tok[tokens[r]] * scale (+ pos[positions[r]]), for r < rows. tok/pos in
// table_dtype. pos may be null (RoPE models); scale 1 for none (Gemma: sqrt(d_model)).
cudaError_t launch_embed(const int32_t *tokens, const int32_t *positions, const void *tok, const void *pos,
                         int table_dtype, uint32_t rows, uint32_t d, float scale, float *x, cudaStream_t stream);
// The same for quantized tables (Q8 / Q4, dtype.cuh; pos, when given, in the same dtype and
// group): tok_rows and pos_rows are the tables' row counts, which place their scale planes.
cudaError_t launch_embed_quant(const int32_t *tokens, const int32_t *positions, const void *tok, uint64_t tok_rows,
                               const void *pos, uint64_t pos_rows, int wq, uint32_t group, uint32_t rows, uint32_t d,
                               float scale, float *x, cudaStream_t stream);
