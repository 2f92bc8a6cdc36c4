// rope_append.cuh - RMSNorm of q and k (optional: per head, or over the whole q and the whole
// k projection as OLMoE's), rotary embedding on the first rot_dim dimensions of each q and k
// head, then the new k and v appended to the KV cache: one pass over the fused QKV rows of a step.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

inline constexpr uint32_t kRopeAppendMaxHeadDim = 256;

struct RopeAppendArgs {
    void *qkv;                 // [rows][(n_heads + 2 n_kv_heads) head_dim], act_dtype; q and k normed/rotated in place
    const float *qkv_bias;     // f32 [(n_heads + 2 n_kv_heads) head_dim], or null: the projection's bias, added
                               // first (each element rounded to act_dtype as a separate bias kernel would);
                               // q, k and v are then all written back biased
    const int32_t *positions;  // [rows] cache position of each row
    const int32_t *seqs;       // [rows] sequence of each row
    const float *cos, *sin;    // [max_seq][rot_dim / 2], or null for no RoPE
    uint32_t rot_dim;          // rotated dims of each head (even, <= head_dim; pair i with i + rot_dim / 2)
    const float *q_norm;       // f32 [head_dim]: RMSNorm weights of every q head, or null
    const float *k_norm;       // f32 [head_dim]: the same for k heads, or null
    int norm_whole;            // 1: q_norm [n_heads * head_dim] and k_norm [n_kv_heads * head_dim]
                               // norm the whole q and the whole k projection (OLMoE), not each head
    float norm_eps;
    void *k_cache, *v_cache;   // this layer's caches: [max_batch][n_kv_heads][max_seq][head_dim], kv_dtype
    uint32_t rows, n_heads, n_kv_heads, head_dim, max_seq;
    int act_dtype, kv_dtype;
};

// head_dim <= kRopeAppendMaxHeadDim; with cos: rot_dim even, 2 <= rot_dim <= head_dim; no
// qkv_bias with norm_whole.
cudaError_t launch_rope_append(const RopeAppendArgs &a, cudaStream_t stream);
