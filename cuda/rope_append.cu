// rope_append.cu - blockIdx.x: the row; its work (every q/k rotation pair, every v element)
// is spread over gridDim.y blocks, so a decode step's single row is not one block's serial
// loop. Rotate-half pairs (i, i + head_dim/2) use the same
// cos/sin tables as the CPU backend, so both rotate identically at any position.
#include "rope_append.cuh"
#include "common.cuh"

#include <algorithm>

using namespace gpt_cuda;

template <typename T, typename K>
static __global__ void rope_append_kernel(RopeAppendArgs a) {
    pdl_wait();
    pdl_launch_dependents();
    const uint32_t r = blockIdx.x;
    if (r >= a.rows) return;
    const uint32_t hd = a.head_dim, half = hd / 2, nh = a.n_heads, nkv = a.n_kv_heads;
    T *row = (T *)a.qkv + (uint64_t)r * (nh + 2 * nkv) * hd;
    const uint32_t pos = (uint32_t)a.positions[r], seq = (uint32_t)a.seqs[r];
    const float *cs = a.cos ? a.cos + (uint64_t)pos * half : nullptr;
    const float *sn = a.sin ? a.sin + (uint64_t)pos * half : nullptr;
    K *kc = (K *)a.k_cache, *vc = (K *)a.v_cache;
    // Rotate q and k heads; k heads also go to the cache.
    const uint32_t n_pairs = (nh + nkv) * half;
    const uint32_t first = blockIdx.y * blockDim.x + threadIdx.x, stride = gridDim.y * blockDim.x;
    for (uint32_t j = first; j < n_pairs; j += stride) {
        const uint32_t h = j / half, i = j % half;
        T *v = row + h * hd;
        float x0 = to_f32(v[i]), x1 = to_f32(v[i + half]);
        if (cs) {
            const float c = cs[i], s = sn[i];
            const float y0 = x0 * c - x1 * s, y1 = x1 * c + x0 * s;
            x0 = y0;
            x1 = y1;
            v[i] = from_f32<T>(x0);
            v[i + half] = from_f32<T>(x1);
        }
        if (h >= nh) {
            const uint32_t g = h - nh;
            K *dst = kc + (((uint64_t)seq * nkv + g) * a.max_seq + pos) * hd;
            // Cache what the attention reads back: the activation-rounded value.
            dst[i] = from_f32<K>(to_f32(from_f32<T>(x0)));
            dst[i + half] = from_f32<K>(to_f32(from_f32<T>(x1)));
        }
    }
    const T *vsrc = row + (nh + nkv) * hd;
    for (uint32_t j = first; j < nkv * hd; j += stride) {
        const uint32_t g = j / hd, i = j % hd;
        vc[(((uint64_t)seq * nkv + g) * a.max_seq + pos) * hd + i] = from_f32<K>(to_f32(vsrc[j]));
    }
}

cudaError_t launch_rope_append(const RopeAppendArgs &a, cudaStream_t stream) {
    if (a.rows == 0) return cudaSuccess;
    // Blocks per row: one rotation pair per thread (the v copy shares them), at most 32.
    const uint32_t pairs = (a.n_heads + a.n_kv_heads) * (a.head_dim / 2);
    const uint32_t per_row = std::min<uint32_t>(32, std::max<uint32_t>(1, ceil_div(pairs, 256)));
    cudaError_t e = cudaErrorInvalidValue, e2 = cudaSuccess;
    dispatch_dtype(a.act_dtype, [&](auto tag) {
        using T = decltype(tag);
        e = dispatch_dtype(a.kv_dtype, [&](auto ktag) {
            using K = decltype(ktag);
            e2 = launch_pdl(rope_append_kernel<T, K>, dim3(a.rows, per_row), 256, 0, stream, a);
        });
    });
    return e != cudaSuccess ? e : e2;
}
