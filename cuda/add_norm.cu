// add_norm.cu - one block per row; statistics in f32 with a two-pass mean/variance. Each
// thread keeps its elements of the row in registers (up to kPerThread; wider rows re-read
// them from L1/L2), and loads its norm weights before waiting on the previous kernel, so
// after that wait the row costs one read, two block reductions and one write.
#include "add_norm.cuh"
#include "common.cuh"

using namespace gpt_cuda;

namespace {

constexpr uint32_t kPerThread = 8; // register-resident elements per thread (rows up to 8192)

template <typename T, bool IN_REGS>
__global__ void add_norm_kernel(float *x, const T *delta, const float *delta_bias, const float *w, const float *b, float eps, int rms,
                                uint32_t rows, uint32_t d, T *h) {
    __shared__ float scratch[32];
    const uint32_t r = blockIdx.x;
    float wv[kPerThread], bv[kPerThread], dbv[kPerThread], xv[kPerThread];
    if (IN_REGS) { // weights are never written: fetch them while the previous kernel finishes
#pragma unroll
        for (uint32_t k = 0; k < kPerThread; k++) {
            const uint32_t i = threadIdx.x + k * blockDim.x;
            wv[k] = i < d ? w[i] : 0.0f;
            bv[k] = (i < d && !rms && b) ? b[i] : 0.0f;
            dbv[k] = (i < d && delta_bias) ? delta_bias[i] : 0.0f;
        }
    }
    pdl_wait();
    pdl_launch_dependents();
    if (r >= rows) return;
    float *xr = x + (uint64_t)r * d;
    const T *dr = delta ? delta + (uint64_t)r * d : nullptr;
    T *hr = h + (uint64_t)r * d;
    float sum = 0.0f;
    if (IN_REGS) {
#pragma unroll
        for (uint32_t k = 0; k < kPerThread; k++) {
            const uint32_t i = threadIdx.x + k * blockDim.x;
            xv[k] = i < d ? xr[i] : 0.0f;
            if (i < d && dr) xv[k] += to_f32(dr[i]) + dbv[k];
        }
#pragma unroll
        for (uint32_t k = 0; k < kPerThread; k++) {
            const uint32_t i = threadIdx.x + k * blockDim.x;
            if (i < d && dr) xr[i] = xv[k];
            sum += xv[k];
        }
    } else {
        for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) {
            float v = xr[i];
            if (dr) {
                v += to_f32(dr[i]) + (delta_bias ? delta_bias[i] : 0.0f);
                xr[i] = v;
            }
            sum += v;
        }
    }
    float mean = 0.0f;
    if (!rms) mean = block_sum(sum, scratch) / d;
    float sq = 0.0f;
    if (IN_REGS) {
#pragma unroll
        for (uint32_t k = 0; k < kPerThread; k++) {
            const uint32_t i = threadIdx.x + k * blockDim.x;
            const float c = i < d ? xv[k] - mean : 0.0f;
            sq += c * c;
        }
    } else {
        for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) {
            const float c = xr[i] - mean;
            sq += c * c;
        }
    }
    const float inv = rsqrtf(block_sum(sq, scratch) / d + eps);
    if (IN_REGS) {
#pragma unroll
        for (uint32_t k = 0; k < kPerThread; k++) {
            const uint32_t i = threadIdx.x + k * blockDim.x;
            if (i < d) hr[i] = from_f32<T>((xv[k] - mean) * inv * wv[k] + bv[k]);
        }
    } else {
        for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) {
            float v = (xr[i] - mean) * inv * w[i];
            if (!rms && b) v += b[i];
            hr[i] = from_f32<T>(v);
        }
    }
}

} // namespace

cudaError_t launch_add_norm(float *x, const void *delta, const float *delta_bias, const float *w, const float *b, float eps, int rms,
                            uint32_t rows, uint32_t d, void *h, int act_dtype, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    const unsigned threads = d >= 1024 ? 1024 : ((d + 31) / 32) * 32;
    cudaError_t e2 = cudaSuccess;
    cudaError_t e = dispatch_dtype(act_dtype, [&](auto tag) {
        using T = decltype(tag);
        if (d <= threads * kPerThread)
            e2 = launch_pdl(add_norm_kernel<T, true>, rows, threads, 0, stream, x, (const T *)delta, delta_bias, w, b, eps, rms, rows, d, (T *)h);
        else
            e2 = launch_pdl(add_norm_kernel<T, false>, rows, threads, 0, stream, x, (const T *)delta, delta_bias, w, b, eps, rms, rows, d, (T *)h);
    });
    return e != cudaSuccess ? e : e2;
}
