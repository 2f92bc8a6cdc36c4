// attention_tc.cu - prefill attention on tensor cores (WMMA, fp16/bf16, head_dim 64 or 128):
// flash-style, one block per (sequence, query head, 64 query rows), 4 warps of 16 rows.
// Per tile of 64 keys (K and V of the cache staged in shared memory, rows past the valid keys
// zeroed so no stale value can reach the products):
//   S = Q K^T     with WMMA into shared memory (f32)
//   softmax       per row in registers of one warp: soft-cap (Gemma-2), causal and window
//                 masks, running max and sum, P
//                 rounded to the activation type (as flash attention does), O rows rescaled
//   O += P V      with WMMA, O kept in shared memory (f32)
// Used by launch_attention when eligible; the CUDA-core kernel handles everything else.
#include "attention.cuh"
#include "common.cuh"

#include <mma.h>

using namespace gpt_cuda;
using namespace nvcuda;

namespace {

constexpr int kRows = 64;   // query rows per block (16 per warp)
constexpr int kKeys = 64;   // keys per tile
constexpr int kWarps = 4;

template <int HD> struct TcLayout {
    static constexpr int ld_h = HD + 8;   // 16-bit tiles: Q, K, V
    static constexpr int ld_s = kKeys + 4; // f32 scores
    static constexpr int ld_p = kKeys + 8; // 16-bit probabilities
    static constexpr int ld_o = HD + 4;    // f32 output accumulator
    static constexpr size_t q = 0;
    static constexpr size_t k = q + (size_t)kRows * ld_h * 2;
    static constexpr size_t v = k + (size_t)kKeys * ld_h * 2;
    static constexpr size_t s = v + (size_t)kKeys * ld_h * 2;
    static constexpr size_t p = s + (size_t)kRows * ld_s * 4;
    static constexpr size_t o = p + (size_t)kRows * ld_p * 2;
    static constexpr size_t stats = o + (size_t)kRows * ld_o * 4; // m[kRows], l[kRows]
    static constexpr size_t bytes = stats + 2 * kRows * 4;
};

// Copies n_rows rows of HD 16-bit elements (row stride src_ld elements) into a padded
// shared tile with 16-byte loads, zeroing rows [n_rows, kRows).
template <int HD, typename T>
__device__ void load_tile(T *dst, const T *src, uint64_t src_ld, int n_rows, int ld) {
    constexpr int vecs = HD / 8;
    for (int i = threadIdx.x; i < kRows * vecs; i += blockDim.x) {
        const int r = i / vecs, c = (i % vecs) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r < n_rows) v = *reinterpret_cast<const uint4 *>(src + (uint64_t)r * src_ld + c);
        *reinterpret_cast<uint4 *>(dst + r * ld + c) = v;
    }
}

