// sample_pick.cuh - the one-kernel sample (pick_kernel): a row's candidates ordered in shared
// memory, then the softmax, top_p, min_p and the draw over them. The candidates: a whole small
// vocabulary, or the top_k of a larger one found first by a one-block radix select by count
// (select_kth) or gathered by top_k_pass_kernel (sample_top_k.cuh).
#pragma once

#include "sample_common.cuh"

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

// Private to sample.cu, its one includer: internal linkage.
namespace {
using namespace gpt_cuda;

struct SelectShared {
    uint32_t hist[256];
    uint32_t digit, rank, equal;
};

// f(i, row[i], valid) for every i < n, called by whole warps (valid is false past the end:
// callers may use warp-wide intrinsics), kLoads 16-byte loads in flight per thread: one block
// reads a whole row, so a pass over it is bound by the loads' latency. The at most 3 values
// before the first 16-byte boundary and 3 after the last are one scalar round.
constexpr int kLoads = 4;
template <class F> __device__ __forceinline__ void for_each_value(const float *row, uint32_t n, F f) {
    const uint32_t head = min(n, (uint32_t)((16 - ((uintptr_t)row & 15)) & 15) / 4);
    const uint32_t n_vec = (n - head) / 4, tail = head + 4 * n_vec;
    {
        const uint32_t j = threadIdx.x, i = j < head ? j : tail + (j - head);
        const bool valid = j < head + (n - tail);
        f(i, valid ? row[i] : 0.0f, valid);
    }
    const float4 *vec = reinterpret_cast<const float4 *>(row + head);
    for (uint32_t base = 0; base < n_vec; base += blockDim.x * kLoads) {
        float4 v[kLoads];
#pragma unroll
        for (int u = 0; u < kLoads; u++) {
            const uint32_t q = base + u * blockDim.x + threadIdx.x;
            v[u] = q < n_vec ? vec[q] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < kLoads; u++) {
            const uint32_t q = base + u * blockDim.x + threadIdx.x, i = head + 4 * q;
            const bool valid = q < n_vec;
            f(i, v[u].x, valid);
            f(i + 1, v[u].y, valid);
            f(i + 2, v[u].z, valid);
            f(i + 3, v[u].w, valid);
        }
    }
}

// Block-wide radix select over row[0, n): the rank-th largest (rank >= 1, at most the count
// of candidates) of order_key(row[i]), or with by_id of ~i over the i whose key equals kth
// (the largest of those keys is the lowest id), by 8-bit digits from the top, four passes
// over the row. Returns that key; *rank becomes how many of the keys equal to it lie within
// the rank largest, *equal how many equal it in all. A warp adds each digit once, with its
// count (__match_any_sync), since most floats share a few top digits.
__device__ uint32_t select_kth(const float *row, uint32_t n, bool by_id, uint32_t kth, uint32_t *rank, uint32_t *equal,
                               SelectShared &sh) {
    const uint32_t lane = threadIdx.x % 32;
    uint32_t prefix = 0, mask = 0, want = *rank;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) sh.hist[i] = 0;
        __syncthreads();
        for_each_value(row, n, [&](uint32_t i, float x, bool valid) {
            uint32_t key = order_key(x), bin = kNoBin;
            bool candidate = valid;
            if (by_id) {
                candidate = candidate && key == kth;
                key = ~i;
            }
            if (candidate && (key & mask) == prefix) bin = (key >> shift) & 255u;
            warp_count(sh.hist, bin, lane);
        });
        __syncthreads();
        if (threadIdx.x < 32)
            find_digit_from_top(sh.hist, want, [&](uint32_t digit, uint32_t rank_in, uint32_t count) {
                sh.digit = digit;
                sh.rank = rank_in;
                sh.equal = count;
            });
        __syncthreads();
        prefix |= sh.digit << shift;
        mask |= 255u << shift;
        want = sh.rank;
        __syncthreads(); // sh is rewritten by the next pass
    }
    *rank = want;
    *equal = sh.equal;
    return prefix;
}

