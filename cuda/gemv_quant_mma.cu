// gemv_quant_mma.cu - the quantized decode GEMV on tensor cores (gemv.cuh's QGEMV_MMA; issue 17).
// The CUDA-core kernels (gemv_quant.cu) spend about 3.5 instructions per weight (unpack, exact
// FFMA dequantization, an FMA per row of x); here the multiply-adds go to mma.sync m16n8k16
// (f16 inputs, f32 sums) and the weights stay integers until a whole chunk is summed:
//     y[r][n] = sum over chunks c of s[n][c] * (sum over k in c of (q[n][k] - z) * x[r][k])
// (q - z) is an integer in [-8, 7] or [-128, 127], exact in f16, and each product with an f16
// x is exact in f32, so the result differs from the exact one only by the order of the f32
// additions (the tensor core's inside a group's part of a step, then one FMA with its scale).
//   - A warp owns a tile of 16 weight rows (16 columns, or 8 GLU columns' gate rows 0-7 and up
//     rows 8-15, so each lane ends with both halves of its column) = the mma's A; x's rows are
//     its B columns 0-3 (lanes of columns 4-7 give zeros); 1-8 warps of a block share a tile,
//     each taking every tw-th step of 4 chunks along k (a fixed split, added in warp order).
//   - Per step a lane loads one 16-byte chunk of each of its two rows (gid and gid + 8; the
//     4 lanes of a gid read 64 contiguous bytes) with the chunk's scale: 3 steps (96 bytes) in
//     flight, the first before waiting on the previous kernel. An mma's 16 k slots of a row
//     come from the row's 4 lanes and must lie in one group (one scale), so where a group is
//     under 4 chunks (q4 g32 / g64, q8 g32) the 4 lanes' chunks are first transposed through
//     shared memory (a store and an ldmatrix; quant_dot.cuh's mma_word_place); the mmas of
//     one group sum into one D before its scale is applied (once a step where the 4 chunks
//     are one group).
//   - Unpacked with quant_dot.cuh's fragment helpers (one LOP3 and one f16x2 op per 2 weights),
//     x's B registers read from global memory (L1: the same x serves every tile).
//   - The epilogue is gemv_quant.cu's (bias, GLU, activation, soft-cap, residual).
// Kernels: q4 / q8 x GLU or not (4); rows of x 1-4 are a run-time value. sm_80 and newer: on
// older code the body is empty and quant_gemv_mma_supported() says no (the plan runs tiled).
#include "gemv.cuh"
#include "gemv_epilogue.cuh"
#include "quant_dot.cuh"

using namespace gpt_cuda;

namespace {

constexpr int kThreads = 256, kWarps = kThreads / 32;
constexpr uint32_t kStepChunks = 4; // chunks of a row per step (one per lane of a gid)
// Steps whose loads are issued together: 3 (96 bytes in flight a lane) fits the kernels in 80
// registers without spills, 3 blocks per SM; 4 needs 92-99 (2 blocks), but a 7B matrix's
// 28 steps a row then take one round of loads, not two. A build switch for A/B runs.
#ifndef GPT_QGEMV_MMA_STEPS
#define GPT_QGEMV_MMA_STEPS 3
#endif
constexpr int kSteps = GPT_QGEMV_MMA_STEPS;
constexpr int kMinBlocksPerSm = kSteps <= 3 ? 3 : 2;
// As gemv_quant.cu's: fewer blocks than this and the plan gives each tile more warps.
#ifndef GPT_QGEMV_MIN_BLOCKS
#define GPT_QGEMV_MIN_BLOCKS 256
#endif

// D += A B, m16n8k16, f16 inputs, f32 accumulation.
__device__ __forceinline__ void mma_16816(float *d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#endif
}
// f16x2 p - c and p * m + c, each exact here (integers in f16's [1024, 2048) binade).
__device__ __forceinline__ uint32_t hsub2_bits(uint32_t p, uint32_t c) {
    uint32_t r;
    asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(p), "r"(c));
    return r;
}
__device__ __forceinline__ uint32_t hfma2_bits(uint32_t p, uint32_t m, uint32_t c) {
    uint32_t r;
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(p), "r"(m), "r"(c));
    return r;
}

