// pdl.cu - the switch for programmatic dependent launch (see common.cuh).
#include "common.cuh"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace gpt_cuda {

bool pdl_enabled() {
    static const bool allowed = [] {
        const char *v = std::getenv("GPT_CUDA_NO_PDL");
        return !(v && std::strcmp(v, "0") != 0 && *v);
    }();
    if (!allowed) return false;
    // The launch attribute exists from compute capability 9.0 (Hopper); older GPUs (Jetson
    // Orin 8.7, Ampere) launch normally. Cached per device (racing writers store the same value).
    static std::atomic<int> major_of[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        cudaGetLastError();
        return false;
    }
    int major = major_of[dev].load(std::memory_order_relaxed);
    if (major == 0) {
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
            cudaGetLastError();
            major = -1;
        }
        major_of[dev].store(major, std::memory_order_relaxed);
    }
    return major >= 9;
}

} // namespace gpt_cuda
