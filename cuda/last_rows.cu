// last_rows.cu - one thread per 2-byte column of a buffer (blockIdx.y) moves that column's
// values row by row, b = 0, 1, ...: row b is written only after rows 0..b-1, and the rows
// still to be read (b' * n_tokens + n_tokens - 1 for b' > b) lie past every row written, so
// the move is safe in place with no barrier.
#include "last_rows.cuh"
#include "common.cuh"

using namespace gpt_cuda;

static __global__ void last_rows_kernel(LastRowsArgs a) {
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t i = blockIdx.y, units = a.row_bytes[i] / 2;
    uint16_t *p = static_cast<uint16_t *>(a.buf[i]);
    for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < units; c += gridDim.x * blockDim.x)
        for (uint32_t b = 0; b < a.n_seqs; b++) p[(uint64_t)b * units + c] = p[((uint64_t)b * a.n_tokens + a.n_tokens - 1) * units + c];
}

cudaError_t launch_last_rows(const LastRowsArgs &a, cudaStream_t stream) {
    if (a.n_buffers == 0 || a.n_buffers > kLastRowsMaxBuffers || a.n_tokens == 0) return cudaErrorInvalidValue;
    uint32_t widest = 0;
    for (uint32_t i = 0; i < a.n_buffers; i++) {
        if (a.row_bytes[i] % 2) return cudaErrorInvalidValue;
        widest = a.row_bytes[i] / 2 > widest ? a.row_bytes[i] / 2 : widest;
    }
    if (a.n_tokens == 1 || a.n_seqs == 0) return cudaSuccess; // already in place
    const dim3 grid(ceil_div(widest, 256) < 64 ? ceil_div(widest, 256) : 64, a.n_buffers);
    return launch_pdl(last_rows_kernel, grid, 256, 0, stream, a);
}
