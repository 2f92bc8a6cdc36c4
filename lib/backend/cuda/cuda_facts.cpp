// cuda_facts.cpp - what a CUDA device says of itself: integrated or not, how it reaches host
// memory, compute capability, SMs and memory (gpt_device_get_info).
#include "backend/backend.h"
#include "backend/cuda/cuda_check.h"
#include "core/error.h"

#include <cuda_runtime.h>

namespace gpt {

namespace {
bool attribute(cudaDeviceAttr what, int ordinal) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, what, ordinal) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return v != 0;
}
} // namespace

DeviceFacts cuda_device_facts(int ordinal) {
    const int n = cuda_device_count();
    if (ordinal < 0 || ordinal >= n) fail(GPT_ERR_UNSUPPORTED, "CUDA device %d asked about but %d available (%s)", ordinal, n, cuda_build_info());
    cudaDeviceProp prop;
    GPT_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
    DeviceFacts f;
    f.name = prop.name;
    f.integrated = attribute(cudaDevAttrIntegrated, ordinal);
    f.pageable_access = attribute(cudaDevAttrPageableMemoryAccess, ordinal);
    f.host_mapped = attribute(cudaDevAttrCanMapHostMemory, ordinal);
    f.cc_major = (uint32_t)prop.major;
    f.cc_minor = (uint32_t)prop.minor;
    f.multiprocessors = (uint32_t)prop.multiProcessorCount;
    // cudaMemGetInfo reports on the current device: select it, then restore the caller's.
    int previous = 0;
    GPT_CUDA_CHECK(cudaGetDevice(&previous));
    GPT_CUDA_CHECK(cudaSetDevice(ordinal));
    size_t free = 0, total = 0;
    const cudaError_t e = cudaMemGetInfo(&free, &total);
    cudaSetDevice(previous);
    GPT_CUDA_CHECK(e);
    f.total_bytes = total;
    f.free_bytes = free;
    return f;
}

bool cuda_is_integrated(int ordinal) noexcept { return ordinal >= 0 && attribute(cudaDevAttrIntegrated, ordinal); }

} // namespace gpt
