// attention.cuh - causal attention of a step's rows over the KV cache, for prefill and
// decode, optionally over a sliding window of keys and with soft-capped scores. Each block
// takes one row, one kv head and one slice of the keys, and serves every query head that
// shares the kv head (GQA), so K and V are read once per query group. Long
// contexts are split over several blocks (split-K) whose partial results a combine step
// merges; the number of splits is fixed by the caller while the key count comes from device
// memory, so a captured CUDA graph stays valid as the sequence grows.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

struct AttentionArgs {
    const void *qkv;          // [rows][(n_heads + 2 n_kv_heads) head_dim], act_dtype (q at the start of each row)
    const int32_t *positions; // [rows]: row r attends to keys [0, positions[r]] (or its window)
    const int32_t *seqs;      // [rows]
    const void *k_cache, *v_cache; // this layer: [max_batch][n_kv_heads][max_seq][head_dim], kv_dtype
    void *out;                // [rows][n_heads head_dim], act_dtype
    float *partial_o;         // [rows][n_heads][n_splits][head_dim] (n_splits > 1)
    float *partial_ml;        // [rows][n_heads][n_splits][2] (max, sum)
    uint32_t rows;            // rows_per_seq rows for each sequence, consecutive positions
    uint32_t rows_per_seq;
    uint32_t n_heads, n_kv_heads, head_dim, max_seq, n_splits;
    float scale;              // scores = q . k * scale (1 / sqrt(head_dim) by default)
    uint32_t window;          // 0: every earlier key; else the row at p sees keys (p - window, p]
    float softcap;            // > 0: scores = softcap * tanh(scores / softcap) before the softmax
    int act_dtype, kv_dtype;
    int allow_tf32;           // nonzero: f32 q, keys and values may be rounded to TF32 (or to the
                              // 16-bit cache type) on tensor cores, as cuBLAS's TF32 GEMMs are
};

// head_dim <= 256, n_heads / n_kv_heads <= 64 and their product <= 16384, n_splits <= 256;
// rows a multiple of rows_per_seq.
cudaError_t launch_attention(const AttentionArgs &a, cudaStream_t stream);

// The tensor-core variant for prefill (attention_tc.cu): an fp16/bf16 cache with activations
// of any type, or f32 on both sides, computed in the cache's type (f32 as TF32); f32 on
// either side only with allow_tf32. head_dim 64, 96 or 128 (Gemma's 256 and odd ones run on
// the CUDA-core kernel), one split, 16 rows a sequence or more, compute capability 8.0+:
// attention_tc_supported. It has two modes: blocks of 64 query rows, each warp 16 rows over
// every key; or (split_keys, an f16 cache only) blocks of 16 rows whose 4 warps take a
// quarter of each key tile, merged at the end - 4x the blocks and a quarter of the keys a
// warp, for grids that leave SMs idle while the longest block runs. attention_tc_mode picks,
// for a GPU of `sms` SMs (0: unknown), from the 64-row grid (tiles x heads x sequences,
// PERFORMANCE 66): 0 (64-row blocks) when it fills a third of the SMs for a 16-bit cache or
// every SM for TF32; else 1 (split keys) for an f16 cache; else -1 (the CUDA-core kernel).
// launch_attention follows it (GPT_ATTN_TC=0|rows|keys forces, for A/B runs); tests call
// each kernel directly.
bool attention_tc_supported(const AttentionArgs &a);
int attention_tc_mode(const AttentionArgs &a, uint32_t sms);
cudaError_t launch_attention_tc(const AttentionArgs &a, bool split_keys, cudaStream_t stream);

// Rows of one sequence a block of the CUDA-core kernel serves, on a GPU of `sms` SMs: query
// slots (rows x the kv head's query group, `group`) 16 where the grid fills the GPU, halved
// down to 4 while the grid (seqs x row groups x n_kv_heads blocks) would hold fewer than 1.5
// blocks an SM - a prompt of few rows (PERFORMANCE 65: a 256-row re-encode of a small model,
// 128 blocks at 16 slots, ran 3-9% faster at 8 or 4). Never more than rows_per_seq; a decode
// step (one row a sequence) gets 1. launch_attention_cuda_cores applies it.
uint32_t attention_rows_per_block(uint32_t group, uint32_t rows_per_seq, uint32_t seqs, uint32_t n_kv_heads, uint32_t sms);

// The CUDA-core kernel alone (any supported shape).
cudaError_t launch_attention_cuda_cores(const AttentionArgs &a, cudaStream_t stream);
