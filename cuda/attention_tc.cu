// attention_tc.cu - prefill attention on tensor cores (WMMA), head_dim 64, 96 or 128:
// flash-style, one block per (sequence, query head, 64 query rows), 4 warps of 16 rows; or,
// for small grids (split_keys, an f16 cache), 16 rows a block with the keys split over the warps.
// The compute type T is the cache's: fp16 or bf16, or f32 on TF32 tensor cores where the
// caller allows TF32. The activations (q in, the output) may be of another type: q is
// rounded to T as it is staged, the output written in the activation type.
// Per tile of 64 keys (K and V of the cache copied asynchronously into shared memory, V
// landing while S and the softmax run; rows past the valid keys zeroed so no stale value can
// reach the products):
//   S = Q K^T     with WMMA into shared memory (f32)
//   softmax       two lanes a row, each over every other key, the row's running max and sum
//                 in their registers: soft-cap (Gemma-2), causal and window masks, P rounded
//                 to T (as flash attention does), the O row rescaled
//   O += P V      with WMMA, O kept in shared memory (f32)
// Used by launch_attention as attention_tc_mode says; the CUDA-core kernel handles the rest.
#include "attention.cuh"
#include "common.cuh"

#include <mma.h>

using namespace gpt_cuda;
using namespace nvcuda;