// Four 8 x 8 b16 matrices from shared memory, lane l giving row l % 8 of matrix l / 8.
__device__ __forceinline__ uint4 ldmatrix_x4(uint32_t row_address) {
    uint4 r;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "r"(row_address)
                 : "memory");
    return r;
}

template <bool Q4, bool PAIR> __global__ void __launch_bounds__(kThreads, kMinBlocksPerSm) gemv_quant_mma(GemvArgs a, uint32_t log_tw) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5, gid = lane >> 2, tid = lane & 3;
    const uint32_t tw = 1u << log_tw, wk = warp & (tw - 1);
    const uint32_t tile = blockIdx.x * (kWarps >> log_tw) + (warp >> log_tw);
    const uint32_t row_bytes = Q4 ? a.k / 2 : a.k, chunks = row_bytes / 16, groups = a.k / a.group;
    const uint32_t cshift = Q4 ? 5 : 4, gshift = group_shift(a.group);
    const uint32_t steps = ceil_div(chunks, kStepChunks);
    const uint8_t *base = static_cast<const uint8_t *>(a.w);
    const uint64_t total_rows = PAIR ? 2ull * a.n : a.n;
    const __half *scales = reinterpret_cast<const __half *>(base + total_rows * row_bytes);
    // The lane's weight rows (A rows gid and gid + 8). Columns past n read row n - 1 and write
    // nothing (no early return before pdl_wait or the barrier).
    const uint32_t col_lo = PAIR ? tile * 8 + gid : tile * 16 + gid, col_hi = PAIR ? col_lo : col_lo + 8;
    const uint64_t row_lo = min(col_lo, a.n - 1), row_hi = PAIR ? row_lo + a.n : min(col_hi, a.n - 1);
    const uint4 *w_lo = reinterpret_cast<const uint4 *>(base + row_lo * row_bytes), *w_hi = reinterpret_cast<const uint4 *>(base + row_hi * row_bytes);
    const __half *s_lo = scales + row_lo * groups, *s_hi = scales + row_hi * groups;

    uint4 wv[kSteps][2];
    __half2 sv[kSteps]; // the scales of the lane's own chunk: (row gid, row gid + 8)
    auto load = [&](uint32_t s0) {
#pragma unroll
        for (int u = 0; u < kSteps; u++) {
            const uint32_t i = (s0 + u * tw) * kStepChunks + tid;
            const bool in = i < chunks;
            const uint32_t g = (i << cshift) >> gshift;
            wv[u][0] = in ? __ldcs(w_lo + i) : make_uint4(0, 0, 0, 0); // streamed once: evict first
            wv[u][1] = in ? __ldcs(w_hi + i) : make_uint4(0, 0, 0, 0);
            sv[u] = in ? __halves2half2(__ldg(s_lo + g), __ldg(s_hi + g)) : __float2half2_rn(0.0f);
        }
    };
    load(wk);
    pdl_wait();
    pdl_launch_dependents();

    // x row gid is B column gid; lanes of columns past the rows give zeros.
    const bool has_x = gid < a.rows;
    const __half *xr = static_cast<const __half *>(a.x) + (uint64_t)(has_x ? gid : 0) * a.ldx;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f}; // D's (row gid, x row 2 tid), (gid, 2 tid + 1), (gid + 8, 2 tid), (gid + 8, 2 tid + 1)

    // Step s: chunks 4 s .. 4 s + 3 of both rows, from wv[u] / sv[u]. Positions p of the
    // lanes' words (quant_dot.cuh's mma_word_place) in one group sum into d, which is scaled
    // into acc after the group's last position.
    const uint32_t cpg = a.group >> cshift; // chunks per group: 1, 2, 4 or 8
    __shared__ uint4 stage_all[kWarps][2][32]; // per warp: the two rows' chunks, 16 bytes a lane
    uint4(&stage)[2][32] = stage_all[warp];
    const uint32_t store_slot = mma_stage_slot(gid, tid);
    const uint32_t load_address = (uint32_t)__cvta_generic_to_shared(&stage[0][mma_ldmatrix_slot(lane)]);
    auto compute = [&](int u, uint32_t s) {
        if (cpg < 4) { // transposed through the warp's slots (quant_dot.cuh's mma_stage_slot)
            stage[0][store_slot] = wv[u][0];
            stage[1][store_slot] = wv[u][1];
            __syncwarp();
            wv[u][0] = ldmatrix_x4(load_address);
            wv[u][1] = ldmatrix_x4(load_address + 32 * 16);
            __syncwarp(); // read by every lane before the next step's stores
        }
        const uint32_t lo[4] = {wv[u][0].x, wv[u][0].y, wv[u][0].z, wv[u][0].w};
        const uint32_t hi[4] = {wv[u][1].x, wv[u][1].y, wv[u][1].z, wv[u][1].w};
        const uint32_t own_scales = *reinterpret_cast<const uint32_t *>(&sv[u]);
        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (uint32_t p = 0; p < 4; p++) {
            const uint32_t lead = cpg >= 4 ? 0 : cpg == 2 ? (p & 2) : p; // the group's first chunk in the quad
            if (s * kStepChunks + lead >= chunks) break;                  // the same for the whole warp
            uint32_t chunk, word;
            mma_word_place(cpg, tid, p, &chunk, &word);
            const uint32_t c = s * kStepChunks + chunk;
            if (Q4) {
                uint4 xu = make_uint4(0, 0, 0, 0);
                if (has_x) xu = __ldg(reinterpret_cast<const uint4 *>(xr + (c << 5) + 8 * word));
                const uint32_t xw[4] = {xu.x, xu.y, xu.z, xu.w};
                uint32_t b[4], pl[4], ph[4];
                q4_mma_x(xw, b);
                q4_mma_bits(lo[p], pl);
                q4_mma_bits(hi[p], ph);
#pragma unroll
                for (int e = 0; e < 4; e += 2) {
                    pl[e] = hsub2_bits(pl[e], kMmaHalf1032);
                    ph[e] = hsub2_bits(ph[e], kMmaHalf1032);
                    pl[e + 1] = hfma2_bits(pl[e + 1], kMmaHalfSixteenth, kMmaHalfMinus72);
                    ph[e + 1] = hfma2_bits(ph[e + 1], kMmaHalfSixteenth, kMmaHalfMinus72);
                }
                mma_16816(d, pl[0], ph[0], pl[1], ph[1], b[0], b[1]);
                mma_16816(d, pl[2], ph[2], pl[3], ph[3], b[2], b[3]);
            } else {
                uint2 xu = make_uint2(0, 0);
                if (has_x) xu = __ldg(reinterpret_cast<const uint2 *>(xr + (c << 4) + 4 * word));
                uint32_t pl[2], ph[2];
                q8_mma_bits(lo[p], pl);
                q8_mma_bits(hi[p], ph);
                mma_16816(d, hsub2_bits(pl[0], kMmaHalf1152), hsub2_bits(ph[0], kMmaHalf1152), hsub2_bits(pl[1], kMmaHalf1152),
                          hsub2_bits(ph[1], kMmaHalf1152), xu.x, xu.y);
            }
            if (cpg >= 4 ? p == 3 : cpg == 2 ? (p & 1) != 0 : true) { // the group's last position
                // The group's scales (rows gid, gid + 8): the lane's own where the quad is one group.
                const uint32_t sc = cpg >= 4 ? own_scales : __shfl_sync(0xffffffffu, own_scales, (lane & ~3u) | lead);
                const float2 s2 = __half22float2(*reinterpret_cast<const __half2 *>(&sc));
                acc[0] = fmaf(s2.x, d[0], acc[0]);
                acc[1] = fmaf(s2.x, d[1], acc[1]);
                acc[2] = fmaf(s2.y, d[2], acc[2]);
                acc[3] = fmaf(s2.y, d[3], acc[3]);
                d[0] = d[1] = d[2] = d[3] = 0.0f;
            }
        }
    };

    for (uint32_t s0 = wk; s0 < steps; s0 += kSteps * tw) {
        if (s0 != wk) load(s0);
#pragma unroll
        for (int u = 0; u < kSteps; u++) {
            const uint32_t s = s0 + u * tw;
            if (s >= steps) break;
            compute(u, s);
        }
    }

    if (tw > 1) { // the tile's warps, added in warp order by its first warp
        __shared__ float4 partial[kWarps][32];
        partial[warp][lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
        __syncthreads();
        if (wk != 0) return;
        for (uint32_t p = 1; p < tw; p++) {
            const float4 o = partial[warp + p][lane];
            acc[0] += o.x;
            acc[1] += o.y;
            acc[2] += o.z;
            acc[3] += o.w;
        }
    }
    if (tid >= 2) return; // x rows 4-7: zeros
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const uint32_t r = 2 * tid + h;
        if (r >= a.rows) continue;
        if (PAIR) {
            if (col_lo < a.n) store_quant_output(a, true, col_lo, r, acc[h], acc[2 + h]);
        } else {
            if (col_lo < a.n) store_quant_output(a, false, col_lo, r, acc[h], 0.0f);
            if (col_hi < a.n) store_quant_output(a, false, col_hi, r, acc[2 + h], 0.0f);
        }
    }
