// cuda_check.h - every CUDA runtime and cuBLAS call goes through GPT_CUDA_CHECK, which turns
// a failure into gpt::Error(GPT_ERR_DEVICE, or GPT_ERR_OUT_OF_MEMORY) naming the call, the
// source line and the driver's message, instead of aborting.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <shared_mutex>

namespace gpt::cuda {

void check(cudaError_t e, const char *call, const char *file, int line);
void check(cublasStatus_t s, const char *call, const char *file, int line);

// Device and pinned-host allocations, counted (tests prove forward and generate add none).
void *device_alloc(uint64_t bytes, const char *what);
void *pinned_alloc(uint64_t bytes, const char *what);
void device_free(void *p);
void pinned_free(void *p);
uint64_t allocation_count();
// Those not freed yet (a failed load must leave this where it was).
int64_t live_allocations();

// Stream capture and the calls that may synchronise the device (allocation, freeing, stream
// and cuBLAS handle creation and destruction, synchronous copies) exclude each other across
// all contexts of the process: such a call on one thread while another thread captures a
// decode step invalidates that capture. Captures share the lock (take it with
// std::shared_lock); the others take it alone (std::unique_lock). Held for microseconds
// except while a context or a model is created or freed.
std::shared_mutex &capture_mutex();

} // namespace gpt::cuda

#define GPT_CUDA_CHECK(call) ::gpt::cuda::check((call), #call, __FILE__, __LINE__)
