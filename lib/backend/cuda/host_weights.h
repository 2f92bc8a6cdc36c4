// host_weights.h - weights the GPU reads where they lie in host memory (a file mapping or a
// buffer): the span registered with the driver as mapped, read-only memory, or used as it is
// where the GPU walks the host's page tables itself.
#pragma once

#include <cstdint>
#include <string>

namespace gpt::cuda {

class HostWeights {
public:
    HostWeights() = default;
    HostWeights(const HostWeights &) = delete;
    HostWeights &operator=(const HostWeights &) = delete;
    ~HostWeights() { unmap(); }

    // Makes [lo, hi) readable by `device` (the current device). read_only_mapping: a PROT_READ
    // file mapping (registered with cudaHostRegisterReadOnly, and over whole pages, which a
    // mapping owns). Returns false with why() set, and nothing kept, when the driver refuses.
    bool map(int device, const uint8_t *lo, const uint8_t *hi, bool read_only_mapping);
    // The device's address of host byte p (inside the span given to map).
    const void *device_pointer(const void *p) const {
        return static_cast<const uint8_t *>(p) + offset_;
    }
    const std::string &why() const { return why_; }
    // Undoes map (before the memory goes). Safe to repeat.
    void unmap();

private:
    void *registered_ = nullptr; // the start of what cudaHostRegister pinned, if anything
    intptr_t offset_ = 0;        // device address - host address
    std::string why_;
};

} // namespace gpt::cuda
