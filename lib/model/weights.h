// weights.h - named weight pointers of a model, and the table that binds them to tensors.
// A Weight points into the backend's memory space (the mapped file on the CPU, device
// memory on a GPU). Shapes follow PyTorch's nn.Linear: a matrix is [rows = out][cols = in].
#pragma once

#include "model/config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

// Same values as gpt_dtype.
enum class DType : uint8_t { F32 = 1, F16 = 2, BF16 = 3 };
size_t dtype_bytes(DType t);
const char *dtype_str(DType t);

struct Weight {
    const void *data = nullptr;
    DType dtype = DType::F32;
    uint64_t rows = 0; // vectors: rows = length, cols = 1
    uint64_t cols = 0;
    explicit operator bool() const { return data != nullptr; }
    uint64_t numel() const { return rows * cols; }
};

struct LayerWeights {
    Weight attn_norm_w;  // [d_model]
    Weight attn_norm_b;  // [d_model]                     gpt2
    Weight attn_qkv_w;   // [q_dim + 2 kv_dim, d_model]   rows: q heads, then k heads, then v heads
    Weight attn_qkv_b;   // [q_dim + 2 kv_dim]            gpt2, qwen2-style llama
    Weight attn_out_w;   // [d_model, q_dim]
    Weight attn_out_b;   // [d_model]                     gpt2
    Weight ffn_norm_w;   // [d_model]
    Weight ffn_norm_b;   // [d_model]                     gpt2
    Weight ffn_up_w;     // gpt2: [d_ff, d_model]; llama: [2 d_ff, d_model], gate rows then up rows
    Weight ffn_up_b;     // [d_ff]                        gpt2
    Weight ffn_down_w;   // [d_model, d_ff]
    Weight ffn_down_b;   // [d_model]                     gpt2
};

struct ModelWeights {
    Weight tok_emb;      // [vocab, d_model]
    Weight pos_emb;      // [context_length, d_model]     gpt2
    Weight out_norm_w;   // [d_model]
    Weight out_norm_b;   // [d_model]                     gpt2
    Weight lm_head;      // [vocab, d_model]; == tok_emb when the head is tied
    std::vector<LayerWeights> layers;
};

// One tensor the architecture expects: its file name, shape and where it goes.
struct TensorSlot {
    std::string name;
    std::vector<uint64_t> shape;
    Weight *dst;
};

// The tensors of this config, in file order; resizes w.layers. A tied head has no
// "lm_head.weight" slot (bind_tied_head fills it afterwards).
std::vector<TensorSlot> tensor_slots(const ModelConfig &c, ModelWeights &w);
void bind_tied_head(const ModelConfig &c, ModelWeights &w);
// Parameter count (tied head counted once).
uint64_t parameter_count(const ModelConfig &c);

} // namespace gpt
