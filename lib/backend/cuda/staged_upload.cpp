// staged_upload.cpp - see staged_upload.h.
#include "backend/cuda/staged_upload.h"

#include "backend/cuda/cuda_check.h"
#include "core/error.h"
#include "core/parallel.h"

#include <algorithm>
#include <cstring>
#include <shared_mutex>
#include <vector>

namespace gpt::cuda {

namespace {

// dst[0, n) = src[0, n) on up to 8 threads (1 MiB shares): the page faults of a fresh file
// mapping and the copy itself run in parallel.
void parallel_copy(uint8_t *dst, const uint8_t *src, uint64_t n) {
    constexpr uint64_t kShare = 1u << 20;
    const uint64_t shares = (n + kShare - 1) / kShare;
    parallel_for((size_t)shares, 8,
                 [&](size_t s) { std::memcpy(dst + s * kShare, src + s * kShare, (size_t)std::min(kShare, n - s * kShare)); });
}

} // namespace

void StagedUpload::start() {
    // Locked against other threads' captures (capture_mutex): allocations are not allowed
    // while a stream of the process is being captured.
    std::unique_lock<std::shared_mutex> lock(capture_mutex());
    GPT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (int i = 0; i < 2; i++) {
        GPT_CUDA_CHECK(cudaHostAlloc(&buf_[i], kPiece, cudaHostAllocDefault));
        GPT_CUDA_CHECK(cudaEventCreateWithFlags(&done_[i], cudaEventDisableTiming));
    }
}

void StagedUpload::copy(void *dst, const void *src, uint64_t n) {
    if (n == 0) return;
    if (n > kPiece) fail(GPT_ERR_INTERNAL, "staged upload of %llu bytes, more than a piece", (unsigned long long)n);
    if (!stream_) start();
    const unsigned b = next_;
    next_ ^= 1;
    GPT_CUDA_CHECK(cudaEventSynchronize(done_[b])); // the buffer's previous transfer has landed
    parallel_copy(static_cast<uint8_t *>(buf_[b]), static_cast<const uint8_t *>(src), n);
    std::unique_lock<std::shared_mutex> lock(capture_mutex());
    GPT_CUDA_CHECK(cudaMemcpyAsync(dst, buf_[b], n, cudaMemcpyHostToDevice, stream_));
    GPT_CUDA_CHECK(cudaEventRecord(done_[b], stream_));
}

void StagedUpload::finish() {
    if (stream_) GPT_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

StagedUpload::~StagedUpload() {
    if (!stream_) return;
    std::unique_lock<std::shared_mutex> lock(capture_mutex());
    cudaStreamSynchronize(stream_);
    for (int i = 0; i < 2; i++) {
        if (buf_[i]) cudaFreeHost(buf_[i]);
        if (done_[i]) cudaEventDestroy(done_[i]);
    }
    cudaStreamDestroy(stream_);
    cudaGetLastError(); // a failure here has nobody to report to
}

} // namespace gpt::cuda
