// norm_add.cu - one block per row: the row's statistics in f32 (two passes, mean then
// centred squares, as add_norm.cu and the CPU backend compute them) with common.cuh's block
// reduction, then one pass adding the normed, weighted row to x. The input row is re-read
// from L1/L2 between passes; post-norms run once per sublayer, so registers are not worth
// a second instantiation here.
#include "norm_add.cuh"
#include "common.cuh"

using namespace gpt_cuda;

namespace {

template <typename T>
__global__ void norm_add_kernel(float *x, const T *in, const float *w, float eps, int rms, uint32_t rows, uint32_t d) {
    __shared__ float scratch[32];
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    const T *ir = in + (uint64_t)r * d;
    float *xr = x + (uint64_t)r * d;
    float mean = 0.0f;
    if (!rms) {
        float sum = 0.0f;
        for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) sum += to_f32(ir[i]);
        mean = block_sum(sum, scratch) / d;
    }
    float sq = 0.0f;
    for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) {
        const float c = to_f32(ir[i]) - mean;
        sq += c * c;
    }
    const float inv = rsqrtf(block_sum(sq, scratch) / d + eps);
    for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) xr[i] += (to_f32(ir[i]) - mean) * inv * w[i];
}

} // namespace

cudaError_t launch_norm_add(float *x, const void *in, const float *w, float eps, int rms, uint32_t rows, uint32_t d,
                            int act_dtype, cudaStream_t stream) {
    if (rows == 0 || d == 0) return cudaSuccess;
    const unsigned threads = d >= 1024 ? 1024 : ((d + 31) / 32) * 32;
    cudaError_t e2 = cudaSuccess;
    cudaError_t e = dispatch_dtype(act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(norm_add_kernel<T>, rows, threads, 0, stream, x, (const T *)in, w, eps, rms, rows, d);
    });
    return e != cudaSuccess ? e : e2;
}
