// staged_upload.h - host-to-device copies of the weights through two pinned buffers: threads
// copy a piece from pageable memory (the file mapping) into one buffer while the DMA engine
// moves the previous piece from the other. A pageable cudaMemcpy takes the page faults of a
// fresh mapping one by one on the calling thread and copies through the driver's own bounce
// buffer; here the faults and the copy are spread over threads and the transfer overlaps
// them. The buffers live for one load only (nothing pinned is left behind).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace gpt::cuda {

class StagedUpload {
public:
    static constexpr uint64_t kPiece = 32ull << 20; // bytes a buffer holds

    StagedUpload() = default;
    ~StagedUpload(); // waits for the copies in flight, frees the buffers; never throws
    StagedUpload(const StagedUpload &) = delete;
    StagedUpload &operator=(const StagedUpload &) = delete;

    // Copies n <= kPiece bytes from host src (pageable) to device dst. When it returns, src
    // has been read (its pages may go); the device bytes are written by finish().
    void copy(void *dst, const void *src, uint64_t n);
    // Waits until every copy has landed. Throws on a CUDA error.
    void finish();

private:
    void start(); // the buffers, events and stream, on first use
    void *buf_[2] = {nullptr, nullptr};
    cudaEvent_t done_[2] = {nullptr, nullptr};
    cudaStream_t stream_ = nullptr;
    unsigned next_ = 0;
};

} // namespace gpt::cuda
