// moe.cu - the mixture-of-experts kernels (moe.cuh). Every dot product (router logit, GLU
// column, a slot's down column) has one warp as owner and every sum a fixed order: no atomics,
// the same result on every run (the down kernel's slots meet in shared memory, added in slot
// order). The weight loops take 16-byte vectors when the rows are 16-byte aligned (the usual
// case), several loads in flight per lane before any is used, and single elements otherwise;
// the quantized ones walk 16-byte chunks of the packed row as gemv.cu does. Variants: the
// activation type (three; only f16 carries the quantized loops), and for gate_up one row or
// up to eight. Size (issue 16): the library ships this device code, so only the decode paths
// (the float vector loops and the quantized chunk loops) are unrolled over rows; the rarer
// fallbacks run a loop where registers allow (PERFORMANCE entry 31: rolling the quantized loops
// too saved 20 KB and cost 1-3% of quantized batch-8 decode, so they stay unrolled).
#include "moe.cuh"
#include "common.cuh"
#include "moe_stream.cuh"

#include <type_traits>

using namespace gpt_cuda;

namespace {

constexpr uint32_t kWarps = 8; // warps per block of the dot-product kernels

constexpr int kUnroll = 4; // 16-byte loads of one weight row a lane issues before using them

// acc[j][r] += this lane's share of w[j] . x[r] over kv 16-byte vectors, j < W, r < m <= R.
// kUnroll vectors of each of the W weight rows are loaded before any is used, so W x kUnroll
// loads are in flight per lane (a loop that used each load at once kept one: the expert rows
// are short, so latency, not bandwidth, set the time). The lane walks i = lane, lane + 32,
// ... in order, so the sums do not depend on kUnroll. Expert rows are read once a step:
// evict first (Stream); the router, read by every row of a prefill, keeps the default policy.
// before_x() runs once the first weight loads are issued and before x is read (the down kernel
// waits there for the kernel that wrote x); a lane with no vectors never runs it.
struct Nothing {
    __device__ void operator()() const {}
};
template <typename T, int W, int R, bool Stream = true, typename BeforeX = Nothing>
__device__ __forceinline__ void staged_dots(const uint4 *const *w, const uint4 *const *x, int m, uint32_t kv, uint32_t lane,
                                            float (*acc)[R], BeforeX before_x = {}) {
    constexpr uint32_t N = 16 / sizeof(T);
    for (uint32_t i0 = lane; i0 < kv; i0 += 32 * kUnroll) {
        uint4 wv[W][kUnroll];
#pragma unroll
        for (int j = 0; j < W; j++)
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                const uint32_t i = i0 + 32 * u;
                wv[j][u] = i >= kv ? make_uint4(0, 0, 0, 0) : Stream ? __ldcs(w[j] + i) : __ldg(w[j] + i);
            }
        if (i0 == lane) before_x();
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const uint32_t i = i0 + 32 * u;
            if (i >= kv) break;
            float wf[W][N];
#pragma unroll
            for (int j = 0; j < W; j++) widen16(wv[j][u], wf[j], T{});
#pragma unroll
            for (int r = 0; r < R; r++) {
                if (r >= m) break;
                float xf[N];
                const uint4 xv = x[r][i]; // one 16-byte load
                widen16(xv, xf, T{});
#pragma unroll
                for (int j = 0; j < W; j++)
#pragma unroll
                    for (uint32_t e = 0; e < N; e++) acc[j][r] += wf[j][e] * xf[e];
            }
        }
    }
}

// Whether w (k elements) and x[0..m) can be read as 16-byte vectors.
template <typename T>
__device__ __forceinline__ bool vectors_ok(const void *w, const T *const *x, int m, uint32_t k) {
    bool ok = k % (16 / sizeof(T)) == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0;
    for (int r = 0; r < m; r++) ok = ok && reinterpret_cast<uintptr_t>(x[r]) % 16 == 0;
    return ok;
}

// acc[r] += this lane's share of w[0..k) . x[r][0..k) for r < m <= R, element by element
// (rows that are not 16-byte vectors).
template <typename T, int R>
__device__ void lane_dots_scalar(const T *w, const T *const *x, int m, uint32_t k, uint32_t lane, float *acc) {
    for (uint32_t i = lane; i < k; i += 32) {
        const float wf = to_f32(w[i]);
#pragma unroll
        for (int r = 0; r < R; r++)
            if (r < m) acc[r] += wf * to_f32(x[r][i]);
    }
}