#endif
}

} // namespace

bool quant_gemv_mma_supported() { return kernel_arch() >= 80; }

uint32_t quant_gemv_mma_tiles(const GemvArgs &a) { return ceil_div(a.n, a.glu ? 8u : 16u); }

// Entry 21's rule in steps: warps per tile enough that each takes at most kSteps steps (one
// round of loads; up to 8), then more while the grid is small and every warp keeps a step.
QuantGemvPlan quant_gemv_mma_plan(const GemvArgs &a) {
    const uint32_t steps = ceil_div((a.wq == Q4 ? a.k / 2 : a.k) / 16, kStepChunks), tiles = quant_gemv_mma_tiles(a);
    uint32_t log_tw = 0;
    while (log_tw < 3 && (uint32_t)kSteps << log_tw < steps) log_tw++;
    auto blocks = [&] { return ceil_div(tiles, (uint32_t)kWarps >> log_tw); };
    while (log_tw < 3 && (1u << log_tw) < steps && blocks() < GPT_QGEMV_MIN_BLOCKS) log_tw++;
    return {2, 5 + log_tw, blocks(), 0, 0};
}

cudaError_t launch_gemv_quant_mma(const GemvArgs &a, uint32_t log_tk, uint32_t blocks, cudaStream_t stream) {
    if (log_tk < 5 || log_tk > 8 || a.rows == 0 || a.rows > kGemvQuantMaxRows) return cudaErrorInvalidValue;
    if (!quant_gemv_mma_supported()) return cudaErrorNotSupported;
    const uint32_t log_tw = log_tk - 5;
    if (blocks != ceil_div(quant_gemv_mma_tiles(a), (uint32_t)kWarps >> log_tw)) return cudaErrorInvalidValue;
    const bool q4 = a.wq == Q4;
    void (*kernel)(GemvArgs, uint32_t) = q4 ? (a.glu ? gemv_quant_mma<true, true> : gemv_quant_mma<true, false>)
                                            : (a.glu ? gemv_quant_mma<false, true> : gemv_quant_mma<false, false>);
    return launch_pdl(kernel, dim3(blocks), kThreads, 0, stream, a, log_tw);
}
