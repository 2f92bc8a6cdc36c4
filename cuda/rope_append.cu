// rope_append.cu - one warp per head of a row (blockIdx.x: the row; blockIdx.y: a group of
// kWarps heads, q heads then k heads then v heads). A q or k head is widened into the warp's
// row of shared memory, RMS-normed when the layer has q/k norms (over head_dim, or over the
// whole q or k projection: then each warp of that projection sums all of its squares itself,
// the same lanes in the same order, so every head gets the same scale; the projection is a
// few KB, hot in L2, and no second kernel or block-wide barrier is needed), rotated (rotate-half pairs (i, i + rot_dim/2) with the same
// cos/sin tables as the CPU backend, dims past rot_dim pass through), and rounded once to the
// activation type; k heads also go to the cache, v heads only to the cache.
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
template <typename T>
__global__ void __launch_bounds__(kWarps * 32) rope_append_kernel(RopeAppendArgs a) {
    __shared__ float heads[kWarps][kRopeAppendMaxHeadDim];
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t r = blockIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t hd = a.head_dim, nh = a.n_heads, nkv = a.n_kv_heads;
    const uint32_t h = blockIdx.y * kWarps + warp;
    if (r >= a.rows || h >= nh + 2 * nkv) return; // no block-wide barrier follows
    T *v = (T *)a.qkv + (uint64_t)r * (nh + 2 * nkv) * hd + (uint64_t)h * hd;
    const uint32_t pos = (uint32_t)a.positions[r], seq = (uint32_t)a.seqs[r];
    const uint32_t g = h >= nh + nkv ? h - nh - nkv : h - nh; // kv head (k or v heads only)
    if (h >= nh + nkv) { // a v head: cached as it is
        const uint64_t dst = (((uint64_t)seq * nkv + g) * a.max_seq + pos) * hd; // in the v cache
        for (uint32_t i = lane; i < hd; i += 32) store_from_f32(a.v_cache, dst + i, a.kv_dtype, to_f32(v[i]));
        return;
    }
    float *x = heads[warp];
    const bool is_q = h < nh;
    const float *nw = is_q ? a.q_norm : a.k_norm;
    float ss = 0.0f;
    for (uint32_t i = lane; i < hd; i += 32) {
        const float t = to_f32(v[i]);
        x[i] = t;
        ss += t * t;
    }
    if (nw) { // each lane rescales the elements it loaded: no barrier needed before this
        uint32_t n = hd;
        if (a.norm_whole) { // over the whole projection: this head's weights are its slice
            const T *proj = (const T *)a.qkv + (uint64_t)r * (nh + 2 * nkv) * hd + (is_q ? 0 : (uint64_t)nh * hd);
            n = (is_q ? nh : nkv) * hd;
            ss = lane_sum_squares(proj, n, lane);
            nw += (uint64_t)(is_q ? h : h - nh) * hd;
        }
        const float inv = rsqrtf(warp_sum(ss) / n + a.norm_eps);
        for (uint32_t i = lane; i < hd; i += 32) x[i] = x[i] * inv * nw[i];
    }
    __syncwarp();
    if (a.cos) {
        const uint32_t half = a.rot_dim / 2;
        const float *cs = a.cos + (uint64_t)pos * half, *sn = a.sin + (uint64_t)pos * half;
        for (uint32_t i = lane; i < half; i += 32) {
            const float x0 = x[i], x1 = x[i + half], c = cs[i], s = sn[i];
            x[i] = x0 * c - x1 * s;
            x[i + half] = x1 * c + x0 * s;
        }
    }
    __syncwarp();
    const bool changed = nw || a.cos;
    const bool cached = h >= nh; // a k head
    const uint64_t dst = (((uint64_t)seq * nkv + g) * a.max_seq + pos) * hd; // in the k cache
    for (uint32_t i = lane; i < hd; i += 32) {
        const T t = from_f32<T>(x[i]);
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
    const dim3 grid(a.rows, ceil_div(a.n_heads + 2 * a.n_kv_heads, kWarps));
    if (a.kv_dtype != F32 && a.kv_dtype != F16 && a.kv_dtype != BF16) return cudaErrorInvalidValue;
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(a.act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e2 = launch_pdl(rope_append_kernel<T>, grid, kWarps * 32, 0, stream, a);
    });
    return e != cudaSuccess ? e : e2;
}