// acc[r] += this lane's share of w[0..k) . x[r][0..k) for r < m <= R (the caller sums the
// warp): each weight vector is loaded once for the m rows. before_x as in staged_dots (the
// element-wise path runs it first).
template <typename T, int R, typename BeforeX = Nothing>
__device__ void lane_dots(const T *w, const T *const *x, int m, uint32_t k, uint32_t lane, float *acc, BeforeX before_x = {}) {
    if (vectors_ok<T>(w, x, m, k)) {
        const uint4 *wv = reinterpret_cast<const uint4 *>(w);
        const uint4 *xv[R];
#pragma unroll
        for (int r = 0; r < R; r++) xv[r] = reinterpret_cast<const uint4 *>(x[r < m ? r : 0]);
        staged_dots<T, 1, R, false>(&wv, xv, m, k / (16 / sizeof(T)), lane, reinterpret_cast<float(*)[R]>(acc), before_x);
    } else {
        before_x();
        lane_dots_scalar<T, R>(w, x, m, k, lane, acc);
    }
}

// Integers to floats as gemv.cu does: q4 element e of a word (stored q + 8), q8 byte e of a
// word XOR 0x80808080.
__device__ __forceinline__ float nibble_at(uint32_t word, int e) {
    return __int_as_float(0x4B000000u | ((word >> (4 * e)) & 15u)) - 8388616.0f;
}
__device__ __forceinline__ float byte_at(uint32_t flipped, int e) {
    return __int_as_float(0x4B000000u | ((flipped >> (8 * e)) & 255u)) - 8388736.0f;
}

// acc[r] += this lane's share of row `row` of a quantized [total_rows][k] matrix . x[r] for
// r < m <= R (x f16, 16-byte aligned; k a multiple of 32 and of group, group of 32). As
// staged_dots: kUnroll chunks and their scales are loaded before any is used.
template <int R>
__device__ void lane_dots_quant(const void *w, bool q4, uint32_t group, uint64_t total_rows, uint64_t row, const __half *const *x,
                                int m, uint32_t k, uint32_t lane, float *acc) {
    const uint64_t row_bytes = q4 ? k / 2 : k;
    const uint32_t chunks = (uint32_t)(row_bytes / 16), per_chunk = q4 ? 32 : 16;
    const uint8_t *base = static_cast<const uint8_t *>(w);
    const uint4 *wrow = reinterpret_cast<const uint4 *>(base + row * row_bytes);
    const __half *srow = reinterpret_cast<const __half *>(base + total_rows * row_bytes) + row * (k / group);
    for (uint32_t i0 = lane; i0 < chunks; i0 += 32 * kUnroll) {
        uint4 cv[kUnroll];
        float sv[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const uint32_t i = i0 + 32 * u;
            cv[u] = i < chunks ? __ldcs(wrow + i) : make_uint4(0, 0, 0, 0);
            sv[u] = i < chunks ? __half2float(srow[i * per_chunk / group]) : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const uint32_t i = i0 + 32 * u;
            if (i >= chunks) break;
            const uint32_t e0 = i * per_chunk;
            const uint32_t words[4] = {cv[u].x, cv[u].y, cv[u].z, cv[u].w};
#pragma unroll
            for (int r = 0; r < R; r++) {
                if (r >= m) break;
                const uint4 *xv = reinterpret_cast<const uint4 *>(x[r] + e0);
                float part = 0.0f;
                if (q4) { // word v: elements 8v .. 8v + 7
#pragma unroll
                    for (int v = 0; v < 4; v++) {
                        float xf[8];
                        widen16(xv[v], xf, __half{});
#pragma unroll
                        for (int e = 0; e < 8; e++) part += nibble_at(words[v], e) * xf[e];
                    }
                } else { // words 2v, 2v + 1: elements 8v .. 8v + 7
#pragma unroll
                    for (int v = 0; v < 2; v++) {
                        float xf[8];
                        widen16(xv[v], xf, __half{});
                        const uint32_t lo = words[2 * v] ^ 0x80808080u, hi = words[2 * v + 1] ^ 0x80808080u;
#pragma unroll
                        for (int e = 0; e < 4; e++) part += byte_at(lo, e) * xf[e] + byte_at(hi, e) * xf[4 + e];
                    }
                }
                acc[r] += sv[u] * part;
            }
        }
    }
}

// acc[r] += this lane's share of row `row` of w (of type T, or quantized when wq) . x[r], r < m:
// the path of rows that are not 16-byte vectors of T. The kernels check one row of a matrix
// and x (an expert's rows start at multiples of the row length, so all are aligned or none),
// and come here only when that check fails: no vector loop for T here. Quantized weights
// come only with f16 activations (weights_ok), so only that type carries their code.
template <typename T, int R>
__device__ __forceinline__ void row_dots(const void *w, int wq, uint32_t group, uint64_t total_rows, uint64_t row,
                                         const T *const *x, int m, uint32_t k, uint32_t lane, float *acc) {
    if constexpr (std::is_same_v<T, __half>) {
        if (wq) {
            lane_dots_quant<R>(w, wq == Q4, group, total_rows, row, x, m, k, lane, acc);
            return;
        }
    }
    lane_dots_scalar<T, R>(static_cast<const T *>(w) + row * k, x, m, k, lane, acc);
}
// One row: this lane's share of row `row` of w . x.
template <typename T>
__device__ __forceinline__ float row_dot(const void *w, int wq, uint32_t group, uint64_t total_rows, uint64_t row, const T *x,
                                         uint32_t k, uint32_t lane) {
    float acc[1] = {0.0f};
    row_dots<T, 1>(w, wq, group, total_rows, row, &x, 1, k, lane, acc);
    return acc[0];
}

