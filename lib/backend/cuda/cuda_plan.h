// cuda_plan.h - the byte layout of a CUDA context: every buffer an executor uses, carved
// from one device allocation and one pinned host allocation. gpt_ctx_estimate_memory
// reports exactly these totals, and the executor allocates exactly them. The activation and
// KV buffers are backend/buffers.h's; the rest (attention partials, sampling, cuBLAS
// workspace, pinned staging) is the CUDA executor's own.
#pragma once

#include "gpt.h"
#include "backend/backend.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gpt::cuda {

inline constexpr uint32_t kMaxRecent = 4096;           // repetition window (gpt_generate's limit)
// Per-token sampling adjustments a row can carry: one per distinct generated token (fewer than
// max_seq) plus the logit-bias list, never more than the vocabulary.
inline uint32_t adjust_capacity(uint32_t vocab, uint32_t max_seq) {
    return (uint32_t)std::min<uint64_t>(vocab, (uint64_t)max_seq + GPT_MAX_LOGIT_BIAS);
}
inline constexpr uint64_t kCublasWorkspace = 32ull << 20; // cuBLAS on Hopper wants 32 MiB
// Decode attention splits the keys until (rows x kv heads x splits) reaches this many blocks:
// ~4 per SM on an H100/H200, so each block reads about one 64-key tile at long contexts.
inline constexpr uint32_t kAttentionTargetBlocks = 512;
inline constexpr uint32_t kAttentionMaxSplits = 256; // attention.cuh's limit

struct Region {
    uint64_t offset = 0, bytes = 0;
};

struct CudaPlan {
    uint32_t rows = 0;        // activation rows per step
    uint32_t logits_rows = 0; // rows of the f32 logits buffer
    uint32_t max_splits = 1;  // attention key splits for decode (at one row)
    uint32_t n_kv_heads = 1;
    // Device regions.
    Region x, h, qkv, att, gu, ff, delta, logits, k_cache, v_cache, rope_cos, rope_sin, attn_o, attn_ml, tokens,
        positions, seqs, uniform, recent, n_recent, adjust_tokens, adjust_deltas, n_adjust, sampled, sample_ws, cublas_ws,
        dequant;
    // Mixture of experts (empty without experts): router logits [rows][E] f32, the chosen
    // experts [rows][k] (ids i32, weights f32), the grouping of the rows x k pairs by expert
    // (offsets [E + 1], perm and inv [rows x k] i32), the grouped inputs [rows x k][d], their
    // gate|up [rows x k][2 ff_e] and GLU outputs [rows x k][ff_e] (compute dtype), the
    // experts' outputs [rows x k][d] f32; the shared expert's gate logit [rows] f32, gate|up
    // [rows][2 ff_s] and GLU output [rows][ff_s] (compute dtype) and output [rows][d] f32.
    Region moe_logits, moe_ids, moe_weights, moe_offsets, moe_perm, moe_inv, moe_x, moe_gu, moe_ff, moe_down, shared_gate,
        shared_gu, shared_ff, shared_down;
    uint64_t device_bytes = 0;
    // Pinned host regions.
    Region h_tokens, h_positions, h_seqs, h_uniform, h_recent, h_n_recent, h_adjust_tokens, h_adjust_deltas, h_n_adjust,
        h_sampled, h_moe_offsets;
    uint32_t adjust_stride = 0; // adjust_capacity of the model and params
    uint64_t pinned_bytes = 0;
    uint64_t kv_bytes_per_layer = 0; // one of K or V
    // RoPE tables: entries of all specs (rope_cos/rope_sin hold that many f32), and where
    // each spec's table starts (in entries).
    uint64_t rope_entries = 0;
    std::vector<uint64_t> rope_offset;

    CudaPlan(const ModelShape &s, const ExecParams &p);
    // Key splits for a decode step of `rows` rows (rows <= max_batch); the partial-result
    // buffers hold rows x splits for every such step.
    uint32_t decode_splits(uint32_t rows) const;
};

// How a CUDA device holds the weights, shared by the device (cuda_device.cpp) and the paper
// planner (cuda_planner.cpp), so `gpt info --plan` reports what a load would allocate.
// A quantized `want` (the file's q8 or q4) keeps the quantized matrices packed and puts the
// file's other matrices in f16, the compute dtype of quantized models; a float `want`
// converts every matrix to it; vectors (norms, biases) are f32.
DType placed_dtype(const Weight &w, DType want);
// Bytes of w held as `to` (before the 256-byte alignment each weight gets).
uint64_t placed_bytes(const Weight &w, DType to);
inline uint64_t align256(uint64_t n) { return (n + 255) & ~(uint64_t)255; }
// Fills what a CUDA device decides in p (Device::choose) for weights whose matrices are held
// in matrix_dtype; quantized: packed matrices are kept, the widest of them (max_quant_cols)
// and the largest (max_quant_numel) size the dequantization scratch.
void choose_params(ExecParams &p, DType matrix_dtype, bool quantized, uint64_t max_quant_cols, uint64_t max_quant_numel,
                   uint32_t compute, uint32_t kv);
// Device::plan of a CUDA device: the executor's device bytes and pinned host bytes.
MemoryPlan memory_plan(const ModelShape &s, const ExecParams &p);

} // namespace gpt::cuda
