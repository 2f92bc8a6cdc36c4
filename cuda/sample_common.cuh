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
    double *partial;   // [batch][pass_blocks(vocab)][kDigits], kPartialBytes a block: each block's sums
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