// Blocks of kRouterWarps warps: a decode step has few logits (64 for OLMoE), which blocks of
// eight warps put on 8 SMs; blocks of two spread them over 32. Float weights (never written)
// have their first loads issued before the wait for the kernel that wrote x, as gemv.cu does.
constexpr uint32_t kRouterWarps = 2;
template <typename T>
__global__ void __launch_bounds__(kRouterWarps * 32) router_kernel(const T *x, const void *w, int wq, uint32_t group, uint32_t rows,
                                                             uint32_t n, uint32_t k, float *logits) {
    bool waited = false;
    auto wait_once = [&] {
        if (waited) return;
        pdl_wait();
        pdl_launch_dependents();
        waited = true;
    };
    const uint32_t lane = threadIdx.x % 32;
    const uint64_t unit = (uint64_t)blockIdx.x * kRouterWarps + threadIdx.x / 32;
    if (unit >= (uint64_t)rows * n) return;
    const uint32_t r = (uint32_t)(unit / n), e = (uint32_t)(unit % n);
    const T *xr = x + (uint64_t)r * k;
    float acc[1] = {0.0f};
    if (wq) {
        wait_once();
        row_dots<T, 1>(w, wq, group, n, e, &xr, 1, k, lane, acc);
    } else {
        lane_dots<T, 1>(static_cast<const T *>(w) + (uint64_t)e * k, &xr, 1, k, lane, acc, wait_once);
    }
    const float s = warp_sum(acc[0]);
    wait_once(); // every thread, before the write (and lanes that had no vectors to read)
    if (lane == 0) logits[unit] = s;
}

// The N floats of vector i (N elements) of an f32 row, zeros past kv vectors, read 16 bytes at
// a time by load (the norm weights: __ldg; the residual row, written by the kernel before: __ldcg).
template <uint32_t N, typename Load>
__device__ __forceinline__ void vector_floats(const float *row, uint32_t i, uint32_t kv, float *out, Load load) {
#pragma unroll
    for (uint32_t q = 0; q < N; q += 4) {
        const float4 v = i < kv ? load(reinterpret_cast<const float4 *>(row + (uint64_t)i * N + q)) : make_float4(0, 0, 0, 0);
        out[q] = v.x; out[q + 1] = v.y; out[q + 2] = v.z; out[q + 3] = v.w;
    }
}

// router_kernel with the RMSNorm of its input folded in (moe.cuh): warp (r, e) holds row r's
// elements of its lanes in registers (at most kNormRouterVecs 16-byte vectors of T a lane),
// sums their squares over the warp (the same lanes in the same order in every warp of the
// row, so all get the same scale), and dots the normed values, rounded to T as H holds them,
// with expert e's weights, loaded with the norm weights before the wait. Vector u of the row
// goes to h from the warp whose expert is u % n (each written once).
constexpr uint32_t kNormRouterVecs = 8;
template <typename T>
__global__ void __launch_bounds__(kRouterWarps * 32) norm_router_kernel(const float *x, const float *norm_w, float eps, T *h,
                                                                        const T *w, uint32_t rows, uint32_t n, uint32_t k,
                                                                        float *logits) {
    constexpr uint32_t N = 16 / sizeof(T), V = kNormRouterVecs;
    const uint32_t lane = threadIdx.x % 32, kv = k / N;
    const uint64_t unit = (uint64_t)blockIdx.x * kRouterWarps + threadIdx.x / 32;
    const bool active = unit < (uint64_t)rows * n;
    const uint32_t r = active ? (uint32_t)(unit / n) : 0, e = active ? (uint32_t)(unit % n) : 0;
    const uint4 *wrow = reinterpret_cast<const uint4 *>(w + (uint64_t)e * k);
    uint4 wv[V];
    float g[V][N];
#pragma unroll
    for (uint32_t u = 0; u < V; u++) { // weights are never written: before the wait
        const uint32_t i = lane + 32 * u;
        wv[u] = i < kv ? __ldg(wrow + i) : make_uint4(0, 0, 0, 0);
        vector_floats<N>(norm_w, i, kv, g[u], [](const float4 *p) { return __ldg(p); });
    }
    pdl_wait();
    pdl_launch_dependents();
    if (!active) return;
    const float *xr = x + (uint64_t)r * k;
    float xf[V][N];
#pragma unroll
    for (uint32_t u = 0; u < V; u++) vector_floats<N>(xr, lane + 32 * u, kv, xf[u], [](const float4 *p) { return __ldcg(p); });
    float sq = 0.0f;
#pragma unroll
    for (uint32_t u = 0; u < V; u++)
#pragma unroll
        for (uint32_t q = 0; q < N; q++) sq += xf[u][q] * xf[u][q];
    const float inv = rsqrtf(warp_sum(sq) / k + eps);
    float acc = 0.0f;
#pragma unroll
    for (uint32_t u = 0; u < V; u++) {
        const uint32_t i = lane + 32 * u;
        if (i >= kv) break;
        float wf[N];
        widen16(wv[u], wf, T{});
        alignas(16) T hv[N];
#pragma unroll
        for (uint32_t q = 0; q < N; q++) {
            hv[q] = from_f32<T>(xf[u][q] * inv * g[u][q]);
            acc += wf[q] * to_f32(hv[q]);
        }
        if (u % n == e) *reinterpret_cast<uint4 *>(h + (uint64_t)r * k + (uint64_t)i * N) = *reinterpret_cast<const uint4 *>(hv);
    }
    const float s = warp_sum(acc);
    if (lane == 0) logits[unit] = s;
}

