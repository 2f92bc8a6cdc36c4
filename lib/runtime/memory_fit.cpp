// memory_fit.cpp - the fit decision of memory_fit.h.
#include "runtime/memory_fit.h"

namespace gpt {

MemoryFit check_memory_fit(const MemoryPlan &need, const MemoryAvailable &have) {
    MemoryFit fit;
    if (have.shared) {
        // host + device > have, written so that no sum can wrap (a wrapped sum would "fit").
        const bool over = need.device_bytes > have.host_bytes || need.host_bytes > have.host_bytes - need.device_bytes;
        if (have.host_bytes && over) {
            const uint64_t total = need.host_bytes + need.device_bytes;
            fit = {MemoryFit::SHARED, total < need.host_bytes ? UINT64_MAX : total, have.host_bytes};
        }
        return fit;
    }
    if (have.host_bytes && need.host_bytes > have.host_bytes) return {MemoryFit::HOST, need.host_bytes, have.host_bytes};
    if (have.device_bytes && need.device_bytes > have.device_bytes)
        return {MemoryFit::DEVICE, need.device_bytes, have.device_bytes};
    return fit;
}

uint64_t available_bytes(const MemoryAvailable &have) {
    if (have.shared) return have.host_bytes ? have.host_bytes : have.device_bytes;
    return have.device_bytes;
}

} // namespace gpt
