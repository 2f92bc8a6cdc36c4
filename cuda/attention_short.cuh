// attention_short.cuh - a decode step's attention over a short context: one block per (row,
// kv head, share of its query heads) takes every key at once, with no split and no combine step. Every key but the
// newest is copied into shared memory before the wait for the kernel before (earlier steps
// cached them); after it, one round trip reads the row's q heads and its new k and v. It can
// also do rope_append's work for layers without q/k norms (rotate q and the new k, append k
// and v to the cache), so such a layer's attention is one kernel after the QKV projection.
// The caller picks it per step (the key count must fit; see attention_short_max_keys).
#pragma once
#include "attention.cuh"

#include <cuda_runtime.h>
#include <cstdint>

// What rope_append would have done, done here instead (append = 0: rope_append ran).
struct AttentionShortFold {
    const float *cos, *sin; // [max_seq][rot_dim / 2], or null for no RoPE (rotate-half pairs, as rope_append)
    uint32_t rot_dim;       // even, <= head_dim
    int append;             // 1: rotate q and the new k (when cos), cache the new k and v
};

// The most keys a row may attend to for this kernel on the current device (a multiple of
// 16, at most 256), or 0 where it does not take the shape: head_dim <= 256 and a row of whole
// 16-byte vectors (a multiple of 8 for a 16-bit cache, of 4 for f32), n_heads / n_kv_heads
// <= 64, and 16 keys' rows within the device's shared memory.
uint32_t attention_short_max_keys(uint32_t n_heads, uint32_t n_kv_heads, uint32_t head_dim, int kv_dtype);

// a: one row per sequence (rows_per_seq 1; n_splits, partial_o and partial_ml unused); every
// row's key count (positions[r] + 1, or its window) at most max_keys, a value
// attention_short_max_keys gave for this shape.
cudaError_t launch_attention_short(const AttentionArgs &a, const AttentionShortFold &fold, uint32_t max_keys,
                                   cudaStream_t stream);
