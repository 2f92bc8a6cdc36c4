// gemv.cu - memory-bound matrix-vector products. S warps of a block own one unit of output:
// two adjacent columns for rows of 4 KB or more (one below), or one column over its paired
// gate and up rows with SwiGLU or GeGLU (every activation, the GLU gate's or the plain
// GELU / ReLU after a bias, is a run-time code, so none adds a kernel); with two weight
// rows each x vector loaded serves two weight vectors. Each warp walks every S-th 2 KB
// stretch of the row(s) with 16-byte loads, kUnroll loads in flight per lane; their sums
// meet in shared memory in a fixed order (S is a launch argument: one kernel per dtype, kind
// of unit and row count, 18 in all, keeps the library small). S > 1 for matrices with few,
// long rows (Qwen2-7B's down projection: 3,584 rows of 37 KB), which with one warp per row
// keep too few loads in flight to reach the DRAM bandwidth. The same x chunks are read for
// both rows of a two-row batch, so they cost one pass over the weights (more rows go to
// cuBLAS: the executor's measured crossover). The first weight loads are issued before
// waiting on the previous kernel (weights are never written), so with programmatic dependent
// launch the weight stream overlaps that kernel's tail.
#include "gemv.cuh"
#include "common.cuh"
#include "gemv_epilogue.cuh"

using namespace gpt_cuda;

