// sample.cu - penalty and adjustment passes, block argmax, and for stochastic sampling the
// CPU sampler's walk (lib/sampler/sampler.h: candidates in descending value, equal values by
// ascending id) without a sort of the whole row. Vocabularies of up to kSmallVocab entries
// (character-level models), and the top_k of larger ones when top_k <= kSmallVocab (found by a
// radix select by count: in pick_kernel's one block below kGatherVocab entries, by
// top_k_pass_kernel's many blocks above), are sorted and picked in one kernel, in shared memory
// (pick_kernel). Larger sets (top_k 0 or above kSmallVocab) are never sorted:
// draw_pass_kernel finds the token the walk would stop at, and the top_p cut, by a radix
// select by probability mass.
#include "sample.cuh"
#include "common.cuh"

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

using namespace gpt_cuda;

namespace {

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
            const unsigned peers = __match_any_sync(0xffffffffu, bin);
            if (bin != kNoBin && lane == (uint32_t)__ffs(peers) - 1) atomicAdd(&sh.hist[bin], (uint32_t)__popc(peers));
        });
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

// ---- Larger candidate sets (top_k 0 or above kSmallVocab): a radix select by mass ----
// Walking the candidates in value-then-id order, the CPU stops at the first whose running
// weight exceeds uniform * total (the draw), reaches top_p * sum (the top_p cut) or, counting
// each candidate as 1, reaches top_k (the top_k cut). That candidate is found without ordering
// the row: each select pass splits the candidates under the key prefix found so far by their
// next 4-bit digit and sums their weights per digit, which gives the stopping candidate's
// digit and the weight of every candidate above it; eight passes give its key, and a tie at
// that key (equal values, equal weights) is resolved by id as the CPU orders it.
//
// Every pass is one launch of draw_pass_kernel over the whole row, kSlice values a block, so
// a pass takes many SMs (one block per row spent ~12 us a pass at 50,257 values, instruction
// bound); the last block to finish a pass (an arrival counter) combines the blocks' sums in
// block order and leaves the result in the row's DrawState for the next pass. Sums are in
// double and in a fixed order, so the picks are the same on every run.
// A row's select in progress, and what earlier passes found.
struct DrawState {
    uint32_t arrivals;        // blocks done with the current pass
    uint32_t max_key;         // order key of the largest value (weight 1)
    uint32_t key_lo, id_lo;   // the kept prefix of the order: keys above key_lo, and id <= id_lo at key_lo
    uint32_t prefix, mask;    // the select's key digits found so far
    uint32_t want;            // top_k_pass_kernel: how many of the keys under the prefix to take
    double above;             // weight of the kept candidates with keys above the prefix
    double sum, total;        // softmax sum of the kept (top_k) values; of those after top_p and min_p
};

enum PassKind : int { kPassMax, kPassWeigh, kPassSum, kPassSelect, kPassTie };
// What a select (and its tie pass) stops at; a sum pass's target says which sum it makes.
enum PassTarget : int { kTargetTopK, kTargetTopP, kTargetDraw };
struct DrawPass {
    PassKind kind;
    PassTarget target;
    int shift; // select passes: the digit's lowest bit, 28 down to 0
};

static_assert(sizeof(DrawState) <= kStateBytes, "kStateBytes holds a DrawState");

__device__ __forceinline__ bool in_prefix(uint32_t key_lo, uint32_t id_lo, uint32_t key, uint32_t i) {
    return key > key_lo || (key == key_lo && i <= id_lo);
}

