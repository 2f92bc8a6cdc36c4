// cuda_check.cpp - error mapping and counted allocations for the CUDA backend.
#include "backend/cuda/cuda_check.h"

#include "backend/cuda/cublas_loader.h"

#include "core/error.h"

#include <atomic>

namespace gpt::cuda {

static std::atomic<uint64_t> g_allocations{0};
static std::atomic<int64_t> g_live{0}; // allocations not yet freed

std::shared_mutex &capture_mutex() {
    static std::shared_mutex m;
    return m;
}

void check(cudaError_t e, const char *call, const char *file, int line) {
    if (e == cudaSuccess) return;
    cudaGetLastError(); // clear a non-sticky error so the process stays usable
    const gpt_status st = e == cudaErrorMemoryAllocation ? GPT_ERR_OUT_OF_MEMORY : GPT_ERR_DEVICE;
    fail(st, "CUDA error %s (%s) in %s at %s:%d", cudaGetErrorName(e), cudaGetErrorString(e), call, file, line);
}

void check(cublasStatus_t s, const char *call, const char *file, int line) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    const gpt_status st = s == CUBLAS_STATUS_ALLOC_FAILED ? GPT_ERR_OUT_OF_MEMORY : GPT_ERR_DEVICE;
    const CublasApi *api = cublas_if_loaded();
    fail(st, "cuBLAS error %s (%s) in %s at %s:%d", api ? api->status_name(s) : "?", api ? api->status_string(s) : "?", call,
         file, line);
}

void *device_alloc(uint64_t bytes, const char *what) {
    void *p = nullptr;
    std::unique_lock<std::shared_mutex> lock(capture_mutex());
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        fail(e == cudaErrorMemoryAllocation ? GPT_ERR_OUT_OF_MEMORY : GPT_ERR_DEVICE,
             "cannot allocate %llu bytes of GPU memory for %s: %s (%llu of %llu bytes free)", (unsigned long long)bytes, what,
             cudaGetErrorString(e), (unsigned long long)free_b, (unsigned long long)total_b);
    }
    g_allocations.fetch_add(1);
    g_live.fetch_add(1);
    return p;
}

void *pinned_alloc(uint64_t bytes, const char *what) {
    void *p = nullptr;
    std::unique_lock<std::shared_mutex> lock(capture_mutex());
    cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 64, cudaHostAllocDefault);
    if (e != cudaSuccess) {
        cudaGetLastError();
        fail(GPT_ERR_OUT_OF_MEMORY, "cannot allocate %llu bytes of pinned host memory for %s: %s", (unsigned long long)bytes,
             what, cudaGetErrorString(e));
    }
    g_allocations.fetch_add(1);
    g_live.fetch_add(1);
    return p;
}

void device_free(void *p) {
    if (!p) return;
    std::unique_lock<std::shared_mutex> lock(capture_mutex());
    cudaFree(p);
    g_live.fetch_sub(1);
}
void pinned_free(void *p) {
    if (!p) return;
    std::unique_lock<std::shared_mutex> lock(capture_mutex());
    cudaFreeHost(p);
    g_live.fetch_sub(1);
}
uint64_t allocation_count() { return g_allocations.load(); }
int64_t live_allocations() { return g_live.load(); }

} // namespace gpt::cuda