// The last of the top_k largest of row[0, n) in value-then-id order (the CPU's): its key
// *kth and id *last_id, so the top_k are the keys above *kth and, of those equal to it, the
// ids up to *last_id (all of them, 0xffffffff, when the tie does not straddle the cut).
// The ids of the tie come from a second select over ~id. (One call site per kernel: the
// select's code is inlined once in each.)
__device__ void top_k_boundary(const float *row, uint32_t n, uint32_t top_k, SelectShared &sh, uint32_t *kth,
                               uint32_t *last_id) {
    uint32_t take_equal = top_k;
    *kth = 0;
    *last_id = 0xffffffffu;
    for (int by_id = 0; by_id < 2; by_id++) {
        uint32_t rank = take_equal, equal = 0;
        const uint32_t key = select_kth(row, n, by_id, *kth, &rank, &equal, sh);
        if (by_id) {
            *last_id = ~key;
            break;
        }
        *kth = key;
        take_equal = rank;
        if (equal <= take_equal) break; // no tie beyond the keys taken
    }
}

// One block per row b, over candidates sorted by descending value here with CUB's block
// radix sort (stable) in shared memory: all of a vocabulary of at most kSmallVocab values
// (mode 1), or of a larger one the top_k (<= kSmallVocab) found first by a radix select and
// gathered in id order (mode 2), or gathered so by top_k_pass_kernel (mode 3), so that no full
// sort is needed. Padding keys carry the bit pattern that sorts last in descending order,
// after every value (NaNs included), so they never displace a real candidate.
__global__ void __launch_bounds__(kThreads) pick_kernel(SampleArgs a, const float *values, const uint2 *gathered, int mode) {
    using Sort = cub::BlockRadixSort<float, kThreads, kSmallItems, int32_t>;
    using Scan = cub::BlockScan<double, kThreads>;
    using Reduce = cub::BlockReduce<double, kThreads>;
    __shared__ union {
        typename Sort::TempStorage sort;
        struct {
            float v[kSmallVocab];
            int32_t ids[kSmallVocab];
        } sorted;
    } s_small;
    __shared__ SelectShared s_select;
    __shared__ uint32_t s_keys[kRankVocab];
    __shared__ uint32_t s_warp_sums[kThreads / 32];
    __shared__ typename Scan::TempStorage scan_tmp;
    __shared__ typename Reduce::TempStorage red_tmp;
    __shared__ double s_total;
    __shared__ uint32_t s_cut;
    __shared__ int32_t s_pick;
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t b = blockIdx.x;
    const float *row = values + (uint64_t)b * a.vocab;
    if (mode == 1 && a.vocab <= kRankVocab) {
        // Few values: each one's place is the count of values before it in the CPU's order
        // (larger key, or the same key and a lower id), quicker than the radix sort's passes.
        for (uint32_t i = threadIdx.x; i < a.vocab; i += kThreads) s_keys[i] = order_key(row[i]);
        __syncthreads();
        for (uint32_t i = threadIdx.x; i < a.vocab; i += kThreads) {
            const uint32_t ki = s_keys[i];
            uint32_t place = 0;
            for (uint32_t j = 0; j < a.vocab; j++) {
                const uint32_t kj = s_keys[j]; // the same j in every thread: a broadcast
                place += kj > ki || (kj == ki && j < i);
            }
            s_small.sorted.v[place] = row[i];
            s_small.sorted.ids[place] = (int32_t)i;
        }
    } else {
        float key[kSmallItems];
        int32_t id[kSmallItems];
        if (mode == 1) {
#pragma unroll
            for (int j = 0; j < kSmallItems; j++) { // blocked: thread t holds ids t * items + j
                const uint32_t i = threadIdx.x * kSmallItems + j;
                key[j] = i < a.vocab ? row[i] : __uint_as_float(0xffffffffu);
                id[j] = (int32_t)i;
            }
        } else if (mode == 3) {
            const uint2 *g = gathered + (uint64_t)b * kSmallVocab; // exactly top_k entries
#pragma unroll
            for (int j = 0; j < kSmallItems; j++) {
                const uint32_t i = threadIdx.x * kSmallItems + j;
                key[j] = i < a.top_k ? __uint_as_float(g[i].x) : __uint_as_float(0xffffffffu);
                id[j] = i < a.top_k ? (int32_t)g[i].y : (int32_t)i;
            }
        } else {
            uint32_t kth = 0, last_id = 0;
            top_k_boundary(row, a.vocab, a.top_k, s_select, &kth, &last_id);
            // Gathered in id order (the block sort is stable over its input order).
            uint32_t taken = 0;
            for (uint32_t base = 0; base < a.vocab; base += kThreads * kSmallItems) {
                bool take[kSmallItems];
                uint32_t count = 0;
#pragma unroll
                for (int j = 0; j < kSmallItems; j++) {
                    const uint32_t i = base + threadIdx.x * kSmallItems + j;
                    const uint32_t k = i < a.vocab ? order_key(row[i]) : 0;
                    take[j] = i < a.vocab && (k > kth || (k == kth && i <= last_id));
                    count += take[j];
                }
                uint32_t chunk_total = 0;
                uint32_t at = taken + block_exclusive_sum(count, s_warp_sums, &chunk_total);
#pragma unroll
                for (int j = 0; j < kSmallItems; j++)
                    if (take[j] && at < kSmallVocab) {
                        s_small.sorted.v[at] = row[base + threadIdx.x * kSmallItems + j];
                        s_small.sorted.ids[at++] = (int32_t)(base + threadIdx.x * kSmallItems + j);
                    }
                taken += chunk_total;
            }
            __syncthreads();
#pragma unroll
            for (int j = 0; j < kSmallItems; j++) {
                const uint32_t i = threadIdx.x * kSmallItems + j;
                key[j] = i < a.top_k ? s_small.sorted.v[i] : __uint_as_float(0xffffffffu);
                id[j] = i < a.top_k ? s_small.sorted.ids[i] : (int32_t)i;
            }
            __syncthreads(); // the staging area is the sort's storage
        }
        Sort(s_small.sort).SortDescending(key, id);
        __syncthreads(); // the sort's storage becomes the sorted arrays
#pragma unroll
        for (int j = 0; j < kSmallItems; j++) {
            s_small.sorted.v[threadIdx.x * kSmallItems + j] = key[j];
            s_small.sorted.ids[threadIdx.x * kSmallItems + j] = id[j];
        }
    }
    __syncthreads();
    const float *v = s_small.sorted.v;
    const int32_t *ids = s_small.sorted.ids;
    const uint32_t k = (a.top_k > 0 && a.top_k < a.vocab) ? a.top_k : a.vocab;
    const float mx = v[0];
    const float t = a.temperature;

    // Softmax denominator over the k kept tokens.
    double part = 0.0;
    for (uint32_t i = threadIdx.x; i < k; i += kThreads) part += (double)expf((v[i] - mx) / t);
    double sum = Reduce(red_tmp).Sum(part);
    if (threadIdx.x == 0) s_total = sum;
    __syncthreads();
    sum = s_total;

    // top-p: the first index where the running probability reaches top_p ends the set.
    uint32_t n = k;
    if (a.top_p < 1.0f) {
        if (threadIdx.x == 0) s_cut = k;
        __syncthreads();
        double carry = 0.0;
        for (uint32_t base = 0; base < k; base += kThreads) {
            const uint32_t i = base + threadIdx.x;
            const double e = i < k ? (double)expf((v[i] - mx) / t) / sum : 0.0;
            double incl, agg;
            Scan(scan_tmp).InclusiveSum(e, incl, agg);
            if (i < k && carry + incl >= a.top_p) atomicMin(&s_cut, i + 1);
            carry += agg;
            __syncthreads();
            if (s_cut != k) break;
        }
        n = s_cut;
        __syncthreads(); // s_cut is rewritten below
    }
    // min-p: sorted descending, so the kept tokens are a prefix.
    if (a.min_p > 0.0f) {
        const float floor = a.min_p; // relative to p(best) = exp(0)
        if (threadIdx.x == 0) s_cut = n;
        __syncthreads();
        for (uint32_t i = threadIdx.x + 1; i < n; i += kThreads)
            if (expf((v[i] - mx) / t) < floor) atomicMin(&s_cut, i);
        __syncthreads();
        n = s_cut;
    }
    // Draw: the first kept token whose cumulative weight exceeds uniform * total.
    part = 0.0;
    for (uint32_t i = threadIdx.x; i < n; i += kThreads) part += (double)expf((v[i] - mx) / t);
    __syncthreads();
    double total = Reduce(red_tmp).Sum(part);
    if (threadIdx.x == 0) {
        s_total = total;
        s_pick = -1;
    }
    __syncthreads();
    const double target = (double)a.uniform[b] * s_total;
    double carry = 0.0;
    for (uint32_t base = 0; base < n; base += kThreads) {
        const uint32_t i = base + threadIdx.x;
        const double e = i < n ? (double)expf((v[i] - mx) / t) : 0.0;
        double incl, agg;
        Scan(scan_tmp).InclusiveSum(e, incl, agg);
        const bool hit = i < n && carry + incl > target && carry + incl - e <= target;
        if (hit) s_pick = (int32_t)i;
        carry += agg;
        __syncthreads();
        if (s_pick >= 0) break;
    }
    if (threadIdx.x == 0) a.out[b] = ids[s_pick >= 0 ? s_pick : n - 1];
}

} // namespace
