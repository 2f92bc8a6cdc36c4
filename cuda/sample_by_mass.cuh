// sample_by_mass.cuh - sampling from a large candidate set (top_k 0 or above kSmallVocab)
// without ordering it: a radix select over many blocks, weighted by probability mass, finds
// the top_k cut, the top_p cut and the drawn token (launch_draw).
#pragma once

#include "sample_common.cuh"

// Private to sample.cu, its one includer: internal linkage.
namespace {
using namespace gpt_cuda;

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

// The calling warp's bits and lowest ids combined (combine_bits, min) into s_bits[warp] and
// s_min[warp].
__device__ __forceinline__ void warp_share_bits(PassKind kind, uint32_t flag, uint32_t min_id, uint32_t *s_bits,
                                                uint32_t *s_min) {
    for (int o = 16; o > 0; o >>= 1) {
        flag = combine_bits(kind, flag, __shfl_down_sync(0xffffffffu, flag, o));
        min_id = min(min_id, __shfl_down_sync(0xffffffffu, min_id, o));
    }
    if (threadIdx.x % 32 == 0) {
        s_bits[threadIdx.x / 32] = flag;
        s_min[threadIdx.x / 32] = min_id;
    }
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
    warp_share_bits(pass.kind, flag, min_id, s_bits, s_min);
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
    if (!last_to_arrive(&st.arrivals, blocks, &s_last)) return;
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
    warp_share_bits(pass.kind, flag, min_id, s_bits, s_min);
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

} // namespace