template <typename T, int HD>
__global__ void __launch_bounds__(kWarps * 32) attention_tc_kernel(AttentionArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    using L = TcLayout<HD>;
    extern __shared__ __align__(128) unsigned char smem[];
    T *qs = reinterpret_cast<T *>(smem + L::q), *ks = reinterpret_cast<T *>(smem + L::k);
    T *vs = reinterpret_cast<T *>(smem + L::v), *ps = reinterpret_cast<T *>(smem + L::p);
    float *ss = reinterpret_cast<float *>(smem + L::s), *os = reinterpret_cast<float *>(smem + L::o);
    float *m_run = reinterpret_cast<float *>(smem + L::stats), *l_run = m_run + kRows;
    pdl_wait();
    pdl_launch_dependents();

    const uint32_t b = blockIdx.z, h = blockIdx.y, tile = blockIdx.x;
    const uint32_t nt = a.rows_per_seq;
    if (tile * kRows >= nt) return;
    const uint32_t r0 = b * nt + tile * kRows;
    const int nr = (int)min((uint32_t)kRows, nt - tile * kRows);
    const uint32_t group = a.n_heads / a.n_kv_heads, g = h / group;
    const uint32_t qkv_ld = (a.n_heads + 2 * a.n_kv_heads) * HD;
    const int32_t pos0 = a.positions[r0], pos_last = a.positions[r0 + nr - 1];
    const uint32_t seq = (uint32_t)a.seqs[r0];
    const uint64_t base = ((uint64_t)seq * a.n_kv_heads + g) * a.max_seq * HD;
    const T *kc = (const T *)a.k_cache + base, *vc = (const T *)a.v_cache + base;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    load_tile<HD>(qs, (const T *)a.qkv + (uint64_t)r0 * qkv_ld + h * HD, qkv_ld, nr, L::ld_h);
    for (int i = threadIdx.x; i < kRows * L::ld_o; i += blockDim.x) os[i] = 0.0f;
    for (int i = threadIdx.x; i < kRows; i += blockDim.x) {
        m_run[i] = -INFINITY;
        l_run[i] = 0.0f;
    }
    __syncthreads();

    // Keys from the first row's window on (a sliding window skips every earlier tile).
    // A window of max_seq or more restricts nothing (and keeps the int arithmetic in range).
    const int n_keys = pos_last + 1, window = (int)min(a.window, a.max_seq);
    const int k_begin = window && pos0 + 1 > window ? pos0 + 1 - window : 0;
    for (int t0 = k_begin; t0 < n_keys; t0 += kKeys) {
        const int valid = min(kKeys, n_keys - t0);
        load_tile<HD>(ks, kc + (uint64_t)t0 * HD, HD, valid, L::ld_h);
        load_tile<HD>(vs, vc + (uint64_t)t0 * HD, HD, valid, L::ld_h);
        __syncthreads();

        // S = Q K^T for this warp's 16 rows.
        {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kKeys / 16];
#pragma unroll
            for (int j = 0; j < kKeys / 16; j++) wmma::fill_fragment(acc[j], 0.0f);
#pragma unroll
            for (int kk = 0; kk < HD; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> qa;
                wmma::load_matrix_sync(qa, qs + warp * 16 * L::ld_h + kk, L::ld_h);
#pragma unroll
                for (int j = 0; j < kKeys / 16; j++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kb; // K^T
                    wmma::load_matrix_sync(kb, ks + j * 16 * L::ld_h + kk, L::ld_h);
                    wmma::mma_sync(acc[j], qa, kb, acc[j]);
                }
            }
#pragma unroll
            for (int j = 0; j < kKeys / 16; j++)
                wmma::store_matrix_sync(ss + warp * 16 * L::ld_s + j * 16, acc[j], L::ld_s, wmma::mem_row_major);
        }
        __syncwarp();
        // Online softmax per row (the warp's own 16 rows; two keys per lane), O rows rescaled.
        for (int rr = 0; rr < 16; rr++) {
            const int row = warp * 16 + rr;
            const int row_pos = pos0 + row;
            float s0 = ss[row * L::ld_s + lane] * a.scale, s1 = ss[row * L::ld_s + lane + 32] * a.scale;
            if (a.softcap > 0.0f) {
                s0 = soft_cap(s0, a.softcap);
                s1 = soft_cap(s1, a.softcap);
            }
            const int first_key = window ? row_pos - window + 1 : 0; // may be negative
            if (row >= nr || t0 + lane > row_pos || t0 + lane < first_key || lane >= valid) s0 = -INFINITY;
            if (row >= nr || t0 + lane + 32 > row_pos || t0 + lane + 32 < first_key || lane + 32 >= valid) s1 = -INFINITY;
            const float m_old = m_run[row];
            const float m_new = fmaxf(m_old, warp_max(fmaxf(s0, s1)));
            float p0 = 0.0f, p1 = 0.0f, corr = 1.0f;
            if (m_new != -INFINITY) {
                p0 = s0 == -INFINITY ? 0.0f : __expf(s0 - m_new);
                p1 = s1 == -INFINITY ? 0.0f : __expf(s1 - m_new);
                corr = m_old == -INFINITY ? 0.0f : __expf(m_old - m_new);
            }
            ps[row * L::ld_p + lane] = from_f32<T>(p0);
            ps[row * L::ld_p + lane + 32] = from_f32<T>(p1);
            const float sum = warp_sum(p0 + p1);
            __syncwarp(); // every lane has read m_run/l_run[row] before lane 0 replaces them
            if (lane == 0) {
                l_run[row] = l_run[row] * corr + sum;
                m_run[row] = m_new;
            }
            if (corr != 1.0f)
                for (int d = lane; d < HD; d += 32) os[row * L::ld_o + d] *= corr;
        }
        __syncwarp();
        // O += P V.
#pragma unroll
        for (int j = 0; j < HD / 16; j++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> o;
            wmma::load_matrix_sync(o, os + warp * 16 * L::ld_o + j * 16, L::ld_o, wmma::mem_row_major);
#pragma unroll
            for (int kk = 0; kk < kKeys; kk += 16) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pa;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vb;
                wmma::load_matrix_sync(pa, ps + warp * 16 * L::ld_p + kk, L::ld_p);
                wmma::load_matrix_sync(vb, vs + kk * L::ld_h + j * 16, L::ld_h);
                wmma::mma_sync(o, pa, vb, o);
            }
            wmma::store_matrix_sync(os + warp * 16 * L::ld_o + j * 16, o, L::ld_o, wmma::mem_row_major);
        }
        __syncthreads(); // K/V tiles are reloaded next
    }
    // Normalise and write the valid rows.
    for (int i = threadIdx.x; i < nr * HD; i += blockDim.x) {
        const int row = i / HD, d = i % HD;
        const float l = l_run[row];
        ((T *)a.out)[((uint64_t)(r0 + row) * a.n_heads + h) * HD + d] = from_f32<T>(l > 0.0f ? os[row * L::ld_o + d] / l : 0.0f);
    }
#endif
}

template <typename T, int HD> cudaError_t launch_hd(const AttentionArgs &a, cudaStream_t stream) {
    const size_t smem = TcLayout<HD>::bytes;
    static const cudaError_t attr =
        cudaFuncSetAttribute(attention_tc_kernel<T, HD>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (attr != cudaSuccess) return attr;
    const dim3 grid(ceil_div(a.rows_per_seq, kRows), a.n_heads, a.rows / a.rows_per_seq);
    return launch_pdl(attention_tc_kernel<T, HD>, grid, kWarps * 32, smem, stream, a);
}

} // namespace

bool attention_tc_eligible(const AttentionArgs &a) {
    // The kernel's body exists from sm_80 (bf16 fragments): judged by the code's arch.
    return kernel_arch() >= 80 && (a.act_dtype == F16 || a.act_dtype == BF16) && a.kv_dtype == a.act_dtype &&
           (a.head_dim == 64 || a.head_dim == 128) && a.n_splits == 1 && a.rows_per_seq >= 16;
}

cudaError_t launch_attention_tc(const AttentionArgs &a, cudaStream_t stream) {
    if (a.act_dtype == F16) return a.head_dim == 64 ? launch_hd<__half, 64>(a, stream) : launch_hd<__half, 128>(a, stream);
    return a.head_dim == 64 ? launch_hd<__nv_bfloat16, 64>(a, stream) : launch_hd<__nv_bfloat16, 128>(a, stream);
}
