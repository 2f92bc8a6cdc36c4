// softcap.cu - elementwise, grid-stride.
#include "softcap.cuh"
#include "common.cuh"

using namespace gpt_cuda;

static __global__ void softcap_kernel(float *y, uint64_t n, float cap) {
    pdl_wait();
    pdl_launch_dependents();
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        y[i] = soft_cap(y[i], cap);
}

cudaError_t launch_softcap(float *y, uint64_t n, float cap, cudaStream_t stream) {
    if (n == 0 || !(cap > 0.0f)) return cudaSuccess;
    const unsigned blocks = (unsigned)((n + 255) / 256 < 65535 ? (n + 255) / 256 : 65535);
    return launch_pdl(softcap_kernel, blocks, 256, 0, stream, y, n, cap);
}
