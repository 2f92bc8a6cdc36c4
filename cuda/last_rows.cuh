// last_rows.cuh - keeps each sequence's last row of a step's buffers: row b takes row
// b * n_tokens + n_tokens - 1, for b < n_seqs, in place. A prompt step whose logits only the
// last rows feed runs its final layer after its attention on those rows alone.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

inline constexpr uint32_t kLastRowsMaxBuffers = 3; // X, H, QKV

struct LastRowsArgs {
    void *buf[kLastRowsMaxBuffers];            // [n_seqs * n_tokens][row_bytes / 2] each
    uint32_t row_bytes[kLastRowsMaxBuffers];   // even
    uint32_t n_buffers, n_seqs, n_tokens;
};

cudaError_t launch_last_rows(const LastRowsArgs &a, cudaStream_t stream);
