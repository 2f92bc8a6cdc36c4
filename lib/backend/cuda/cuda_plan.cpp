// cuda_plan.cpp - sizes every buffer from the model shape and the context params alone.
#include "backend/cuda/cuda_plan.h"

#include "backend/buffers.h"
#include "core/quant.h"
#include "sample.cuh"

#include <algorithm>
#include <cstdlib>

namespace gpt::cuda {

namespace {
struct Carver {
    uint64_t total = 0;
    Region take(uint64_t bytes) {
        Region r{total, bytes};
        total += (bytes + 255) & ~(uint64_t)255;
        return r;
    }
};
} // namespace

CudaPlan::CudaPlan(const ModelShape &s, const ExecParams &p) {
    rows = std::max(p.max_step_tokens, p.max_batch);
    // Decode needs max_batch rows of logits; all-logits calls are projected in groups of up to
    // 64 MiB of f32 logits (so the head GEMM is not cut into slivers).
    logits_rows = std::max<uint32_t>(p.max_batch, std::min<uint64_t>(rows, (16ull << 20) / s.vocab_size));
    const StepBuffers b(s, p, logits_rows);
    rope_entries = b.rope;
    rope_offset = b.rope_offset;
    // Key splits for decode attention: enough blocks to fill the GPU at one row, never a
    // split of fewer than ~64 keys at the longest context (PERFORMANCE.md, entry 7).
    n_kv_heads = s.n_kv_heads;
    max_splits = std::clamp<uint32_t>((p.max_seq + 63) / 64, 1, kAttentionMaxSplits);
    uint64_t split_rows = 1; // max over decode steps of rows x splits
    for (uint32_t r = 1; r <= p.max_batch; r++) split_rows = std::max<uint64_t>(split_rows, (uint64_t)r * decode_splits(r));
    const uint64_t a = dtype_bytes(p.compute), kv = dtype_bytes(p.kv);
    Carver dev;
    x = dev.take(4 * b.x);
    h = dev.take(a * b.h);
    qkv = dev.take(a * b.qkv);
    att = dev.take(a * b.att);
    gu = dev.take(a * b.gu);
    ff = dev.take(a * b.ff);
    delta = dev.take(a * b.delta);
    logits = dev.take(4 * b.logits);
    kv_bytes_per_layer = kv * b.kv_per_layer;
    k_cache = dev.take(kv * b.kv);
    v_cache = dev.take(kv * b.kv);
    rope_cos = dev.take(4 * b.rope);
    rope_sin = dev.take(4 * b.rope);
    attn_o = dev.take(4ull * split_rows * s.n_heads * s.head_dim);
    attn_ml = dev.take(4ull * split_rows * s.n_heads * 2);
    tokens = dev.take(4 * b.ids);
    // Positions and sequence ids carry max_batch more entries: each sequence's last row
    // (begin_step), which a step on its last rows alone reads (keep_last_rows).
    positions = dev.take(4 * (b.ids + p.max_batch));
    seqs = dev.take(4 * (b.ids + p.max_batch));
    uniform = dev.take(4ull * p.max_batch);
    recent = dev.take(4ull * p.max_batch * kMaxRecent);
    n_recent = dev.take(4ull * p.max_batch);
    adjust_stride = adjust_capacity(s.vocab_size, p.max_seq);
    adjust_tokens = dev.take(4ull * p.max_batch * adjust_stride);
    adjust_deltas = dev.take(4ull * p.max_batch * adjust_stride);
    n_adjust = dev.take(4ull * p.max_batch);
    sampled = dev.take(4ull * p.max_batch);
    sample_ws = dev.take(sample_workspace_bytes(p.max_batch, s.vocab_size));
    cublas_ws = dev.take(kCublasWorkspace);
    dequant = dev.take(p.dequant_scratch);
    if (s.n_experts) {
        const uint64_t E = s.n_experts, pairs = (uint64_t)rows * s.n_experts_used, d = s.d_model;
        const uint64_t fe = s.d_ff_expert, fs = s.d_ff_shared;
        moe_logits = dev.take(4ull * rows * E);
        moe_ids = dev.take(4 * pairs);
        moe_weights = dev.take(4 * pairs);
        moe_offsets = dev.take(4 * (E + 1));
        moe_perm = dev.take(4 * pairs);
        moe_inv = dev.take(4 * pairs);
        moe_x = dev.take(a * pairs * d);
        moe_gu = dev.take(a * pairs * 2 * fe);
        moe_ff = dev.take(a * pairs * fe);
        moe_down = dev.take(4 * pairs * d);
        if (fs) {
            shared_gate = dev.take(4ull * rows);
            shared_gu = dev.take(a * rows * 2 * fs);
            shared_ff = dev.take(a * rows * fs);
            shared_down = dev.take(4ull * rows * d);
        }
    }
    device_bytes = dev.total;

    Carver host;
    h_tokens = host.take(4 * b.ids);
    h_positions = host.take(4 * (b.ids + p.max_batch));
    h_seqs = host.take(4 * (b.ids + p.max_batch));
    h_uniform = host.take(4ull * p.max_batch);
    h_recent = host.take(4ull * p.max_batch * kMaxRecent);
    h_n_recent = host.take(4ull * p.max_batch);
    h_adjust_tokens = host.take(4ull * p.max_batch * adjust_stride);
    h_adjust_deltas = host.take(4ull * p.max_batch * adjust_stride);
    h_n_adjust = host.take(4ull * p.max_batch);
    h_sampled = host.take(4ull * p.max_batch);
    if (s.n_experts) h_moe_offsets = host.take(4ull * (s.n_experts + 1));
    pinned_bytes = host.total;
}

uint32_t CudaPlan::decode_splits(uint32_t rows) const {
    const uint32_t blocks = std::max(1u, rows * n_kv_heads);
    return std::clamp<uint32_t>((kAttentionTargetBlocks + blocks - 1) / blocks, 1, max_splits);
}

DType placed_dtype(const Weight &w, DType want) {
    if (w.is_vector()) return DType::F32;
    if (is_quantized(want)) return is_quantized(w.dtype) ? w.dtype : DType::F16;
    return want;
}

uint64_t placed_bytes(const Weight &w, DType to) { return is_quantized(to) ? weight_bytes(w) : w.numel() * dtype_bytes(to); }

void choose_params(ExecParams &p, DType matrix_dtype, bool quantized, uint64_t max_quant_cols, uint64_t max_quant_numel,
                   uint32_t compute, uint32_t kv) {
    // Computes in the weights' dtype unless asked otherwise; caches K/V in f16 (f32 for f32).
    p.compute = compute ? static_cast<DType>(compute) : matrix_dtype;
    p.kv = kv ? static_cast<DType>(kv) : (p.compute == DType::F32 ? DType::F32 : DType::F16);
    p.n_threads = 1;
    // Quantized weights in slices of rows through an f16 buffer of at most 32 Mi elements
    // (64 MiB), never less than one row of the widest. GPT_CUDA_DEQUANT_MAX_ELEMENTS (a test's
    // switch) makes it smaller, so that small models run many slices.
    uint64_t max_slice_elements = 32ull << 20;
    if (const char *v = std::getenv("GPT_CUDA_DEQUANT_MAX_ELEMENTS")) max_slice_elements = std::max<uint64_t>(1, std::strtoull(v, nullptr, 10));
    p.dequant_scratch = quantized ? 2 * std::max(max_quant_cols, std::min(max_quant_numel, max_slice_elements)) : 0;
}

MemoryPlan memory_plan(const ModelShape &s, const ExecParams &p) {
    const CudaPlan plan(s, p);
    MemoryPlan m;
    m.device_bytes = plan.device_bytes;
    m.host_bytes = plan.pinned_bytes;
    return m;
}

} // namespace gpt::cuda