// One block per row, by ranks: its first warp puts p = softmax(logits) in shared memory, then
// the block counts, for each expert, the experts ranked before it (larger p, or equal p and a
// lower index; NaN below every number): an expert of rank s < k takes slot s. A strict total
// order on distinct indices gives every rank once, so the k slots are always k distinct, valid
// experts. The count is O(n^2) comparisons: one warp doing them all took ~4.4 us of a decode
// step's critical path at 64 experts (ncu, 2026-11-27), so `per` threads share an expert, each
// counting a contiguous part of the row, and shuffles add their counts. The row is read from
// memory once, into shared memory.
constexpr uint32_t kTopkMaxThreads = 256;
__global__ void __launch_bounds__(kTopkMaxThreads) topk_kernel(const float *logits, uint32_t n, uint32_t k, int norm, int32_t *ids,
                                                            float *weights) {
    extern __shared__ float prob[]; // [n]: the logits, then p with NaN as -1 (p >= 0 otherwise)
    __shared__ uint32_t chosen[kMoeMaxTopK];
    __shared__ float chosen_p[kMoeMaxTopK];
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t r = blockIdx.x, t = threadIdx.x, lane = t % 32;
    if (t < 32) {
        const float *l = logits + (uint64_t)r * n;
        float m = -INFINITY;
        for (uint32_t e = lane; e < n; e += 32) {
            const float v = l[e];
            prob[e] = v;
            m = fmaxf(m, v);
        }
        m = warp_max(m);
        float z = 0.0f;
        for (uint32_t e = lane; e < n; e += 32) z += expf(prob[e] - m);
        z = warp_sum(z);
        for (uint32_t e = lane; e < n; e += 32) {
            const float p = expf(prob[e] - m) / z;
            prob[e] = p != p ? -1.0f : p;
        }
    }
    __syncthreads();
    // per: a power of two <= 32 with n * per <= blockDim (so groups of `per` lanes sit in one
    // warp); every thread runs the same iterations, so the shuffles see whole warps.
    uint32_t per = 1;
    while (per < 32 && (uint64_t)n * per * 2 <= blockDim.x) per *= 2;
    const uint32_t part_len = (n + per - 1) / per;
    for (uint32_t base = 0; base < n * per; base += blockDim.x) {
        const uint32_t e = (base + t) / per, part = (base + t) % per;
        uint32_t rank = 0;
        float pe = 0.0f;
        if (e < n) {
            pe = prob[e];
            const uint32_t f0 = part * part_len, f1 = min(n, f0 + part_len);
            for (uint32_t f = f0; f < f1; f++) {
                const float pf = prob[f];
                rank += pf > pe || (pf == pe && f < e);
            }
        }
        for (uint32_t o = per / 2; o; o /= 2) rank += __shfl_xor_sync(0xffffffffu, rank, o);
        if (e < n && part == 0 && rank < k) {
            chosen[rank] = e;
            chosen_p[rank] = pe < 0.0f ? NAN : pe; // the probability itself (NaN stays NaN)
        }
    }
    __syncthreads();
    if (t >= k) return;
    float sum = 0.0f;
    for (uint32_t s = 0; s < k; s++) sum += chosen_p[s];
    ids[(uint64_t)r * k + t] = (int32_t)chosen[t];
    weights[(uint64_t)r * k + t] = norm ? chosen_p[t] / sum : chosen_p[t];
}

__device__ __forceinline__ uint32_t clamp_expert(int32_t e, uint32_t n_experts) {
    return e < 0 ? 0u : min((uint32_t)e, n_experts - 1); // always a row of the matrix
}
__device__ __forceinline__ uint32_t expert_of(const int32_t *ids, uint64_t pair, uint32_t n_experts) {
    return clamp_expert(ids[pair], n_experts);
}

