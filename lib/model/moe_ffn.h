// moe_ffn.h - the feed-forward half of a mixture-of-experts layer, shared by the four MoE
// architectures (mixtral, qwen2_moe, olmoe, qwen3_moe): its tensors and its ops. A layer the
// config marks dense (model.moe_layers 0) holds a SwiGLU FFN with the llama names instead.
#pragma once

#include "backend/backend.h"
#include "core/tensor.h"
#include "model/arch.h"
#include "model/config.h"

#include <string>
#include <vector>

namespace gpt {

struct MoeFfnWeights {
    // MoE layer.
    Weight router;         // [n_experts, d_model]
    Weight experts_gate_up; // [n_experts * 2 d_ff_expert, d_model]: per expert its gate rows, then its up rows
    Weight experts_down;   // [n_experts * d_model, d_ff_expert]
    Weight shared_gate_up; // [2 d_ff_shared, d_model]; only with d_ff_shared (qwen2_moe)
    Weight shared_down;    // [d_model, d_ff_shared]
    Weight shared_gate;    // [1, d_model]: the shared expert's sigmoid gate
    // Dense layer.
    Weight gate_up; // [2 d_ff, d_model]
    Weight down;    // [d_model, d_ff]
};

// Appends layer `layer`'s FFN tensors (prefix "blk.i.") to t, bound to w.
void add_moe_ffn_tensors(const ModelConfig &c, uint32_t layer, const std::string &prefix, MoeFfnWeights &w,
                         std::vector<TensorSlot> &t);
// The FFN of layer `layer`: the RMSNorm of X by ffn_norm into H, then the FFN over H, added to X.
void run_moe_ffn(Executor &ex, const ModelConfig &c, uint32_t layer, const Weight &ffn_norm, const MoeFfnWeights &w);
// ModelShape of a MoE config: its dimensions (expert ones included) and a gated FFN.
ModelShape moe_shape(const ModelConfig &c);

} // namespace gpt
