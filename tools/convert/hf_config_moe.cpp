// hf_config_moe.cpp - config.json of the mixture-of-experts families (mixtral, qwen2_moe,
// olmoe, qwen3_moe): the attention part read as the dense family each one extends (Mixtral:
// Mistral's sliding window on every layer), then the experts. Missing expert keys take the transformers config class's defaults, as
// transformers itself would; anything the engine cannot run is refused by key.
#include "convert/hf_config_fields.h"

#include <set>

namespace gpt::convert {

namespace {

// The dense family whose attention each MoE family keeps.
const char *base_type(const std::string &type) {
    if (type == "mixtral") return "mistral";   // MixtralAttention is MistralAttention
    if (type == "qwen2_moe") return "qwen2";   // q/k/v biases (qkv_bias below)
    if (type == "qwen3_moe") return "qwen3";   // per-head q/k RMSNorm
    return "llama";                            // olmoe: llama attention plus whole-projection q/k norms
}

// Which layers are MoE under Qwen2-MoE / Qwen3-MoE's rule: layer i is sparse unless it is in
// mlp_only_layers, and only when (i + 1) % decoder_sparse_step == 0. Empty: every layer.
std::vector<uint8_t> qwen_moe_layers(const Fields &f, uint32_t n_layers, const std::string &src) {
    // ModelConfig::validate's limit, checked before a flag per layer is allocated.
    if (n_layers > 1024) fail(GPT_ERR_FORMAT, "%s: \"num_hidden_layers\" %u is more than 1024", src.c_str(), n_layers);
    const uint32_t step = f.u32_or("decoder_sparse_step", 1);
    std::set<uint32_t> dense;
    if (f.has("mlp_only_layers")) {
        const json &l = f.at("mlp_only_layers");
        if (!l.is_array()) fail(GPT_ERR_FORMAT, "%s: \"mlp_only_layers\" must be a list of layer indices, not %s", src.c_str(), json_excerpt(l).c_str());
        for (const json &x : l) {
            if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= (int64_t)n_layers)
                fail(GPT_ERR_FORMAT, "%s: \"mlp_only_layers\" holds %s, not a layer index below num_hidden_layers %u", src.c_str(),
                     json_excerpt(x).c_str(), n_layers);
            dense.insert((uint32_t)x.get<int64_t>());
        }
    }
    std::vector<uint8_t> flags(n_layers);
    bool all = true;
    for (uint32_t i = 0; i < n_layers; i++) {
        flags[i] = !dense.count(i) && (i + 1) % step == 0;
        all = all && flags[i];
    }
    return all ? std::vector<uint8_t>() : flags;
}

} // namespace

bool is_moe_model_type(const std::string &type) {
    return type == "mixtral" || type == "qwen2_moe" || type == "olmoe" || type == "qwen3_moe";
}

void read_moe_family(HfConfig &h, const Fields &f, const std::string &src) {
    const std::string &type = h.model_type;
    read_llama_family(h, f, src, base_type(type));
    ModelConfig &c = h.config;
    const bool qwen = type == "qwen2_moe" || type == "qwen3_moe";

    // Mixtral and OLMoE: intermediate_size is each expert's width and every layer is MoE.
    // Qwen: moe_intermediate_size is, and intermediate_size is the dense layers' width.
    // The expert count's key: Mixtral's num_local_experts, the others' num_experts; transformers
    // 5 writes num_local_experts for every family (num_experts an alias), so either is read.
    const char *n_key = type == "mixtral" ? (f.has("num_local_experts") || !f.has("num_experts") ? "num_local_experts" : "num_experts")
                                          : (f.has("num_experts") || !f.has("num_local_experts") ? "num_experts" : "num_local_experts");
    if (type == "mixtral") {
        c.arch = GPT_ARCH_MIXTRAL;
        c.n_experts = f.u32_or(n_key, 8);
        c.n_experts_used = f.u32_or("num_experts_per_tok", 2);
        c.d_ff_expert = c.d_ff;
        c.norm_topk_prob = true; // MixtralSparseMoeBlock always renormalises
    } else if (type == "olmoe") {
        c.arch = GPT_ARCH_OLMOE;
        c.n_experts = f.u32_or(n_key, 64);
        c.n_experts_used = f.u32_or("num_experts_per_tok", 8);
        c.d_ff_expert = c.d_ff;
        c.norm_topk_prob = f.bool_or("norm_topk_prob", false);
        if (f.has("clip_qkv"))
            fail(GPT_ERR_UNSUPPORTED, "%s: clip_qkv %s (clamping q, k and v) is not supported", src.c_str(), json_excerpt(f.at("clip_qkv")).c_str());
    } else {
        const bool q2 = type == "qwen2_moe";
        c.arch = q2 ? GPT_ARCH_QWEN2_MOE : GPT_ARCH_QWEN3_MOE;
        c.n_experts = f.u32_or(n_key, q2 ? 60 : 128);
        c.n_experts_used = f.u32_or("num_experts_per_tok", q2 ? 4 : 8);
        c.d_ff_expert = f.u32_or("moe_intermediate_size", q2 ? 1408 : 768);
        c.norm_topk_prob = f.bool_or("norm_topk_prob", false);
        if (q2) {
            // Qwen2MoeSparseMoeBlock always has the sigmoid-gated shared expert.
            c.d_ff_shared = f.u32_or("shared_expert_intermediate_size", 5632);
            c.qkv_bias = f.bool_or("qkv_bias", true);
        }
        c.moe_layers = qwen_moe_layers(f, c.n_layers, src);
    }
    if (c.n_experts > ModelConfig::kMaxExperts)
        fail(GPT_ERR_UNSUPPORTED, "%s: \"%s\" is %u; at most %u experts a layer are supported", src.c_str(), n_key, c.n_experts,
             ModelConfig::kMaxExperts);
    if (c.n_experts_used > c.n_experts)
        fail(GPT_ERR_FORMAT, "%s: \"num_experts_per_tok\" %u is more than the %u experts (\"%s\")", src.c_str(), c.n_experts_used,
             c.n_experts, n_key);
    // Mixtral keeps Mistral's window on every layer (read above); Qwen-MoE's windowed layers
    // have followed different rules across transformers versions: refused.
    if (qwen && f.bool_or("use_sliding_window", false))
        fail(GPT_ERR_UNSUPPORTED, "%s: use_sliding_window is true; %s runs here with full attention only", src.c_str(), type.c_str());
    // output_router_logits, router_aux_loss_coef and router_jitter_noise concern training only.
}

} // namespace gpt::convert
