// config.h - a model's hyperparameters (the blueprint), read from weight file metadata
// and checked for consistency before anything is sized from them.
#pragma once

#include "gpt.h"
#include "format/metadata.h"
#include "model/rope_scaling.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

// The feed-forward activation of gpt2-shaped models (model.ffn_activation): GPT-2 and minGPT
// use the tanh approximation, nanoGPT's nn.GELU() the exact erf form, the lecture's gpt.py ReLU.
enum class FfnActivation : uint8_t { GELU_TANH, GELU_ERF, RELU };
const char *ffn_activation_name(FfnActivation a); // "gelu_tanh" | "gelu_erf" | "relu"

struct ModelConfig {
    gpt_arch arch = GPT_ARCH_GPT2;
    std::string name;
    uint32_t n_layers = 0;
    uint32_t d_model = 0;
    uint32_t n_heads = 0;
    uint32_t n_kv_heads = 0;
    uint32_t head_dim = 0;
    uint32_t d_ff = 0;
    uint32_t vocab_size = 0;
    uint32_t context_length = 0;
    float norm_eps = 1e-5f;
    float rope_theta = 10000.0f; // rotary architectures (all but gpt2); gemma3: its global layers
    uint32_t rope_dim = 0;        // dims of each head that rotate (even, <= head_dim); 0: head_dim
    RopeScaling rope_scaling;     // none unless the file says; gemma3: its global layers only (linear)
    bool tied_head = false;
    bool qkv_bias = false;        // gpt2: always true
    // Sliding-window attention: on a windowed layer the query at p sees only the keys
    // (p - sliding_window, p]. 0: none. The windowed layers are those window_layers flags, or
    // every layer when it is empty (Mistral, Phi-3).
    uint32_t sliding_window = 0;
    std::vector<uint8_t> window_layers;
    // Gemma: 0 means off for each of these.
    float attn_softcap = 0;          // scores = c * tanh(scores / c)
    float logit_softcap = 0;         // logits = c * tanh(logits / c)
    float query_pre_attn_scalar = 0; // scores scaled by its -1/2 power instead of head_dim's
    float rope_theta_local = 0;      // gemma3: RoPE base of the windowed (local) layers, unscaled
    bool embed_scale = false;        // embeddings times sqrt(d_model)
    FfnActivation ffn_activation = FfnActivation::GELU_TANH; // gpt2 only
    bool head_bias = false;       // gpt2 only: lm_head.bias [vocab] added to the logits
    // Mixture of experts (mixtral, qwen2_moe, olmoe, qwen3_moe; 0 / empty elsewhere): experts
    // per MoE layer, how many each token uses (top-k), each expert's hidden width, the shared
    // expert's (qwen2_moe; 0: none), whether the k chosen probabilities are renormalised, and
    // which layers are MoE (empty: every layer; a 0 flag: a dense SwiGLU FFN of width d_ff).
    uint32_t n_experts = 0;
    uint32_t n_experts_used = 0;
    uint32_t d_ff_expert = 0;
    uint32_t d_ff_shared = 0;
    bool norm_topk_prob = false;
    std::vector<uint8_t> moe_layers;
    static constexpr uint32_t kMaxExperts = 256; // Qwen3-MoE-235B and DeepSeek-V3 have 128 / 256
    int32_t bos_id = -1;
    int32_t eos_id = -1;
    // Every id that ends generation (tokenizer.eos_ids, else eos_id alone), eos_id first when
    // it is set; distinct, inside the vocabulary, at most kMaxEosIds.
    std::vector<int32_t> eos_ids;
    static constexpr uint32_t kMaxEosIds = 1024;

    uint32_t q_dim() const { return n_heads * head_dim; }
    uint32_t kv_dim() const { return n_kv_heads * head_dim; }
    uint32_t qkv_dim() const { return q_dim() + 2 * kv_dim(); }
    bool rotary() const { return arch != GPT_ARCH_GPT2; }
    uint32_t rot_dim() const { return rope_dim ? rope_dim : head_dim; }
    bool is_gemma() const { return arch == GPT_ARCH_GEMMA2 || arch == GPT_ARCH_GEMMA3; }
    bool is_moe() const {
        return arch == GPT_ARCH_MIXTRAL || arch == GPT_ARCH_QWEN2_MOE || arch == GPT_ARCH_OLMOE || arch == GPT_ARCH_QWEN3_MOE;
    }
    // Whether layer i's FFN is a mixture of experts (else a dense SwiGLU of width d_ff).
    bool moe_layer(uint32_t layer) const {
        return is_moe() && (moe_layers.empty() || (layer < moe_layers.size() && moe_layers[layer]));
    }
    // The window layer i attends over; 0: every earlier key.
    uint32_t window_of(uint32_t layer) const {
        if (!sliding_window) return 0;
        return window_layers.empty() || (layer < window_layers.size() && window_layers[layer]) ? sliding_window : 0;
    }

    // Throws GPT_ERR_FORMAT (or UNSUPPORTED) naming the source and the bad field. Reads
    // tokenizer.bos_id, eos_id and eos_ids too: they steer generation.
    static ModelConfig from_metadata(const format::Metadata &m, const std::string &source);
    void validate(const std::string &source) const;
    void to_metadata(format::Metadata &m) const;

private:
    void validate_moe(const std::string &source) const;
};

} // namespace gpt