namespace {

constexpr int kWarps = 8;
constexpr int kUnroll = 4;
// Split heuristic (gemv_row_splits), tunable at build time for A/B runs: split rows over more
// warps while the grid would hold fewer than kTargetWarps warps, as long as each warp keeps
// at least kMinSplitVectors 16-byte vectors of a row (3 loads per lane). Measured on an H200
// (decode, A/B in one run): Qwen2-7B's gate/up GEMV (18,944 paired columns of 7 KB) over 1,
// 2 or 4 warps per column: 4.080, 4.077, 4.025 ms per token, hence a target far above the
// ~8,000 warps the GPU holds at once; 8,192 and 16,384 measured the same for the other
// shapes. A minimum of 64 vectors (2 loads per lane) left TinyLlama decode 5% slower, 128
// made GPT-2 5% slower, 32 slowed all three model shapes.
#ifndef GPT_GEMV_TARGET_WARPS
#define GPT_GEMV_TARGET_WARPS 65536
#endif
#ifndef GPT_GEMV_MIN_SPLIT_VECTORS
#define GPT_GEMV_MIN_SPLIT_VECTORS 96
#endif
#ifndef GPT_GEMV_MAX_SPLIT
#define GPT_GEMV_MAX_SPLIT 8
#endif
constexpr uint64_t kTargetWarps = GPT_GEMV_TARGET_WARPS;
constexpr uint32_t kMinSplitVectors = GPT_GEMV_MIN_SPLIT_VECTORS;
// Without a GLU a warp computes two adjacent columns when rows are at least this long (half
// the x loads per weight byte: TinyLlama decode -6%); shorter rows keep one column per warp,
// where the second column only lengthens each warp's tail (GPT-2 decode +3% with two).
constexpr uint32_t kTwoColumnMinRowBytes = 4096;
// The most columns per warp without a GLU (1 or 2); a build switch for A/B measurements.
#ifndef GPT_GEMV_PLAIN_COLS
#define GPT_GEMV_PLAIN_COLS 2
#endif

// Eight (or four for f32) elements of a 16-byte vector, widened.
template <typename T> struct Vec;
template <> struct Vec<float> {
    static constexpr int N = 4;
    __device__ static void widen(const uint4 &u, float *f) {
        f[0] = __uint_as_float(u.x); f[1] = __uint_as_float(u.y); f[2] = __uint_as_float(u.z); f[3] = __uint_as_float(u.w);
    }
};
template <> struct Vec<__half> {
    static constexpr int N = 8;
    __device__ static void widen(const uint4 &u, float *f) {
        const __half2 *h = reinterpret_cast<const __half2 *>(&u);
        for (int i = 0; i < 4; i++) {
            const float2 p = __half22float2(h[i]);
            f[2 * i] = p.x;
            f[2 * i + 1] = p.y;
        }
    }
};
template <> struct Vec<__nv_bfloat16> {
    static constexpr int N = 8;
    __device__ static void widen(const uint4 &u, float *f) {
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
        for (int i = 0; i < 4; i++) {
            const float2 p = __bfloat1622float2(h[i]);
            f[2 * i] = p.x;
            f[2 * i + 1] = p.y;
        }
    }
};

// W weight rows per warp: the unit's gate and up rows (PAIR) or W adjacent output columns.
// S = 1 << log_s warps share a unit (a run-time value: one kernel serves every split count).
template <typename T, int R, int W, bool PAIR>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(GemvArgs a, uint32_t log_s) {
    constexpr int N = Vec<T>::N;
    static_assert(!PAIR || W == 2, "SwiGLU pairs a gate and an up row");
    const uint32_t S = 1u << log_s;
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32, part = warp & (S - 1);
    const uint32_t unit = blockIdx.x * (kWarps >> log_s) + (warp >> log_s);
    // Output column j of this warp (PAIR: the unit's one column). Columns past n load a valid
    // row and write nothing (no early return before pdl_wait).
    auto column = [&](int j) { return PAIR ? unit : unit * W + j; };
    const uint4 *wrow[W];
#pragma unroll
    for (int j = 0; j < W; j++) {
        const uint32_t c = min(column(j), a.n - 1);
        const uint64_t row = PAIR ? (uint64_t)c + (uint64_t)j * a.n : c;
        wrow[j] = reinterpret_cast<const uint4 *>((const T *)a.w + row * a.k);
    }
    const uint32_t kv = a.k / N; // 16-byte vectors per row
    float acc[W][R];
#pragma unroll
    for (int j = 0; j < W; j++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[j][r] = 0.0f;

    uint4 wv[W][kUnroll];
    auto load = [&](uint32_t i0) {
#pragma unroll
        for (int j = 0; j < W; j++)
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                const uint32_t i = i0 + 32 * u;
                wv[j][u] = i < kv ? __ldcs(wrow[j] + i) : make_uint4(0, 0, 0, 0); // streamed once: evict first
            }
    };
    // This warp's stretches of 32 x kUnroll vectors: part, part + S, part + 2 S, ...
    const uint32_t first = lane + 32 * kUnroll * part;
    load(first);
    pdl_wait();
    pdl_launch_dependents();
    const T *x = (const T *)a.x;
    const uint64_t ldx = a.ldx;
    for (uint32_t i0 = first; i0 < kv; i0 += 32 * kUnroll * S) {
        if (i0 != first) load(i0);
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            const uint32_t i = i0 + 32 * u;
            if (i >= kv) break;
            float wf[W][N];
#pragma unroll
            for (int j = 0; j < W; j++) Vec<T>::widen(wv[j][u], wf[j]);
#pragma unroll
            for (int r = 0; r < R; r++) {
                float xf[N];
                Vec<T>::widen(*(reinterpret_cast<const uint4 *>(x + r * ldx) + i), xf);
#pragma unroll
                for (int j = 0; j < W; j++)
#pragma unroll
                    for (int e = 0; e < N; e++) acc[j][r] += wf[j][e] * xf[e];
            }
        }
    }
#pragma unroll
    for (int j = 0; j < W; j++)
#pragma unroll
        for (int r = 0; r < R; r++) acc[j][r] = warp_sum(acc[j][r]);
    if (S > 1) { // the column's S partial sums, added in warp order
        __shared__ float partial[kWarps][W][R];
        if (lane == 0)
#pragma unroll
            for (int j = 0; j < W; j++)
#pragma unroll
                for (int r = 0; r < R; r++) partial[warp][j][r] = acc[j][r];
        __syncthreads();
        if (part != 0) return;
#pragma unroll
        for (int j = 0; j < W; j++)
#pragma unroll
            for (int r = 0; r < R; r++) {
                float sum = partial[warp][j][r];
                for (uint32_t p = 1; p < S; p++) sum += partial[warp + p][j][r];
                acc[j][r] = sum;
            }
    }
    if (lane != 0) return;
#pragma unroll
    for (int j = 0; j < (PAIR ? 1 : W); j++) {
        const uint32_t col = column(j);
        if (col >= a.n) break;
        const float b = a.bias ? a.bias[col] : 0.0f;
#pragma unroll
        for (int r = 0; r < R; r++) {
            float v = acc[j][r] + b;
            if (PAIR) { // gate and up are rounded to dtype first, as the unfused path stores them
                v = gemv_epilogue(to_f32(from_f32<T>(v)), to_f32(from_f32<T>(acc[1][r])), true, a.act, a.softcap);
            } else if (a.act || a.softcap > 0.0f) {
                v = gemv_epilogue(v, 0.0f, false, a.act, a.softcap);
            }
            if (a.residual) a.residual[(uint64_t)r * a.n + col] += v;
            else if (a.y_f32) ((float *)a.y)[(uint64_t)r * a.n + col] = v;
            else ((T *)a.y)[(uint64_t)r * a.n + col] = from_f32<T>(v);
        }
    }
}


