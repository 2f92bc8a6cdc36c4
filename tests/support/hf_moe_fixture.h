// hf_moe_fixture.h - random Hugging Face mixture-of-experts checkpoints (mixtral, qwen2_moe,
// olmoe, qwen3_moe) with their config.json, written by the converter tests. Experts are drawn
// one module each under the checkpoints' names (Mixtral: block_sparse_moe.experts.E.w1/w3/w2;
// the others: mlp.experts.E.gate_proj/up_proj/down_proj) and, with `fused`, written the way
// transformers 5 holds them instead (mlp.experts.gate_up_proj [E, 2 ff, d] = each expert's
// gate rows then up rows; mlp.experts.down_proj [E, d, ff]; Mixtral's router renamed
// mlp.gate). The per-expert values stay in the model's value map either way, so that a test
// states its expectations from the modules.
#pragma once

#include "hf_fixture.h"

namespace fixture {

struct HfMoeSpec {
    std::string type = "mixtral"; // mixtral | qwen2_moe | olmoe | qwen3_moe
    uint32_t d = 32, layers = 3, heads = 4, kv = 2, head_dim = 0 /* 0: d / heads, not in config.json */;
    uint32_t vocab = 53, ctx = 32;
    uint32_t experts = 4, top_k = 2, ff_expert = 24;
    uint32_t ff_dense = 40;  // qwen: intermediate_size, the dense layers' width
    uint32_t ff_shared = 20; // qwen2_moe: shared_expert_intermediate_size
    bool norm_topk = false;  // qwen, olmoe: norm_topk_prob (mixtral always renormalises)
    uint32_t sparse_step = 1;                // qwen: decoder_sparse_step
    std::vector<uint32_t> mlp_only_layers;   // qwen: dense layers
    uint32_t sliding_window = 0;             // mixtral (0: null)
    bool fused = false;
    bool tied = false;
    gpt::DType dtype = gpt::DType::F32;
    uint64_t seed = 1;
    int shards = 1;
};

struct HfMoeModel {
    HfMoeSpec spec;
    HfModel hf; // config.json and the tensors as written (hf.values also holds the per-expert ones)
    uint32_t hd() const { return spec.head_dim ? spec.head_dim : spec.d / spec.heads; }
    bool qwen() const { return spec.type == "qwen2_moe" || spec.type == "qwen3_moe"; }
    // Whether layer i is MoE, from the transformers rule (qwen: not in mlp_only_layers and
    // (i + 1) % decoder_sparse_step == 0; the others: every layer).
    bool moe_layer(uint32_t i) const;
    // The module names of layer i's router and of expert e's gate, up and down projections.
    std::string router(uint32_t i) const;
    std::string expert(uint32_t i, uint32_t e, const char *which /* "gate" | "up" | "down" */) const;
    // fused: recomputes the stacked tensors from the per-expert values (after a test edits them).
    void restack();
};

HfMoeModel make_hf_moe(const HfMoeSpec &s);

} // namespace fixture
