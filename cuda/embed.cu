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
