// sample.cu - token sampling on the device (sample.cuh): the penalty and adjustment passes,
// the greedy argmax, and for stochastic sampling the CPU sampler's walk (lib/sampler/sampler.h:
// candidates in descending value, equal values by ascending id) without a sort of the whole
// row, by one of three paths:
//   - a vocabulary of up to kSmallVocab entries (character-level models), or the top_k of a
//     larger one when top_k <= kSmallVocab, ordered and drawn in one kernel
//     (sample_pick.cuh); that top_k found by the same block below kGatherVocab entries, by
//     many blocks above (sample_top_k.cuh);
//   - larger sets (top_k 0 or above kSmallVocab) never ordered: a radix select by
//     probability mass over many blocks finds the top_p cut and the drawn token
//     (sample_by_mass.cuh).
// sample_common.cuh has the workspace's layout and what the kernels share.
#include "sample.cuh"
#include "common.cuh"
#include "sample_by_mass.cuh"
#include "sample_common.cuh"
#include "sample_pick.cuh"
#include "sample_top_k.cuh"

#include <cub/block/block_reduce.cuh>

using namespace gpt_cuda;

namespace {

// values = the logits (penalised and adjusted next). The temperature is applied when the
// weights are taken, as exp((v - max) / T): the order does not depend on it.
__global__ void prepare_kernel(SampleArgs a, Workspace w) {
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t b = blockIdx.y;
    const float *lg = a.logits + (uint64_t)b * a.vocab;
    float *v = w.values + (uint64_t)b * a.vocab;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < a.vocab; i += gridDim.x * blockDim.x) v[i] = lg[i];
}

__global__ void penalty_kernel(SampleArgs a, Workspace w) {
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t b = blockIdx.x;
    const int32_t *rec = a.recent + (uint64_t)b * a.recent_stride;
    const int32_t n = a.n_recent[b];
    float *v = w.values + (uint64_t)b * a.vocab;
    for (int32_t j = threadIdx.x; j < n; j += blockDim.x) {
        const int32_t t = rec[j];
        if (t < 0 || (uint32_t)t >= a.vocab) continue;
        bool seen = false; // each distinct token once
        for (int32_t i = 0; i < j && !seen; i++) seen = rec[i] == t;
        if (!seen) v[t] = v[t] > 0.0f ? v[t] / a.penalty : v[t] * a.penalty;
    }
}

// Distinct tokens per row, so the threads never add to the same value.
__global__ void adjust_kernel(SampleArgs a, Workspace w) {
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t b = blockIdx.x;
    const int32_t *tok = a.adjust_tokens + (uint64_t)b * a.adjust_stride;
    const float *delta = a.adjust_deltas + (uint64_t)b * a.adjust_stride;
    const int32_t n = a.n_adjust[b];
    float *v = w.values + (uint64_t)b * a.vocab;
    for (int32_t j = threadIdx.x; j < n; j += blockDim.x) {
        const int32_t t = tok[j];
        if (t >= 0 && (uint32_t)t < a.vocab) v[t] += delta[j];
    }
}

struct MaxPair {
    float v;
    int32_t i;
};
struct MaxPairOp {
    __device__ MaxPair operator()(const MaxPair &x, const MaxPair &y) const {
        return (y.v > x.v || (y.v == x.v && y.i < x.i)) ? y : x;
    }
};

__global__ void __launch_bounds__(kThreads) argmax_kernel(const float *values, uint32_t vocab, int32_t *out) {
    using Reduce = cub::BlockReduce<MaxPair, kThreads>;
    __shared__ typename Reduce::TempStorage tmp;
    pdl_wait();
    pdl_launch_dependents();
    const float *v = values + (uint64_t)blockIdx.x * vocab;
    MaxPair best{-INFINITY, 0x7fffffff};
    for (uint32_t i = threadIdx.x; i < vocab; i += kThreads) {
        const float x = v[i];
        if (x > best.v || (x == best.v && (int32_t)i < best.i)) best = MaxPair{x, (int32_t)i};
    }
    best = Reduce(tmp).Reduce(best, MaxPairOp());
    if (threadIdx.x == 0) out[blockIdx.x] = best.i == 0x7fffffff ? 0 : best.i;
}

} // namespace

size_t sample_workspace_bytes(uint32_t batch, uint32_t vocab) {
    Workspace w;
    return carve(nullptr, batch, vocab, &w);
}

cudaError_t launch_sample(const SampleArgs &a, cudaStream_t stream) {
    if (a.batch == 0) return cudaSuccess;
    Workspace w;
    carve(a.workspace, a.batch, a.vocab, &w);
    const bool greedy = a.temperature <= 0.0f;
    const dim3 grid((a.vocab + 255) / 256 < 64 ? (a.vocab + 255) / 256 : 64, a.batch);
    const bool penalty = a.penalty != 1.0f && a.recent;
    const bool adjust = a.n_adjust != nullptr;
    // The values: the logits themselves, or their copy with the penalties and adjustments.
    const float *values = a.logits;
    if (penalty || adjust) {
        cudaError_t e = launch_pdl(prepare_kernel, grid, 256, 0, stream, a, w);
        if (e == cudaSuccess && penalty) e = launch_pdl(penalty_kernel, a.batch, 256, 0, stream, a, w);
        if (e == cudaSuccess && adjust) e = launch_pdl(adjust_kernel, a.batch, 256, 0, stream, a, w);
        if (e != cudaSuccess) return e;
        values = w.values;
    }
    if (greedy) return launch_pdl(argmax_kernel, a.batch, kThreads, 0, stream, values, a.vocab, a.out);
    // Sorted in one kernel: all of a small vocabulary (mode 1), or the top_k selected first
    // (mode 2 in one block, mode 3 by many); otherwise never sorted.
    const uint2 *none = nullptr;
    if (a.vocab <= kSmallVocab) return launch_pdl(pick_kernel, a.batch, kThreads, 0, stream, a, values, none, 1);
    if (a.top_k > 0 && a.top_k <= kSmallVocab)
        return a.vocab < kGatherVocab ? launch_pdl(pick_kernel, a.batch, kThreads, 0, stream, a, values, none, 2)
                                      : launch_top_k(a, values, w, stream);
    return launch_draw(a, values, w, stream);
}