// grid (ceil(ff / kWarps), rows * top_k): a warp owns GLU column j of the expert of pair
// blockIdx.y when that pair is the expert's first; it then serves every pair routed to the
// expert (up to R at a time: R >= rows serves them all in one pass, as top-k never routes a
// row twice to one expert), so each expert row is read once per step. The block first copies
// the step's expert ids to shared memory in one parallel read (the scans over the pairs
// below, one dependent global load each, took a memory round trip per pair). The gate and
// up rows are loaded together (staged_dots), twice the loads in flight of one after the other.
constexpr uint32_t kMoeDecodeMaxPairs = kMoeDecodeMaxRows * kMoeMaxTopK;
template <typename T, int R> __global__ void __launch_bounds__(kWarps * 32) gate_up_kernel(MoeExpertArgs a) {
    __shared__ uint32_t expert[kMoeDecodeMaxPairs];
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t lane = threadIdx.x % 32, j = blockIdx.x * kWarps + threadIdx.x / 32, pair = blockIdx.y;
    const uint32_t pairs = a.rows * a.top_k; // <= kMoeDecodeMaxPairs (the launcher checks)
    for (uint32_t q = threadIdx.x; q < pairs; q += blockDim.x) expert[q] = expert_of(a.ids, q, a.n_experts);
    __syncthreads();
    if (j >= a.ff) return;
    const uint32_t e = expert[pair];
    for (uint32_t q = 0; q < pair; q++)
        if (expert[q] == e) return; // an earlier pair's block owns this expert
    const uint64_t total = (uint64_t)a.n_experts * 2 * a.ff, first = (uint64_t)e * 2 * a.ff;
    const T *x = static_cast<const T *>(a.x);
    uint32_t q = pair;
    while (q < pairs) {
        uint32_t served[R];
        const T *xs[R];
        int m = 0;
        for (; q < pairs && m < R; q++)
            if (expert[q] == e) {
                served[m] = q;
                xs[m] = x + (uint64_t)(q / a.top_k) * a.d;
                m++;
            }
        if (m == 0) break; // the last batch of pairs was full
        float gu[2][R];
#pragma unroll
        for (int r = 0; r < R; r++) gu[0][r] = gu[1][r] = 0.0f;
        const T *gate_row = static_cast<const T *>(a.w) + (first + j) * a.d, *up_row = gate_row + (uint64_t)a.ff * a.d;
        if (!a.wq && vectors_ok<T>(gate_row, xs, m, a.d) && vectors_ok<T>(up_row, xs, 0, a.d)) {
            const uint4 *wv[2] = {reinterpret_cast<const uint4 *>(gate_row), reinterpret_cast<const uint4 *>(up_row)};
            const uint4 *xv[R];
#pragma unroll
            for (int r = 0; r < R; r++) xv[r] = reinterpret_cast<const uint4 *>(xs[r < m ? r : 0]);
            staged_dots<T, 2, R>(wv, xv, m, a.d / (16 / sizeof(T)), lane, gu);
        } else {
            // The gate row, then the up row: a run-time loop keeps one copy of the (large,
            // quantized) loop code; the copy into gu keeps its index a constant (registers).
#pragma unroll 1
            for (uint32_t h = 0; h < 2; h++) {
                float part[R];
#pragma unroll
                for (int r = 0; r < R; r++) part[r] = 0.0f;
                row_dots<T, R>(a.w, a.wq, a.group, total, first + h * a.ff + j, xs, m, a.d, lane, part);
#pragma unroll
                for (int r = 0; r < R; r++) (h == 0 ? gu[0][r] : gu[1][r]) = part[r];
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (r >= m) break;
            const float gs = warp_sum(gu[0][r]), us = warp_sum(gu[1][r]);
            // Gate and up rounded to the activation type first, as the dense GLU stores them.
            if (lane == 0)
                static_cast<T *>(a.glu_out)[(uint64_t)served[r] * a.ff + j] =
                    from_f32<T>(activate(to_f32(from_f32<T>(gs)), a.act) * to_f32(from_f32<T>(us)));
        }
    }
}

// grid (ceil(d / 2), rows), top_k warps (at most kWarps) a block: the block owns output
// columns i0 and i0 + 1 of row r; warp w takes slots w, w + warps, ..., reading the two down
// rows of the slot's expert together (one x vector serves both), and leaves the slot's sums
// in shared memory beside the slot's routing weight; then the slot-ordered weighted sums go
// to the residual. Spreading the slots over warps puts all of a row's expert reads in flight
// at once, where a warp walking the slots waited for each in turn. The routing and the first weight loads go before the
// wait for gate_up (programmatic dependent launch), so they overlap its tail: top-k wrote the
// routing before gate_up passed its own wait, and L2 (__ldcg) holds it; only the GLU outputs
// (x) and the residual come after the wait.
constexpr uint32_t kDownColumns = 2;
template <typename T> __global__ void __launch_bounds__(kWarps * 32) down_kernel(MoeExpertArgs a) {
    __shared__ float slot_dot[kMoeMaxTopK][kDownColumns], slot_weight[kMoeMaxTopK];
    bool waited = false;
    auto wait_once = [&] {
        if (waited) return;
        pdl_wait();
        pdl_launch_dependents();
        waited = true;
    };
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32, r = blockIdx.y;
    const uint32_t i0 = blockIdx.x * kDownColumns;
    const uint64_t total = (uint64_t)a.n_experts * a.d;
    for (uint32_t s = warp; s < a.top_k; s += warps) {
        const uint64_t pair = (uint64_t)r * a.top_k + s;
        if (lane == 0) slot_weight[s] = __ldcg(a.weights + pair); // read beside the weights, not after them
        const uint64_t first = (uint64_t)clamp_expert(__ldcg(a.ids + pair), a.n_experts) * a.d;
        const T *x = static_cast<const T *>(a.x) + pair * a.ff;
        const uint64_t rows[kDownColumns] = {first + i0, first + min(i0 + 1, a.d - 1)}; // past d: a valid row, unused
        const T *w0 = static_cast<const T *>(a.w) + rows[0] * a.ff, *w1 = static_cast<const T *>(a.w) + rows[1] * a.ff;
        float acc[kDownColumns][1] = {{0.0f}, {0.0f}};
        if (!a.wq && vectors_ok<T>(w0, &x, 1, a.ff) && vectors_ok<T>(w1, &x, 0, a.ff)) {
            const uint4 *wv[kDownColumns] = {reinterpret_cast<const uint4 *>(w0), reinterpret_cast<const uint4 *>(w1)};
            const uint4 *xv = reinterpret_cast<const uint4 *>(x);
            staged_dots<T, kDownColumns, 1, true>(wv, &xv, 1, a.ff / (16 / sizeof(T)), lane, acc, wait_once);
        } else {
            wait_once();
            // A run-time loop: one copy of the loop code for both columns (as in gate_up).
#pragma unroll 1
            for (uint32_t c = 0; c < kDownColumns; c++) {
                const float v = row_dot<T>(a.w, a.wq, a.group, total, c == 0 ? rows[0] : rows[1], x, a.ff, lane);
                (c == 0 ? acc[0][0] : acc[1][0]) = v;
            }
        }
        for (uint32_t c = 0; c < kDownColumns; c++) {
            const float v = warp_sum(acc[c][0]);
            if (lane == 0) slot_dot[s][c] = v;
        }
    }
    wait_once(); // every thread, before the residual (and lanes that had no vectors to read)
    __syncthreads();
    if (threadIdx.x >= kDownColumns || i0 + threadIdx.x >= a.d) return;
    float acc = 0.0f;
    for (uint32_t s = 0; s < a.top_k; s++) acc += slot_weight[s] * slot_dot[s][threadIdx.x];
    a.residual[(uint64_t)r * a.d + i0 + threadIdx.x] += acc;
}

// One block; warp w handles experts w, w + warps, ...: it walks the pairs 32 at a time, a
// ballot marking its expert's, so the positions within an expert follow the pair order. Each
// lane loads kUnroll chunks' ids before the ballots (one at a time, a pass over 4,096 pairs
// was 128 load latencies in series), and the counts' prefix sum runs in shared memory (in
// global memory each step waited for the store before it).
__global__ void group_kernel(const int32_t *ids, uint32_t n, uint32_t n_experts, int32_t *offsets, int32_t *perm, int32_t *inv) {
    extern __shared__ int32_t start[]; // [n_experts + 1]: counts, then where each expert starts
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    // The experts of pairs base + 32 u + lane, u < kUnroll (~0u past n: no expert's).
    auto load = [&](uint32_t base, uint32_t *v) {
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const uint32_t p = base + 32 * u + lane;
            v[u] = p < n ? expert_of(ids, p, n_experts) : ~0u;
        }
    };
    for (uint32_t e = warp; e < n_experts; e += warps) {
        int32_t c = 0;
        for (uint32_t base = 0; base < n; base += 32 * kUnroll) {
            uint32_t v[kUnroll];
            load(base, v);
#pragma unroll
            for (int u = 0; u < kUnroll; u++) c += __popc(__ballot_sync(0xffffffffu, v[u] == e));
        }
        if (lane == 0) start[e + 1] = c;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        start[0] = 0;
        offsets[0] = 0;
        for (uint32_t e = 0; e < n_experts; e++) {
            start[e + 1] += start[e];
            offsets[e + 1] = start[e + 1];
        }
    }
    __syncthreads();
    for (uint32_t e = warp; e < n_experts; e += warps) {
        int32_t q = start[e];
        for (uint32_t base = 0; base < n; base += 32 * kUnroll) {
            uint32_t v[kUnroll];
            load(base, v);
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                const uint32_t p = base + 32 * u + lane;
                const bool hit = v[u] == e;
                const uint32_t mask = __ballot_sync(0xffffffffu, hit);
                if (hit) {
                    const int32_t at = q + __popc(mask & ((1u << lane) - 1));
                    perm[at] = (int32_t)p;
                    inv[p] = at;
                }
                q += __popc(mask);
            }
        }
    }
}