namespace {

constexpr int kRows = 64;   // query rows per block (16 per warp)
constexpr int kKeys = 64;   // keys per tile
constexpr int kWarps = 4;
constexpr int kMaxHeadDim = 128; // head_dim 64, 96 or 128

// The fragment element type and the k of one MMA for compute type T.
template <typename T> struct TcFrag {
    using type = T;
    static constexpr int k = 16;
};
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800 // mma.h declares tf32 from sm_80 (the body is empty below)
template <> struct TcFrag<float> {
    using type = wmma::precision::tf32;
    static constexpr int k = 8;
};
#endif
template <typename T> constexpr int dtype_code() { return std::is_same<T, float>::value ? F32 : std::is_same<T, __half>::value ? F16 : BF16; }

// f32 fragments are rounded to TF32 before the MMA; 16-bit ones are used as loaded.
template <typename T, typename Frag> __device__ __forceinline__ void round_frag(Frag &f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (std::is_same<T, float>::value)
        for (int i = 0; i < f.num_elements; i++) f.x[i] = wmma::__float_to_tf32(f.x[i]);
#endif
}

// Shared memory of a block for compute type T and head_dim hd (a run-time value: one kernel
// for every head_dim keeps the library small; the MMA loops over the keys stay unrolled).
template <typename T> struct TcLayout {
    static constexpr int pad = 16 / (int)sizeof(T); // one 16-byte vector a row against bank conflicts
    static constexpr int ld_s = kKeys + 4;           // f32 scores
    static constexpr int ld_p = kKeys + pad;         // probabilities (T)
    int ld_h, ld_o;                                  // Q, K, V tiles (T); the f32 output accumulator
    size_t k, v, s, p, o, l, bytes;                  // offsets (Q at 0) and the total
    __host__ __device__ explicit TcLayout(int hd) : ld_h(hd + pad), ld_o(hd + 4) {
        k = (size_t)kRows * ld_h * sizeof(T);
        v = k + (size_t)kKeys * ld_h * sizeof(T);
        s = v + (size_t)kKeys * ld_h * sizeof(T);
        p = s + (size_t)kRows * ld_s * 4;
        o = p + (size_t)kRows * ld_p * sizeof(T);
        l = o + (size_t)kRows * ld_o * 4; // each O row's final max and sum
        bytes = l + 2 * kRows * 4;
    }
};

// Starts the copy of n_rows cache rows of hd elements (contiguous) into a padded shared tile
// of kKeys rows; rows [n_rows, kKeys) are zeroed now.
template <typename T> __device__ void copy_tile_async(T *dst, const T *src, int hd, int n_rows, int ld) {
    constexpr int per_vec = 16 / (int)sizeof(T);
    const int vecs = hd / per_vec;
    for (int i = threadIdx.x; i < kKeys * vecs; i += blockDim.x) {
        const int r = i / vecs, c = (i % vecs) * per_vec;
        uint4 *d = reinterpret_cast<uint4 *>(dst + r * ld + c);
        if (r < n_rows) copy16(d, reinterpret_cast<const uint4 *>(src + (uint64_t)r * hd + c));
        else *d = make_uint4(0, 0, 0, 0);
    }
    commit_copies();
}

// split_keys 0: a block serves 64 query rows, warp w rows 16w..16w+15 over every key.
// split_keys 1: a block serves 16 query rows, warp w keys 16w..16w+15 of each tile, with its
// own running max and sum and its own partial O (rows 16w.. of O), merged at the end: the
// longest block walks a quarter of the keys a warp, for grids too small to fill the GPU.
template <typename T, bool split_keys>
__global__ void __launch_bounds__(kWarps * 32) attention_tc_kernel(AttentionArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const int hd = (int)a.head_dim;
    const TcLayout<T> L(hd);
    using F = typename TcFrag<T>::type;
    constexpr int FK = TcFrag<T>::k;
    extern __shared__ __align__(128) unsigned char smem[];
    T *qs = reinterpret_cast<T *>(smem), *ks = reinterpret_cast<T *>(smem + L.k);
    T *vs = reinterpret_cast<T *>(smem + L.v), *ps = reinterpret_cast<T *>(smem + L.p);
    float *ss = reinterpret_cast<float *>(smem + L.s), *os = reinterpret_cast<float *>(smem + L.o);
    float *m_final = reinterpret_cast<float *>(smem + L.l), *l_final = m_final + kRows;
    pdl_wait();
    pdl_launch_dependents();

    constexpr int rows_blk = split_keys ? 16 : kRows;
    const uint32_t b = blockIdx.z, h = blockIdx.y, tile = blockIdx.x;
    const uint32_t nt = a.rows_per_seq;
    if (tile * rows_blk >= nt) return;
    const uint32_t r0 = b * nt + tile * rows_blk;
    const int nr = (int)min((uint32_t)rows_blk, nt - tile * rows_blk);
    const uint32_t group = a.n_heads / a.n_kv_heads, g = h / group;
    const uint32_t qkv_ld = (a.n_heads + 2 * a.n_kv_heads) * hd;
    const int32_t pos0 = a.positions[r0], pos_last = a.positions[r0 + nr - 1];
    const uint32_t seq = (uint32_t)a.seqs[r0];
    const uint64_t base = ((uint64_t)seq * a.n_kv_heads + g) * a.max_seq * hd;
    const T *kc = (const T *)a.k_cache + base, *vc = (const T *)a.v_cache + base;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // This warp's part: its 16 query rows in Q, S and P, its keys of each tile, its rows of O.
    const int q_row0 = split_keys ? 0 : warp * 16;
    const int key0 = split_keys ? warp * 16 : 0;
    constexpr int n_key = split_keys ? 16 : kKeys;
    const int o_row0 = warp * 16;

    // Keys from the first row's window on (a sliding window skips every earlier tile).
    // A window of max_seq or more restricts nothing (and keeps the int arithmetic in range).
    const int n_keys = pos_last + 1, window = (int)min(a.window, a.max_seq);
    const int k_begin = window && pos0 + 1 > window ? pos0 + 1 - window : 0;

    // Q, rows past nr zeroed: copied like K and V when the activations are of type T, else 4
    // elements at a time widened and rounded to T. O = 0.
    const uint64_t q0 = (uint64_t)r0 * qkv_ld + h * hd;
    if (a.act_dtype == dtype_code<T>()) {
        const int vecs = hd / (16 / (int)sizeof(T));
        for (int i = threadIdx.x; i < rows_blk * vecs; i += blockDim.x) {
            const int r = i / vecs, c = (i % vecs) * (16 / (int)sizeof(T));
            uint4 *d = reinterpret_cast<uint4 *>(qs + r * L.ld_h + c);
            if (r < nr) copy16(d, reinterpret_cast<const uint4 *>((const T *)a.qkv + q0 + (uint64_t)r * qkv_ld + c));
            else *d = make_uint4(0, 0, 0, 0);
        }
    } else {
        const int quads = hd / 4;
        for (int i = threadIdx.x; i < rows_blk * quads; i += blockDim.x) {
            const int r = i / quads, c = (i % quads) * 4;
            float f[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            if (r < nr) load4_as_f32(a.qkv, q0 + (uint64_t)r * qkv_ld + c, a.act_dtype, f);
            for (int e = 0; e < 4; e++) qs[r * L.ld_h + c + e] = from_f32<T>(f[e]);
        }
    }
    commit_copies();
    copy_tile_async(ks, kc + (uint64_t)k_begin * hd, hd, min(kKeys, n_keys - k_begin), L.ld_h);
    for (int i = threadIdx.x; i < kRows * L.ld_o; i += blockDim.x) os[i] = 0.0f;

    // This lane's softmax row (of the warp's 16) and half of the warp's keys (every other one);
    // both lanes of a row keep the warp's running max and sum for it.
    const int my_row = q_row0 + (lane & 15), o_row = o_row0 + (lane & 15), half = lane >> 4;
    const int row_pos = pos0 + my_row;
    const int first_key = window ? row_pos - window + 1 : 0; // may be negative
    float m_run = -INFINITY, l_run = 0.0f;

    for (int t0 = k_begin; t0 < n_keys; t0 += kKeys) {
        const int valid = min(kKeys, n_keys - t0);
        copy_tile_async(vs, vc + (uint64_t)t0 * hd, hd, valid, L.ld_h);
        wait_copies_but<1>(); // this tile's K (and Q)
        __syncthreads();

        // S = Q K^T for this warp's rows and keys: NF fragments of 16 keys sharing each q
        // fragment; with one fragment, even and odd steps of head_dim in two accumulators (two
        // MMA chains in flight; hd / FK is even).
        {
            constexpr int NF = n_key / 16, NA = NF == 1 ? 2 : 1;
            wmma::fragment<wmma::accumulator, 16, 16, FK, float> acc[NF][NA];
#pragma unroll
            for (int j = 0; j < NF; j++)
#pragma unroll
                for (int e = 0; e < NA; e++) wmma::fill_fragment(acc[j][e], 0.0f);
#pragma unroll 1
            for (int kk = 0; kk < hd; kk += NA * FK) {
#pragma unroll
                for (int e = 0; e < NA; e++) {
                    wmma::fragment<wmma::matrix_a, 16, 16, FK, F, wmma::row_major> qa;
                    wmma::load_matrix_sync(qa, qs + q_row0 * L.ld_h + kk + e * FK, L.ld_h);
                    round_frag<T>(qa);
#pragma unroll
                    for (int j = 0; j < NF; j++) {
                        wmma::fragment<wmma::matrix_b, 16, 16, FK, F, wmma::col_major> kb; // K^T
                        wmma::load_matrix_sync(kb, ks + (key0 + 16 * j) * L.ld_h + kk + e * FK, L.ld_h);
                        round_frag<T>(kb);
                        wmma::mma_sync(acc[j][e], qa, kb, acc[j][e]);
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < NF; j++) {
                if constexpr (NA == 2)
                    for (int i = 0; i < acc[j][0].num_elements; i++) acc[j][0].x[i] += acc[j][1].x[i]; // the same layout
                wmma::store_matrix_sync(ss + q_row0 * L.ld_s + key0 + 16 * j, acc[j][0], L.ld_s, wmma::mem_row_major);
            }
        }
        __syncwarp();
        // Online softmax: this lane's keys of its row (every other one of the warp's), then the
        // other half's max and sum.
        {
            float s[n_key / 2];
            float mx = -INFINITY;
#pragma unroll
            for (int i = 0; i < n_key / 2; i++) {
                const int key = key0 + 2 * i + half;
                float v = ss[my_row * L.ld_s + key] * a.scale;
                if (a.softcap > 0.0f) v = soft_cap(v, a.softcap);
                if (my_row >= nr || t0 + key > row_pos || t0 + key < first_key || key >= valid) v = -INFINITY;
                s[i] = v;
                mx = fmaxf(mx, v);
            }
            const float m_new = fmaxf(m_run, fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16)));
            float sum = 0.0f, corr = 1.0f;
#pragma unroll
            for (int i = 0; i < n_key / 2; i++) {
                const float p = m_new == -INFINITY || s[i] == -INFINITY ? 0.0f : __expf(s[i] - m_new);
                ps[my_row * L.ld_p + key0 + 2 * i + half] = from_f32<T>(p);
                sum += p;
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 16);
            if (m_new != -INFINITY) corr = m_run == -INFINITY ? 0.0f : __expf(m_run - m_new);
            l_run = l_run * corr + sum;
            m_run = m_new;
            if (corr != 1.0f)
                for (int d = half; d < hd; d += 2) os[o_row * L.ld_o + d] *= corr;
        }
        wait_copies(); // this tile's V
        __syncthreads(); // ... for every thread's copies; and every warp is past its K reads
        if (t0 + kKeys < n_keys)
            copy_tile_async(ks, kc + (uint64_t)(t0 + kKeys) * hd, hd, min(kKeys, n_keys - t0 - kKeys), L.ld_h);
        // O += P V over this warp's keys.
#pragma unroll 1
        for (int j = 0; j < hd / 16; j++) {
            wmma::fragment<wmma::accumulator, 16, 16, FK, float> o;
            wmma::load_matrix_sync(o, os + o_row0 * L.ld_o + j * 16, L.ld_o, wmma::mem_row_major);
#pragma unroll
            for (int kk = key0; kk < key0 + n_key; kk += FK) {
                wmma::fragment<wmma::matrix_a, 16, 16, FK, F, wmma::row_major> pa;
                wmma::fragment<wmma::matrix_b, 16, 16, FK, F, wmma::row_major> vb;
                wmma::load_matrix_sync(pa, ps + q_row0 * L.ld_p + kk, L.ld_p);
                wmma::load_matrix_sync(vb, vs + kk * L.ld_h + j * 16, L.ld_h);
                round_frag<T>(pa);
                round_frag<T>(vb);
                wmma::mma_sync(o, pa, vb, o);
            }
            wmma::store_matrix_sync(os + o_row0 * L.ld_o + j * 16, o, L.ld_o, wmma::mem_row_major);
        }
        __syncthreads(); // V is copied over next
    }
    // Normalise (split_keys: merge the warps' partial rows first) and write the valid rows in
    // the activation type.
    if (half == 0) {
        m_final[o_row] = m_run;
        l_final[o_row] = l_run;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < nr * hd; i += blockDim.x) {
        const int row = i / hd, d = i % hd;
        float v = 0.0f;
        if (!split_keys) {
            const float l = l_final[row];
            v = l > 0.0f ? os[row * L.ld_o + d] / l : 0.0f;
        } else {
            float m = -INFINITY, l = 0.0f, o = 0.0f;
            for (int w = 0; w < kWarps; w++) m = fmaxf(m, m_final[w * 16 + row]);
            for (int w = 0; w < kWarps && m != -INFINITY; w++) {
                const float mw = m_final[w * 16 + row];
                const float f = mw == -INFINITY ? 0.0f : __expf(mw - m);
                l += l_final[w * 16 + row] * f;
                o += os[(w * 16 + row) * L.ld_o + d] * f;
            }
            v = l > 0.0f ? o / l : 0.0f;
        }
        store_from_f32(a.out, ((uint64_t)(r0 + row) * a.n_heads + h) * hd + d, a.act_dtype, v);
    }
#endif
}

template <typename T, bool split_keys> cudaError_t launch_ts(const AttentionArgs &a, cudaStream_t stream) {
    // The attribute is set once, for the largest head_dim's shared memory.
    static const cudaError_t attr = cudaFuncSetAttribute(attention_tc_kernel<T, split_keys>,
                                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)TcLayout<T>(kMaxHeadDim).bytes);
    if (attr != cudaSuccess) return attr;
    const dim3 grid(ceil_div(a.rows_per_seq, split_keys ? 16 : kRows), a.n_heads, a.rows / a.rows_per_seq);
    return launch_pdl(attention_tc_kernel<T, split_keys>, grid, kWarps * 32, TcLayout<T>((int)a.head_dim).bytes, stream, a);
}

} // namespace

