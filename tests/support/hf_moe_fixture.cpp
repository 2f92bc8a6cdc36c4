// hf_moe_fixture.cpp - the Hugging Face mixture-of-experts fixture (see hf_moe_fixture.h).
#include "hf_moe_fixture.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace fixture {

using gpt::DType;
using nlohmann::json;

bool HfMoeModel::moe_layer(uint32_t i) const {
    if (!qwen()) return true;
    const auto &d = spec.mlp_only_layers;
    return std::find(d.begin(), d.end(), i) == d.end() && (i + 1) % spec.sparse_step == 0;
}

std::string HfMoeModel::router(uint32_t i) const {
    const std::string h = "model.layers." + std::to_string(i) + ".";
    return h + (spec.type == "mixtral" && !spec.fused ? "block_sparse_moe.gate.weight" : "mlp.gate.weight");
}

std::string HfMoeModel::expert(uint32_t i, uint32_t e, const char *which) const {
    const std::string w(which);
    const std::string x = "model.layers." + std::to_string(i) + "." + (spec.type == "mixtral" ? "block_sparse_moe" : "mlp") +
                          ".experts." + std::to_string(e) + ".";
    if (spec.type == "mixtral") return x + (w == "gate" ? "w1" : w == "up" ? "w3" : "w2") + ".weight";
    return x + w + "_proj.weight";
}

void HfMoeModel::restack() {
    const uint64_t d = spec.d, ff = spec.ff_expert, E = spec.experts;
    for (uint32_t i = 0; i < spec.layers; i++) {
        if (!moe_layer(i)) continue;
        const std::string h = "model.layers." + std::to_string(i) + ".";
        std::vector<float> gate_up, down;
        for (uint32_t e = 0; e < E; e++) {
            for (const char *w : {"gate", "up"}) {
                const std::vector<float> &x = hf.v(expert(i, e, w));
                gate_up.insert(gate_up.end(), x.begin(), x.end());
            }
            const std::vector<float> &x = hf.v(expert(i, e, "down"));
            down.insert(down.end(), x.begin(), x.end());
        }
        hf.values[h + "mlp.experts.gate_up_proj"] = std::move(gate_up);
        hf.shapes[h + "mlp.experts.gate_up_proj"] = {E, 2 * ff, d};
        hf.values[h + "mlp.experts.down_proj"] = std::move(down);
        hf.shapes[h + "mlp.experts.down_proj"] = {E, d, ff};
    }
}

