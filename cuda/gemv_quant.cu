// gemv_quant.cu - the decode GEMV over weight-only quantized matrices (Q8, Q4) with f16
// activations, for 1 to 4 rows of x (kGemvQuantMaxRows). The first version (gemv.cu: one warp per column, two
// loads in flight per lane for TinyLlama's rows) was latency-bound at 320-830 GB/s; here
// every thread keeps many more bytes in flight:
//   - a "set" of 4 weight rows (4 output columns, or 2 GLU columns' gate and up rows) is read
//     by tk threads (32 to 256, a launch argument), each taking every tk-th 16-byte chunk;
//   - per step a thread loads one chunk of each of the 4 rows with its group's f16 scale, and
//     kSteps steps are loaded together: 8 x 16 bytes in flight per thread, the first before
//     waiting on the previous kernel (weights are never written);
//   - each chunk is dequantized in registers, exactly and with the scale applied, by one FFMA
//     per element (quant_dot.cuh), and each x value (widened once per chunk) serves the 4
//     rows; each weight value serves every row of x (the batch rides on one weight pass);
//   - the sums meet by a warp reduce-scatter (31 shuffles at most), then across the set's
//     warps in shared memory in a fixed order, and each of the set's outputs is finished by its
//     own lane with the float kernels' epilogue (bias, GLU, activation, soft-cap, residual add).
// Kernels: rows 1, 2 or 4 (3 runs the 4-row kernel, the extra row reading row 0 of x again and
// writing nothing) x GLU or not: 6 in all; Q8 or Q4 and tk are run-time values.
//
// A third kernel, on tensor cores, is gemv_quant_mma.cu's; its plan and launch come through here.
//
// A second, streaming kernel (gemv.cuh's QuantGemvVariant; PERFORMANCE entry 29): its blocks
// stay resident (whole waves) and walk groups of sets, each thread loading the next step's
// chunks before computing the current one, so loads stay in flight across sets; x is staged in
// shared memory as f32 once per block (no widening per chunk), so it runs where that fits:
// stream-xs, 2 rows of x x GLU, 2 kernels. For one row the same kernel stages x as two int8
// values an element instead (stream-i8, 2 kernels; a scale per block of 32 elements, x kept
// to ~2^-16 of the block's largest value): 8 weights then cost two LOP3 (q4) or two PRMT (q8)
// and four DP4A (integer dot products of 4 bytes) instead of ~24 (q4) or ~16 (q8) float
// instructions; PERFORMANCE 58 (its one-row f32 staging, exact, was dropped there). Since it
// reads all of x into every block anyway, stream-i8 also takes the RMSNorm before it
// (GemvArgs::norm_w, PERFORMANCE 59): x is then the f32 residual row, staged as x * norm_w, the
// row's rsqrt(mean(x^2) + eps) applied to the sums, and the normed row written to norm_out
// a slice a block - one kernel less for each norm of a decode step. Staging costs every block
// ~0.5 us a round of 2,048 elements, so where x is long (8 rounds or more) the blocks run in
// clusters of two (sm_90) that stage half of x each and copy the other half from the partner's
// shared memory (PERFORMANCE 61).
#include "gemv.cuh"
#include "gemv_epilogue.cuh"
#include "quant_dot.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace gpt_cuda;

