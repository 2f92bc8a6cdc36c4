// memory_fit.h - whether a context's memory fits what its device can give, decided from
// numbers alone (so a test can feed made-up ones).
//
// A discrete GPU has two pools: host memory (MemAvailable) for the pinned buffers, GPU
// memory (cudaMemGetInfo's free) for the KV cache and scratch; each need is checked against
// its own pool. An integrated GPU (Jetson) has one DRAM: host and device needs are added and
// checked against MemAvailable. cudaMemGetInfo is not used there: on such a GPU it reports
// the kernel's MemFree, which counts page cache (the mapped model file, for one) as used, so
// it refuses what would fit (vLLM and SGLang read MemAvailable on integrated GPUs for this).
#pragma once

#include "backend/backend.h"

#include <cstdint>

namespace gpt {

// What the device could give now; 0 for a pool that cannot be told (never checked).
struct MemoryAvailable {
    uint64_t host_bytes = 0;   // MemAvailable
    uint64_t device_bytes = 0; // free GPU memory; ignored when shared
    bool shared = false;       // an integrated GPU: one pool, the host's
};

struct MemoryFit {
    enum Short { NONE, HOST, DEVICE, SHARED } short_of = NONE;
    uint64_t need = 0, have = 0; // of the pool that is short
};

MemoryFit check_memory_fit(const MemoryPlan &need, const MemoryAvailable &have);

// The bytes a GPU can give, as gpt_device_info.available_bytes reports them.
uint64_t available_bytes(const MemoryAvailable &have);

} // namespace gpt