template <typename T> __global__ void gather_kernel(const T *x, const int32_t *perm, uint32_t top_k, uint32_t d, T *out) {
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t q = blockIdx.x;
    const T *src = x + (uint64_t)(perm[q] / top_k) * d;
    T *dst = out + (uint64_t)q * d;
    for (uint32_t i = threadIdx.x; i < d; i += blockDim.x) dst[i] = src[i];
}

__global__ void combine_kernel(const float *down, const float *weights, const int32_t *inv, uint32_t rows, uint32_t top_k,
                               uint32_t d, float *residual) {
    pdl_wait();
    pdl_launch_dependents();
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (uint64_t)rows * d) return;
    const uint64_t r = t / d, i = t % d;
    float acc = 0.0f;
    for (uint32_t s = 0; s < top_k; s++) {
        const uint64_t pair = r * top_k + s;
        acc += weights[pair] * down[(uint64_t)inv[pair] * d + i];
    }
    residual[t] += acc;
}

__global__ void shared_add_kernel(const float *y, const float *gate, uint32_t rows, uint32_t d, float *residual) {
    pdl_wait();
    pdl_launch_dependents();
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (uint64_t)rows * d) return;
    const float g = gate ? 1.0f / (1.0f + expf(-gate[t / d])) : 1.0f;
    residual[t] += g * y[t];
}

