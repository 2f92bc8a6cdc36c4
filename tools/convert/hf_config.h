// hf_config.h - a Hugging Face config.json (gpt2, llama, mistral, qwen2, qwen3, phi3, gemma2,
// gemma3_text; the mixtures of experts mixtral, qwen2_moe, olmoe, qwen3_moe in
// hf_config_moe.cpp) read into our ModelConfig, with everything the engine cannot run rejected by
// name (another activation, a RoPE scaling other than linear / llama3 / longrope, ...).
// Sliding windows are kept as transformers applies them (Mistral, Phi-3: every layer; Qwen2:
// use_sliding_window, layers >= max_window_layers; Gemma: layer_types or the model's
// pattern). Errors throw gpt::Error naming config.json and the key.
#pragma once

#include "convert/hf_quant_config.h"
#include "model/config.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpt::convert {

struct HfConfig {
    std::string model_type;          // "gpt2" | "llama" | "mistral" | "qwen2" | "qwen3" | "phi3" | "gemma2" | "gemma3_text"
                                     // | "mixtral" | "qwen2_moe" | "olmoe" | "qwen3_moe"
    ModelConfig config;              // tied_head is what the config asks for (tie_word_embeddings)
    std::vector<int32_t> eos_ids;    // every end-of-sequence id; config.eos_id is the first
    bool o_proj_bias = false;        // llama attention_bias: o_proj has a bias too
    std::string torch_dtype;         // "float32", "bfloat16", ... or empty
    QuantConfig quant;               // quantization_config: GPTQ / AWQ linears (method NONE: none)
    std::vector<std::string> warnings;
};

// Parses config.json text; `source` names it in messages.
HfConfig parse_hf_config(const std::string &json_text, const std::string &source);

// Reads DIR/config.json, and DIR/generation_config.json when present (more eos ids).
HfConfig load_hf_config(const std::string &dir);

} // namespace gpt::convert