bool attention_tc_supported(const AttentionArgs &a) {
    // The kernel's body exists from sm_80 (bf16 and tf32 fragments): judged by the code's arch.
    // f32 on either side rounds to TF32 or 16 bits: only where the caller allows TF32.
    const bool acts = a.act_dtype == F16 || a.act_dtype == BF16 || (a.act_dtype == F32 && a.allow_tf32);
    const bool cache = a.kv_dtype == F16 || a.kv_dtype == BF16 || (a.kv_dtype == F32 && a.allow_tf32);
    return kernel_arch() >= 80 && acts && cache && (a.head_dim == 64 || a.head_dim == 96 || a.head_dim == 128) &&
           a.n_splits == 1 && a.rows_per_seq >= 16;
}

int attention_tc_mode(const AttentionArgs &a, uint32_t sms) {
    const uint64_t blocks = (uint64_t)ceil_div(a.rows_per_seq, kRows) * a.n_heads * (a.rows / a.rows_per_seq);
    if (sms == 0 || blocks * (a.kv_dtype == F32 ? 1 : 3) >= sms) return 0; // 64-row blocks fill enough SMs
    return a.kv_dtype == F16 ? 1 : -1;                                      // split keys, or CUDA cores
}

cudaError_t launch_attention_tc(const AttentionArgs &a, bool split_keys, cudaStream_t stream) {
    // Split keys for an f16 cache only (the default of f16 and bf16 models): each instance costs
    // the library ~10 KB, and for TF32 it measured even with the CUDA-core kernel (PERFORMANCE 66).
    if (split_keys && a.kv_dtype != F16) return cudaErrorInvalidValue;
    if (a.kv_dtype == F16) return split_keys ? launch_ts<__half, true>(a, stream) : launch_ts<__half, false>(a, stream);
    if (a.kv_dtype == BF16) return launch_ts<__nv_bfloat16, false>(a, stream);
    return launch_ts<float, false>(a, stream);
}
