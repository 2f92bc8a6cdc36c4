// rope_append.cu - one warp per head of a row (blockIdx.x: the row; blockIdx.y: a group of
// kWarps heads, q heads then k heads then v heads). A q or k head is widened into registers,
// RMS-normed when the layer has q/k norms (over head_dim, or over the whole q or k projection:
// then each warp of that projection sums all of its squares itself, the same lanes in the
// same order, so every head gets the same scale; the projection is a few KB, hot in L2, and
// no second kernel or block-wide barrier is needed), rotated (rotate-half pairs (i, i +
// rot_dim/2), through the warp's row of shared memory, with the same cos/sin tables as the
// CPU backend, dims past rot_dim pass through), and rounded once to the activation type; k
// heads also go to the cache, v heads only to the cache.
#include "rope_append.cuh"
#include "common.cuh"

using namespace gpt_cuda;

namespace {

constexpr uint32_t kWarps = 8;

// This lane's share of the sum of squares of p[0..n): 16-byte loads where p allows them.
template <typename T> __device__ float lane_sum_squares(const T *p, uint32_t n, uint32_t lane) {
    constexpr uint32_t N = 16 / sizeof(T);
    float ss = 0.0f;
    if (reinterpret_cast<uintptr_t>(p) % 16 == 0 && n % N == 0) {
        const uint4 *v = reinterpret_cast<const uint4 *>(p);
#pragma unroll 4
        for (uint32_t i = lane; i < n / N; i += 32) {
            const uint4 u = v[i];
            const T *e = reinterpret_cast<const T *>(&u);
#pragma unroll
            for (uint32_t j = 0; j < N; j++) {
                const float t = to_f32(e[j]);
                ss += t * t;
            }
        }
    } else {
        for (uint32_t i = lane; i < n; i += 32) {
            const float t = to_f32(p[i]);
            ss += t * t;
        }
    }
    return ss;
}

// T: the activation type (the heads read, rotated and written in place). The cache's type is
// the run-time a.kv_dtype (one store per cached element): one kernel per activation type.
// A lane holds elements lane + 32 k (k < kPerLane) of its head in registers, every load of a
// phase issued before any is used: a loop that used each load at once waited one memory
// round trip per element it walked (4 in series for a head of 128). What the kernel before
// this one never writes - the step's positions and sequences (uploaded before the step's
// first kernel), the RoPE rows they select, the norm weights, the bias - is read before the wait, so
// those round trips overlap that kernel.
constexpr uint32_t kPerLane = kRopeAppendMaxHeadDim / 32;
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) rope_append_kernel(RopeAppendArgs a) {
    __shared__ float heads[kWarps][kRopeAppendMaxHeadDim];
    const uint32_t r = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t hd = a.head_dim, nh = a.n_heads, nkv = a.n_kv_heads;
    const uint32_t h = blockIdx.y * kWarps + warp;
    const bool live = r < a.rows && h < nh + 2 * nkv; // no block-wide barrier follows
    const bool is_q = h < nh, is_v = h >= nh + nkv;
    const float *nw = is_q ? a.q_norm : a.k_norm;
    const uint32_t half = a.cos ? a.rot_dim / 2 : 0;
    uint32_t pos = 0, seq = 0;
    float cs[kPerLane / 2], sn[kPerLane / 2], wv[kPerLane], bv[kPerLane];
    if (live) {
#pragma unroll
        for (uint32_t k = 0; k < kPerLane; k++) {
            const uint32_t i = lane + 32 * k;
            bv[k] = a.qkv_bias && i < hd ? a.qkv_bias[(uint64_t)h * hd + i] : 0.0f;
        }
        pos = (uint32_t)a.positions[r];
        seq = (uint32_t)a.seqs[r];
        if (!is_v && half) {
            const float *c = a.cos + (uint64_t)pos * half, *sv = a.sin + (uint64_t)pos * half;
#pragma unroll
            for (uint32_t k = 0; k < kPerLane / 2; k++) {
                const uint32_t i = lane + 32 * k;
                cs[k] = i < half ? c[i] : 0.0f;
                sn[k] = i < half ? sv[i] : 0.0f;
            }
        }
        if (!is_v && nw) {
            if (a.norm_whole) nw += (uint64_t)(is_q ? h : h - nh) * hd; // this head's slice of the projection's weights
#pragma unroll
            for (uint32_t k = 0; k < kPerLane; k++) {
                const uint32_t i = lane + 32 * k;
                wv[k] = i < hd ? nw[i] : 0.0f;
            }
        }
    }
    pdl_wait();
    pdl_launch_dependents();
    if (!live) return;
    T *v = (T *)a.qkv + (uint64_t)r * (nh + 2 * nkv) * hd + (uint64_t)h * hd;
    float xv[kPerLane];
#pragma unroll
    for (uint32_t k = 0; k < kPerLane; k++) {
        const uint32_t i = lane + 32 * k;
        // With a bias: rounded to T as the projection's output would have been.
        xv[k] = i < hd ? (a.qkv_bias ? to_f32(from_f32<T>(to_f32(v[i]) + bv[k])) : to_f32(v[i])) : 0.0f;
    }
    const uint32_t g = is_v ? h - nh - nkv : h - nh; // kv head (k or v heads only)
    const uint64_t dst = (((uint64_t)seq * nkv + g) * a.max_seq + pos) * hd; // in the k or v cache
    if (is_v) { // a v head: cached as it is (and left biased in QKV: the short decode kernel reads the row's v there)
#pragma unroll
        for (uint32_t k = 0; k < kPerLane; k++) {
            const uint32_t i = lane + 32 * k;
            if (i >= hd) continue;
            store_from_f32(a.v_cache, dst + i, a.kv_dtype, xv[k]);
            if (a.qkv_bias) v[i] = from_f32<T>(xv[k]);
        }
        return;
    }
    if (nw) {
        float ss = 0.0f;
        uint32_t n = hd;
        if (a.norm_whole) { // over the whole projection
            const T *proj = (const T *)a.qkv + (uint64_t)r * (nh + 2 * nkv) * hd + (is_q ? 0 : (uint64_t)nh * hd);
            n = (is_q ? nh : nkv) * hd;
            ss = lane_sum_squares(proj, n, lane);
        } else {
#pragma unroll
            for (uint32_t k = 0; k < kPerLane; k++) ss += xv[k] * xv[k];
        }
        const float inv = rsqrtf(warp_sum(ss) / n + a.norm_eps);
#pragma unroll
        for (uint32_t k = 0; k < kPerLane; k++) xv[k] = xv[k] * inv * wv[k];
    }
    if (half) { // rotate-half pairs (i, i + half) may sit in different lanes: through shared memory
        float *x = heads[warp];
#pragma unroll
        for (uint32_t k = 0; k < kPerLane; k++) {
            const uint32_t i = lane + 32 * k;
            if (i < hd) x[i] = xv[k];
        }
        __syncwarp();
#pragma unroll
        for (uint32_t k = 0; k < kPerLane / 2; k++) {
            const uint32_t i = lane + 32 * k;
            if (i < half) {
                const float x0 = x[i], x1 = x[i + half];
                x[i] = x0 * cs[k] - x1 * sn[k];
                x[i + half] = x1 * cs[k] + x0 * sn[k];
            }
        }
        __syncwarp();
#pragma unroll
        for (uint32_t k = 0; k < kPerLane; k++) {
            const uint32_t i = lane + 32 * k;
            if (i < hd) xv[k] = x[i];
        }
    }
    const bool changed = nw || half || a.qkv_bias;
    const bool cached = !is_q; // a k head
#pragma unroll
    for (uint32_t k = 0; k < kPerLane; k++) {
        const uint32_t i = lane + 32 * k;
        if (i >= hd) continue;
        const T t = from_f32<T>(xv[k]);
        if (changed) v[i] = t;
        // Cache what the attention reads back: the activation-rounded value.
        if (cached) store_from_f32(a.k_cache, dst + i, a.kv_dtype, to_f32(t));
    }
}

} // namespace

cudaError_t launch_rope_append(const RopeAppendArgs &a, cudaStream_t stream) {
    if (a.rows == 0) return cudaSuccess;
    if (a.head_dim == 0 || a.head_dim > kRopeAppendMaxHeadDim) return cudaErrorInvalidValue;
    if (a.cos && (a.rot_dim < 2 || a.rot_dim % 2 || a.rot_dim > a.head_dim)) return cudaErrorInvalidValue;
    if (a.qkv_bias && a.norm_whole) return cudaErrorInvalidValue; // that norm reads the projection unbiased
    const dim3 grid(a.rows, ceil_div(a.n_heads + 2 * a.n_kv_heads, kWarps));
    if (a.kv_dtype != F32 && a.kv_dtype != F16 && a.kv_dtype != BF16) return cudaErrorInvalidValue;
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(a.act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(rope_append_kernel<T>, grid, kWarps * 32, 0, stream, a);
    });
    return e != cudaSuccess ? e : e2;
}
