// swiglu.cu - elementwise, grid-stride; the gate's activation (SiLU or GELU) is a run-time code.
#include "swiglu.cuh"
#include "common.cuh"

using namespace gpt_cuda;

template <typename T>
static __global__ void swiglu_kernel(const T *gu, T *ff, uint64_t total, uint32_t f, int act) {
    pdl_wait();
    pdl_launch_dependents();
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < total; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t r = i / f, c = i % f;
        const float g = to_f32(gu[r * 2 * f + c]), u = to_f32(gu[r * 2 * f + f + c]);
        ff[i] = from_f32<T>(activate(g, act) * u);
    }
}

cudaError_t launch_swiglu(const void *gu, void *ff, uint32_t rows, uint32_t f, int act, int act_dtype, cudaStream_t stream) {
    const uint64_t total = (uint64_t)rows * f;
    if (total == 0) return cudaSuccess;
    const unsigned blocks = (unsigned)((total + 255) / 256 < 65535 ? (total + 255) / 256 : 65535);
    cudaError_t e2 = cudaSuccess;
    cudaError_t e = dispatch_dtype(act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(swiglu_kernel<T>, blocks, 256, 0, stream, (const T *)gu, (T *)ff, total, f, act);
    });
    return e != cudaSuccess ? e : e2;
}