// The weight checks every dot-product launcher makes.
bool weights_ok(int wq, uint32_t group, uint32_t k, int act_dtype) {
    if (!wq) return act_dtype == F32 || act_dtype == F16 || act_dtype == BF16;
    return (wq == Q8 || wq == Q4) && act_dtype == F16 && k % 32 == 0 && group != 0 && group % 32 == 0 && k % group == 0;
}

} // namespace

cudaError_t launch_moe_router(const void *x, const void *w, int wq, uint32_t group, uint32_t rows, uint32_t n, uint32_t k,
                              int act_dtype, float *logits, cudaStream_t stream) {
    if (rows == 0 || n == 0) return cudaSuccess;
    if (k == 0 || !weights_ok(wq, group, k, act_dtype)) return cudaErrorInvalidValue;
    const uint64_t blocks = ((uint64_t)rows * n + kRouterWarps - 1) / kRouterWarps;
    if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(router_kernel<T>, (uint32_t)blocks, kRouterWarps * 32, 0, stream, static_cast<const T *>(x), w, wq, group, rows,
                        n, k, logits);
    });
    return e != cudaSuccess ? e : e2;
}

bool moe_norm_router_supported(uint32_t rows, uint32_t k, int act_dtype, const void *x, const void *norm_w, const void *h,
                               const void *w) {
    const uint32_t n = act_dtype == F32 ? 4 : 8; // elements of a 16-byte vector
    auto aligned = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    return (act_dtype == F32 || act_dtype == F16 || act_dtype == BF16) && rows > 0 && k > 0 && k % n == 0 &&
           k / n <= 32 * kNormRouterVecs && aligned(x) && aligned(norm_w) && aligned(h) && aligned(w);
}

cudaError_t launch_moe_norm_router(const float *x, const float *norm_w, float eps, void *h, const void *w, uint32_t rows,
                                   uint32_t n, uint32_t k, int act_dtype, float *logits, cudaStream_t stream) {
    if (rows == 0 || n == 0) return cudaSuccess;
    if (!moe_norm_router_supported(rows, k, act_dtype, x, norm_w, h, w)) return cudaErrorInvalidValue;
    const uint64_t blocks = ((uint64_t)rows * n + kRouterWarps - 1) / kRouterWarps;
    if (blocks > 0x7fffffffu) return cudaErrorInvalidValue;
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(norm_router_kernel<T>, (uint32_t)blocks, kRouterWarps * 32, 0, stream, x, norm_w, eps, static_cast<T *>(h),
                        static_cast<const T *>(w), rows, n, k, logits);
    });
    return e != cudaSuccess ? e : e2;
}

