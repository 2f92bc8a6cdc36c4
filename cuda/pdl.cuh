// pdl.cuh - host-side launch settings shared by the kernels' launchers (pdl.cu): whether
// launches use programmatic dependent launch, the architecture the kernels were built for, how
// many blocks of a kernel the device holds. Host code
// only (lib/backend/cuda includes it); common.cuh includes it for the launchers.
#pragma once
#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>

namespace gpt_cuda {

// Whether launches use the PDL attribute: on by default where the kernels were compiled for
// sm_90 or newer; GPT_CUDA_NO_PDL=1 turns it off (for measuring what it brings).
bool pdl_enabled();
// The architecture the kernels run as on the current device, as 10 x major + minor of the
// virtual architecture they were compiled for (75, 80, 90, ...); 0 when it cannot be told.
// Features that need an arch are chosen by this, not by the device's compute capability.
int kernel_arch();
// Blocks of `kernel` (launched with `threads` threads and `smem` bytes of dynamic shared
// memory) that the current device holds at once: occupancy x SMs, at least 1. Cached per
// kernel, device and size: persistent kernels ask at every launch, and eager decode launches
// every step. With cluster > 1 (sm_90): the blocks of the clusters of that size it holds at once.
cudaError_t resident_blocks(const void *kernel, int threads, size_t smem, uint32_t *blocks, uint32_t cluster = 1);
// The current device's SM count, or 0 when it cannot be told (the error is cleared).
uint32_t device_sm_count();

} // namespace gpt_cuda