namespace {

constexpr int kThreads = 256;
constexpr int kSetRows = 4; // weight rows per set
constexpr int kSteps = 2;   // steps whose loads are issued together
// Fewer blocks than this (about two per SM of an H100 / H200) and the launcher gives each set
// more threads, as long as every thread keeps at least one chunk. A build switch for A/B runs.
#ifndef GPT_QGEMV_MIN_BLOCKS
#define GPT_QGEMV_MIN_BLOCKS 256
#endif

constexpr int ilog2(int v) { return v <= 1 ? 0 : 1 + ilog2(v / 2); }

// Sums N values (a power of two, at most 32) across the warp in 31 shuffles or fewer (against
// 5 N for N butterflies): at each offset O a lane keeps half of its values and adds the
// partner's copy of that half. Returns sum j (over all 32 lanes) in lanes j << (5 - log2 N) ..
// ((j + 1) << (5 - log2 N)) - 1. (Recursive so every array index is a constant.)
template <int N, int O = 16> __device__ __forceinline__ float warp_reduce_scatter(float *v, uint32_t lane) {
    if constexpr (O == 0) {
        return v[0];
    } else if constexpr (N > 1) {
        const bool upper = lane & O; // keeps the upper half
#pragma unroll
        for (int i = 0; i < N / 2; i++) {
            const float send = upper ? v[i] : v[i + N / 2], keep = upper ? v[i + N / 2] : v[i];
            v[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
        }
        return warp_reduce_scatter<N / 2, O / 2>(v, lane);
    } else {
        v[0] += __shfl_xor_sync(0xffffffffu, v[0], O);
        return warp_reduce_scatter<1, O / 2>(v, lane);
    }
}

// Lane `lane` (< 32) of a set's first warp finishes output (column lane / R, row lane % R)
// from its sum (PAIR: the gate's, up the up row's), with the float kernels' epilogue.
template <int R, bool PAIR> __device__ __forceinline__ void store_output(const GemvArgs &a, uint32_t set, uint32_t lane, float sum, float up) {
    constexpr int C = PAIR ? 2 : 4;
    if (lane >= (uint32_t)(C * R)) return;
    const uint32_t c = lane / R, r = lane % R, col = set * C + c;
    if (col >= a.n || r >= a.rows) return;
    store_quant_output(a, PAIR, col, r, sum, up);
}

template <int R, bool PAIR> __global__ void __launch_bounds__(kThreads, R == 1 ? 3 : R == 2 ? 2 : 1) gemv_quant_tiled(GemvArgs a, uint32_t log_tk) {
    constexpr int M = kSetRows, C = PAIR ? 2 : 4; // weight rows and output columns of a set
    const uint32_t tk = 1u << log_tk, t = threadIdx.x & (tk - 1), lane = threadIdx.x & 31;
    const uint32_t set = blockIdx.x * (kThreads >> log_tk) + (threadIdx.x >> log_tk);
    const bool q4 = a.wq == Q4;
    const uint64_t row_bytes = q4 ? a.k / 2 : a.k;
    const uint32_t chunks = (uint32_t)(row_bytes / 16), groups = a.k / a.group;
    const uint32_t cshift = chunk_shift(q4), gshift = group_shift(a.group);
    const uint8_t *base = static_cast<const uint8_t *>(a.w);
    const uint64_t total_rows = PAIR ? 2ull * a.n : a.n;
    const __half *scales = reinterpret_cast<const __half *>(base + total_rows * row_bytes);
    // Row m of the set: column set * C + m (PAIR: m % 2, the up rows n further for m >= 2).
    // Columns past n read row n - 1 and write nothing (no early return before pdl_wait).
    const uint4 *wrow[M];
    const __half *srow[M];
#pragma unroll
    for (int m = 0; m < M; m++) {
        const uint32_t col = min(set * C + (PAIR ? m % 2 : m), a.n - 1);
        const uint64_t row = PAIR && m >= 2 ? (uint64_t)col + a.n : col;
        wrow[m] = reinterpret_cast<const uint4 *>(base + row * row_bytes);
        srow[m] = scales + row * groups;
    }
    uint4 wv[kSteps][M];
    __half sv[kSteps][M];
    auto load = [&](uint32_t step0) {
#pragma unroll
        for (int u = 0; u < kSteps; u++) {
            const uint32_t i = t + (step0 + u) * tk;
            const bool in = i < chunks;
#pragma unroll
            for (int m = 0; m < M; m++) {
                wv[u][m] = in ? __ldcs(wrow[m] + i) : make_uint4(0, 0, 0, 0); // streamed once: evict first
                sv[u][m] = in ? __ldg(srow[m] + ((i << cshift) >> gshift)) : __ushort_as_half(0);
            }
        }
    };
    load(0);
    pdl_wait();
    pdl_launch_dependents();

    const __half *x = static_cast<const __half *>(a.x);
    const __half *xrow[R];
#pragma unroll
    for (int r = 0; r < R; r++) xrow[r] = x + (uint64_t)(r < (int)a.rows ? r : 0) * a.ldx;
    float acc[M][R];
#pragma unroll
    for (int m = 0; m < M; m++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[m][r] = 0.0f;

    // The step loop is not unrolled (one copy of its body keeps the kernels small): the step
    // in use is always wv[0] / sv[0], the next one shifting down after it, so every register
    // array is indexed by constants.
    for (uint32_t step0 = 0; t + step0 * tk < chunks; step0 += kSteps) {
        if (step0) load(step0);
#pragma unroll 1
        for (int u = 0; u < kSteps; u++) {
            const uint32_t i = t + (step0 + u) * tk;
            if (i >= chunks) break;
            const __half *xc[R]; // the chunk's x values in each row of x
#pragma unroll
            for (int r = 0; r < R; r++) xc[r] = xrow[r] + (i << cshift);
            QuantScale ks[M];
#pragma unroll
            for (int m = 0; m < M; m++) ks[m] = quant_scale(__half2float(sv[0][m]), q4);
            // Eight elements at a time (q4: 4 x 8, q8: 2 x 8): x widened once per row of x and
            // used by the 4 weight rows. The elements in use are always the first word (q8: two)
            // of wv[0][m], the rest shifting down: unrolled (R <= 2) the shifts are renames;
            // rolled (R >= 4, where the FMAs dominate) one copy of the body keeps the kernel small.
#pragma unroll(R <= 2 ? 4 : 1)
            for (int v = 0; v < 4; v++) {
                if (!q4 && v >= 2) break;
                float xf[R][8];
#pragma unroll
                for (int r = 0; r < R; r++) widen16(*reinterpret_cast<const uint4 *>(xc[r] + 8 * v), xf[r], __half{});
#pragma unroll
                for (int m = 0; m < M; m++) {
                    float wf[8];
                    quant_next8(wv[0][m], ks[m], q4, wf);
#pragma unroll
                    for (int r = 0; r < R; r++)
#pragma unroll
                        for (int e = 0; e < 8; e++) acc[m][r] = fmaf(wf[e], xf[r][e], acc[m][r]);
                }
            }
#pragma unroll
            for (int uu = 0; uu + 1 < kSteps; uu++)
#pragma unroll
                for (int m = 0; m < M; m++) {
                    wv[uu][m] = wv[uu + 1][m];
                    sv[uu][m] = sv[uu + 1][m];
                }
        }
    }

    // The warp's sums: lane o = c * R + r gets output (column c, row r)'s gate (or plain) sum
    // and, with PAIR, its up sum.
    float flat[M * R];
#pragma unroll
    for (int m = 0; m < M; m++)
#pragma unroll
        for (int r = 0; r < R; r++) flat[m * R + r] = acc[m][r];
    const float mine = warp_reduce_scatter<M * R>(flat, lane);
    constexpr int kSpread = 5 - ilog2(M * R); // sum j is held by lanes j << kSpread ...
    float sum = __shfl_sync(0xffffffffu, mine, (lane << kSpread) & 31), up = 0.0f;
    if (PAIR) up = __shfl_sync(0xffffffffu, mine, ((lane + 2 * R) << kSpread) & 31); // the up rows' sums follow the gates'
    if (tk > 32) { // the set's warps, added in warp order by its first warp
        __shared__ float partial[kThreads / 32][2][32];
        const uint32_t warp = threadIdx.x / 32;
        partial[warp][0][lane] = sum;
        partial[warp][1][lane] = up;
        __syncthreads();
        if (t >= 32) return;
        for (uint32_t p = 1; p < tk / 32; p++) {
            sum += partial[warp + p][0][lane];
            up += partial[warp + p][1][lane];
        }
    }
    if (t >= 32) return;
    store_output<R, PAIR>(a, set, lane, sum, up);
}


// ---------------------------------------------------------------- the streaming variant

// Quad q (4 floats) of a row of x staged in shared memory lives at q ^ ((q >> 3) & 7). The 8
// threads of a shared-memory phase read chunks 128 (q4) or 64 (q8) bytes of f32 apart, which
// unswizzled would all fall on the same 4 banks; swizzled they fall on 8 different quads.
__device__ __forceinline__ uint32_t xs_quad(uint32_t q) { return q ^ ((q >> 3) & 7); }

// Blocks of kThreads threads hold 256 / tk sets ("a group"); block b computes groups b,
// b + gridDim.x, ... Every thread runs one flat sequence of (group, step) items, loading item
// j + 2 into the registers that item j used as soon as it is computed: two steps in flight
// while one computes, across the end of a set. The set's sums meet as in the tiled kernel
// (shared memory in two halves, so one barrier per set suffices). I8: stream-i8 (one row of
// x), x staged as int8.
template <int R, bool PAIR, bool I8 = false>
__global__ void __launch_bounds__(kThreads, R == 1 ? 3 : 2) gemv_quant_stream(GemvArgs a, uint32_t log_tk) {
    static_assert(!I8 || R == 1, "stream-i8 takes one row of x");
    constexpr int M = kSetRows, C = PAIR ? 2 : 4;
    const uint32_t tk = 1u << log_tk, t = threadIdx.x & (tk - 1), lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint32_t slot = threadIdx.x >> log_tk, slots = kThreads >> log_tk;
    const bool q4 = a.wq == Q4;
    const uint64_t row_bytes = q4 ? a.k / 2 : a.k;
    const uint32_t chunks = (uint32_t)(row_bytes / 16), groups = a.k / a.group;
    const uint32_t cshift = chunk_shift(q4), gshift = group_shift(a.group);
    const uint32_t steps = max((chunks + tk - 1) >> log_tk, 1u);            // per thread and set (k = 0: one empty step)
    const uint32_t n_groups = ceil_div(ceil_div(a.n, (uint32_t)C), slots); // groups of `slots` sets
    const uint8_t *base = static_cast<const uint8_t *>(a.w);
    const uint64_t total_rows = PAIR ? 2ull * a.n : a.n;
    const __half *scales = reinterpret_cast<const __half *>(base + total_rows * row_bytes);

    // The load cursor (group lg, step ls) and the weight rows of this thread's set in lg (row
    // numbers, not pointers: 4 registers instead of 16, which keeps the 1-row kernel unspilled
    // at 3 blocks per SM). Columns past n read row n - 1 and write nothing.
    uint32_t wrow[M];
    auto point = [&](uint32_t g) {
        const uint32_t set = g * slots + slot;
#pragma unroll
        for (int m = 0; m < M; m++) {
            const uint32_t col = min(set * C + (PAIR ? m % 2 : m), a.n - 1);
            wrow[m] = PAIR && m >= 2 ? col + a.n : col;
        }
    };
    uint32_t lg = blockIdx.x, ls = 0;
    uint4 wv[2][M];
    __half sv[2][M];
    auto load = [&](int b) {
        const uint32_t i = t + (ls << log_tk);
        const bool in = lg < n_groups && i < chunks;
#pragma unroll
        for (int m = 0; m < M; m++) {
            const uint4 *w = reinterpret_cast<const uint4 *>(base + (uint64_t)wrow[m] * (uint32_t)row_bytes) + i;
            const __half *sc = scales + (uint64_t)wrow[m] * groups + ((i << cshift) >> gshift);
            wv[b][m] = in ? __ldcs(w) : make_uint4(0, 0, 0, 0); // streamed once: evict first
            sv[b][m] = in ? __ldg(sc) : __ushort_as_half(0);
        }
        if (++ls == steps) {
            ls = 0;
            lg += gridDim.x;
            if (lg < n_groups) point(lg);
        }
    };
    point(lg);
    load(0);
    load(1);
    pdl_wait();
    pdl_launch_dependents();

    const __half *x = static_cast<const __half *>(a.x);
    const __half *xrow[R];
#pragma unroll
    for (int r = 0; r < R; r++) xrow[r] = x + (uint64_t)(r < (int)a.rows ? r : 0) * a.ldx;
    extern __shared__ float4 xs[]; // R rows of k / 4 quads, in xs_quad order (I8: stage_x_i8's layout)
    const uint32_t quads = a.k / 4;
    float norm_scale = 1.0f; // a folded RMSNorm's rsqrt(mean(x^2) + eps), applied to the sums
    // Launched in clusters (the plan's `cluster`, sm_90), the cluster's blocks stage x together:
    // each its share of the rounds, then the rest copied from the others' shared memory.
    const uint32_t share = I8 ? cluster_size() : 1, rank = I8 ? cluster_rank() : 0;
    if constexpr (I8) {
        const float squares =
            warp_sum(stage_x_i8(a.norm_w ? a.x : static_cast<const void *>(xrow[0]), a.norm_w, a.k, xs, rank, share));
        __shared__ float warp_squares[kThreads / 32];
        if (a.norm_w && lane == 0) warp_squares[warp] = squares;
        if (share > 1) {
            cluster_arrive(); // every block's rounds (and squares) staged
            cluster_wait();
            copy_peer_rounds(xs, a.k, rank, share);
        } else if (a.norm_w) {
            __syncthreads();
        }
        if (a.norm_w) {
            float total = 0.0f; // in the same order in every block, so every block has the same scale
            for (uint32_t r = 0; r < share; r++)
#pragma unroll
                for (int i = 0; i < kThreads / 32; i++)
                    total += share > 1 ? peer_load_f32(peer_addr(&warp_squares[i], r)) : warp_squares[i];
            norm_scale = rsqrtf(total / a.k + a.norm_eps);
            // The normed row, as the norm op would have left it: a slice from each block.
            const float *xr = static_cast<const float *>(a.x);
            for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; a.norm_out && i < a.k; i += gridDim.x * kThreads)
                static_cast<__half *>(a.norm_out)[i] = __float2half_rn(xr[i] * norm_scale * a.norm_w[i]);
        }
        if (share > 1) cluster_arrive(); // done reading the others' shared memory (each waits before it exits)
    } else {
        for (uint32_t e = threadIdx.x; e < a.k / 8; e += kThreads)
#pragma unroll
            for (int r = 0; r < R; r++) {
                float f[8];
                widen16(*reinterpret_cast<const uint4 *>(xrow[r] + 8 * e), f, __half{});
                xs[r * quads + xs_quad(2 * e)] = make_float4(f[0], f[1], f[2], f[3]);
                xs[r * quads + xs_quad(2 * e + 1)] = make_float4(f[4], f[5], f[6], f[7]);
            }
    }
    __syncthreads();

    float acc[M][R];
#pragma unroll
    for (int m = 0; m < M; m++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[m][r] = 0.0f;

    // Chunk i of every row of the set, from registers wv[b] / sv[b] (as the tiled kernel).
    auto compute = [&](int b, uint32_t i) {
        if constexpr (I8) { // a q4 chunk is x's block i, a q8 chunk half of block i / 2
            const I8Staged x(xs, a.k);
            const uint32_t blk = q4 ? i : i >> 1;
            const float2 meta = x.meta(blk);
            const I8Words xw = q4 ? i8_words_q4(x, blk) : i8_words_q8(x, blk, i & 1);
#pragma unroll
            for (int m = 0; m < M; m++) {
                const int dot = q4 ? q4_chunk_dot_i8(wv[b][m], xw, __float_as_int(meta.y)) : q8_chunk_dot_i8(wv[b][m], xw);
                acc[m][0] = fmaf((float)dot, __half2float(sv[b][m]) * meta.x, acc[m][0]);
            }
        } else {
            QuantScale ks[M];
#pragma unroll
            for (int m = 0; m < M; m++) ks[m] = quant_scale(__half2float(sv[b][m]), q4);
#pragma unroll(R <= 2 ? 4 : 1)
            for (int v = 0; v < 4; v++) {
                if (!q4 && v >= 2) break;
                float xf[R][8];
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const uint32_t q = ((i << cshift) >> 2) + 2 * v;
                    const float4 lo = xs[r * quads + xs_quad(q)], hi = xs[r * quads + xs_quad(q + 1)];
                    xf[r][0] = lo.x; xf[r][1] = lo.y; xf[r][2] = lo.z; xf[r][3] = lo.w;
                    xf[r][4] = hi.x; xf[r][5] = hi.y; xf[r][6] = hi.z; xf[r][7] = hi.w;
                }
#pragma unroll
                for (int m = 0; m < M; m++) {
                    float wf[8];
                    quant_next8(wv[b][m], ks[m], q4, wf);
#pragma unroll
                    for (int r = 0; r < R; r++)
#pragma unroll
                        for (int e = 0; e < 8; e++) acc[m][r] = fmaf(wf[e], xf[r][e], acc[m][r]);
                }
            }
        }
    };
    // The sums of group g's set (all threads of the block arrive here together).
    auto finish = [&](uint32_t g, uint32_t half) {
        float flat[M * R];
#pragma unroll
        for (int m = 0; m < M; m++)
#pragma unroll
            for (int r = 0; r < R; r++) {
                flat[m * R + r] = acc[m][r];
                acc[m][r] = 0.0f;
            }
        const float mine = warp_reduce_scatter<M * R>(flat, lane);
        constexpr int kSpread = 5 - ilog2(M * R);
        float sum = __shfl_sync(0xffffffffu, mine, (lane << kSpread) & 31), up = 0.0f;
        if (PAIR) up = __shfl_sync(0xffffffffu, mine, ((lane + 2 * R) << kSpread) & 31);
        if (tk > 32) {
            __shared__ float partial[2][kThreads / 32][2][32];
            partial[half][warp][0][lane] = sum;
            partial[half][warp][1][lane] = up;
            __syncthreads();
            if (t < 32)
                for (uint32_t p = 1; p < tk / 32; p++) {
                    sum += partial[half][warp + p][0][lane];
                    up += partial[half][warp + p][1][lane];
                }
        }
        if (t < 32) store_output<R, PAIR>(a, g * slots + slot, lane, sum * norm_scale, up * norm_scale);
    };

    // Unrolled by the two register sets, so every register index is a constant.
    uint32_t g = blockIdx.x, s = 0, half = 0;
    while (g < n_groups) {
#pragma unroll
        for (int b = 0; b < 2; b++) {
            const uint32_t i = t + (s << log_tk);
            if (i < chunks) compute(b, i);
            load(b);
            if (++s == steps) {
                finish(g, half);
                s = 0;
                g += gridDim.x;
                half ^= 1;
                if (g >= n_groups) break;
            }
        }
    }
    if (share > 1) cluster_wait(); // no block leaves while another may still read its x
}

// ---------------------------------------------------------------- plans and launches

using QuantKernel = void (*)(GemvArgs, uint32_t);
uint32_t kernel_rows(uint32_t rows) { return rows == 1 ? 1 : rows == 2 ? 2 : 4; } // 3 runs the 4-row kernel

template <bool PAIR> QuantKernel tiled_kernel(uint32_t rows) {
    return rows == 1 ? gemv_quant_tiled<1, PAIR> : rows == 2 ? gemv_quant_tiled<2, PAIR> : gemv_quant_tiled<4, PAIR>;
}
QuantKernel kernel_of(const GemvArgs &a, const QuantGemvPlan &p) {
    if (p.kernel == 0) return a.glu ? tiled_kernel<true>(a.rows) : tiled_kernel<false>(a.rows);
    if (p.kernel == 3) return a.glu ? gemv_quant_stream<1, true, true> : gemv_quant_stream<1, false, true>;
    return a.glu ? gemv_quant_stream<2, true> : gemv_quant_stream<2, false>; // stream-xs: 2 rows (stream_fits)
}

// x staged as f32 for every row of the kernel: within the default 48 KB of dynamic shared memory.
constexpr uint64_t kMaxStagedBytes = 48 << 10;
uint64_t staged_bytes(const GemvArgs &a) { return (uint64_t)kernel_rows(a.rows) * a.k * 4; }
// stream-xs exists for 2 rows of x (one row runs stream-i8 or tiled, more mma or tiled:
// entries 32 and 58) and needs x in its shared memory.
bool stream_fits(const GemvArgs &a) { return a.rows == 2 && staged_bytes(a) <= kMaxStagedBytes; }
// stream-i8: one row of x, x as int8 in shared memory.
bool i8_fits(const GemvArgs &a) { return a.rows == 1 && i8_staged_bytes(a.k) <= kMaxStagedBytes; }
uint64_t plan_staged_bytes(const GemvArgs &a, const QuantGemvPlan &p) { return p.kernel == 3 ? i8_staged_bytes(a.k) : staged_bytes(a); }

uint32_t chunks_of(const GemvArgs &a) { return (a.wq == Q4 ? a.k / 2 : a.k) / 16; }
uint32_t sets_of(const GemvArgs &a) { return ceil_div(a.n, a.glu ? 2u : 4u); }

// Entry 21's rule: threads per set enough that each takes at most kSteps chunks of a row (up
// to 256), then more while the grid is small and every thread keeps a chunk.
QuantGemvPlan tiled_plan(const GemvArgs &a) {
    const uint32_t chunks = chunks_of(a), sets = sets_of(a);
    uint32_t log_tk = 5;
    while (log_tk < 8 && (uint64_t)kSteps << log_tk < chunks) log_tk++;
    auto blocks = [&] { return ceil_div(sets, (uint32_t)kThreads >> log_tk); };
    while (log_tk < 8 && (1u << log_tk) < chunks && blocks() < GPT_QGEMV_MIN_BLOCKS) log_tk++;
    return {0, log_tk, blocks(), 0, 0};
}

bool valid_args(const GemvArgs &a) {
    return gemv_supported(a.rows, a.k, a.ldx, a.dtype, a.wq) && (a.group == 32 || a.group == 64 || a.group == 128) &&
           a.k % a.group == 0;
}

// x's staging rounds (stage_x_i8: 64 blocks of 32 elements a round) and the cluster that
// shares them: two blocks from 8 rounds up (k > 14,336), else none, or the size
// GPT_QGEMV_CLUSTER names (1 = none), for A/B runs. PERFORMANCE 61: a cluster costs about
// 1.3 us (launch, barrier, the copy) and a round about 0.5 us, so only long x gains; the
// Qwen2-7B down projection (10 rounds) 21.5 -> 19.6 us, four blocks no better, eight worse.
uint32_t staging_rounds(uint32_t k) { return ceil_div(k / 32, (uint32_t)kThreads / 4); }
uint32_t i8_cluster(const GemvArgs &a) {
    if (!quant_gemv_clusters_supported()) return 1;
    static const int forced = [] {
        const char *e = std::getenv("GPT_QGEMV_CLUSTER");
        const int v = e ? std::atoi(e) : 0;
        return v == 1 || v == 2 || v == 4 || v == 8 ? v : 0;
    }();
    if (forced) return (uint32_t)forced;
    return staging_rounds(a.k) >= 8 ? 2 : 1;
}

int env_variant() {
    static const int v = [] {
        const char *e = std::getenv("GPT_QGEMV");
        for (int i = 0; e && i < QGEMV_VARIANTS; i++)
            if (std::strcmp(e, quant_gemv_variant_name(i)) == 0) return i;
        return (int)QGEMV_AUTO;
    }();
    return v;
}

} // namespace

bool quant_gemv_clusters_supported() { return kernel_arch() >= 90; }

const char *quant_gemv_variant_name(int variant) {
    switch (variant) {
    case QGEMV_TILED: return "tiled";
    case QGEMV_STREAM_XS: return "stream-xs";
    case QGEMV_MMA: return "mma";
    case QGEMV_STREAM_I8: return "stream-i8";
    case QGEMV_AUTO: return "auto";
    }
    return "?";
}

cudaError_t quant_gemv_plan(const GemvArgs &a, int variant, QuantGemvPlan *plan) {
    if (variant < 0 || variant >= QGEMV_VARIANTS || a.rows == 0 || a.rows > kGemvQuantMaxRows || a.n == 0) return cudaErrorInvalidValue;
    const bool xs_fits = stream_fits(a);
    if (variant == QGEMV_STREAM_I8 && !i8_fits(a)) variant = QGEMV_STREAM_XS;
    if (variant == QGEMV_AUTO) { // PERFORMANCE entries 29, 32 and 58: the per-matrix measurements
        const uint64_t weight_bytes = (uint64_t)(a.glu ? 2 : 1) * a.n * (a.wq == Q4 ? a.k / 2 : a.k);
        const bool mma = quant_gemv_mma_supported();
        if (a.rows == 1) // one row of a q8 matrix under 8 MiB: latency-bound, and tiled starts faster,
            // unless stream-i8 takes the norm before it too (entry 59: a kernel less is worth more)
            variant = i8_fits(a) && !(a.wq == Q8 && weight_bytes < (8u << 20) && !a.norm_w) ? QGEMV_STREAM_I8 : QGEMV_TILED;
        else if (mma && a.rows >= 3) variant = QGEMV_MMA; // 2-4x the others at 3-4 rows (q8 of small widths: 14% behind stream-xs)
        else if (mma && a.wq == Q4 && (a.group >= 64 || !xs_fits)) variant = QGEMV_MMA;
        else variant = xs_fits ? QGEMV_STREAM_XS : QGEMV_TILED;
    }
    if (variant == QGEMV_MMA) {
        *plan = quant_gemv_mma_supported() ? quant_gemv_mma_plan(a) : tiled_plan(a);
        return cudaSuccess;
    }
    if (variant == QGEMV_TILED || (variant == QGEMV_STREAM_XS && !xs_fits)) { // stream-i8 fits (checked above)
        *plan = tiled_plan(a);
        return cudaSuccess;
    }
    QuantGemvPlan p{variant == QGEMV_STREAM_I8 ? 3 : 1, 5, 1, 1, 1};
    if (p.kernel == 3) p.cluster = i8_cluster(a);
    uint32_t resident = 0;
    const void *kernel = reinterpret_cast<const void *>(kernel_of(a, p));
    cudaError_t e = resident_blocks(kernel, kThreads, plan_staged_bytes(a, p), &resident, p.cluster);
    if (e != cudaSuccess && p.cluster > 1) { // a device that cannot hold the clusters: single blocks
        cudaGetLastError();
        p.cluster = 1;
        e = resident_blocks(kernel, kThreads, plan_staged_bytes(a, p), &resident, 1);
    }
    if (e != cudaSuccess) return e;
    // Threads per set: the fewest serial steps for the slowest block - rounds of resident
    // blocks times the steps of a set, counting a set's end as half a step (the reduction and
    // a barrier; a quarter with one warp a set, which needs no barrier).
    const uint32_t chunks = chunks_of(a), sets = sets_of(a);
    uint64_t best = UINT64_MAX;
    for (uint32_t log_tk = 5; log_tk <= 8; log_tk++) {
        const uint32_t groups = ceil_div(sets, (uint32_t)kThreads >> log_tk);
        const uint64_t cost = (uint64_t)ceil_div(groups, resident) * (4ull * ceil_div(chunks, 1u << log_tk) + (log_tk > 5 ? 2 : 1));
        if (cost < best) best = cost, p.log_tk = log_tk;
    }
    p.blocks = std::min(ceil_div(sets, (uint32_t)kThreads >> p.log_tk), resident);
    p.blocks = ceil_div(p.blocks, p.cluster) * p.cluster; // resident is a multiple of the cluster
    *plan = p;
    return cudaSuccess;
}

bool gemv_folds_norm(const GemvArgs &a) {
    QuantGemvPlan p{};
    return a.wq && a.rows == 1 && !a.residual && valid_args(a) && quant_gemv_plan(a, env_variant(), &p) == cudaSuccess &&
           p.kernel == 3;
}

cudaError_t launch_gemv_quant_plan(const GemvArgs &a, const QuantGemvPlan &p, cudaStream_t stream) {
    if (a.n == 0 || a.rows == 0) return cudaSuccess;
    if (!valid_args(a) || p.kernel < 0 || p.kernel > 3 || p.log_tk < 5 || p.log_tk > 8 || p.blocks == 0) return cudaErrorInvalidValue;
    const uint32_t cluster = p.cluster ? p.cluster : 1;
    if (cluster != 1 && (p.kernel != 3 || !(cluster == 2 || cluster == 4 || cluster == 8) || !quant_gemv_clusters_supported()))
        return cudaErrorInvalidValue;
    if (a.norm_w && (p.kernel != 3 || a.rows != 1 || a.residual)) return cudaErrorInvalidValue; // gemv_folds_norm
    if (p.kernel == 2) return p.xs ? cudaErrorInvalidValue : launch_gemv_quant_mma(a, p.log_tk, p.blocks, stream);
    const uint32_t groups = ceil_div(sets_of(a), (uint32_t)kThreads >> p.log_tk);
    if (p.kernel == 0) { // one block per group, no staging
        if (p.xs || p.blocks != groups) return cudaErrorInvalidValue;
        return launch_pdl(kernel_of(a, p), dim3(groups), kThreads, 0, stream, a, p.log_tk);
    }
    if (!p.xs || !(p.kernel == 3 ? i8_fits(a) : stream_fits(a))) return cudaErrorInvalidValue; // the stream kernels stage x
    // Blocks past the last group only help stage x (a cluster's blocks all do).
    const uint32_t grid = ceil_div(std::min(p.blocks, groups), cluster) * cluster;
    return launch_pdl_cluster(kernel_of(a, p), dim3(grid), kThreads, plan_staged_bytes(a, p), stream, cluster, a, p.log_tk);
}

cudaError_t launch_gemv_quant_tiled(const GemvArgs &a, cudaStream_t stream) {
    if (a.rows == 0 || a.rows > kGemvQuantMaxRows) return cudaErrorInvalidValue;
    QuantGemvPlan p{};
    const cudaError_t e = quant_gemv_plan(a, env_variant(), &p);
    return e != cudaSuccess ? e : launch_gemv_quant_plan(a, p, stream);
}
