// hf_model.h - maps a Hugging Face checkpoint's tensors onto our names and shapes:
//   gpt2:  [transformer.]wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f,
//          lm_head (tied when absent or equal to wte). Conv1D weights are stored [in, out] and
//          are transposed to [out, in]; attn.bias / attn.masked_bias buffers are skipped.
//   llama, mistral, qwen2: model.embed_tokens, model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
//          post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head (absent when tied).
//          q|k|v rows are fused into blk.N.attn_qkv (and its bias), gate|up into blk.N.ffn_gate_up.
//   mixtral, qwen2_moe, olmoe, qwen3_moe: as llama (qwen3_moe's per-head q/k norms, olmoe's
//          whole-projection ones), with each MoE layer's experts, router and shared expert
//          planned by hf_model_moe.h.
//   gemma2, gemma3_text: as llama, plus pre_feedforward_layernorm (-> ffn_norm),
//          post_feedforward_layernorm (-> ffn_post_norm), self_attn.{q,k}_norm (gemma3); their
//          post_attention_layernorm follows attention (-> attn_post_norm). Every norm is
//          stored as 1 + w in f32. No lm_head (tied).
// Every tensor is checked for presence, dtype and shape; a tensor the mapping does not use
// is an error (it would mean the config and the weights disagree).
#pragma once

#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "convert/tensor_plan.h"

#include <memory>
#include <string>

namespace gpt::convert {

// Plans the tensors of the model in `dir`. The plan keeps `st` alive. Does not look at
// the tokenizer.
TensorPlan plan_hf_model(const std::string &dir, const HfConfig &cfg, std::shared_ptr<SafetensorsSet> st);

} // namespace gpt::convert
