// llama2c.h - llama2.c checkpoints (Karpathy's run.c format), float32 throughout.
//   v0 (legacy): 7 x i32 header (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
//       seq_len; a negative vocab_size means an unshared classifier), then token_embedding
//       [vocab, dim], rms_att [L, dim], wq [L, dim, dim], wk [L, kv_dim, dim], wv [L, kv_dim, dim],
//       wo [L, dim, dim], rms_ffn [L, dim], w1 [L, hidden, dim], w2 [L, dim, hidden],
//       w3 [L, hidden, dim], rms_final [dim], freq_cis_real and _imag [seq_len, head_size/2]
//       (skipped), then wcls [vocab, dim] when unshared.
//   v1: magic "ak42", version 1, the same 7 ints, a shared-classifier byte, zeros to 256 bytes,
//       then the norms first: rms_att, rms_ffn, rms_final, token_embedding, wq, wk, wv, wo, w1,
//       w2, w3, [wcls]. (v2, Q8_0 quantized, is rejected.)
// w1 is the gate and w3 the up projection. llama2.c rotates interleaved pairs (2i, 2i+1) with
// RoPE; this engine rotates halves (i, i + hd/2), so the rows of wq (per query head) and wk
// (per key/value head) are permuted to make the two agree exactly.
#pragma once

#include "convert/tensor_plan.h"

#include <cstdint>
#include <string>

namespace gpt::convert {

struct Llama2cHeader {
    int version = 0; // 0 (legacy) or 1
    uint32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0, seq_len = 0;
    bool shared_classifier = true;
    uint64_t data_offset = 0; // where the float32 weights begin
};

// Whether the bytes begin like a llama2.c checkpoint we could read (v0 or v1 header).
bool looks_like_llama2c(const uint8_t *p, uint64_t size);

// Parses and validates the header; throws GPT_ERR_FORMAT (or UNSUPPORTED for v2) naming `source`.
Llama2cHeader parse_llama2c_header(const uint8_t *p, uint64_t size, const std::string &source);

// Maps the checkpoint and plans its tensors (the plan keeps the mapping alive); checks the
// file size against the header's shapes, naming the tensor a truncated file cuts off.
// Does not look at the tokenizer.
TensorPlan plan_llama2c(const std::string &path);

} // namespace gpt::convert
