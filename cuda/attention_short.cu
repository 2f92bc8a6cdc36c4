// attention_short.cu - decode attention over at most 256 keys, one block per (row, kv head,
// share of the kv head's query heads: "slots"). Phases, separated by block barriers:
//   before the wait: K and V rows [begin, pos) from the cache into shared memory (16-bit or
//                    f32 as cached), the RoPE row of pos
//   after it:        the q heads and the new k and v from the QKV row (one round trip),
//                    rotated and rounded as rope_append would, the new k and v cached
//   scores:          one thread per (slot, key), q . k from shared memory
//   softmax:         one warp per slot, over all keys at once
//   values:          each thread four output dims of one slot over a share of the keys,
//                    the shares added in a fixed order
// So a decode layer's attention costs one memory round trip after the QKV projection, where
// attention.cu's split kernel loads its tiles after the wait and a combine kernel follows.
#include "attention_short.cuh"
#include "common.cuh"

using namespace gpt_cuda;

namespace {

constexpr uint32_t kThreads = 256;
constexpr uint32_t kMaxKeys = 256;
constexpr uint32_t kMaxHeadDim = 256;
constexpr uint32_t kMaxGroup = 64;

// Query heads a block serves: a kv head's group is spread over several blocks (each copies the
// same K and V) so that a block's value phase has at most 32 float4 outputs where the head
// allows, eight threads or more for each: one block for a group of 8 heads of 64 made
// TinyLlama's decode at 180 keys 10% slower than the split kernel.
__host__ __device__ inline uint32_t slots_per_block(uint32_t group, uint32_t hd) {
    const uint32_t s = 32 / (hd / 4);
    return s < 1 ? 1 : s < group ? s : group;
}

// Shared memory, in bytes from the start. A K or V row is head_dim elements padded to 16
// bytes plus 16 more, so threads reading consecutive keys' rows fall in different banks.
struct Layout {
    uint32_t row_bytes;
    size_t k, v, q, p, scratch, rope, inv_sum, total;
};
__host__ __device__ inline Layout layout(uint32_t slots, uint32_t hd, uint32_t elem_bytes, uint32_t max_keys) {
    Layout l;
    l.row_bytes = hd * elem_bytes + 16;
    l.k = 0;
    l.v = l.k + (size_t)max_keys * l.row_bytes;
    l.q = l.v + (size_t)max_keys * l.row_bytes;     // f32 [slots][hd], pre-scaled
    l.p = l.q + (size_t)slots * hd * 4;             // f32 [slots][max_keys]: scores, then exp
    l.scratch = l.p + (size_t)slots * max_keys * 4; // f32 [kThreads * 4]: new k and v, then value shares
    l.rope = l.scratch + (size_t)kThreads * 16;     // f32 [2][kMaxHeadDim / 2]: cos, sin
    l.inv_sum = l.rope + kMaxHeadDim * 4;           // f32 [slots]
    l.total = l.inv_sum + (size_t)slots * 4;
    return l;
}

// x rounded to the activation type t (what an in-place store of it would hold).
__device__ __forceinline__ float round_as(float x, int t) {
    if (t == F16) return __half2float(__float2half_rn(x));
    if (t == BF16) return __bfloat162float(__float2bfloat16_rn(x));
    return x;
}

// Four elements of a shared-memory row from d0 (a multiple of 4, below head_dim).
template <typename K> __device__ __forceinline__ float4 load4(const K *row, uint32_t d0) {
    if constexpr (sizeof(K) == 4) return *reinterpret_cast<const float4 *>(row + d0);
    else {
        const uint2 u = *reinterpret_cast<const uint2 *>(row + d0);
        const K *e = reinterpret_cast<const K *>(&u);
        return make_float4(to_f32(e[0]), to_f32(e[1]), to_f32(e[2]), to_f32(e[3]));
    }
}

// Elements i .. i + 3 of an activation array (type t; i a multiple of 4) set to v, in one store.
__device__ __forceinline__ void store4(void *p, uint64_t i, int t, float4 v) {
    if (t == F32) {
        reinterpret_cast<float4 *>(static_cast<float *>(p) + i)[0] = v;
    } else if (t == F16) {
        __half2 *h = reinterpret_cast<__half2 *>(static_cast<__half *>(p) + i);
        h[0] = __floats2half2_rn(v.x, v.y);
        h[1] = __floats2half2_rn(v.z, v.w);
    } else {
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(static_cast<__nv_bfloat16 *>(p) + i);
        h[0] = __floats2bfloat162_rn(v.x, v.y);
        h[1] = __floats2bfloat162_rn(v.z, v.w);
    }
}

// q (f32) . k (a row of K) in 16-byte vectors.
template <typename K> __device__ __forceinline__ float dot_row(const float *q, const K *k, uint32_t hd) {
    constexpr uint32_t N = 16 / sizeof(K);
    float s = 0.0f;
#pragma unroll 2
    for (uint32_t d = 0; d < hd; d += N) {
        float kf[N];
        widen16(*reinterpret_cast<const uint4 *>(k + d), kf, K{});
#pragma unroll
        for (uint32_t e = 0; e < N; e++) s += q[d + e] * kf[e];
    }
    return s;
}

// K: the cache's element type; the activation type (q, the new k and v, the output) is the
// run-time a.act_dtype.
template <typename K>
__global__ void __launch_bounds__(kThreads) attention_short_kernel(AttentionArgs a, AttentionShortFold f, uint32_t max_keys) {
    extern __shared__ __align__(16) uint8_t smem[];
    const uint32_t nkv = a.n_kv_heads, group = a.n_heads / nkv, hd = a.head_dim, hd4 = hd / 4;
    const uint32_t per_block = slots_per_block(group, hd), chunks = (group + per_block - 1) / per_block;
    const uint32_t r = blockIdx.x / (nkv * chunks), g = blockIdx.x / chunks % nkv, tid = threadIdx.x;
    const uint32_t slot0 = blockIdx.x % chunks * per_block, slots = min(per_block, group - slot0); // q heads g * group + slot0 ..
    const Layout L = layout(per_block, hd, sizeof(K), max_keys);
    auto k_row = [&](uint32_t t) { return reinterpret_cast<K *>(smem + L.k + (size_t)t * L.row_bytes); };
    auto v_row = [&](uint32_t t) { return reinterpret_cast<K *>(smem + L.v + (size_t)t * L.row_bytes); };
    float *q = reinterpret_cast<float *>(smem + L.q), *p = reinterpret_cast<float *>(smem + L.p);
    float *scratch = reinterpret_cast<float *>(smem + L.scratch), *cs = reinterpret_cast<float *>(smem + L.rope);
    float *sn = cs + kMaxHeadDim / 2, *inv_sum = reinterpret_cast<float *>(smem + L.inv_sum);

    // The positions and sequences were uploaded before the step's first kernel and no kernel
    // writes them (attention.cu); the cache rows before pos were written by earlier steps.
    const uint32_t pos = (uint32_t)a.positions[r], seq = (uint32_t)a.seqs[r], end = pos + 1;
    uint32_t begin = a.window && end > a.window ? end - a.window : 0;
    if (end - begin > max_keys) begin = end - max_keys; // never past the buffers (the caller checks the count)
    const uint32_t n = end - begin, old = n - 1;
    const uint64_t first = (((uint64_t)seq * nkv + g) * a.max_seq + begin) * hd; // element of key `begin`
    const K *kc = static_cast<const K *>(a.k_cache) + first, *vc = static_cast<const K *>(a.v_cache) + first;
    // Asynchronous copies (sm_80+): every one in flight at once, none through registers.
    const uint32_t vecs = hd * (uint32_t)sizeof(K) / 16;
    for (uint32_t i = tid; i < old * vecs; i += kThreads) {
        const uint32_t t = i / vecs, c = i % vecs;
        copy16(reinterpret_cast<uint4 *>(k_row(t)) + c, reinterpret_cast<const uint4 *>(kc + (uint64_t)t * hd) + c);
        copy16(reinterpret_cast<uint4 *>(v_row(t)) + c, reinterpret_cast<const uint4 *>(vc + (uint64_t)t * hd) + c);
    }
    const uint32_t half = f.append && f.cos ? f.rot_dim / 2 : 0;
    for (uint32_t i = tid; i < half; i += kThreads) {
        cs[i] = f.cos[(uint64_t)pos * half + i];
        sn[i] = f.sin[(uint64_t)pos * half + i];
    }
    pdl_wait();
    pdl_launch_dependents();

    // The row's q heads of this kv head, and its new k (scratch[0, hd)) and v (scratch[256, ...)).
    const uint64_t row0 = (uint64_t)r * (a.n_heads + 2 * nkv) * hd;
    float *k_new = scratch, *v_new = scratch + kMaxHeadDim;
    for (uint32_t i = tid; i < (slots + 2) * hd; i += kThreads) {
        const uint32_t h = i / hd, d = i % hd;
        const uint64_t at = row0 + (h < slots ? (uint64_t)(g * group + slot0 + h) * hd
                                              : (uint64_t)(a.n_heads + (h - slots) * nkv + g) * hd) + d;
        const float x = load_as_f32(a.qkv, at, a.act_dtype);
        if (h < slots) q[h * hd + d] = x;
        else (h == slots ? k_new : v_new)[d] = x;
    }
    __syncthreads();
    if (half) { // rotate-half pairs (d, d + half) of every q head and of k, as rope_append
        for (uint32_t i = tid; i < (slots + 1) * half; i += kThreads) {
            const uint32_t h = i / half, d = i % half;
            float *x = h < slots ? q + h * hd : k_new;
            const float x0 = x[d], x1 = x[d + half];
            x[d] = x0 * cs[d] - x1 * sn[d];
            x[d + half] = x1 * cs[d] + x0 * sn[d];
        }
        __syncthreads();
    }
    // q rounded to the activation type (as rope_append leaves it in place), then scaled; the
    // new k and v rounded as the cache holds them (through the activation type, as rope_append).
    for (uint32_t i = tid; i < slots * hd; i += kThreads) q[i] = round_as(q[i], a.act_dtype) * a.scale;
    const uint64_t cache_at = (((uint64_t)seq * nkv + g) * a.max_seq + pos) * hd;
    for (uint32_t d = tid; d < hd; d += kThreads) {
        const K kq = from_f32<K>(round_as(k_new[d], a.act_dtype)), vq = from_f32<K>(v_new[d]);
        k_row(old)[d] = kq;
        v_row(old)[d] = vq;
        if (f.append && slot0 == 0) { // AttentionArgs holds the caches as read-only; this block owns row pos of them
            const_cast<K *>(static_cast<const K *>(a.k_cache))[cache_at + d] = kq;
            const_cast<K *>(static_cast<const K *>(a.v_cache))[cache_at + d] = vq;
        }
    }
    wait_copies();
    __syncthreads();

    // Scores: every key in [begin, pos] is visible to this row (causal, inside its window).
    for (uint32_t i = tid; i < slots * n; i += kThreads) {
        const uint32_t slot = i / n, t = i % n;
        float sc = dot_row(q + slot * hd, k_row(t), hd);
        if (a.softcap > 0.0f) sc = soft_cap(sc, a.softcap);
        p[slot * max_keys + t] = sc;
    }
    __syncthreads();
    {
        const uint32_t warp = tid / 32, lane = tid % 32;
        for (uint32_t slot = warp; slot < slots; slot += kThreads / 32) {
            float *ps = p + slot * max_keys;
            float mx = -INFINITY;
            for (uint32_t t = lane; t < n; t += 32) mx = fmaxf(mx, ps[t]);
            mx = warp_max(mx);
            float sum = 0.0f;
            for (uint32_t t = lane; t < n; t += 32) {
                const float e = __expf(ps[t] - mx);
                ps[t] = e;
                sum += e;
            }
            sum = warp_sum(sum);
            if (lane == 0) inv_sum[slot] = 1.0f / sum; // sum >= 1: the maximum's own term
        }
    }
    __syncthreads();

    // Values: thread i sums output vector o = i % outs (slot o / hd4, dims 4 (o % hd4) ..) over
    // keys t = share, share + shares, ... (share = i / outs); the shares meet in scratch and are
    // added in share order. outs <= 64 (slots_per_block), so every thread has work.
    const uint32_t outs = slots * hd4, shares = kThreads / outs;
    float4 *share_sums = reinterpret_cast<float4 *>(scratch); // the new k and v are in the rows now
    if (tid < shares * outs) {
        const uint32_t o = tid % outs, slot = o / hd4, d0 = (o % hd4) * 4;
        const float *ps = p + slot * max_keys;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll 4
        for (uint32_t t = tid / outs; t < n; t += shares) add_scaled(acc, ps[t], load4(v_row(t), d0));
        share_sums[tid] = acc;
    }
    __syncthreads();
    if (tid < outs) {
        float4 acc = share_sums[tid];
        for (uint32_t s = 1; s < shares; s++) {
            const float4 v = share_sums[s * outs + tid];
            acc.x += v.x;
            acc.y += v.y;
            acc.z += v.z;
            acc.w += v.w;
        }
        const uint32_t slot = tid / hd4, d0 = (tid % hd4) * 4;
        const float inv = inv_sum[slot];
        store4(a.out, ((uint64_t)r * a.n_heads + g * group + slot0 + slot) * hd + d0, a.act_dtype,
               make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv));
    }
}

