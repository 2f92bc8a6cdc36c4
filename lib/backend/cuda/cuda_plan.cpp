// cuda_plan.cpp - sizes every buffer from the config and the context params alone.
#include "backend/cuda/cuda_plan.h"

#include "core/error.h"
#include "sample.cuh"

#include <algorithm>

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

CudaPlan::CudaPlan(const ModelConfig &c, const ExecParams &p) {
    rows = std::max(p.max_step_tokens, p.max_batch);
    // Decode needs max_batch rows of logits; all-logits calls are projected in groups of up to
    // 64 MiB of f32 logits (so the head GEMM is not cut into slivers).
    logits_rows = std::max<uint32_t>(p.max_batch, std::min<uint64_t>(rows, (16ull << 20) / c.vocab_size));
    // Key splits for decode attention: enough blocks to fill the GPU at one row, never a
    // split of fewer than ~64 keys at the longest context (PERFORMANCE.md, entry 7).
    n_kv_heads = c.n_kv_heads;
    max_splits = std::clamp<uint32_t>((p.max_seq + 63) / 64, 1, kAttentionMaxSplits);
    uint64_t split_rows = 1; // max over decode steps of rows x splits
    for (uint32_t r = 1; r <= p.max_batch; r++) split_rows = std::max<uint64_t>(split_rows, (uint64_t)r * decode_splits(r));
    const uint64_t a = dtype_bytes(p.compute), kv = dtype_bytes(p.kv), d = c.d_model;
    Carver dev;
    x = dev.take(4 * rows * d);
    h = dev.take(a * rows * d);
    qkv = dev.take(a * rows * c.qkv_dim());
    att = dev.take(a * rows * c.q_dim());
    gu = dev.take(c.arch == GPT_ARCH_LLAMA ? a * rows * 2ull * c.d_ff : 0);
    ff = dev.take(a * rows * c.d_ff);
    delta = dev.take(a * rows * d);
    logits = dev.take(4ull * logits_rows * c.vocab_size);
    // The KV cache is the one product that can leave uint64 within the config and params
    // limits; a wrapped size would allocate a small arena and write past it.
    uint64_t per_layer = kv, all_layers = 0;
    bool big = false;
    for (uint64_t f : {(uint64_t)p.max_batch, (uint64_t)c.n_kv_heads, (uint64_t)p.max_seq, (uint64_t)c.head_dim})
        big |= mul_overflows(per_layer, f, &per_layer);
    big |= mul_overflows(per_layer, c.n_layers, &all_layers) || all_layers > (1ull << 60);
    if (big)
        fail(GPT_ERR_OUT_OF_MEMORY, "a context of %u layers x %u sequences x %u kv heads x %u positions x %u dims needs a "
                                    "KV cache of more than 2^60 bytes", c.n_layers, p.max_batch, c.n_kv_heads, p.max_seq, c.head_dim);
    kv_bytes_per_layer = per_layer;
    k_cache = dev.take(kv_bytes_per_layer * c.n_layers);
    v_cache = dev.take(kv_bytes_per_layer * c.n_layers);
    const uint64_t rope = c.arch == GPT_ARCH_LLAMA ? 4ull * p.max_seq * (c.head_dim / 2) : 0;
    rope_cos = dev.take(rope);
    rope_sin = dev.take(rope);
    attn_o = dev.take(4ull * split_rows * c.n_heads * c.head_dim);
    attn_ml = dev.take(4ull * split_rows * c.n_heads * 2);
    tokens = dev.take(4ull * rows);
    positions = dev.take(4ull * rows);
    seqs = dev.take(4ull * rows);
    uniform = dev.take(4ull * p.max_batch);
    recent = dev.take(4ull * p.max_batch * kMaxRecent);
    n_recent = dev.take(4ull * p.max_batch);
    sampled = dev.take(4ull * p.max_batch);
    sample_ws = dev.take(sample_workspace_bytes(p.max_batch, c.vocab_size));
    cublas_ws = dev.take(kCublasWorkspace);
    device_bytes = dev.total;

    Carver host;
    h_tokens = host.take(4ull * rows);
    h_positions = host.take(4ull * rows);
    h_seqs = host.take(4ull * rows);
    h_uniform = host.take(4ull * p.max_batch);
    h_recent = host.take(4ull * p.max_batch * kMaxRecent);
    h_n_recent = host.take(4ull * p.max_batch);
    h_sampled = host.take(4ull * p.max_batch);
    pinned_bytes = host.total;
}

uint32_t CudaPlan::decode_splits(uint32_t rows) const {
    const uint32_t blocks = std::max(1u, rows * n_kv_heads);
    return std::clamp<uint32_t>((kAttentionTargetBlocks + blocks - 1) / blocks, 1, max_splits);
}

} // namespace gpt::cuda
