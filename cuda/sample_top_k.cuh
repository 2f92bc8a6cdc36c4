// sample_top_k.cuh - the top_k (<= kSmallVocab) of a large vocabulary found and gathered in
// id order by many blocks, for pick_kernel to order and draw from (launch_top_k).
#pragma once

#include "sample_by_mass.cuh"
#include "sample_pick.cuh"

// Private to sample.cu, its one includer: internal linkage.
namespace {
using namespace gpt_cuda;

// ---- The top_k (<= kSmallVocab) of a large vocabulary, by many blocks ----
// pick_kernel's own select reads the row five times from one block, a time that grows with
// the vocabulary (H200: 26 us at 2,049 entries, 89 us at 50,257, 220 us at 151,936). From
// kGatherVocab entries on, top_k_pass_kernel does it over the whole row at kSlice values a
// block, 35-48 us at any vocabulary (the two cross between 8,192 and 16,384 entries): four
// select passes by count with 8-bit digits (each block a shared histogram; counts, so the
// order of the atomics does not matter) find the top_k's last key and how many of the keys
// equal to it to take (the lowest ids, as the CPU), a count pass gives each block's
// candidates, and a gather pass writes the top_k in id order for pick_kernel's mode 3.
constexpr uint32_t kGatherVocab = 14336;
enum TopKPass : int { kTopKSelect, kTopKCount, kTopKGather };

__global__ void __launch_bounds__(kPassThreads) top_k_pass_kernel(SampleArgs a, const float *values, Workspace ws,
                                                                   TopKPass kind, int shift) {
    constexpr int kWarps = kPassThreads / 32;
    __shared__ uint32_t s_hist[256];
    __shared__ uint32_t s_warp_sums[kWarps];
    __shared__ uint32_t s_before[2];
    __shared__ bool s_last;
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t b = blockIdx.y, n = a.vocab, blocks = gridDim.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    DrawState &st = ws.state[b];
    const float *row = values + (uint64_t)b * n;
    uint32_t *counts = ws.bits + (uint64_t)b * blocks; // count pass: each block's (above << 16 | tied)

    if (kind == kTopKSelect) {
        const bool first = shift == 24;
        const uint32_t prefix = first ? 0 : st.prefix, mask = first ? 0 : st.mask, want = first ? a.top_k : st.want;
        for (uint32_t d = threadIdx.x; d < 256; d += kPassThreads) s_hist[d] = 0;
        float x[kPerThread];
#pragma unroll
        for (int u = 0; u < kPerThread; u++) {
            const uint32_t i = blockIdx.x * kSlice + u * kPassThreads + threadIdx.x;
            x[u] = i < n ? row[i] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int u = 0; u < kPerThread; u++) {
            const uint32_t i = blockIdx.x * kSlice + u * kPassThreads + threadIdx.x, key = order_key(x[u]);
            warp_count(s_hist, i < n && (key & mask) == prefix ? (key >> shift) & 255u : kNoBin, lane);
        }
        __syncthreads();
        uint32_t *mine = ws.hist(b, blocks, blockIdx.x);
        for (uint32_t d = threadIdx.x; d < 256; d += kPassThreads) mine[d] = s_hist[d];

        // The last block of the row to finish adds the histograms and picks the digit.
        if (!last_to_arrive(&st.arrivals, blocks, &s_last)) return;
        for (uint32_t d = threadIdx.x; d < 256; d += kPassThreads) {
            uint32_t sum = 0;
#pragma unroll 8
            for (uint32_t k = 0; k < blocks; k++) sum += __ldcg(&ws.hist(b, blocks, k)[d]);
            s_hist[d] = sum;
        }
        __syncthreads();
        if (warp != 0) return;
        // One lane finds the digit (none only if top_k exceeded the row).
        DrawState *state = &st;
        find_digit_from_top(s_hist, want, [=](uint32_t digit, uint32_t rank, uint32_t) {
            state->prefix = prefix | digit << shift;
            state->mask = mask | 255u << shift;
            state->want = rank;
        });
        if (lane == 0) st.arrivals = 0;
        return;
    }

    // Count and gather: thread t takes kPerThread consecutive ids, so the block's order is
    // the ids' order. Candidates: keys above the top_k's last key, and the first `want` of
    // the keys equal to it by id.
    const uint32_t kth = st.prefix, want = st.want, first_id = blockIdx.x * kSlice + threadIdx.x * kPerThread;
    float x[kPerThread];
    uint32_t key[kPerThread], mine = 0; // (above << 16 | tied) of this thread
#pragma unroll
    for (int u = 0; u < kPerThread; u++) {
        const uint32_t i = first_id + u;
        x[u] = i < n ? row[i] : 0.0f;
        key[u] = order_key(x[u]);
        if (i < n) mine += key[u] > kth ? 1u << 16 : key[u] == kth ? 1u : 0u;
    }
    uint32_t block_total = 0;
    const uint32_t at = block_exclusive_sum(mine, s_warp_sums, &block_total); // each part < 2^16
    if (kind == kTopKCount) {
        if (threadIdx.x == 0) counts[blockIdx.x] = block_total;
        return;
    }
    if (warp == 0) { // the candidates of the blocks before this one (ties may exceed 2^16 there)
        uint32_t above = 0, tied = 0;
        for (uint32_t k = lane; k < blockIdx.x; k += 32) {
            const uint32_t c = counts[k];
            above += c >> 16;
            tied += c & 0xffffu;
        }
        for (int o = 16; o > 0; o >>= 1) {
            above += __shfl_down_sync(0xffffffffu, above, o);
            tied += __shfl_down_sync(0xffffffffu, tied, o);
        }
        if (lane == 0) {
            s_before[0] = above;
            s_before[1] = tied;
        }
    }
    __syncthreads();
    uint32_t above = s_before[0] + (at >> 16), tied = s_before[1] + (at & 0xffffu);
    uint2 *out = ws.gathered + (uint64_t)b * kSmallVocab;
#pragma unroll
    for (int u = 0; u < kPerThread; u++) {
        const uint32_t i = first_id + u, pos = above + min(tied, want); // candidates with lower ids
        if (i >= n) break;
        const bool take = key[u] > kth || (key[u] == kth && tied < want);
        if (take && pos < kSmallVocab) out[pos] = make_uint2(__float_as_uint(x[u]), i);
        above += key[u] > kth;
        tied += key[u] == kth;
    }
}

// The top_k of a large row found and gathered by many blocks, then sorted and picked.
cudaError_t launch_top_k(const SampleArgs &a, const float *values, const Workspace &ws, cudaStream_t stream) {
    const dim3 grid(pass_blocks(a.vocab), a.batch);
    cudaError_t e = launch_pdl(draw_init_kernel, 1, 32, 0, stream, ws, a.batch);
    for (int shift = 24; shift >= 0 && e == cudaSuccess; shift -= 8)
        e = launch_pdl(top_k_pass_kernel, grid, kPassThreads, 0, stream, a, values, ws, kTopKSelect, shift);
    if (e == cudaSuccess) e = launch_pdl(top_k_pass_kernel, grid, kPassThreads, 0, stream, a, values, ws, kTopKCount, 0);
    if (e == cudaSuccess) e = launch_pdl(top_k_pass_kernel, grid, kPassThreads, 0, stream, a, values, ws, kTopKGather, 0);
    if (e == cudaSuccess) e = launch_pdl(pick_kernel, a.batch, kThreads, 0, stream, a, values, (const uint2 *)ws.gathered, 3);
    return e;
}

} // namespace
