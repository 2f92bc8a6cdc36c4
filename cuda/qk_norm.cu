// qk_norm.cu - one block per row: a block-wide sum of squares over q, then over k; each
// thread rescales the elements it read.
#include "qk_norm.cuh"
#include "common.cuh"

using namespace gpt_cuda;

namespace {

constexpr uint32_t kThreads = 256;

template <typename T> __device__ void rms_in_place(T *v, uint32_t n, const float *w, float eps, float *scratch) {
    float ss = 0.0f;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float t = to_f32(v[i]);
        ss += t * t;
    }
    const float inv = rsqrtf(block_sum(ss, scratch) / n + eps);
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) v[i] = from_f32<T>(to_f32(v[i]) * inv * w[i]);
}

template <typename T>
__global__ void __launch_bounds__(kThreads) qk_norm_whole_kernel(T *qkv, uint32_t q_dim, uint32_t kv_dim, const float *q_w,
                                                                 const float *k_w, float eps) {
    __shared__ float scratch[32];
    pdl_wait();
    pdl_launch_dependents();
    T *row = qkv + (uint64_t)blockIdx.x * (q_dim + 2ull * kv_dim);
    if (q_w) rms_in_place(row, q_dim, q_w, eps, scratch);
    if (k_w) rms_in_place(row + q_dim, kv_dim, k_w, eps, scratch);
}

} // namespace

cudaError_t launch_qk_norm_whole(void *qkv, uint32_t rows, uint32_t q_dim, uint32_t kv_dim, const float *q_w,
                                 const float *k_w, float eps, int act_dtype, cudaStream_t stream) {
    if (rows == 0 || (!q_w && !k_w)) return cudaSuccess;
    if (q_dim == 0 || kv_dim == 0) return cudaErrorInvalidValue;
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(qk_norm_whole_kernel<T>, rows, kThreads, 0, stream, static_cast<T *>(qkv), q_dim, kv_dim, q_w, k_w, eps);
    });
    return e != cudaSuccess ? e : e2;
}
