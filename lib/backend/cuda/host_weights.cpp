// host_weights.cpp - see host_weights.h. Order of preference:
//   1. the device walks the host's page tables (pageableMemoryAccessUsesHostPageTables: Grace
//      Hopper, recent Jetson Thor drivers): the plain pointer, nothing registered;
//   2. cudaHostRegister(mapped, read-only): pins the pages once, the GPU reads them in place
//      through its device pointer (Jetson Orin, discrete GPUs over the bus);
//   3. registration refused but pageableMemoryAccess (HMM): the plain pointer, pages migrate
//      or fault in on demand;
//   otherwise false: the caller copies the weights to device memory.
#include "backend/cuda/host_weights.h"

#include "backend/cuda/cuda_check.h"

#include <cuda_runtime.h>

#include <unistd.h>

namespace gpt::cuda {

namespace {

int attribute(cudaDeviceAttr a, int device) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, a, device) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return v;
}

} // namespace

bool HostWeights::map(int device, const uint8_t *lo, const uint8_t *hi, bool read_only_mapping) {
    unmap();
    why_.clear();
    if (!lo || hi <= lo) return true; // nothing to read in place
    if (attribute(cudaDevAttrPageableMemoryAccessUsesHostPageTables, device)) {
        offset_ = 0;
        return true;
    }
    const bool pageable = attribute(cudaDevAttrPageableMemoryAccess, device) != 0;
    const bool read_only_ok = attribute(cudaDevAttrHostRegisterReadOnlySupported, device) != 0;
    if (!attribute(cudaDevAttrCanMapHostMemory, device)) {
        if (pageable) return offset_ = 0, true;
        why_ = "the device cannot map host memory (cudaDevAttrCanMapHostMemory is 0)";
        return false;
    }
    if (read_only_mapping && !read_only_ok) {
        if (pageable) return offset_ = 0, true;
        why_ = "the driver cannot register read-only memory (cudaDevAttrHostRegisterReadOnlySupported is 0), which a "
               "read-only file mapping needs (load with GPT_MODEL_NO_MMAP to register a read buffer instead)";
        return false;
    }
    // A mapping owns whole pages: register those around the span. A buffer is registered as
    // given (the bytes around it may belong to someone else).
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t begin = reinterpret_cast<uintptr_t>(lo), end = reinterpret_cast<uintptr_t>(hi);
    if (read_only_mapping) {
        begin = begin / page * page;
        end = (end + page - 1) / page * page;
    }
    void *base = reinterpret_cast<void *>(begin);
    const unsigned flags = cudaHostRegisterMapped | (read_only_ok ? cudaHostRegisterReadOnly : 0u);
    cudaError_t e;
    {
        std::unique_lock<std::shared_mutex> lock(capture_mutex()); // may synchronise the device
        e = cudaHostRegister(base, end - begin, flags);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (pageable) return offset_ = 0, true;
        why_ = std::string("cudaHostRegister of ") + std::to_string((end - begin) >> 20) + " MiB refused: " +
               cudaGetErrorString(e) + (e == cudaErrorMemoryAllocation ? " (the locked-memory limit, ulimit -l?)" : "");
        return false;
    }
    registered_ = base;
    void *dev = nullptr;
    e = cudaHostGetDevicePointer(&dev, base, 0);
    if (e != cudaSuccess) {
        cudaGetLastError();
        why_ = std::string("cudaHostGetDevicePointer failed after registration: ") + cudaGetErrorString(e);
        unmap();
        return false;
    }
    offset_ = static_cast<intptr_t>(reinterpret_cast<uintptr_t>(dev) - begin);
    return true;
}

void HostWeights::unmap() {
    if (registered_) {
        std::unique_lock<std::shared_mutex> lock(capture_mutex());
        cudaHostUnregister(registered_);
        cudaGetLastError();
    }
    registered_ = nullptr;
    offset_ = 0;
}

} // namespace gpt::cuda
