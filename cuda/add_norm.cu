// add_norm.cu - one block per row; statistics in f32 with a two-pass mean/variance (the row
// is re-read from L1/L2, which is cheaper than the accuracy lost by E[x^2] - E[x]^2).
#include "add_norm.cuh"
#include "common.cuh"

using namespace gpt_cuda;

template <typename T>
static __global__ void add_norm_kernel(float *x, const T *delta, const float *w, const float *b, float eps, int rms,
                                       uint32_t rows, uint32_t d, T *h) {
    __shared__ float scratch[32];
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t r = blockIdx.x;
    if (r >= rows) return;
    float *xr = x + (uint64_t)r * d;
    const T *dr = delta ? delta + (uint64_t)r * d : nullptr;
    float sum = 0.0f;
    for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) {
        float v = xr[i];
        if (dr) {
            v += to_f32(dr[i]);
            xr[i] = v;
        }
        sum += v;
    }
    float mean = 0.0f;
    if (!rms) mean = block_sum(sum, scratch) / d;
    float sq = 0.0f;
    for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) {
        const float c = xr[i] - mean;
        sq += c * c;
    }
    const float inv = rsqrtf(block_sum(sq, scratch) / d + eps);
    T *hr = h + (uint64_t)r * d;
    for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) {
        float v = (xr[i] - mean) * inv * w[i];
        if (!rms && b) v += b[i];
        hr[i] = from_f32<T>(v);
    }
}

cudaError_t launch_add_norm(float *x, const void *delta, const float *w, const float *b, float eps, int rms,
                            uint32_t rows, uint32_t d, void *h, int act_dtype, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    const unsigned threads = d >= 1024 ? 1024 : ((d + 31) / 32) * 32;
    cudaError_t e2 = cudaSuccess;
    cudaError_t e = dispatch_dtype(act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(add_norm_kernel<T>, rows, threads, 0, stream, x, (const T *)delta, w, b, eps, rms, rows, d, (T *)h);
    });
    return e != cudaSuccess ? e : e2;
}
