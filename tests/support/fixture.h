// fixture.h - random models written by the tests themselves: a config, its tensors as f32
// values (already rounded to the file dtype, so references see exactly what the engine
// reads) and the weight file bytes.
#pragma once

#include "format/spec.h"
#include "model/config.h"
#include "tokenizer/tokenizer_data.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fixture {

struct Spec {
    gpt_arch arch = GPT_ARCH_LLAMA;
    uint32_t n_layers = 2, d_model = 48, n_heads = 4, n_kv_heads = 2, head_dim = 12, d_ff = 72;
    uint32_t vocab_size = 67, context_length = 64;
    bool tied_head = false, qkv_bias = false;
    gpt::FfnActivation ffn_activation = gpt::FfnActivation::GELU_TANH; // gpt2
    bool head_bias = false;                                             // gpt2: lm_head.bias
    float rope_theta = 10000.0f, norm_eps = 1e-5f;
    gpt::DType dtype = gpt::DType::F32;
    uint64_t seed = 1;
    float scale = 0.3f; // std of matrix entries (larger than trained models, to make logits spread)
    int32_t bos_id = -1, eos_id = -1;
    std::vector<int32_t> eos_ids; // tokenizer.eos_ids beyond eos_id (written when it says more)
    // Rotary architectures: rotated dims per head (0: head_dim), scaling (gemma3: its global
    // layers, linear only).
    uint32_t rope_dim = 0;
    gpt::RopeScaling rope_scaling;
    // Sliding window on the flagged layers (every layer when window_layers is empty); Gemma's
    // fields (model/config.h).
    uint32_t sliding_window = 0;
    std::vector<uint8_t> window_layers;
    float attn_softcap = 0, logit_softcap = 0, query_pre_attn_scalar = 0;
    float rope_theta_local = 10000.0f;
    std::string chat_template;    // tokenizer.chat_template when not empty
    // Mixture of experts (the MoE architectures): model/config.h's fields; mixtral always
    // renormalises.
    uint32_t n_experts = 4, n_experts_used = 2, d_ff_expert = 40, d_ff_shared = 0;
    bool norm_topk_prob = false;
    std::vector<uint8_t> moe_layers;
};

struct Model {
    gpt::ModelConfig config;
    std::map<std::string, std::vector<float>> tensors; // name -> values as stored (after rounding)
    std::vector<uint8_t> file;                         // the weight file
    gpt::DType dtype = gpt::DType::F32;                // the file's (matrices and vectors alike)
};

// Builds the config, draws tensors (normal entries; norm weights near 1), writes the file.
Model make(const Spec &s, const gpt::TokenizerData *tok = nullptr);
gpt::ModelConfig config_of(const Spec &s);

// The start of a SentencePiece-style tokenizer: kind SPM with a space prefix, ids 0 <unk>
// (UNKNOWN), 1 <s> and 2 </s> (CONTROL, bos and eos), then the 256 byte tokens <0x00>..<0xFF>
// (BYTE, id 3 + byte). Callers append their pieces with add_token and set the other flags.
gpt::TokenizerData spm_base();
void add_token(gpt::TokenizerData &d, const std::string &text, int32_t type, float score);

// Writes bytes to a fresh temporary file; returns its path (caller removes it).
std::string write_temp(const std::vector<uint8_t> &bytes, const char *suffix = ".gpt");

} // namespace fixture
