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
#include "gemv.cuh"
#include "gemv_epilogue.cuh"
#include "quant_dot.cuh"

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
                for (int r = 0; r < R; r++) half8_to_float(*reinterpret_cast<const uint4 *>(xc[r] + 8 * v), xf[r]);
#pragma unroll
                for (int m = 0; m < M; m++) {
                    float wf[8];
                    uint4 &c = wv[0][m];
                    if (q4) {
                        q4_word(c.x, ks[m], wf);
                        c = make_uint4(c.y, c.z, c.w, 0u);
                    } else {
                        q8_word(c.x, ks[m], wf);
                        q8_word(c.y, ks[m], wf + 4);
                        c = make_uint4(c.z, c.w, 0u, 0u);
                    }
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
    if (t >= 32 || lane >= (uint32_t)(C * R)) return;
    const uint32_t c = lane / R, r = lane % R, col = set * C + c;
    if (col >= a.n || r >= a.rows) return;
    float v = sum + (a.bias ? a.bias[col] : 0.0f);
    if (PAIR) { // gate and up rounded to f16 first, as the unfused path stores them
        v = gemv_epilogue(__half2float(__float2half_rn(v)), __half2float(__float2half_rn(up)), true, a.act, a.softcap);
    } else if (a.act || a.softcap > 0.0f) {
        v = gemv_epilogue(v, 0.0f, false, a.act, a.softcap);
    }
    const uint64_t o = (uint64_t)r * a.n + col;
    if (a.residual) a.residual[o] += v;
    else if (a.y_f32) static_cast<float *>(a.y)[o] = v;
    else static_cast<__half *>(a.y)[o] = __float2half_rn(v);
}

template <bool PAIR> cudaError_t launch_tiled(const GemvArgs &a, cudaStream_t s) {
    const uint32_t chunks = (a.wq == Q4 ? a.k / 2 : a.k) / 16;
    const uint32_t sets = ceil_div(a.n, PAIR ? 2u : 4u);
    // Threads per set: enough that each takes at most kSteps chunks of a row (all its loads in
    // flight at once) up to 256, then more while the grid is small and every thread keeps a chunk.
    uint32_t log_tk = 5;
    while (log_tk < 8 && (uint64_t)kSteps << log_tk < chunks) log_tk++;
    auto blocks = [&] { return ceil_div(sets, (uint32_t)kThreads >> log_tk); };
    while (log_tk < 8 && (1u << log_tk) < chunks && blocks() < GPT_QGEMV_MIN_BLOCKS) log_tk++;
    const dim3 grid(blocks());
    switch (a.rows) {
    case 1: return launch_pdl(gemv_quant_tiled<1, PAIR>, grid, kThreads, 0, s, a, log_tk);
    case 2: return launch_pdl(gemv_quant_tiled<2, PAIR>, grid, kThreads, 0, s, a, log_tk);
    default: return launch_pdl(gemv_quant_tiled<4, PAIR>, grid, kThreads, 0, s, a, log_tk); // 3 or 4
    }
}

} // namespace

cudaError_t launch_gemv_quant_tiled(const GemvArgs &a, cudaStream_t stream) {
    if (a.rows == 0 || a.rows > kGemvQuantMaxRows) return cudaErrorInvalidValue;
    return a.glu ? launch_tiled<true>(a, stream) : launch_tiled<false>(a, stream);
}
