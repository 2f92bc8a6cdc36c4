// buffers.h - the activation and KV-cache buffers every executor holds, as element counts
// computed from the model's shape and the context's params alone. Each backend's plan carves
// these (in its own element types) plus what only it needs, so both plans list the same
// buffers and share the one overflow check of the KV cache, the only product of limits that
// can leave uint64.
#pragma once

#include "backend/backend.h"

#include <cstdint>
#include <vector>

namespace gpt {

struct StepBuffers {
    // Bound on one cache's element count (K or V, all layers): keeps every byte total built
    // from it (two caches, 4 bytes an element, plus far smaller buffers) far from 2^64.
    static constexpr uint64_t kMaxKvElements = 1ull << 58;

    uint64_t rows = 0;        // activation rows per step: max(max_step_tokens, max_batch)
    uint64_t logits_rows = 0; // rows of the f32 logits buffer
    // Elements of each activation buffer (X and LOGITS are f32, the others the compute dtype).
    uint64_t x = 0, h = 0, qkv = 0, att = 0;
    uint64_t gu = 0;          // [rows][2 d_ff] gate|up of a gated FFN before SwiGLU; 0 without
    uint64_t ff = 0;          // [rows][d_ff]
    uint64_t delta = 0;       // [rows][d_model] a residual update before it is added to X
    uint64_t logits = 0;      // [logits_rows][vocab]
    // KV cache, laid out [layer][seq][kv_head][max_seq][head_dim]: elements of K (or V).
    uint64_t kv_per_layer = 0, kv = 0;
    // Entries of the cos (and of the sin) tables of every RopeSpec, back to back: spec i's
    // table [max_seq][rot_dim_i / 2] starts at rope_offset[i]; 0 without RoPE.
    uint64_t rope = 0;
    std::vector<uint64_t> rope_offset;
    uint64_t ids = 0;         // entries of each per-row id array (tokens, positions, sequences)

    // logits_rows: how many rows of logits the executor projects at once (>= max_batch).
    // Throws GPT_ERR_OUT_OF_MEMORY naming the sizes when the KV cache passes kMaxKvElements.
    StepBuffers(const ModelShape &s, const ExecParams &p, uint64_t logits_rows);
};

} // namespace gpt