cudaError_t launch_moe_topk(const float *logits, uint32_t rows, uint32_t n_experts, uint32_t k, int norm, int32_t *ids,
                            float *weights, cudaStream_t stream) {
    if (rows == 0) return cudaSuccess;
    if (k == 0 || k > kMoeMaxTopK || k > n_experts || n_experts > kMoeMaxExpertsCuda) return cudaErrorInvalidValue;
    // About four threads an expert, 32 to kTopkMaxThreads: a 256-thread block cost a few
    // experts' (moe-768: 8) decode step 1.5% over one warp, and took 2% off OLMoE's (64).
    uint32_t threads = 32;
    while (threads < kTopkMaxThreads && threads < 4 * n_experts) threads *= 2;
    return launch_pdl(topk_kernel, rows, threads, 4ull * n_experts, stream, logits, n_experts, k, norm, ids, weights);
}

static cudaError_t check_experts(const MoeExpertArgs &a) {
    if (a.top_k == 0 || a.top_k > a.n_experts || a.top_k > kMoeMaxTopK || a.d == 0 || a.ff == 0) return cudaErrorInvalidValue;
    if (!weights_ok(a.wq, a.group, a.d, a.act_dtype) || !weights_ok(a.wq, a.group, a.ff, a.act_dtype)) return cudaErrorInvalidValue;
    return cudaSuccess;
}

cudaError_t launch_moe_gate_up(const MoeExpertArgs &a, cudaStream_t stream) {
    if (a.rows == 0) return cudaSuccess;
    if (const cudaError_t c = check_experts(a)) return c;
    if ((uint64_t)a.rows * a.top_k > kMoeDecodeMaxPairs) return cudaErrorInvalidValue; // the block's shared ids
    if (moe_stream_gate_up_supported(a)) {
        const cudaError_t s = launch_moe_gate_up_stream(a, stream);
        if (s != cudaErrorNotSupported) return s;
    }
    const dim3 grid(ceil_div(a.ff, kWarps), a.rows * a.top_k);
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(a.act_dtype, [&](auto tag) {
        using T = decltype(tag);
        // One row (decode at batch 1): a kernel without the registers of eight rows' sums.
        if (a.rows == 1) e2 = launch_pdl(gate_up_kernel<T, 1>, grid, kWarps * 32, 0, stream, a);
        else e2 = launch_pdl(gate_up_kernel<T, kMoeDecodeMaxRows>, grid, kWarps * 32, 0, stream, a);
    });
    return e != cudaSuccess ? e : e2;
}

cudaError_t launch_moe_down(const MoeExpertArgs &a, cudaStream_t stream) {
    if (a.rows == 0) return cudaSuccess;
    if (const cudaError_t c = check_experts(a)) return c;
    if (a.rows > 65535) return cudaErrorInvalidValue; // grid.y
    const dim3 grid(ceil_div(a.d, kDownColumns), a.rows);
    const uint32_t warps = a.top_k < kWarps ? a.top_k : kWarps; // a warp per slot, at most kWarps
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(a.act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(down_kernel<T>, grid, warps * 32, 0, stream, a);
    });
    return e != cudaSuccess ? e : e2;
}

cudaError_t launch_moe_group(const int32_t *ids, uint32_t n, uint32_t n_experts, int32_t *offsets, int32_t *perm, int32_t *inv,
                             cudaStream_t stream) {
    if (n_experts == 0 || n_experts > kMoeMaxExpertsCuda) return cudaErrorInvalidValue;
    return launch_pdl(group_kernel, 1, 1024, 4ull * (n_experts + 1), stream, ids, n, n_experts, offsets, perm, inv);
}

cudaError_t launch_moe_gather(const void *x, const int32_t *perm, uint32_t n, uint32_t top_k, uint32_t d, int act_dtype,
                              void *out, cudaStream_t stream) {
    if (n == 0) return cudaSuccess;
    if (top_k == 0) return cudaErrorInvalidValue;
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(gather_kernel<T>, n, 256, 0, stream, static_cast<const T *>(x), perm, top_k, d, static_cast<T *>(out));
    });
    return e != cudaSuccess ? e : e2;
}

cudaError_t launch_moe_combine(const float *down, const float *weights, const int32_t *inv, uint32_t rows, uint32_t top_k,
                               uint32_t d, float *residual, cudaStream_t stream) {
    const uint64_t total = (uint64_t)rows * d;
    if (total == 0) return cudaSuccess;
    return launch_pdl(combine_kernel, (uint32_t)((total + 255) / 256), 256, 0, stream, down, weights, inv, rows, top_k, d,
                      residual);
}

cudaError_t launch_moe_shared_add(const float *y, const float *gate, uint32_t rows, uint32_t d, float *residual,
                                  cudaStream_t stream) {
    const uint64_t total = (uint64_t)rows * d;
    if (total == 0) return cudaSuccess;
    return launch_pdl(shared_add_kernel, (uint32_t)((total + 255) / 256), 256, 0, stream, y, gate, rows, d, residual);
}
