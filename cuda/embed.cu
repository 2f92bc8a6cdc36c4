// embed.cu - one block per row; threads stride over the width.
#include "embed.cuh"
#include "common.cuh"

using namespace gpt_cuda;

template <typename T>
static __global__ void embed_kernel(const int32_t *tokens, const int32_t *positions, const T *tok, const T *pos,
                                    uint32_t rows, uint32_t d, float scale, float *x) {
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    const T *te = tok + (uint64_t)tokens[r] * d;
    const T *pe = pos ? pos + (uint64_t)positions[r] * d : nullptr;
    float *xr = x + (uint64_t)r * d;
    for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) xr[i] = to_f32(te[i]) * scale + (pe ? to_f32(pe[i]) : 0.0f);
}

cudaError_t launch_embed(const int32_t *tokens, const int32_t *positions, const void *tok, const void *pos,
                         int table_dtype, uint32_t rows, uint32_t d, float scale, float *x, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    cudaError_t e2 = cudaSuccess;
    cudaError_t e = dispatch_dtype(table_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(embed_kernel<T>, rows, 256, 0, stream, tokens, positions, (const T *)tok, (const T *)pos, rows, d, scale, x);
    });
    return e != cudaSuccess ? e : e2;
}

// Element i of row `row` of a quantized [n_rows][d] table (lib/core/quant.h's layout).
static __device__ float quant_element(const uint8_t *t, uint64_t n_rows, bool q4, uint32_t group, uint32_t d, uint64_t row,
                                      uint32_t i) {
    const uint64_t row_bytes = q4 ? d / 2 : d;
    const __half *scales = reinterpret_cast<const __half *>(t + n_rows * row_bytes);
    const uint8_t b = t[row * row_bytes + (q4 ? i / 2 : i)];
    const int q = q4 ? (int)((i & 1) ? b >> 4 : b & 15) - 8 : (int)(int8_t)b;
    return (float)q * __half2float(scales[row * (d / group) + i / group]);
}

static __global__ void embed_quant_kernel(const int32_t *tokens, const int32_t *positions, const uint8_t *tok, uint64_t tok_rows,
                                          const uint8_t *pos, uint64_t pos_rows, bool q4, uint32_t group, uint32_t rows,
                                          uint32_t d, float scale, float *x) {
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    float *xr = x + (uint64_t)r * d;
    for (uint32_t i = threadIdx.x; i < d; i += blockDim.x)
        xr[i] = quant_element(tok, tok_rows, q4, group, d, (uint64_t)tokens[r], i) * scale +
                (pos ? quant_element(pos, pos_rows, q4, group, d, (uint64_t)positions[r], i) : 0.0f);
}

cudaError_t launch_embed_quant(const int32_t *tokens, const int32_t *positions, const void *tok, uint64_t tok_rows,
                               const void *pos, uint64_t pos_rows, int wq, uint32_t group, uint32_t rows, uint32_t d,
                               float scale, float *x, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if ((wq != Q8 && wq != Q4) || group == 0 || d % group != 0 || d % 2 != 0) return cudaErrorInvalidValue;
    return launch_pdl(embed_quant_kernel, rows, 256, 0, stream, tokens, positions, static_cast<const uint8_t *>(tok), tok_rows,
                      static_cast<const uint8_t *>(pos), pos_rows, wq == Q4, group, rows, d, scale, x);
}