HfMoeModel make_hf_moe(const HfMoeSpec &s) {
    HfMoeModel m;
    m.spec = s;
    HfModel &f = m.hf;
    f.spec.type = s.type;
    f.spec.dtype = s.dtype;
    std::mt19937_64 rng(s.seed);
    const uint64_t d = s.d, v = s.vocab, hd = m.hd(), qd = s.heads * hd, kvd = s.kv * hd, ff = s.ff_expert, E = s.experts;
    const bool q2 = s.type == "qwen2_moe", q3 = s.type == "qwen3_moe", olmoe = s.type == "olmoe";

    json c;
    c["model_type"] = s.type;
    c["torch_dtype"] = s.dtype == DType::F32 ? "float32" : s.dtype == DType::F16 ? "float16" : "bfloat16";
    c["vocab_size"] = s.vocab;
    c["bos_token_id"] = 1;
    c["eos_token_id"] = 2;
    c["tie_word_embeddings"] = s.tied;
    c["hidden_size"] = s.d;
    c["num_hidden_layers"] = s.layers;
    c["num_attention_heads"] = s.heads;
    c["num_key_value_heads"] = s.kv;
    if (s.head_dim) c["head_dim"] = s.head_dim;
    c["max_position_embeddings"] = s.ctx;
    c["rms_norm_eps"] = 1e-5;
    c["rope_theta"] = 10000.0;
    c["hidden_act"] = "silu";
    c["num_experts_per_tok"] = s.top_k;
    c["output_router_logits"] = false;
    c["router_aux_loss_coef"] = 0.001;
    if (!q2) c["attention_bias"] = false;
    if (s.type == "mixtral") {
        c["num_local_experts"] = s.experts;
        c["intermediate_size"] = s.ff_expert;
        c["sliding_window"] = s.sliding_window ? json(s.sliding_window) : json(nullptr);
        c["router_jitter_noise"] = 0.0;
    } else {
        c["num_experts"] = s.experts;
        c["norm_topk_prob"] = s.norm_topk;
    }
    if (olmoe) {
        c["intermediate_size"] = s.ff_expert;
        c["clip_qkv"] = nullptr;
    }
    if (m.qwen()) {
        c["intermediate_size"] = s.ff_dense;
        c["moe_intermediate_size"] = s.ff_expert;
        c["decoder_sparse_step"] = s.sparse_step;
        c["mlp_only_layers"] = s.mlp_only_layers;
        c["use_sliding_window"] = false;
        c["sliding_window"] = q2 ? json(4096) : json(nullptr);
        c["max_window_layers"] = s.layers;
    }
    if (q2) {
        c["shared_expert_intermediate_size"] = s.ff_shared;
        c["qkv_bias"] = true;
    }

    const float wstd = 0.8f / std::sqrt((float)d);
    f.add(rng, "model.embed_tokens.weight", {v, d}, 0, 1.0f);
    for (uint32_t i = 0; i < s.layers; i++) {
        const std::string h = "model.layers." + std::to_string(i) + ".", at = h + "self_attn.";
        f.add(rng, h + "input_layernorm.weight", {d}, 1, 0.1f);
        f.add(rng, at + "q_proj.weight", {qd, d}, 0, wstd);
        f.add(rng, at + "k_proj.weight", {kvd, d}, 0, wstd);
        f.add(rng, at + "v_proj.weight", {kvd, d}, 0, wstd);
        if (q2) {
            f.add(rng, at + "q_proj.bias", {qd}, 0, 0.2f);
            f.add(rng, at + "k_proj.bias", {kvd}, 0, 0.2f);
            f.add(rng, at + "v_proj.bias", {kvd}, 0, 0.2f);
        }
        if (q3) {
            f.add(rng, at + "q_norm.weight", {hd}, 1, 0.2f);
            f.add(rng, at + "k_norm.weight", {hd}, 1, 0.2f);
        }
        if (olmoe) { // over the whole projections
            f.add(rng, at + "q_norm.weight", {qd}, 1, 0.2f);
            f.add(rng, at + "k_norm.weight", {kvd}, 1, 0.2f);
        }
        f.add(rng, at + "o_proj.weight", {d, qd}, 0, 0.8f / std::sqrt((float)qd));
        f.add(rng, h + "post_attention_layernorm.weight", {d}, 1, 0.1f);
        if (!m.moe_layer(i)) {
            f.add(rng, h + "mlp.gate_proj.weight", {s.ff_dense, d}, 0, wstd);
            f.add(rng, h + "mlp.up_proj.weight", {s.ff_dense, d}, 0, wstd);
            f.add(rng, h + "mlp.down_proj.weight", {d, s.ff_dense}, 0, 0.8f / std::sqrt((float)s.ff_dense));
            continue;
        }
        f.add(rng, m.router(i), {E, d}, 0, 0.25f); // router logits of a unit or two: no vanishing probabilities
        const size_t first_expert = f.order.size();
        for (uint32_t e = 0; e < E; e++) {
            f.add(rng, m.expert(i, e, "gate"), {ff, d}, 0, wstd);
            f.add(rng, m.expert(i, e, "up"), {ff, d}, 0, wstd);
            f.add(rng, m.expert(i, e, "down"), {d, ff}, 0, 0.8f / std::sqrt((float)ff));
        }
        if (s.fused) { // transformers 5's two stacked parameters replace the modules
            f.order.resize(first_expert);
            f.order.push_back(h + "mlp.experts.gate_up_proj");
            f.order.push_back(h + "mlp.experts.down_proj");
        }
        if (q2) {
            const uint64_t fs = s.ff_shared;
            f.add(rng, h + "mlp.shared_expert.gate_proj.weight", {fs, d}, 0, wstd);
            f.add(rng, h + "mlp.shared_expert.up_proj.weight", {fs, d}, 0, wstd);
            f.add(rng, h + "mlp.shared_expert.down_proj.weight", {d, fs}, 0, 0.8f / std::sqrt((float)fs));
            f.add(rng, h + "mlp.shared_expert_gate.weight", {1, d}, 0, wstd);
        }
    }
    if (s.fused) m.restack();
    f.add(rng, "model.norm.weight", {d}, 1, 0.1f);
    if (!s.tied) f.add(rng, "lm_head.weight", {v, d}, 0, wstd * 2);
    f.config = c.dump(2);
    return m;
}

} // namespace fixture
