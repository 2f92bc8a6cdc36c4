// hf_model_moe.h - the mixture-of-experts FFN of one layer (mixtral, qwen2_moe, olmoe,
// qwen3_moe) planned from a Hugging Face checkpoint. Its experts come either one module each,
//   Mixtral:  model.layers.N.block_sparse_moe.{gate, experts.E.{w1 gate, w3 up, w2 down}}
//   others:   model.layers.N.mlp.{gate, experts.E.{gate_proj, up_proj, down_proj}}
// or fused as transformers 5 holds them in memory (its WeightConverter merges the modules):
//   model.layers.N.mlp.{gate, experts.gate_up_proj [E, 2 ff, d] (gate rows, then up rows, per
//   expert), experts.down_proj [E, d, ff]}
// and are stacked in expert order into blk.N.ffn_experts_gate_up [E * 2 ff, d] and
// blk.N.ffn_experts_down [E * d, ff] straight from the mapped files (no copy is held); the
// router gate.weight [E, d] becomes blk.N.ffn_router. Qwen2-MoE's shared expert
// (mlp.shared_expert.{gate,up,down}_proj, mlp.shared_expert_gate [1, d]) becomes
// blk.N.ffn_shared_{gate_up,down,gate}. A missing expert, an extra one or an odd shape is
// refused naming the tensor (the extra one by the plan's unused-tensor check).
#pragma once

#include "convert/hf_source.h"
#include "convert/tensor_plan.h"

namespace gpt::convert {

void plan_moe_ffn(TensorPlan &p, Source &s, uint32_t layer);

} // namespace gpt::convert