// Integers to exact floats without I2F (a quarter-rate instruction): 2^23 + n has n in its
// low mantissa bits, so OR-ing n in and subtracting 2^23 + offset gives n - offset.
__device__ __forceinline__ float nibble_value(uint32_t word, int e) { // element e of 8: q4, stored q + 8
    return __int_as_float(0x4B000000u | ((word >> (4 * e)) & 15u)) - 8388616.0f;
}
__device__ __forceinline__ float byte_value(uint32_t flipped, int e) { // byte e of 4: q8, flipped = word ^ 0x80808080
    return __int_as_float(0x4B000000u | ((flipped >> (8 * e)) & 255u)) - 8388736.0f;
}

// One thread per 16-byte chunk of packed integers: 16 (q8) or 32 (q4) f16 values out.
__global__ void dequant_f16_kernel(const uint8_t *w, int wq, uint32_t group, uint64_t total_rows, uint64_t row0,
                                   uint64_t n_rows, uint32_t k, __half *out) {
    pdl_wait();
    pdl_launch_dependents();
    const bool q4 = wq == Q4;
    const uint64_t row_bytes = q4 ? k / 2 : k, chunks = row_bytes / 16, per_chunk = q4 ? 32 : 16;
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_rows * chunks) return;
    const uint64_t r = t / chunks, i = t % chunks, row = row0 + r, e0 = i * per_chunk;
    const uint4 chunk = *reinterpret_cast<const uint4 *>(w + row * row_bytes + 16 * i);
    const __half *scales = reinterpret_cast<const __half *>(w + total_rows * row_bytes);
    const float s = __half2float(scales[row * (k / group) + e0 / group]);
    const uint32_t words[4] = {chunk.x, chunk.y, chunk.z, chunk.w};
    // 16-byte stores of 8 halves: q4 word v gives elements 8v .. 8v + 7; q8 words 2v, 2v + 1.
    uint4 *o = reinterpret_cast<uint4 *>(out + r * k + e0);
#pragma unroll
    for (int v = 0; v < (q4 ? 4 : 2); v++) {
        uint4 packed;
        __half2 *h = reinterpret_cast<__half2 *>(&packed);
#pragma unroll
        for (int p = 0; p < 4; p++) {
            float lo, hi;
            if (q4) {
                lo = nibble_value(words[v], 2 * p);
                hi = nibble_value(words[v], 2 * p + 1);
            } else {
                const uint32_t flipped = words[2 * v + p / 2] ^ 0x80808080u;
                lo = byte_value(flipped, 2 * (p % 2));
                hi = byte_value(flipped, 2 * (p % 2) + 1);
            }
            h[p] = __floats2half2_rn(lo * s, hi * s);
        }
        o[v] = packed;
    }
}

