// rope_append.cuh - rotary embedding on q and k, then the new k and v appended to the KV
// cache: one pass over the fused QKV rows of a step.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

struct RopeAppendArgs {
    void *qkv;                 // [rows][(n_heads + 2 n_kv_heads) head_dim], act_dtype; q and k rotated in place
    const int32_t *positions;  // [rows] cache position of each row
    const int32_t *seqs;       // [rows] sequence of each row
    const float *cos, *sin;    // [max_seq][head_dim / 2], or null for no RoPE
    void *k_cache, *v_cache;   // this layer's caches: [max_batch][n_kv_heads][max_seq][head_dim], kv_dtype
    uint32_t rows, n_heads, n_kv_heads, head_dim, max_seq;
    int act_dtype, kv_dtype;
};

cudaError_t launch_rope_append(const RopeAppendArgs &a, cudaStream_t stream);