// The current device's shared memory a block may opt into.
size_t smem_optin() {
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
        cudaGetLastError();
        return 48 * 1024;
    }
    return (size_t)v;
}

// The shapes the kernel takes: rows of whole 16-byte vectors (head_dim a multiple of 8 for a
// 16-bit cache, of 4 for f32: every released model's), so it has no element-wise paths.
bool shape_ok(uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, int kv_dtype) {
    if (kv_dtype != F32 && kv_dtype != F16 && kv_dtype != BF16) return false;
    return n_kv_heads && n_heads % n_kv_heads == 0 && head_dim && head_dim <= kMaxHeadDim && n_heads / n_kv_heads <= kMaxGroup &&
           head_dim * dtype_size(kv_dtype) % 16 == 0;
}

} // namespace

uint32_t attention_short_max_keys(uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, int kv_dtype) {
    if (!shape_ok(n_heads, n_kv_heads, head_dim, kv_dtype)) return 0;
    const size_t limit = smem_optin();
    for (uint32_t keys = kMaxKeys; keys >= 16; keys -= 16)
        if (layout(slots_per_block(n_heads / n_kv_heads, head_dim), head_dim, dtype_size(kv_dtype), keys).total <= limit) return keys;
    return 0;
}

cudaError_t launch_attention_short(const AttentionArgs &a, const AttentionShortFold &f, uint32_t max_keys, cudaStream_t stream) {
    if (a.rows == 0) return cudaSuccess;
    if (a.rows_per_seq != 1 || !shape_ok(a.n_heads, a.n_kv_heads, a.head_dim, a.kv_dtype) || max_keys == 0 || max_keys > kMaxKeys)
        return cudaErrorInvalidValue;
    if (f.append && f.cos && (f.rot_dim < 2 || f.rot_dim % 2 || f.rot_dim > a.head_dim)) return cudaErrorInvalidValue;
    if (a.act_dtype != F32 && a.act_dtype != F16 && a.act_dtype != BF16) return cudaErrorInvalidValue;
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(a.kv_dtype, [&](auto ktag) {
        using K = decltype(ktag);
        const uint32_t group = a.n_heads / a.n_kv_heads, per_block = slots_per_block(group, a.head_dim);
        const size_t smem = layout(per_block, a.head_dim, sizeof(K), max_keys).total;
        if (smem > 48 * 1024 &&
            (e2 = cudaFuncSetAttribute(attention_short_kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem)) != cudaSuccess)
            return;
        const uint32_t blocks = a.rows * a.n_kv_heads * ((group + per_block - 1) / per_block);
        e2 = launch_pdl(attention_short_kernel<K>, blocks, kThreads, smem, stream, a, f, max_keys);
    });
    return e != cudaSuccess ? e : e2;
}