// The value whose order_key is `key` (-0 comes back as +0, which weighs the same).
__device__ __forceinline__ float key_value(uint32_t key) {
    return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

__device__ __forceinline__ double warp_sum(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Starts each row's state: no select done, every value kept.
__global__ void draw_init_kernel(Workspace ws, uint32_t batch) {
    pdl_wait();
    pdl_launch_dependents();
    for (uint32_t b = threadIdx.x; b < batch; b += blockDim.x) {
        DrawState s{};
        s.id_lo = 0xffffffffu;
        ws.state[b] = s;
    }
}

// Bits of the blocks' shares: digits present (select), the largest key (max), a count (tie).
__device__ __forceinline__ uint32_t combine_bits(PassKind kind, uint32_t x, uint32_t y) {
    return kind == kPassSelect ? (x | y) : kind == kPassMax ? max(x, y) : x + y;
}

// The tie pass's last block (all its threads): which of the candidates tied at the select's
// key the CPU's walk stops at - the j-th by id, j from the tie's weight and the weight above
// it - and where the select's result goes (the draw's token, or the kept prefix's end).
// count and lowest: how many candidates tie, and the lowest id of them.
__device__ void resolve_tie(const SampleArgs &a, const DrawPass &pass, DrawState &st, const uint2 *stash,
                            uint32_t count, uint32_t lowest, double target, bool inclusive, bool unit,
                            uint32_t *scratch /* [warps] */) {
    __shared__ uint32_t s_pick;
    const uint32_t n = a.vocab, tie_key = st.prefix;
    if (threadIdx.x == 0) s_pick = lowest;
    __syncthreads();
    if (count > 1) {
        const double weight = unit ? 1.0 : (double)__uint_as_float(__ldcg(&stash[lowest].y));
        const double slots = (target - st.above) / weight; // the tied weights before the stop
        uint32_t j = count - 1;
        if (weight > 0.0 && slots < (double)count) {
            const double before = inclusive ? ceil(slots) - 1.0 : floor(slots);
            j = before <= 0.0 ? 0 : (uint32_t)before;
        }
        // The (j + 1)-th tied candidate by id: the block walks the stash in id order, each
        // thread counting its kPerThread consecutive ids (ties are rare; linear at worst).
        for (uint32_t base = lowest & ~(uint32_t)(kPerThread - 1); base < n; base += kSlice) {
            const uint32_t first = base + threadIdx.x * kPerThread;
            uint32_t mine = 0;
            for (uint32_t i = first; i < first + kPerThread && i < n; i++) {
                const uint32_t key = __ldcg(&stash[i].x);
                mine += key == tie_key && in_prefix(st.key_lo, st.id_lo, key, i);
            }
            uint32_t total = 0;
            const uint32_t before = block_exclusive_sum(mine, scratch, &total);
            if (j >= before && j < before + mine) {
                uint32_t left = j - before;
                for (uint32_t i = first; i < first + kPerThread && i < n; i++) {
                    const uint32_t key = __ldcg(&stash[i].x);
                    if (key == tie_key && in_prefix(st.key_lo, st.id_lo, key, i) && left-- == 0) {
                        s_pick = i;
                        break;
                    }
                }
            }
            if (j < total) break;
            j -= total;
        }
        __syncthreads();
    }
    if (threadIdx.x != 0) return;
    const uint32_t pick = s_pick < n ? s_pick : n - 1;
    st.arrivals = 0;
    if (pass.target == kTargetDraw) {
        a.out[blockIdx.y] = (int32_t)pick;
    } else {
        st.key_lo = tie_key;
        st.id_lo = pick;
    }
}

__global__ void __launch_bounds__(kPassThreads) draw_pass_kernel(SampleArgs a, const float *values, Workspace ws,
                                                                  DrawPass pass) {
    constexpr int kWarps = kPassThreads / 32;
    __shared__ double s_warp[kWarps][kDigits];
    __shared__ uint32_t s_bits[kWarps], s_min[kWarps];
    __shared__ bool s_last;
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t b = blockIdx.y, n = a.vocab, blocks = gridDim.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    DrawState &st = ws.state[b];
    const float *row = values + (uint64_t)b * n;
    uint2 *stash = ws.stash + (uint64_t)b * stash_stride(n);
    double *partial = ws.partial + ((uint64_t)b * blocks + blockIdx.x) * kDigits; // [16] of this block
    uint32_t *bits = ws.bits + (uint64_t)b * blocks, *min_ids = ws.min_ids + (uint64_t)b * blocks;
    const float t = a.temperature;
    const uint32_t key_lo = st.key_lo, id_lo = st.id_lo;
    const bool unit = pass.target == kTargetTopK;                                 // count, not weigh
    const float min_weight = pass.target == kTargetDraw ? a.min_p : 0.0f; // min_p (p(first) = 1): the draw only
    const bool inclusive = pass.target != kTargetDraw;
    const double target = pass.target == kTargetTopK   ? (double)a.top_k
                          : pass.target == kTargetTopP ? (double)a.top_p * st.sum
                                                       : (double)a.uniform[b] * st.total;
    const bool first_pass = pass.shift == 32 - kDigitBits;
    const uint32_t prefix = first_pass ? 0 : st.prefix, mask = first_pass ? 0 : st.mask;

    // This block's values: from the row (max, weigh) or from the stash of (key, weight) pairs.
    uint32_t key[kPerThread], id[kPerThread];
    float w[kPerThread];
    bool valid[kPerThread];
    if (pass.kind == kPassMax || pass.kind == kPassWeigh) {
        const float mx = key_value(st.max_key);
#pragma unroll
        for (int u = 0; u < kPerThread; u++) {
            id[u] = blockIdx.x * kSlice + u * kPassThreads + threadIdx.x;
            valid[u] = id[u] < n;
            const float x = valid[u] ? row[id[u]] : 0.0f;
            key[u] = order_key(x);
            w[u] = pass.kind == kPassWeigh ? expf((x - mx) / t) : 0.0f; // the CPU's weight, in [0, 1]
            if (pass.kind == kPassWeigh && valid[u]) stash[id[u]] = make_uint2(key[u], __float_as_uint(w[u]));
        }
    } else {
        const uint4 *pairs = reinterpret_cast<const uint4 *>(stash);
        const uint32_t n_pairs = (n + 1) / 2;
#pragma unroll
        for (int u = 0; u < kPerThread / 2; u++) {
            const uint32_t q = blockIdx.x * (kSlice / 2) + u * kPassThreads + threadIdx.x;
            const uint4 p = q < n_pairs ? pairs[q] : make_uint4(0, 0, 0, 0);
            id[2 * u] = 2 * q;
            id[2 * u + 1] = 2 * q + 1;
            valid[2 * u] = q < n_pairs;
            valid[2 * u + 1] = 2 * q + 1 < n;
            key[2 * u] = p.x;
            key[2 * u + 1] = p.z;
            w[2 * u] = __uint_as_float(p.y);
            w[2 * u + 1] = __uint_as_float(p.w);
        }
    }

    // This block's share: per digit sums (select), one sum (weigh, sum), a max (max), or the
    // tie's count and lowest id (tie); into partial / bits / min_ids.
    double acc[kDigits];
#pragma unroll
    for (int d = 0; d < kDigits; d++) acc[d] = 0.0;
    uint32_t flag = 0, min_id = 0xffffffffu;
    const uint32_t tie_key = st.prefix;
#pragma unroll
    for (int u = 0; u < kPerThread; u++) {
        if (!valid[u]) continue;
        const bool kept = in_prefix(key_lo, id_lo, key[u], id[u]);
        if (pass.kind == kPassMax) {
            flag = max(flag, key[u]);
        } else if (pass.kind == kPassWeigh || pass.kind == kPassSum) {
            if (kept && (min_weight <= 0.0f || w[u] >= min_weight)) acc[0] += (double)w[u];
        } else if (pass.kind == kPassSelect) {
            if (!kept || (key[u] & mask) != prefix || (min_weight > 0.0f && !(w[u] >= min_weight))) continue;
            const uint32_t digit = (key[u] >> pass.shift) & (kDigits - 1);
            const double weight = unit ? 1.0 : (double)w[u];
#pragma unroll
            for (int d = 0; d < kDigits; d++) acc[d] += digit == (uint32_t)d ? weight : 0.0;
            flag |= 1u << digit;
        } else if (kept && key[u] == tie_key) { // kPassTie (the floor holds for the whole tie)
            flag++;
            min_id = min(min_id, id[u]);
        }
    }
    const int digits = pass.kind == kPassSelect ? kDigits : pass.kind == kPassWeigh || pass.kind == kPassSum ? 1 : 0;
#pragma unroll
    for (int d = 0; d < kDigits; d++) { // unrolled: acc stays in registers
        if (d >= digits) break;
        const double s = warp_sum(acc[d]);
        if (lane == 0) s_warp[warp][d] = s;
    }
    // Bits (select: digits present; max: key; tie: count) and the tie's lowest id, per warp.
    for (int o = 16; o > 0; o >>= 1) {
        flag = combine_bits(pass.kind, flag, __shfl_down_sync(0xffffffffu, flag, o));
        min_id = min(min_id, __shfl_down_sync(0xffffffffu, min_id, o));
    }
    if (lane == 0) {
        s_bits[warp] = flag;
        s_min[warp] = min_id;
    }
    __syncthreads();
    if (threadIdx.x < (uint32_t)digits) {
        double s = 0.0;
        for (int v = 0; v < kWarps; v++) s += s_warp[v][threadIdx.x];
        partial[threadIdx.x] = s;
    }
    if (threadIdx.x == 0) {
        uint32_t f = s_bits[0], m = s_min[0];
        for (int v = 1; v < kWarps; v++) {
            f = combine_bits(pass.kind, f, s_bits[v]);
            m = min(m, s_min[v]);
        }
        bits[blockIdx.x] = f;
        min_ids[blockIdx.x] = m;
    }

    // The last block of the row to finish combines the blocks' shares, in a fixed order.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) s_last = atomicAdd(&st.arrivals, 1u) == blocks - 1;
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    const double *row_partial = ws.partial + (uint64_t)b * blocks * kDigits;
    flag = 0;
    min_id = 0xffffffffu;
    for (uint32_t k = threadIdx.x; k < blocks; k += kPassThreads) {
        flag = combine_bits(pass.kind, flag, __ldcg(&bits[k]));
        min_id = min(min_id, __ldcg(&min_ids[k]));
    }
    __syncthreads(); // s_warp, s_bits and s_min are reused
    for (int d = warp; d < digits; d += kWarps) { // a warp a digit: its lanes stride over the blocks
        double sum = 0.0;
        for (uint32_t k = lane; k < blocks; k += 32) sum += __ldcg(&row_partial[k * kDigits + d]);
        sum = warp_sum(sum);
        if (lane == 0) s_warp[0][d] = sum;
    }
    for (int o = 16; o > 0; o >>= 1) {
        flag = combine_bits(pass.kind, flag, __shfl_down_sync(0xffffffffu, flag, o));
        min_id = min(min_id, __shfl_down_sync(0xffffffffu, min_id, o));
    }
    if (lane == 0) {
        s_bits[warp] = flag;
        s_min[warp] = min_id;
    }
    __syncthreads();
    flag = s_bits[0];
    min_id = s_min[0];
    for (int v = 1; v < kWarps; v++) {
        flag = combine_bits(pass.kind, flag, s_bits[v]);
        min_id = min(min_id, s_min[v]);
    }
    if (pass.kind == kPassTie) {
        __syncthreads(); // s_bits is the walk's scratch
        resolve_tie(a, pass, st, stash, flag, min_id, target, inclusive, unit, s_bits);
        return;
    }
    if (threadIdx.x != 0) return;
    st.arrivals = 0;
    if (pass.kind == kPassMax) {
        st.max_key = flag;
    } else if (pass.kind == kPassWeigh || pass.kind == kPassSum) {
        const double sum = s_warp[0][0];
        if (pass.kind == kPassWeigh || pass.target == kTargetTopK) st.sum = sum; // the kept values' softmax sum
        st.total = sum;                                                          // what the draw walks over
    } else { // kPassSelect: from the largest digit down; the last present one where none
             // reaches the target (a target at the very end, rounding, NaN)
        double cum = first_pass ? 0.0 : st.above, above = cum;
        uint32_t pick = 0;
        for (int d = kDigits - 1; d >= 0; d--) {
            if (!((flag >> d) & 1u)) continue;
            pick = (uint32_t)d;
            above = cum;
            cum += s_warp[0][d];
            if (inclusive ? cum >= target : cum > target) break;
        }
        st.prefix = prefix | pick << pass.shift;
        st.mask = mask | (uint32_t)(kDigits - 1) << pass.shift;
        st.above = above;
    }
}

// The passes of one select: eight digits, then the tie at the key they give.
cudaError_t launch_select(const SampleArgs &a, const float *values, const Workspace &ws, PassTarget target,
                          cudaStream_t stream) {
    const dim3 grid(pass_blocks(a.vocab), a.batch);
    cudaError_t e = cudaSuccess;
    for (int shift = 32 - kDigitBits; shift >= 0 && e == cudaSuccess; shift -= kDigitBits)
        e = launch_pdl(draw_pass_kernel, grid, kPassThreads, 0, stream, a, values, ws, DrawPass{kPassSelect, target, shift});
    if (e == cudaSuccess) e = launch_pdl(draw_pass_kernel, grid, kPassThreads, 0, stream, a, values, ws, DrawPass{kPassTie, target, 0});
    return e;
}

// top_k (above kSmallVocab), the softmax sum, top_p, min_p and the draw, over a row that is
// never sorted.
cudaError_t launch_draw(const SampleArgs &a, const float *values, const Workspace &ws, cudaStream_t stream) {
    const dim3 grid(pass_blocks(a.vocab), a.batch);
    auto pass = [&](PassKind kind, PassTarget target) {
        return launch_pdl(draw_pass_kernel, grid, kPassThreads, 0, stream, a, values, ws, DrawPass{kind, target, 0});
    };
    cudaError_t e = launch_pdl(draw_init_kernel, 1, 32, 0, stream, ws, a.batch);
    if (e == cudaSuccess) e = pass(kPassMax, kTargetDraw);
    if (e == cudaSuccess) e = pass(kPassWeigh, kTargetTopP); // the sum over every value (no min_p)
    if (e == cudaSuccess && a.top_k > 0 && a.top_k < a.vocab) {
        e = launch_select(a, values, ws, kTargetTopK, stream);
        if (e == cudaSuccess) e = pass(kPassSum, kTargetTopK); // the sum over the top_k
    }
    if (e == cudaSuccess && a.top_p < 1.0f) e = launch_select(a, values, ws, kTargetTopP, stream);
    if (e == cudaSuccess && (a.top_p < 1.0f || a.min_p > 0.0f)) e = pass(kPassSum, kTargetDraw);
    if (e == cudaSuccess) e = launch_select(a, values, ws, kTargetDraw, stream);
    return e;
}

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
        for (int u = 0; u < kPerThread; u++) { // a warp adds each digit once, with its count
            const uint32_t i = blockIdx.x * kSlice + u * kPassThreads + threadIdx.x, key = order_key(x[u]);
            const uint32_t bin = i < n && (key & mask) == prefix ? (key >> shift) & 255u : kNoBin;
            const unsigned peers = __match_any_sync(0xffffffffu, bin);
            if (bin != kNoBin && lane == (uint32_t)__ffs(peers) - 1) atomicAdd(&s_hist[bin], (uint32_t)__popc(peers));
        }
        __syncthreads();
        uint32_t *mine = ws.hist(b, blocks, blockIdx.x);
        for (uint32_t d = threadIdx.x; d < 256; d += kPassThreads) mine[d] = s_hist[d];

        // The last block of the row to finish adds the histograms and picks the digit.
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) s_last = atomicAdd(&st.arrivals, 1u) == blocks - 1;
        __syncthreads();
        if (!s_last) return;
        __threadfence();
        for (uint32_t d = threadIdx.x; d < 256; d += kPassThreads) {
            uint32_t sum = 0;
#pragma unroll 8
            for (uint32_t k = 0; k < blocks; k++) sum += __ldcg(&ws.hist(b, blocks, k)[d]);
            s_hist[d] = sum;
        }
        __syncthreads();
        if (warp != 0) return;
        uint32_t c[8], sum = 0; // lane l holds digits 255 - 8 l down to 248 - 8 l
#pragma unroll
        for (int j = 0; j < 8; j++) sum += c[j] = s_hist[255 - (lane * 8 + j)];
        uint32_t incl = sum;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const uint32_t up = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= (uint32_t)o) incl += up;
        }
        const uint32_t before = incl - sum;
        if (before < want && incl >= want) { // one lane (none only if top_k exceeded the row)
            uint32_t cum = before;
            for (int j = 0; j < 8; j++) {
                if (cum + c[j] >= want) {
                    st.prefix = prefix | (uint32_t)(255 - (lane * 8 + j)) << shift;
                    st.mask = mask | 255u << shift;
                    st.want = want - cum;
                    break;
                }
                cum += c[j];
            }
        }
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
