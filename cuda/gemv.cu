// gemv.cu - memory-bound matrix-vector products. S warps of a block own one output column
// (two weight rows with SwiGLU), each walking every S-th 2 KB stretch of the row(s) with
// 16-byte loads, kUnroll loads in flight per lane; their sums meet in shared memory in a
// fixed order. S > 1 for matrices with few, long rows (Qwen2-7B's down projection: 3,584
// rows of 37 KB), which with one warp per row keep too few loads in flight to reach the
// DRAM bandwidth. The same x chunks are read for every row of the batch, so up to 8 rows
// cost one pass over the weights. The first weight loads are issued before waiting on the
// previous kernel (weights are never written), so with programmatic dependent launch the
// weight stream overlaps that kernel's tail.
#include "gemv.cuh"
#include "common.cuh"

using namespace gpt_cuda;

namespace {

constexpr int kWarps = 8;
constexpr int kUnroll = 4;
// Aim for this many warps in flight over the whole GPU (132 SMs x 64 resident warps = 8448
// on an H100/H200): below it, split rows over more warps.
constexpr uint64_t kTargetWarps = 16384;
#ifndef GPT_GEMV_MAX_SPLIT
#define GPT_GEMV_MAX_SPLIT 8
#endif

__device__ __forceinline__ float gelu_tanh(float v) {
    const float k = 0.7978845608028654f;
    return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

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

template <typename T, int R, bool PAIR, int S>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(GemvArgs a) {
    constexpr int N = Vec<T>::N;
    constexpr int W = PAIR ? 2 : 1; // weight rows per warp
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32, part = warp % S;
    // Out-of-range warps load a valid row and write nothing (no early return before pdl_wait).
    const uint32_t col_raw = blockIdx.x * (kWarps / S) + warp / S, col = col_raw < a.n ? col_raw : a.n - 1;
    const uint4 *wrow[W];
    wrow[0] = reinterpret_cast<const uint4 *>((const T *)a.w + (uint64_t)col * a.k);
    if (PAIR) wrow[W - 1] = reinterpret_cast<const uint4 *>((const T *)a.w + ((uint64_t)col + a.n) * a.k);
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
                for (int p = 1; p < S; p++) sum += partial[warp + p][j][r];
                acc[j][r] = sum;
            }
    }
    if (lane == 0 && col_raw < a.n) {
        const float b = a.bias ? a.bias[col] : 0.0f;
#pragma unroll
        for (int r = 0; r < R; r++) {
            float v = acc[0][r] + b;
            if (PAIR) {
                // Gate and up are rounded to dtype first, as the unfused path stores them.
                const float g = to_f32(from_f32<T>(v)), up = to_f32(from_f32<T>(acc[W - 1][r]));
                v = g / (1.0f + __expf(-g)) * up;
            }
            if (a.gelu) v = gelu_tanh(v);
            if (a.residual) a.residual[(uint64_t)r * a.n + col] += v;
            else if (a.y_f32) ((float *)a.y)[(uint64_t)r * a.n + col] = v;
            else ((T *)a.y)[(uint64_t)r * a.n + col] = from_f32<T>(v);
        }
    }
}

template <typename T, bool PAIR, int S> cudaError_t launch_rows(const GemvArgs &a, cudaStream_t s) {
    const dim3 grid(ceil_div(a.n, kWarps / S));
    switch (a.rows) { // exact row counts: a kernel never reads rows it was not given
    case 1: return launch_pdl(gemv_kernel<T, 1, PAIR, S>, grid, kWarps * 32, 0, s, a);
    case 2: return launch_pdl(gemv_kernel<T, 2, PAIR, S>, grid, kWarps * 32, 0, s, a);
    case 3: return launch_pdl(gemv_kernel<T, 3, PAIR, S>, grid, kWarps * 32, 0, s, a);
    case 4: return launch_pdl(gemv_kernel<T, 4, PAIR, S>, grid, kWarps * 32, 0, s, a);
    case 5: return launch_pdl(gemv_kernel<T, 5, PAIR, S>, grid, kWarps * 32, 0, s, a);
    case 6: return launch_pdl(gemv_kernel<T, 6, PAIR, S>, grid, kWarps * 32, 0, s, a);
    case 7: return launch_pdl(gemv_kernel<T, 7, PAIR, S>, grid, kWarps * 32, 0, s, a);
    default: return launch_pdl(gemv_kernel<T, 8, PAIR, S>, grid, kWarps * 32, 0, s, a);
    }
}

template <typename T, bool PAIR> cudaError_t launch_split(const GemvArgs &a, cudaStream_t s) {
    switch (gemv_row_splits(a.n, a.k, a.dtype)) {
    case 1: return launch_rows<T, PAIR, 1>(a, s);
    case 2: return launch_rows<T, PAIR, 2>(a, s);
    case 4: return launch_rows<T, PAIR, 4>(a, s);
    default: return launch_rows<T, PAIR, 8>(a, s);
    }
}

template <typename T> cudaError_t launch_typed(const GemvArgs &a, cudaStream_t s) {
    return a.swiglu ? launch_split<T, true>(a, s) : launch_split<T, false>(a, s);
}

} // namespace

uint32_t gemv_row_splits(uint32_t n, uint32_t k, int dtype) {
    // Double the warps per column while the GPU would hold too few warps and each warp
    // still gets at least two 16-byte loads per lane.
    const uint32_t vectors = k / (16 / dtype_size(dtype));
    uint32_t s = 1;
    while (s < GPT_GEMV_MAX_SPLIT && (uint64_t)n * s < kTargetWarps && vectors / (2 * s) >= 64) s *= 2;
    return s;
}

bool gemv_supported(uint32_t rows, uint32_t k, uint64_t ldx, int dtype) {
    const uint32_t per16 = 16 / dtype_size(dtype);
    return rows >= 1 && rows <= kGemvMaxRows && k % per16 == 0 && ldx % per16 == 0;
}

cudaError_t launch_gemv(const GemvArgs &a, cudaStream_t stream) {
    if (a.n == 0 || a.rows == 0) return cudaSuccess;
    if (!gemv_supported(a.rows, a.k, a.ldx, a.dtype)) return cudaErrorInvalidValue;
    switch (a.dtype) {
    case F32: return launch_typed<float>(a, stream);
    case F16: return launch_typed<__half>(a, stream);
    case BF16: return launch_typed<__nv_bfloat16>(a, stream);
    }
    return cudaErrorInvalidValue;
}
