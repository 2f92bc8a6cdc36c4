// bias_act.cu - elementwise, grid-stride over rows * n.
#include "bias_act.cuh"
#include "common.cuh"

using namespace gpt_cuda;

template <typename T>
static __global__ void bias_act_kernel(T *y, const float *bias, int act, float *residual, uint64_t total, uint32_t n) {
    pdl_wait();
    pdl_launch_dependents();
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < total; i += (uint64_t)gridDim.x * blockDim.x) {
        float v = to_f32(y[i]);
        if (bias) v += bias[i % n];
        v = activate(v, act);
        if (residual) residual[i] += v;
        else y[i] = from_f32<T>(v);
    }
}

cudaError_t launch_bias_act(void *y, const float *bias, int act, float *residual, uint32_t rows, uint32_t n,
                            int act_dtype, cudaStream_t stream) {
    const uint64_t total = (uint64_t)rows * n;
    if (total == 0 || (!bias && !act && !residual)) return cudaSuccess;
    const unsigned blocks = (unsigned)((total + 255) / 256 < 65535 ? (total + 255) / 256 : 65535);
    cudaError_t e2 = cudaSuccess;
    cudaError_t e = dispatch_dtype(act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(bias_act_kernel<T>, blocks, 256, 0, stream, (T *)y, bias, act, residual, total, n);
    });
    return e != cudaSuccess ? e : e2;
}
