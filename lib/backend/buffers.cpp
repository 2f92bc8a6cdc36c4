// buffers.cpp - element counts of the shared step buffers, overflow-checked.
#include "backend/buffers.h"

#include "core/error.h"

#include <algorithm>

namespace gpt {

StepBuffers::StepBuffers(const ModelShape &s, const ExecParams &p, uint64_t logits_rows_)
    : rows(std::max(p.max_step_tokens, p.max_batch)), logits_rows(logits_rows_) {
    const uint64_t d = s.d_model;
    x = h = delta = rows * d;
    qkv = rows * s.qkv_dim();
    att = rows * s.q_dim();
    gu = s.gated_ffn ? rows * 2ull * s.d_ff : 0;
    ff = rows * s.d_ff;
    logits = logits_rows * (uint64_t)s.vocab_size;
    // Within the config and params limits (2^10 layers x 2^12 sequences x 2^10 kv heads x 2^22
    // positions x 2^10 dims) this product can wrap: a wrapped size would allocate a small arena
    // that forward writes past.
    bool big = false;
    kv_per_layer = p.max_batch;
    for (uint64_t f : {(uint64_t)s.n_kv_heads, (uint64_t)p.max_seq, (uint64_t)s.head_dim})
        big |= mul_overflows(kv_per_layer, f, &kv_per_layer);
    big |= mul_overflows(kv_per_layer, s.n_layers, &kv);
    if (big || kv > kMaxKvElements)
        fail(GPT_ERR_OUT_OF_MEMORY,
             "a context of %u layers x %u sequences x %u kv heads x %u positions x %u dims needs a KV cache of more "
             "than 2^60 bytes",
             s.n_layers, p.max_batch, s.n_kv_heads, p.max_seq, s.head_dim);
    for (const RopeSpec &r : s.ropes) {
        rope_offset.push_back(rope);
        rope += (uint64_t)p.max_seq * r.half();
    }
    ids = rows;
}

} // namespace gpt
