// pdl.cu - the switch for programmatic dependent launch (pdl.cuh), the architecture the
// library's kernels were compiled for on this device, and how many blocks it holds.
#include "common.cuh"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace gpt_cuda {

namespace {
__global__ void arch_probe_kernel() {}
} // namespace

int kernel_arch() {
    // ptxVersion is the virtual architecture (compute_XY, what __CUDA_ARCH__ saw) of the code
    // that runs: a build with PTX for compute_75 only runs sm_75 code on a Hopper GPU, whose
    // compute capability alone would claim features that code lacks. Cached per device
    // (racing writers store the same value).
    static std::atomic<int> arch_of[64];
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        cudaGetLastError();
        return 0;
    }
    int arch = arch_of[dev].load(std::memory_order_relaxed);
    if (arch == 0) {
        cudaFuncAttributes attr{};
        arch = cudaFuncGetAttributes(&attr, arch_probe_kernel) == cudaSuccess ? attr.ptxVersion : -1;
        cudaGetLastError();
        arch_of[dev].store(arch, std::memory_order_relaxed);
    }
    return arch;
}

cudaError_t resident_blocks(const void *kernel, int threads, size_t smem, uint32_t *blocks, uint32_t cluster) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    struct Entry {
        const void *kernel;
        int dev, threads;
        size_t smem;
        uint32_t cluster, blocks;
    };
    static std::mutex mu;
    static Entry cache[64];
    static int used = 0;
    {
        std::lock_guard<std::mutex> lock(mu);
        for (int i = 0; i < used; i++)
            if (cache[i].kernel == kernel && cache[i].dev == dev && cache[i].threads == threads && cache[i].smem == smem &&
                cache[i].cluster == cluster) {
                *blocks = cache[i].blocks;
                return cudaSuccess;
            }
    }
    if (cluster > 1) {
        // Clusters fill the GPCs (groups of SMs) whole, so the count is not SMs x blocks an SM.
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(cluster);
        cfg.blockDim = dim3(threads);
        cfg.dynamicSmemBytes = smem;
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim = {cluster, 1, 1};
        cfg.attrs = &attr;
        cfg.numAttrs = 1;
        int clusters = 0;
        if ((e = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg)) != cudaSuccess) return e;
        *blocks = (uint32_t)(clusters > 0 ? clusters : 1) * cluster;
    } else {
        int per_sm = 0, sms = 0;
        if ((e = cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&per_sm, kernel, threads, smem, cudaOccupancyDefault)) !=
            cudaSuccess)
            return e;
        if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess) return e;
        *blocks = (uint32_t)(per_sm > 0 ? per_sm : 1) * (uint32_t)(sms > 0 ? sms : 1);
    }
    std::lock_guard<std::mutex> lock(mu);
    if (used < 64) cache[used++] = {kernel, dev, threads, smem, cluster, *blocks};
    return cudaSuccess;
}

uint32_t device_sm_count() {
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return (uint32_t)sms;
}

bool pdl_enabled() {
    static const bool allowed = [] {
        const char *v = std::getenv("GPT_CUDA_NO_PDL");
        return !(v && std::strcmp(v, "0") != 0 && *v);
    }();
    // The launch attribute and griddepcontrol exist from compute capability 9.0 (Hopper); on
    // older GPUs (Jetson Orin 8.7, Ampere), and for kernels compiled for an older arch (whose
    // pdl_wait is empty), kernels launch normally.
    return allowed && kernel_arch() >= 90;
}

} // namespace gpt_cuda
