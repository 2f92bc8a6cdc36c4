// hf_fixture.h - Hugging Face checkpoints written by the tests: a small safetensors writer
// (single file, or shards with model.safetensors.index.json) and random gpt2 / llama /
// mistral / qwen2 / qwen3 / phi3 / gemma2 / gemma3_text models with their config.json, values
// kept as stored.
#pragma once

#include "format/spec.h"
#include "model/rope_scaling.h"

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace fixture {

// One safetensors entry, bytes as stored.
struct StEntry {
    std::string name;
    std::string dtype; // "F32", "F64", "U8", ...
    std::vector<uint64_t> shape;
    std::vector<uint8_t> bytes;
};

// A safetensors file: the 8-byte header length, the JSON header (with __metadata__, padded
// with spaces to a multiple of 8), the data in entry order.
std::vector<uint8_t> safetensors_bytes(const std::vector<StEntry> &entries);

// Writes config.json and the tensors: model.safetensors (n_shards 1) or n shards (entry i in
// shard i % n) and the index.
void write_hf_dir(const std::string &dir, const std::string &config, const std::vector<StEntry> &entries, int n_shards);

// The name of shard s (0-based) of n: model-0000(s+1)-of-0000n.safetensors.
std::string shard_name(int s, int n);

// The safetensors name of a file dtype: "F32", "F16", "BF16".
const char *st_name(gpt::DType t);

// What make_hf draws. Sizes follow the config.json fields they become.
struct HfSpec {
    std::string type = "llama"; // gpt2 | llama | mistral | qwen2 | qwen3 | phi3 | gemma2 | gemma3_text
    uint32_t d = 48, layers = 2, heads = 4, kv = 2, head_dim = 0 /* 0: d / heads, not in config.json */, ff = 72;
    uint32_t vocab = 67, ctx = 32;
    bool tied = false;
    gpt::DType dtype = gpt::DType::F32; // of every tensor (torch_dtype)
    uint64_t seed = 1;
    // gpt2
    bool prefix = true;     // "transformer." before the body's names
    bool head_copy = false; // tied, but lm_head.weight written (equal to wte)
    bool buffers = true;    // attn.bias (U8 mask) and attn.masked_bias (F32) buffers
    // llama family
    std::string rope = "top"; // where rope_theta lives: "top", "parameters" (transformers 5), "scaling" (rope_scaling default)
    float theta = 10000.0f, eps = 1e-5f;
    int32_t bos = 1;
    std::vector<int32_t> eos = {2};
    uint32_t sliding_window = 0;   // mistral, phi3, qwen2, gemma (0: null for mistral and phi3, 4096 for qwen2)
    uint32_t max_window_layers = 0; // qwen2 (use_sliding_window true when sliding_window is set)
    bool layer_types = false;       // gemma, qwen2: windowed layers as "layer_types" (transformers >= 4.53)
    // gemma: soft-caps (0: null), query_pre_attn_scalar, gemma3's local base, linear factor
    // (1: rope_scaling null) and sliding_window_pattern
    float attn_softcap = 0, logit_softcap = 0, query_pre_attn_scalar = 256, theta_local = 10000, linear_factor = 1;
    uint32_t window_pattern = 6;
    // llama family: RoPE scaling written as the checkpoints spell it (rope_scaling with
    // rope_type / type, llama3's keys, longrope's short_factor / long_factor and Phi-3's
    // top-level original_max_position_embeddings); attention_factor is not written (the
    // converter derives it). phi3: rope_dim != head_dim writes partial_rotary_factor =
    // rope_dim / head_dim.
    gpt::RopeScaling scaling;
    uint32_t rope_dim = 0;
    int shards = 1;
};

// A drawn model: config.json and the tensors under their Hugging Face names.
struct HfModel {
    HfSpec spec;
    std::string config;                                  // config.json
    std::vector<std::string> order;                      // tensors in write order
    std::map<std::string, std::vector<uint64_t>> shapes; // HF names
    std::map<std::string, std::vector<float>> values;    // as stored (rounded)
    std::vector<StEntry> extra;                          // buffers (not weights)
    uint32_t hd() const { return spec.head_dim ? spec.head_dim : spec.d / spec.heads; }
    bool gemma() const { return spec.type == "gemma2" || spec.type == "gemma3_text"; }
    // Whether transformers windows layer i (the rule each model type states in its config).
    bool windowed(uint32_t i) const;

    // Draws a tensor (normal entries, mean and std) in spec.dtype and appends it.
    void add(std::mt19937_64 &rng, const std::string &name, std::vector<uint64_t> shape, float mean, float std);
    // A tensor's values (a cmocka failure if there is none).
    const std::vector<float> &v(const std::string &n) const;
    // Every tensor as written: the weights in order, then the buffers.
    std::vector<StEntry> entries() const;
};

// Draws the model's tensors (seeded by spec.seed) and writes its config.json text.
HfModel make_hf(const HfSpec &s);

} // namespace fixture
