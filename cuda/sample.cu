// sample.cu - penalty and adjustment passes, block argmax, and for stochastic sampling a
// stable descending sort (equal values keep ascending ids, matching the CPU's value-then-id
// order) followed by one block per row that applies top-k/top-p/min-p with block-wide prefix
// sums and picks the token. Vocabularies of up to kSmallVocab entries (character-level
// models), and the top_k of larger ones when top_k <= kSmallVocab (found by a radix select),
// are sorted and picked in one kernel, in shared memory; the rest go through CUB's segmented
// radix sort, whose passes are several kernels (~40 us a token at 65 entries, ~300 us at
// GPT-2's 50,257, on an H100).
#include "sample.cuh"
#include "common.cuh"

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>

using namespace gpt_cuda;

namespace {

constexpr int kThreads = 512; // with __launch_bounds__, fits the register file at any occupancy
constexpr int kSmallItems = 4;  // keys per thread of the one-kernel sort
constexpr uint32_t kSmallVocab = kThreads * kSmallItems;

struct Workspace {
    float *values, *sorted_values;
    int32_t *ids, *sorted_ids;
    int32_t *offsets;
    void *cub_temp;
    size_t cub_bytes;
};

size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

size_t cub_sort_bytes(uint32_t batch, uint32_t vocab) {
    size_t bytes = 0;
    // The same argument types as launch_sample's call: CUB's kernels are templates on the
    // offset pointers' type, so a const offsets pointer here would compile a second set of
    // sort kernels (160 KB of sm_90 code) that never run.
    cub::DeviceSegmentedRadixSort::SortPairsDescending(nullptr, bytes, (const float *)nullptr, (float *)nullptr,
                                                       (const int32_t *)nullptr, (int32_t *)nullptr, (int)(batch * vocab),
                                                       (int)batch, (int32_t *)nullptr, (int32_t *)nullptr);
    return bytes;
}

Workspace carve(void *base, uint32_t batch, uint32_t vocab) {
    Workspace w;
    char *p = (char *)base;
    const size_t n = align256((size_t)batch * vocab * 4);
    w.values = (float *)p; p += n;
    w.sorted_values = (float *)p; p += n;
    w.ids = (int32_t *)p; p += n;
    w.sorted_ids = (int32_t *)p; p += n;
    w.offsets = (int32_t *)p; p += align256((size_t)(batch + 1) * 4);
    w.cub_temp = p;
    w.cub_bytes = cub_sort_bytes(batch, vocab);
    return w;
}

// values = the logits (penalised next); ids = 0..vocab-1. The temperature is applied in
// pick_kernel as exp((v - max) / T), after sorting: the order does not depend on it.
__global__ void prepare_kernel(SampleArgs a, Workspace w) {
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t b = blockIdx.y;
    const float *lg = a.logits + (uint64_t)b * a.vocab;
    float *v = w.values + (uint64_t)b * a.vocab;
    int32_t *ids = w.ids + (uint64_t)b * a.vocab;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < a.vocab; i += gridDim.x * blockDim.x) {
        v[i] = lg[i];
        ids[i] = (int32_t)i;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        w.offsets[b] = (int32_t)(b * a.vocab);
        if (b == a.batch - 1) w.offsets[a.batch] = (int32_t)(a.batch * a.vocab);
    }
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

// Larger float, larger key: the order CUB's radix sort gives floats (-0 sorts as +0).
__device__ __forceinline__ uint32_t order_key(float f) {
    uint32_t u = __float_as_uint(f);
    if (u == 0x80000000u) u = 0;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

constexpr uint32_t kNoBin = 256;
struct SelectShared {
    uint32_t hist[256];
    uint32_t digit, rank, equal;
};

// Block-wide radix select over row[0, n): the rank-th largest (rank >= 1, at most the count
// of candidates) of order_key(row[i]), or with by_id of ~i over the i whose key equals kth
// (the largest of those keys is the lowest id), by 8-bit digits from the top, four passes
// over the row. Returns that key; *rank becomes how many of the keys equal to it lie within
// the rank largest, *equal how many equal it in all. Each thread keeps kSelectLoads loads in
// flight (the pass is latency-bound: one block reads the whole row), and a warp adds each
// digit once, with its count (__match_any_sync), since most floats share a few top digits.
constexpr int kSelectLoads = 4;
__device__ uint32_t select_kth(const float *row, uint32_t n, bool by_id, uint32_t kth, uint32_t *rank, uint32_t *equal,
                               SelectShared &sh) {
    const uint32_t lane = threadIdx.x % 32;
    uint32_t prefix = 0, mask = 0, want = *rank;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) sh.hist[i] = 0;
        __syncthreads();
        for (uint32_t base = 0; base < n; base += blockDim.x * kSelectLoads) { // whole warps: __match_any_sync
            float value[kSelectLoads];
#pragma unroll
            for (int u = 0; u < kSelectLoads; u++) {
                const uint32_t i = base + u * blockDim.x + threadIdx.x;
                value[u] = i < n ? row[i] : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < kSelectLoads; u++) {
                const uint32_t i = base + u * blockDim.x + threadIdx.x;
                uint32_t key = order_key(value[u]), bin = kNoBin;
                bool candidate = i < n;
                if (by_id) {
                    candidate = candidate && key == kth;
                    key = ~i;
                }
                if (candidate && (key & mask) == prefix) bin = (key >> shift) & 255u;
                const unsigned peers = __match_any_sync(0xffffffffu, bin);
                if (bin != kNoBin && lane == (uint32_t)__ffs(peers) - 1) atomicAdd(&sh.hist[bin], (uint32_t)__popc(peers));
            }
        }
        __syncthreads();
        if (threadIdx.x < 32) { // lane l holds digits 255 - 8 l down to 248 - 8 l
            uint32_t c[8], sum = 0;
#pragma unroll
            for (int j = 0; j < 8; j++) sum += c[j] = sh.hist[255 - (lane * 8 + j)];
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
                        sh.digit = 255 - (lane * 8 + j);
                        sh.rank = want - cum;
                        sh.equal = c[j];
                        break;
                    }
                    cum += c[j];
                }
            }
        }
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

