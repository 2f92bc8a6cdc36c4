// sample_common.cuh - what the sampler's kernels share (sample.cu and the sample_*.cuh it
// includes): block sizes, the workspace's layout (carve), the order key of a value and a
// block-wide exclusive sum.
#pragma once

#include "common.cuh"
#include "sample.cuh"

// Private to sample.cu, its one includer: internal linkage.
namespace {
using namespace gpt_cuda;

constexpr int kThreads = 512; // with __launch_bounds__, fits the register file at any occupancy
constexpr int kSmallItems = 4;  // keys per thread of the one-kernel sort
constexpr uint32_t kSmallVocab = kThreads * kSmallItems;
constexpr uint32_t kRankVocab = 384; // up to this many values pick_kernel orders them by rank (H200: 8-10 us to 256, 16.8 at 512 against the radix sort's 15.4)

struct DrawState;
constexpr int kPassThreads = 256, kPerThread = 8, kSlice = kPassThreads * kPerThread; // draw_pass_kernel
constexpr int kDigitBits = 4, kDigits = 1 << kDigitBits;
constexpr size_t kPartialBytes = 1024; // a block's share of a pass: kDigits doubles or 256 counts
__host__ __device__ constexpr uint32_t pass_blocks(uint32_t vocab) { return (vocab + kSlice - 1) / kSlice; }
__host__ __device__ constexpr uint32_t stash_stride(uint32_t vocab) { return (vocab + 1) & ~1u; } // 16-byte rows

struct Workspace {
    float *values;     // [batch][vocab]: the logits with the penalties and adjustments applied
    // The radix select by mass (draw_pass_kernel):
    uint2 *stash;      // [batch][stash_stride(vocab)]: each value's order key and weight
    DrawState *state;  // [batch]
    double *partial;   // each block's share of a pass, kPartialBytes a block: [batch][pass_blocks(vocab)][kDigits]
                       // sums (draw_pass_kernel) or [batch][pass_blocks(vocab)][256] counts (hist())
    uint32_t *bits;    // [batch][pass_blocks(vocab)]: each block's digits present, max key or count
    uint32_t *min_ids; // [batch][pass_blocks(vocab)]: each block's lowest id of a tie
    // The top_k by many blocks (top_k_pass_kernel):
    uint2 *gathered;   // [batch][kSmallVocab]: the top_k's (value bits, id), in id order
    __device__ uint32_t *hist(uint32_t b, uint32_t blocks, uint32_t block) const { // [256] counts, in partial
        return reinterpret_cast<uint32_t *>(reinterpret_cast<char *>(partial) + ((uint64_t)b * blocks + block) * kPartialBytes);
    }
};

size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

constexpr size_t kStateBytes = 64; // sizeof(DrawState), checked below

// The workspace's parts in order, each 256-byte aligned; `base` null gives the size only.
size_t carve(void *base, uint32_t batch, uint32_t vocab, Workspace *w) {
    const uint64_t blocks = (uint64_t)batch * pass_blocks(vocab);
    const size_t sizes[] = {(size_t)batch * vocab * 4, (size_t)batch * stash_stride(vocab) * 8, batch * kStateBytes,
                            blocks * kPartialBytes, blocks * 4, blocks * 4, (size_t)batch * kSmallVocab * 8};
    void **parts[] = {(void **)&w->values, (void **)&w->stash, (void **)&w->state, (void **)&w->partial,
                      (void **)&w->bits, (void **)&w->min_ids, (void **)&w->gathered};
    size_t at = 0;
    for (int i = 0; i < 7; i++) {
        *parts[i] = base ? (char *)base + at : nullptr;
        at += align256(sizes[i]);
    }
    return at;
}

// Larger float, larger key: the order CUB's radix sort gives floats (-0 sorts as +0).
__device__ __forceinline__ uint32_t order_key(float f) {
    uint32_t u = __float_as_uint(f);
    if (u == 0x80000000u) u = 0;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

constexpr uint32_t kNoBin = 256; // no digit: a value outside the select's prefix

// hist[bin] += 1 for each lane of the calling warp (all 32 lanes call, each with its lane
// number; kNoBin adds nothing).
// A warp adds each bin once, with its count (__match_any_sync): most floats share a few top
// digits, so this saves most of the shared-memory atomics.
__device__ __forceinline__ void warp_count(uint32_t *hist /* [256], shared */, uint32_t bin, uint32_t lane) {
    const unsigned peers = __match_any_sync(0xffffffffu, bin);
    if (bin != kNoBin && lane == (uint32_t)__ffs(peers) - 1) atomicAdd(&hist[bin], (uint32_t)__popc(peers));
}

// A radix select's step, by the 32 lanes of one warp: the digit of hist (from 255 down) at
// which the running count reaches want (>= 1). found(digit, rank, count) runs in the one lane
// that holds it, with rank = want less the counts of the digits above and count = hist[digit];
// in no lane when the histogram holds fewer than want.
template <class Found>
__device__ __forceinline__ void find_digit_from_top(const uint32_t *hist /* [256] */, uint32_t want, Found found) {
    const uint32_t lane = threadIdx.x % 32;
    uint32_t c[8], sum = 0; // lane l holds digits 255 - 8 l down to 248 - 8 l
#pragma unroll
    for (int j = 0; j < 8; j++) sum += c[j] = hist[255 - (lane * 8 + j)];
    uint32_t incl = sum;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const uint32_t up = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= (uint32_t)o) incl += up;
    }
    const uint32_t before = incl - sum;
    if (before < want && incl >= want) {
        uint32_t cum = before;
        for (int j = 0; j < 8; j++) {
            if (cum + c[j] >= want) {
                found((uint32_t)(255 - (lane * 8 + j)), want - cum, c[j]);
                break;
            }
            cum += c[j];
        }
    }
}

// After a block has written its share of a pass: true, in every thread, in the last of the
// row's blocks to get here (the others' shares then visible to it), which resets nothing:
// the caller sets arrivals back to 0 when it is done with them.
__device__ __forceinline__ bool last_to_arrive(uint32_t *arrivals, uint32_t blocks, bool *s_last /* shared */) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) *s_last = atomicAdd(arrivals, 1u) == blocks - 1;
    __syncthreads();
    if (!*s_last) return false;
    __threadfence();
    return true;
}

// Block-wide exclusive sum of one count per thread; *total gets the block's sum.
__device__ uint32_t block_exclusive_sum(uint32_t v, uint32_t *warp_sums, uint32_t *total) {
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    uint32_t incl = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const uint32_t up = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= (uint32_t)o) incl += up;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    uint32_t before = 0, all = 0;
    for (uint32_t w = 0; w < warps; w++) {
        if (w < warp) before += warp_sums[w];
        all += warp_sums[w];
    }
    __syncthreads(); // warp_sums is rewritten by the next call
    *total = all;
    return before + incl - v;
}

} // namespace
