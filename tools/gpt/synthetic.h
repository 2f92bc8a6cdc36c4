// synthetic.h - named model shapes with random weights, built in memory as a weight file, so
// `gpt bench --synthetic NAME` needs no checkpoint. Values are random normal (scaled by
// 1/sqrt(fan_in)); only the shapes matter for speed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cli {

struct SyntheticShape {
    const char *name;
    const char *arch; // an architecture name (model/arch.cpp): "gpt2", "llama", "mixtral", "olmoe", ...
    uint32_t n_layers, d_model, n_heads, n_kv_heads, d_ff, vocab, context;
    bool tied, qkv_bias;
    float rope_theta;
    // Mixture of experts (0 for a dense shape): experts per layer, top-k, each expert's width.
    // Every layer is MoE; d_ff (the unused dense width) equals the expert width.
    uint32_t n_experts = 0, n_experts_used = 0, d_ff_expert = 0;
};

const std::vector<SyntheticShape> &synthetic_shapes();
const SyntheticShape *find_synthetic(const std::string &name);
// A weight file image in file dtype (1 f32, 2 f16, 3 bf16); tensor checksums left 0 (load
// it with GPT_MODEL_SKIP_CHECKSUMS). Generation runs on all cores.
std::vector<uint8_t> build_synthetic(const SyntheticShape &s, uint32_t dtype, uint64_t seed);

} // namespace cli