// One block per row b, over candidates sorted by descending value: from the device sort in
// the workspace (mode 0), or sorted here with CUB's block radix sort (stable, the same key
// order as the device sort) in shared memory: all of a vocabulary of at most kSmallVocab
// values (mode 1), or of a larger one the top_k (<= kSmallVocab) found first by a radix select
// and gathered in id order (mode 2), so that no full sort is needed; `values` holds the rows
// for modes 1 and 2. One kernel for all keeps the pick's code once. Padding keys carry the bit
// pattern that sorts last in descending order, after every value (NaNs included), so they
// never displace a real candidate.
__global__ void __launch_bounds__(kThreads) pick_kernel(SampleArgs a, Workspace w, const float *values, int mode) {
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
    __shared__ uint32_t s_warp_sums[kThreads / 32];
    __shared__ typename Scan::TempStorage scan_tmp;
    __shared__ typename Reduce::TempStorage red_tmp;
    __shared__ double s_total;
    __shared__ uint32_t s_cut;
    __shared__ int32_t s_pick;
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t b = blockIdx.x;
    const float *v = w.sorted_values + (uint64_t)b * a.vocab;
    const int32_t *ids = w.sorted_ids + (uint64_t)b * a.vocab;
    if (mode) {
        const float *row = values + (uint64_t)b * a.vocab;
        float key[kSmallItems];
        int32_t id[kSmallItems];
        if (mode == 1) {
#pragma unroll
            for (int j = 0; j < kSmallItems; j++) { // blocked: thread t holds ids t * items + j
                const uint32_t i = threadIdx.x * kSmallItems + j;
                key[j] = i < a.vocab ? row[i] : __uint_as_float(0xffffffffu);
                id[j] = (int32_t)i;
            }
        } else {
            // The top_k: keys above the k-th largest, and of those equal to it the lowest ids
            // (the CPU's value-then-id order), found by a second select over the ids.
            // (One call site: the select's code is inlined once.)
            uint32_t kth = 0, take_equal = a.top_k, last_id = 0xffffffffu;
            for (int by_id = 0; by_id < 2; by_id++) {
                uint32_t rank = take_equal, equal = 0;
                const uint32_t key = select_kth(row, a.vocab, by_id, kth, &rank, &equal, s_select);
                if (by_id) {
                    last_id = ~key;
                    break;
                }
                kth = key;
                take_equal = rank;
                if (equal <= take_equal) break; // no tie beyond the keys taken
            }
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
        __syncthreads();
        v = s_small.sorted.v;
        ids = s_small.sorted.ids;
    }
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

size_t sample_workspace_bytes(uint32_t batch, uint32_t vocab) {
    return 4 * align256((size_t)batch * vocab * 4) + align256((size_t)(batch + 1) * 4) + align256(cub_sort_bytes(batch, vocab));
}

cudaError_t launch_sample(const SampleArgs &a, cudaStream_t stream) {
    if (a.batch == 0) return cudaSuccess;
    Workspace w = carve(a.workspace, a.batch, a.vocab);
    const bool greedy = a.temperature <= 0.0f;
    const dim3 grid((a.vocab + 255) / 256 < 64 ? (a.vocab + 255) / 256 : 64, a.batch);
    const bool penalty = a.penalty != 1.0f && a.recent;
    const bool adjust = a.n_adjust != nullptr;
    cudaError_t e = cudaSuccess;
    if (greedy && !penalty && !adjust) // the logits themselves
        return launch_pdl(argmax_kernel, a.batch, kThreads, 0, stream, a.logits, a.vocab, a.out);
    // The pick kernel's own sort: of all values, or of the top_k selected first (mode 1, 2).
    const int mode = greedy                                                               ? 0
                     : a.vocab <= kSmallVocab                                             ? 1
                     : a.top_k > 0 && a.top_k < a.vocab && a.top_k <= kSmallVocab ? 2
                                                                                          : 0;
    if (mode && !penalty && !adjust) // the logits themselves
        return launch_pdl(pick_kernel, a.batch, kThreads, 0, stream, a, w, a.logits, mode);
    e = launch_pdl(prepare_kernel, grid, 256, 0, stream, a, w);
    if (e == cudaSuccess && penalty) e = launch_pdl(penalty_kernel, a.batch, 256, 0, stream, a, w);
    if (e == cudaSuccess && adjust) e = launch_pdl(adjust_kernel, a.batch, 256, 0, stream, a, w);
    if (e != cudaSuccess) return e;
    if (greedy) return launch_pdl(argmax_kernel, a.batch, kThreads, 0, stream, (const float *)w.values, a.vocab, a.out);
    if (mode) return launch_pdl(pick_kernel, a.batch, kThreads, 0, stream, a, w, (const float *)w.values, mode);
    size_t bytes = w.cub_bytes;
    e = cub::DeviceSegmentedRadixSort::SortPairsDescending(
        w.cub_temp, bytes, w.values, w.sorted_values, w.ids, w.sorted_ids, (int)(a.batch * a.vocab), (int)a.batch,
        w.offsets, w.offsets + 1, 0, 32, stream);
    if (e != cudaSuccess) return e;
    pick_kernel<<<a.batch, kThreads, 0, stream>>>(a, w, nullptr, 0); // after CUB's kernels: an ordinary launch
    return cudaGetLastError();
}