template <typename T, int W, bool PAIR> cudaError_t launch_split(const GemvArgs &a, cudaStream_t s) {
    const uint32_t units = PAIR ? a.n : ceil_div(a.n, (uint32_t)W);
    const uint32_t splits = gemv_row_splits(units, a.k, a.dtype), log_s = splits >= 8 ? 3 : splits >= 4 ? 2 : splits >= 2 ? 1 : 0;
    const dim3 grid(ceil_div(units, kWarps >> log_s));
    // Exact row counts: a kernel never reads rows it was not given.
    if (a.rows == 1) return launch_pdl(gemv_kernel<T, 1, W, PAIR>, grid, kWarps * 32, 0, s, a, log_s);
    return launch_pdl(gemv_kernel<T, 2, W, PAIR>, grid, kWarps * 32, 0, s, a, log_s);
}

template <typename T> cudaError_t launch_typed(const GemvArgs &a, cudaStream_t s) {
    if (a.glu) return launch_split<T, 2, true>(a, s);
    const bool two_columns = GPT_GEMV_PLAIN_COLS == 2 && (uint64_t)a.k * sizeof(T) >= kTwoColumnMinRowBytes;
    return two_columns ? launch_split<T, 2, false>(a, s) : launch_split<T, 1, false>(a, s);
}

} // namespace

uint32_t gemv_row_splits(uint32_t units, uint32_t k, int dtype) {
    // Double the warps per unit while the GPU would hold too few warps and each warp still
    // gets at least kMinSplitVectors of a row.
    const uint32_t vectors = k / (16 / dtype_size(dtype));
    uint32_t s = 1;
    while (s < GPT_GEMV_MAX_SPLIT && (uint64_t)units * s < kTargetWarps && vectors / (2 * s) >= kMinSplitVectors) s *= 2;
    return s;
}

bool gemv_supported(uint32_t rows, uint32_t k, uint64_t ldx, int dtype, int wq) {
    if (wq) return rows >= 1 && rows <= kGemvQuantMaxRows && dtype == F16 && (wq == Q8 || wq == Q4) && k % 32 == 0 && ldx % 8 == 0;
    const uint32_t per16 = 16 / dtype_size(dtype);
    return rows >= 1 && rows <= kGemvMaxRows && k % per16 == 0 && ldx % per16 == 0;
}

cudaError_t launch_gemv(const GemvArgs &a, cudaStream_t stream) {
    if (a.n == 0 || a.rows == 0) return cudaSuccess;
    if (!gemv_supported(a.rows, a.k, a.ldx, a.dtype, a.wq)) return cudaErrorInvalidValue;
    if (a.wq) {
        if ((a.group != 32 && a.group != 64 && a.group != 128) || a.k % a.group != 0) return cudaErrorInvalidValue;
        return launch_gemv_quant_tiled(a, stream);
    }
    if (a.norm_w) return cudaErrorInvalidValue; // gemv_folds_norm: quantized weights only
    switch (a.dtype) {
    case F32: return launch_typed<float>(a, stream);
    case F16: return launch_typed<__half>(a, stream);
    case BF16: return launch_typed<__nv_bfloat16>(a, stream);
    }
    return cudaErrorInvalidValue;
}

cudaError_t launch_dequant_f16(const void *w, int wq, uint32_t group, uint64_t total_rows, uint64_t row0, uint64_t n_rows,
                               uint32_t k, void *out, cudaStream_t stream) {
    if (n_rows == 0) return cudaSuccess;
    if ((wq != Q8 && wq != Q4) || k % 32 != 0 || group == 0 || k % group != 0) return cudaErrorInvalidValue;
    const uint64_t threads = n_rows * ((wq == Q4 ? k / 2 : k) / 16);
    return launch_pdl(dequant_f16_kernel, (uint32_t)((threads + 255) / 256), 256, 0, stream, static_cast<const uint8_t *>(w), wq,
                      group, total_rows, row0, n_rows, k, static_cast<__half *>(out));
}
