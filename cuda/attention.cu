// attention.cu - online-softmax attention over K/V tiles staged in shared memory.
// A block serves "query slots": every query head of one kv head (GQA) for up to a few
// consecutive rows of one sequence, so each K/V tile is loaded once (16-byte coalesced loads,
// widened to f32) for all of them. Per tile of kTile keys:
//   load:    K and V rows [t0, t0 + kTile) of (sequence, kv head) into shared memory
//   scores:  one thread per (slot, key): q . k with float4 reads, causal mask per slot
//   softmax: one warp per slot folds the tile into its running max and sum
//   values:  one thread per (slot, 4 dims) accumulates p . v in registers
// Decode splits the keys over several blocks (blockIdx.y) and attention_combine merges them.
// The split length follows the key count (read on the device, so one captured graph serves
// every position): ceil(n_keys / n_splits) rounded up to 16 keys; trailing splits that get
// no keys exit at once and the combine step reads only the splits in use. With a sliding
// window the keys a block reads start at its first row's window, so a decode step costs
// ~window keys, not ~position. Scores are soft-capped (Gemma-2) before the mask.
#include "attention.cuh"
#include "common.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace gpt_cuda;

namespace {

constexpr uint32_t kTile = 64;      // keys per tile
constexpr uint32_t kMaxOut4 = 8;    // float4 outputs per thread
constexpr uint32_t kMaxSlots = 64;
constexpr uint32_t kMaxSplits = 256;
constexpr uint64_t kPrefetchMaxBytes = 32768; // K (and V) bytes of a split asked of L2 before the wait
constexpr uint32_t kSplitGrain = 16; // keys

__device__ __forceinline__ uint32_t split_chunk(uint32_t n_keys, uint32_t n_splits) {
    return ceil_div(ceil_div(n_keys, n_splits), kSplitGrain) * kSplitGrain;
}

// The keys [begin, end) a block serving row r reads: up to the last position of its row
// group (rows of a sequence have rising positions), from the first row's window on.
struct KeyRange {
    uint32_t begin, end;
    __device__ uint32_t count() const { return end - begin; }
};
__device__ __forceinline__ KeyRange group_keys(const AttentionArgs &a, uint32_t r, uint32_t rows_per_block) {
    const uint32_t b = r / a.rows_per_seq, i = r % a.rows_per_seq;
    const uint32_t first = i / rows_per_block * rows_per_block;
    const uint32_t last = min(first + rows_per_block, a.rows_per_seq) - 1;
    const uint32_t p0 = (uint32_t)a.positions[b * a.rows_per_seq + first];
    return {a.window && p0 + 1 > a.window ? p0 + 1 - a.window : 0u, (uint32_t)a.positions[b * a.rows_per_seq + last] + 1};
}

// Whether the row at pos sees key t.
__device__ __forceinline__ bool key_visible(const AttentionArgs &a, uint32_t t, uint32_t pos) {
    return t <= pos && (a.window == 0 || pos - t < a.window);
}

// Shared-memory layout; rows padded to a multiple of 4 floats (+4) so float4 reads by
// consecutive keys fall in different banks.
struct Smem {
    float *q, *p, *k, *v, *m_run, *l_run, *corr;
    uint32_t stride; // floats per q/k/v row
};

__host__ __device__ inline uint32_t row_stride(uint32_t hd) { return (hd + 3) / 4 * 4 + 4; }

__host__ __device__ inline size_t smem_floats(uint32_t slots, uint32_t hd) {
    const uint32_t st = row_stride(hd);
    return (size_t)slots * st + (size_t)slots * kTile + 2 * (size_t)kTile * st + 3 * slots;
}

__device__ Smem carve(float *base, uint32_t slots, uint32_t hd) {
    Smem s;
    s.stride = row_stride(hd);
    s.q = base;
    s.p = s.q + slots * s.stride;
    s.k = s.p + slots * kTile;
    s.v = s.k + kTile * s.stride;
    s.m_run = s.v + kTile * s.stride;
    s.l_run = s.m_run + slots;
    s.corr = s.l_run + slots;
    return s;
}

// K: the cache's element type (its loads are the main loop's). The activation type (q in,
// the output out) is the run-time a.act_dtype: one kernel per cache type, not per pair.
template <typename K>
__global__ void __launch_bounds__(512) attention_kernel(AttentionArgs a, uint32_t rows_per_block) {
    extern __shared__ __align__(16) float smem[];
    const uint32_t group = a.n_heads / a.n_kv_heads, hd = a.head_dim, hd4 = (hd + 3) / 4;
    const uint32_t g = blockIdx.x % a.n_kv_heads, row_group = blockIdx.x / a.n_kv_heads, split = blockIdx.y;
    // Row groups never cross a sequence: rows_per_seq rows per sequence.
    const uint32_t groups_per_seq = (a.rows_per_seq + rows_per_block - 1) / rows_per_block;
    const uint32_t b = row_group / groups_per_seq, first = (row_group % groups_per_seq) * rows_per_block;
    if (b * a.rows_per_seq >= a.rows) return;
    const uint32_t r0 = b * a.rows_per_seq + first;
    const uint32_t nr = min(rows_per_block, a.rows_per_seq - first);
    const uint32_t slots = nr * group;
    Smem s = carve(smem, rows_per_block * group, hd);

    const KeyRange keys = group_keys(a, r0, rows_per_block);
    const uint32_t n_keys = keys.count(), seq = (uint32_t)a.seqs[r0];
    const uint32_t chunk = split_chunk(n_keys, a.n_splits);
    // A split beyond the keys exits before waiting on the previous kernel, so at short
    // contexts the hundreds of empty split blocks retire while that kernel still runs. The
    // positions and sequences read so far were uploaded before the step's first kernel, which
    // every later kernel waits for (each starts only after its predecessor's pdl_wait), and no
    // kernel writes them (a kernel that moved them raced with these reads: RELIABILITY).
    if (split * chunk >= n_keys) return; // the combine step skips it
    const uint32_t k_begin = keys.begin + split * chunk, k_end = min(keys.end, k_begin + chunk);
    {
        // The split's K and V rows are contiguous in the cache; all but the newest were written
        // by earlier steps: ask L2 for them while the kernel before this one finishes (a hint:
        // the loads after the wait read what L2 holds then, the newest rows included). Only
        // for a decode split's few KB: a prompt's row groups share their keys.
        const uint64_t first_byte = (((uint64_t)seq * a.n_kv_heads + g) * a.max_seq + k_begin) * hd * sizeof(K);
        const uint64_t bytes = (uint64_t)(k_end - k_begin) * hd * sizeof(K);
        const char *kb = static_cast<const char *>(a.k_cache) + first_byte, *vb = static_cast<const char *>(a.v_cache) + first_byte;
        for (uint64_t at = (uint64_t)threadIdx.x * 128; bytes <= kPrefetchMaxBytes && at < bytes; at += (uint64_t)blockDim.x * 128) {
            asm volatile("prefetch.global.L2 [%0];" ::"l"(kb + at));
            asm volatile("prefetch.global.L2 [%0];" ::"l"(vb + at));
        }
    }
    pdl_wait();
    pdl_launch_dependents();

    const uint32_t qkv_stride = (a.n_heads + 2 * a.n_kv_heads) * hd;
    // q rows (zero-padded to a multiple of 4), pre-scaled.
    for (uint32_t i = threadIdx.x; i < slots * hd4 * 4; i += blockDim.x) {
        const uint32_t slot = i / (hd4 * 4), d = i % (hd4 * 4), row = slot / group, h = slot % group;
        s.q[slot * s.stride + d] =
            d < hd ? load_as_f32(a.qkv, (uint64_t)(r0 + row) * qkv_stride + (g * group + h) * hd + d, a.act_dtype) * a.scale : 0.0f;
    }
    for (uint32_t i = threadIdx.x; i < slots; i += blockDim.x) {
        s.m_run[i] = -INFINITY;
        s.l_run[i] = 0.0f;
    }
    const uint64_t base = ((uint64_t)seq * a.n_kv_heads + g) * a.max_seq * hd;
    const K *kc = (const K *)a.k_cache + base, *vc = (const K *)a.v_cache + base;
    constexpr uint32_t kVec = 16 / sizeof(K); // elements per 16-byte load
    const bool vec_ok = hd % kVec == 0;

    float4 acc[kMaxOut4];
#pragma unroll
    for (uint32_t j = 0; j < kMaxOut4; j++) acc[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();

    for (uint32_t t0 = k_begin; t0 < k_end; t0 += kTile) {
        const uint32_t n = min(kTile, k_end - t0);
        // Load: K and V rows [t0, t0 + n) are contiguous in the cache; the padding columns
        // are zeroed so float4 reads past head_dim add nothing.
        if (vec_ok) {
            const uint32_t vecs = hd / kVec;
            for (uint32_t i = threadIdx.x; i < n * vecs; i += blockDim.x) {
                const uint32_t t = i / vecs, c = (i % vecs) * kVec;
                float kf[8], vf[8];
                widen16(*reinterpret_cast<const uint4 *>(kc + (uint64_t)(t0 + t) * hd + c), kf, K{});
                widen16(*reinterpret_cast<const uint4 *>(vc + (uint64_t)(t0 + t) * hd + c), vf, K{});
#pragma unroll
                for (uint32_t e = 0; e < kVec; e++) {
                    s.k[t * s.stride + c + e] = kf[e];
                    s.v[t * s.stride + c + e] = vf[e];
                }
            }
        } else {
            for (uint32_t i = threadIdx.x; i < n * hd; i += blockDim.x) {
                const uint32_t t = i / hd, c = i % hd;
                s.k[t * s.stride + c] = to_f32(kc[(uint64_t)(t0 + t) * hd + c]);
                s.v[t * s.stride + c] = to_f32(vc[(uint64_t)(t0 + t) * hd + c]);
            }
        }
        for (uint32_t i = threadIdx.x; i < n * (hd4 * 4 - hd); i += blockDim.x) {
            const uint32_t t = i / (hd4 * 4 - hd), c = hd + i % (hd4 * 4 - hd);
            s.k[t * s.stride + c] = 0.0f;
            s.v[t * s.stride + c] = 0.0f;
        }
        __syncthreads();
        // Scores, masked where a key lies after the slot's own position or before its window.
        for (uint32_t i = threadIdx.x; i < slots * kTile; i += blockDim.x) {
            const uint32_t slot = i / kTile, t = i % kTile;
            const uint32_t pos = (uint32_t)a.positions[r0 + slot / group];
            float sc = -INFINITY;
            if (t < n && key_visible(a, t0 + t, pos)) {
                const float4 *q = reinterpret_cast<const float4 *>(s.q + slot * s.stride);
                const float4 *k = reinterpret_cast<const float4 *>(s.k + t * s.stride);
                sc = 0.0f;
                for (uint32_t d = 0; d < hd4; d++) {
                    const float4 x = q[d], y = k[d];
                    sc += x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
                }
                if (a.softcap > 0.0f) sc = soft_cap(sc, a.softcap);
            }
            s.p[i] = sc;
        }
        __syncthreads();
        // Softmax statistics: one warp per slot.
        {
            const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32, n_warps = blockDim.x / 32;
            for (uint32_t slot = warp; slot < slots; slot += n_warps) {
                float *p = s.p + slot * kTile;
                float mx = -INFINITY;
                for (uint32_t t = lane; t < kTile; t += 32) mx = fmaxf(mx, p[t]);
                const float m_new = fmaxf(s.m_run[slot], warp_max(mx));
                float sum = 0.0f;
                for (uint32_t t = lane; t < kTile; t += 32) {
                    // A slot whose keys are all masked so far keeps m = -inf and adds nothing.
                    const float e = (m_new == -INFINITY || p[t] == -INFINITY) ? 0.0f : __expf(p[t] - m_new);
                    p[t] = e;
                    sum += e;
                }
                sum = warp_sum(sum);
                if (lane == 0) {
                    const float c = s.m_run[slot] == -INFINITY ? 0.0f : __expf(s.m_run[slot] - m_new);
                    s.corr[slot] = c;
                    s.l_run[slot] = s.l_run[slot] * c + sum;
                    s.m_run[slot] = m_new;
                }
            }
        }
        __syncthreads();
        // Values: four consecutive dims per thread.
#pragma unroll
        for (uint32_t j = 0; j < kMaxOut4; j++) {
            const uint32_t o = threadIdx.x + j * blockDim.x;
            if (o < slots * hd4) {
                const uint32_t slot = o / hd4, d4 = o % hd4;
                const float *p = s.p + slot * kTile;
                const float c = s.corr[slot];
                float4 v = make_float4(acc[j].x * c, acc[j].y * c, acc[j].z * c, acc[j].w * c);
                for (uint32_t t = 0; t < n; t++) add_scaled(v, p[t], reinterpret_cast<const float4 *>(s.v + t * s.stride)[d4]);
                acc[j] = v;
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (uint32_t j = 0; j < kMaxOut4; j++) {
        const uint32_t o = threadIdx.x + j * blockDim.x;
        if (o >= slots * hd4) break;
        const uint32_t slot = o / hd4, d0 = (o % hd4) * 4, r = r0 + slot / group, head = g * group + slot % group;
        const float vals[4] = {acc[j].x, acc[j].y, acc[j].z, acc[j].w};
        for (uint32_t e = 0; e < 4 && d0 + e < hd; e++) {
            const uint32_t d = d0 + e;
            if (a.n_splits == 1) {
                const float l = s.l_run[slot];
                store_from_f32(a.out, ((uint64_t)r * a.n_heads + head) * hd + d, a.act_dtype, l > 0.0f ? vals[e] / l : 0.0f);
            } else {
                const uint64_t at = ((uint64_t)r * a.n_heads + head) * a.n_splits + split;
                a.partial_o[at * hd + d] = vals[e];
                if (d == 0) {
                    a.partial_ml[at * 2] = s.m_run[slot];
                    a.partial_ml[at * 2 + 1] = s.l_run[slot];
                }
            }
        }
    }
}

// Merges the splits in use of one (row, head), each weighted by exp(its max - the max). The
// key count comes from the step's positions (never written by the attention kernel), read
// before the wait; after it, each thread issues its column's partial outputs of the first
// kEarlySplits splits together with the splits' maxima and sums, so one memory round trip
// serves them all (decode uses up to ~16 splits at these lengths); the sum still runs over
// the splits in order.
constexpr uint32_t kEarlySplits = 16;
__global__ void __launch_bounds__(128) attention_combine_kernel(AttentionArgs a, uint32_t rows_per_block) {
    __shared__ float weight[kMaxSplits];
    __shared__ float reduce[2][4];
    const uint32_t r = blockIdx.x / a.n_heads, head = blockIdx.x % a.n_heads, hd = a.head_dim;
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const uint32_t n_keys = group_keys(a, r, rows_per_block).count();
    const uint32_t n_used = ceil_div(n_keys, split_chunk(n_keys, a.n_splits));
    const uint64_t slot0 = ((uint64_t)r * a.n_heads + head) * a.n_splits;
    const float *ml = a.partial_ml + slot0 * 2;
    const float *po = a.partial_o + slot0 * hd;
    pdl_wait();
    pdl_launch_dependents();

    float early[kEarlySplits]; // column threadIdx.x of splits 0 .. kEarlySplits - 1
#pragma unroll
    for (uint32_t s = 0; s < kEarlySplits; s++) early[s] = s < n_used && threadIdx.x < hd ? po[(uint64_t)s * hd + threadIdx.x] : 0.0f;
    float m = -INFINITY;
    for (uint32_t s = threadIdx.x; s < n_used; s += blockDim.x) m = fmaxf(m, ml[2 * s]);
    m = warp_max(m);
    if (lane == 0) reduce[0][warp] = m;
    __syncthreads();
    m = fmaxf(fmaxf(reduce[0][0], reduce[0][1]), fmaxf(reduce[0][2], reduce[0][3]));
    float l = 0.0f;
    for (uint32_t s = threadIdx.x; s < n_used; s += blockDim.x) {
        const float ms = ml[2 * s];
        // A split whose keys were all masked for this row keeps max -inf and weighs nothing.
        const float w = ms == -INFINITY ? 0.0f : __expf(ms - m);
        weight[s] = w;
        l += w * ml[2 * s + 1];
    }
    l = warp_sum(l);
    if (lane == 0) reduce[1][warp] = l;
    __syncthreads();
    l = reduce[1][0] + reduce[1][1] + reduce[1][2] + reduce[1][3];
    const float inv_l = l > 0.0f ? 1.0f / l : 0.0f;

    const uint64_t out0 = ((uint64_t)r * a.n_heads + head) * hd; // a.act_dtype elements
    for (uint32_t d = threadIdx.x; d < hd; d += blockDim.x) {
        float v = 0.0f;
        uint32_t s = 0;
        if (d == threadIdx.x) {
#pragma unroll
            for (; s < kEarlySplits; s++) {
                if (s >= n_used) break;
                v += weight[s] * early[s];
            }
        }
        for (; s < n_used; s++) v += weight[s] * po[(uint64_t)s * hd + d];
        store_from_f32(a.out, out0 + d, a.act_dtype, v * inv_l);
    }
}

} // namespace

uint32_t attention_rows_per_block(uint32_t group, uint32_t rows_per_seq, uint32_t seqs, uint32_t n_kv_heads, uint32_t sms) {
    auto rows_of = [&](uint32_t slots) {
        const uint32_t r = group >= slots ? 1u : slots / group;
        return r < rows_per_seq ? r : (rows_per_seq ? rows_per_seq : 1u);
    };
    const uint64_t target = (uint64_t)sms * 3 / 2;
    uint32_t slots = 16;
    while (slots > 4 && (uint64_t)seqs * ceil_div(rows_per_seq, rows_of(slots)) * n_kv_heads < target) slots /= 2;
    return rows_of(slots);
}

// -1: the CUDA-core kernel; 0: the tensor-core kernel over rows; 1: over keys (split_keys).
// GPT_ATTN_TC (A/B runs): unset, the rule; 0 never the tensor-core kernel; rows or keys: that
// mode whenever the kernel is supported (keys: with an f16 cache).
__attribute__((noinline)) static int tensor_core_mode(const AttentionArgs &a) {
    static const int forced = [] {
        const char *v = std::getenv("GPT_ATTN_TC");
        if (!v || !*v) return -2;
        return std::strcmp(v, "rows") == 0 ? 0 : std::strcmp(v, "keys") == 0 ? 1 : -1;
    }();
    if (forced == -1 || !attention_tc_supported(a)) return -1;
    if (forced >= 0) return forced == 1 && a.kv_dtype != F16 ? 0 : forced; // split keys: an f16 cache only
    return attention_tc_mode(a, device_sm_count());
}

cudaError_t launch_attention(const AttentionArgs &a, cudaStream_t stream) {
    if (a.rows == 0) return cudaSuccess;
    const int mode = tensor_core_mode(a);
    if (mode >= 0) return launch_attention_tc(a, mode == 1, stream);
    return launch_attention_cuda_cores(a, stream);
}

// The rule for this launch on the current device (out of line: host code kept small).
__attribute__((noinline)) static uint32_t rows_per_block_for(const AttentionArgs &a) {
    return attention_rows_per_block(a.n_heads / a.n_kv_heads, a.rows_per_seq, a.rows / a.rows_per_seq, a.n_kv_heads, device_sm_count());
}

cudaError_t launch_attention_cuda_cores(const AttentionArgs &a, cudaStream_t stream) {
    if (a.rows == 0) return cudaSuccess;
    const uint32_t group = a.n_heads / a.n_kv_heads, hd = a.head_dim;
    if (hd > 256 || group > kMaxSlots || a.n_splits == 0 || a.n_splits > kMaxSplits || a.rows_per_seq == 0 ||
        a.rows % a.rows_per_seq != 0)
        return cudaErrorInvalidValue;
    const uint32_t rows_per_block = rows_per_block_for(a);
    const uint32_t slots = rows_per_block * group, hd4 = (hd + 3) / 4;
    // One float4 output per thread where 512 threads allow it (the value loop is the longest
    // chain), up to kMaxOut4 beyond.
    const uint32_t outputs = slots * hd4;
    uint32_t threads = std::min(512u, (outputs + 127) / 128 * 128);
    if (threads * kMaxOut4 < outputs) return cudaErrorInvalidValue; // group x head_dim above 16384
    const size_t smem = sizeof(float) * smem_floats(slots, hd);
    const uint32_t groups = (a.rows / a.rows_per_seq) * ((a.rows_per_seq + rows_per_block - 1) / rows_per_block);
    const dim3 grid(groups * a.n_kv_heads, a.n_splits);
    if (a.act_dtype != F32 && a.act_dtype != F16 && a.act_dtype != BF16) return cudaErrorInvalidValue;
    cudaError_t e2 = cudaSuccess;
    const cudaError_t e = dispatch_dtype(a.kv_dtype, [&](auto ktag) {
        using K = decltype(ktag);
        if (smem > 48 * 1024) cudaFuncSetAttribute(attention_kernel<K>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        e2 = launch_pdl(attention_kernel<K>, grid, threads, smem, stream, a, rows_per_block);
    });
    if (e == cudaSuccess && e2 == cudaSuccess && a.n_splits > 1)
        e2 = launch_pdl(attention_combine_kernel, a.rows * a.n_heads, 128, 0, stream, a, rows_per_block);
    return e != cudaSuccess ? e : e2;
}
