// hf_fixture.cpp - the Hugging Face fixture writers (see hf_fixture.h): safetensors bytes
// and directories, and random models with the tensor names and layouts transformers uses
// (GPT-2's Conv1D weights stored [in, out]).
#include "hf_fixture.h"

#include "dtype_values.h"
#include "files.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

// cmocka last: it defines a fail() macro.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>
}

namespace fixture {

using gpt::DType;
using nlohmann::json;

namespace {
uint64_t numel(const std::vector<uint64_t> &s) {
    uint64_t n = 1;
    for (uint64_t d : s) n *= d;
    return n;
}
} // namespace

std::vector<uint8_t> safetensors_bytes(const std::vector<StEntry> &entries) {
    json h = json::object();
    h["__metadata__"] = {{"format", "pt"}};
    uint64_t off = 0;
    for (const auto &e : entries) {
        h[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {off, off + e.bytes.size()}}};
        off += e.bytes.size();
    }
    std::string text = h.dump();
    while (text.size() % 8) text += ' ';
    std::vector<uint8_t> out;
    for (int i = 0; i < 8; i++) out.push_back((uint8_t)((uint64_t)text.size() >> (8 * i)));
    for (char ch : text) out.push_back((uint8_t)ch);
    for (const auto &e : entries) out.insert(out.end(), e.bytes.begin(), e.bytes.end());
    return out;
}

void write_hf_dir(const std::string &dir, const std::string &config, const std::vector<StEntry> &entries, int n_shards) {
    files::write_text(dir + "/config.json", config);
    if (n_shards <= 1) {
        files::write_bytes(dir + "/model.safetensors", safetensors_bytes(entries));
        return;
    }
    json wm = json::object();
    for (int s = 0; s < n_shards; s++) {
        const std::string name = shard_name(s, n_shards);
        std::vector<StEntry> part;
        for (size_t i = 0; i < entries.size(); i++)
            if ((int)(i % n_shards) == s) {
                part.push_back(entries[i]);
                wm[entries[i].name] = name;
            }
        files::write_bytes(dir + "/" + name, safetensors_bytes(part));
    }
    json idx = {{"metadata", {{"total_size", 0}}}, {"weight_map", wm}};
    files::write_text(dir + "/model.safetensors.index.json", idx.dump(2));
}

std::string shard_name(int s, int n) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05d-of-%05d.safetensors", s + 1, n);
    return name;
}

const char *st_name(DType t) { return t == DType::F32 ? "F32" : t == DType::F16 ? "F16" : "BF16"; }

void HfModel::add(std::mt19937_64 &rng, const std::string &name, std::vector<uint64_t> shape, float mean, float std) {
    order.push_back(name);
    values[name] = draw(rng, numel(shape), mean, std, spec.dtype);
    shapes[name] = std::move(shape);
}

const std::vector<float> &HfModel::v(const std::string &n) const {
    auto it = values.find(n);
    if (it == values.end()) fail_msg("fixture has no tensor %s", n.c_str());
    return it->second;
}

std::vector<StEntry> HfModel::entries() const {
    std::vector<StEntry> out;
    for (const auto &n : order) out.push_back({n, st_name(spec.dtype), shapes.at(n), encode(values.at(n), spec.dtype)});
    for (const auto &e : extra) out.push_back(e);
    return out;
}

bool HfModel::windowed(uint32_t i) const {
    const HfSpec &s = spec;
    if (!s.sliding_window) return false;
    if (s.type == "mistral" || s.type == "phi3") return true;
    if (s.type == "qwen2") return i >= s.max_window_layers;
    if (s.type == "gemma2") return i % 2 == 0;
    if (s.type == "gemma3_text") return (i + 1) % s.window_pattern != 0;
    return false;
}

HfModel make_hf(const HfSpec &s) {
    HfModel m;
    m.spec = s;
    std::mt19937_64 rng(s.seed);
    const uint64_t d = s.d, v = s.vocab, ff = s.ff;
    json c;
    c["model_type"] = s.type;
    c["torch_dtype"] = s.dtype == DType::F32 ? "float32" : s.dtype == DType::F16 ? "float16" : "bfloat16";
    c["vocab_size"] = s.vocab;
    c["bos_token_id"] = s.bos;
    if (s.eos.size() == 1) c["eos_token_id"] = s.eos[0];
    else c["eos_token_id"] = s.eos;
    c["tie_word_embeddings"] = s.tied;
    const float wstd = 0.8f / std::sqrt((float)d);
    if (s.type == "gpt2") {
        c["n_embd"] = s.d;
        c["n_layer"] = s.layers;
        c["n_head"] = s.heads;
        c["n_positions"] = s.ctx;
        c["n_ctx"] = s.ctx;
        c["layer_norm_epsilon"] = s.eps;
        c["n_inner"] = s.ff == 4 * s.d ? json(nullptr) : json(s.ff);
        c["activation_function"] = "gelu_new";
        const std::string p = s.prefix ? "transformer." : "";
        m.add(rng, p + "wte.weight", {v, d}, 0, 0.5f);
        m.add(rng, p + "wpe.weight", {s.ctx, d}, 0, 0.2f);
        for (uint32_t i = 0; i < s.layers; i++) {
            const std::string h = p + "h." + std::to_string(i) + ".";
            m.add(rng, h + "ln_1.weight", {d}, 1, 0.1f);
            m.add(rng, h + "ln_1.bias", {d}, 0, 0.1f);
            m.add(rng, h + "attn.c_attn.weight", {d, 3 * d}, 0, wstd); // Conv1D: [in, out]
            m.add(rng, h + "attn.c_attn.bias", {3 * d}, 0, 0.1f);
            m.add(rng, h + "attn.c_proj.weight", {d, d}, 0, wstd);
            m.add(rng, h + "attn.c_proj.bias", {d}, 0, 0.1f);
            m.add(rng, h + "ln_2.weight", {d}, 1, 0.1f);
            m.add(rng, h + "ln_2.bias", {d}, 0, 0.1f);
            m.add(rng, h + "mlp.c_fc.weight", {d, ff}, 0, wstd);
            m.add(rng, h + "mlp.c_fc.bias", {ff}, 0, 0.1f);
            m.add(rng, h + "mlp.c_proj.weight", {ff, d}, 0, 0.8f / std::sqrt((float)ff));
            m.add(rng, h + "mlp.c_proj.bias", {d}, 0, 0.1f);
            if (s.buffers) {
                std::vector<uint8_t> mask(s.ctx * s.ctx);
                for (uint32_t a = 0; a < s.ctx; a++)
                    for (uint32_t b = 0; b < s.ctx; b++) mask[a * s.ctx + b] = b <= a;
                m.extra.push_back({h + "attn.bias", "U8", {1, 1, s.ctx, s.ctx}, mask});
                m.extra.push_back({h + "attn.masked_bias", "F32", {}, encode({-1e4f}, DType::F32)});
            }
        }
        m.add(rng, p + "ln_f.weight", {d}, 1, 0.1f);
        m.add(rng, p + "ln_f.bias", {d}, 0, 0.1f);
        if (!s.tied) m.add(rng, "lm_head.weight", {v, d}, 0, 0.5f);
        else if (s.head_copy) {
            m.order.push_back("lm_head.weight");
            m.values["lm_head.weight"] = m.values[p + "wte.weight"];
            m.shapes["lm_head.weight"] = {v, d};
        }
    } else {
        const uint64_t hd = m.hd(), qd = s.heads * hd, kvd = s.kv * hd;
        c["hidden_size"] = s.d;
        c["num_hidden_layers"] = s.layers;
        c["num_attention_heads"] = s.heads;
        c["num_key_value_heads"] = s.kv;
        if (s.head_dim) c["head_dim"] = s.head_dim;
        c["intermediate_size"] = s.ff;
        c["max_position_embeddings"] = s.ctx;
        c["rms_norm_eps"] = s.eps;
        if (m.gemma()) {
            c["hidden_activation"] = "gelu_pytorch_tanh";
            c["hidden_act"] = "gelu_pytorch_tanh"; // present in Gemma-2 configs, ignored by transformers
            c["query_pre_attn_scalar"] = s.query_pre_attn_scalar;
            c["attn_logit_softcapping"] = s.attn_softcap ? json(s.attn_softcap) : json(nullptr);
            c["final_logit_softcapping"] = s.logit_softcap ? json(s.logit_softcap) : json(nullptr);
            c["sliding_window"] = s.sliding_window;
            if (s.type == "gemma3_text") {
                c["rope_local_base_freq"] = s.theta_local;
                c["sliding_window_pattern"] = s.window_pattern;
                c["rope_scaling"] = s.linear_factor != 1 ? json{{"rope_type", "linear"}, {"factor", s.linear_factor}} : json(nullptr);
            }
            if (!c.contains("head_dim")) c["head_dim"] = m.hd(); // Gemma's default is 256, not hidden / heads
        } else {
            c["hidden_act"] = "silu";
        }
        if (s.type != "qwen2") c["attention_bias"] = false;
        const gpt::RopeScaling &sc = s.scaling;
        json scaling = nullptr;
        if (sc.type == gpt::RopeScalingType::LINEAR) scaling = {{"rope_type", "linear"}, {"factor", sc.factor}};
        if (sc.type == gpt::RopeScalingType::LLAMA3)
            scaling = {{"rope_type", "llama3"}, {"factor", sc.factor}, {"low_freq_factor", sc.low_freq_factor},
                       {"high_freq_factor", sc.high_freq_factor}, {"original_max_position_embeddings", sc.original_context}};
        if (sc.type == gpt::RopeScalingType::LONGROPE) {
            // As Phi-3 / Phi-4-mini publish it: "type" (not rope_type), the original context beside it.
            scaling = {{"type", "longrope"}, {"short_factor", sc.short_factor}, {"long_factor", sc.long_factor}};
            c["original_max_position_embeddings"] = sc.original_context;
        }
        if (s.type == "qwen3") {
            c["use_sliding_window"] = false;
            c["sliding_window"] = nullptr;
            c["max_window_layers"] = s.layers;
        }
        if (s.type == "phi3") {
            c["sliding_window"] = s.sliding_window ? json(s.sliding_window) : json(nullptr);
            c["resid_pdrop"] = 0.0;
            c["embd_pdrop"] = 0.0;
            c["attention_dropout"] = 0.0;
            c["pad_token_id"] = s.bos;
            if (s.rope_dim && s.rope_dim != hd) c["partial_rotary_factor"] = (double)s.rope_dim / (double)hd;
            if (!c.contains("original_max_position_embeddings")) c["original_max_position_embeddings"] = s.ctx;
        }
        if (s.rope == "top") c["rope_theta"] = s.theta;
        else if (s.rope == "parameters") c["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", s.theta}};
        else {
            c["rope_theta"] = s.theta;
            c["rope_scaling"] = {{"rope_type", "default"}};
        }
        if (!scaling.is_null()) c["rope_scaling"] = scaling;
        if (s.type == "mistral") c["sliding_window"] = s.sliding_window ? json(s.sliding_window) : json(nullptr);
        if (s.type == "qwen2") {
            c["use_sliding_window"] = s.sliding_window != 0;
            c["sliding_window"] = s.sliding_window ? s.sliding_window : 4096;
            c["max_window_layers"] = s.sliding_window ? s.max_window_layers : s.layers;
        }
        if (s.layer_types) {
            json lt = json::array();
            for (uint32_t i = 0; i < s.layers; i++) lt.push_back(m.windowed(i) ? "sliding_attention" : "full_attention");
            c["layer_types"] = lt;
            if (s.type == "gemma3_text") c.erase("sliding_window_pattern"); // layer_types alone decides
        }
        m.add(rng, "model.embed_tokens.weight", {v, d}, 0, 1.0f);
        for (uint32_t i = 0; i < s.layers; i++) {
            const std::string h = "model.layers." + std::to_string(i) + ".";
            m.add(rng, h + "input_layernorm.weight", {d}, m.gemma() ? 0 : 1, 0.1f);
            if (s.type == "phi3") {
                m.add(rng, h + "self_attn.qkv_proj.weight", {qd + 2 * kvd, d}, 0, wstd);
            } else {
                m.add(rng, h + "self_attn.q_proj.weight", {qd, d}, 0, wstd);
                m.add(rng, h + "self_attn.k_proj.weight", {kvd, d}, 0, wstd);
                m.add(rng, h + "self_attn.v_proj.weight", {kvd, d}, 0, wstd);
            }
            if (s.type == "qwen3") {
                m.add(rng, h + "self_attn.q_norm.weight", {hd}, 1, 0.2f);
                m.add(rng, h + "self_attn.k_norm.weight", {hd}, 1, 0.2f);
            }
            if (s.type == "qwen2") {
                m.add(rng, h + "self_attn.q_proj.bias", {qd}, 0, 0.2f);
                m.add(rng, h + "self_attn.k_proj.bias", {kvd}, 0, 0.2f);
                m.add(rng, h + "self_attn.v_proj.bias", {kvd}, 0, 0.2f);
            }
            if (s.type == "gemma3_text") { // Gemma's norm weights are offsets from 1
                m.add(rng, h + "self_attn.q_norm.weight", {hd}, 0, 0.2f);
                m.add(rng, h + "self_attn.k_norm.weight", {hd}, 0, 0.2f);
            }
            m.add(rng, h + "self_attn.o_proj.weight", {d, qd}, 0, 0.8f / std::sqrt((float)qd));
            m.add(rng, h + "post_attention_layernorm.weight", {d}, m.gemma() ? 0 : 1, 0.1f);
            if (m.gemma()) {
                m.add(rng, h + "pre_feedforward_layernorm.weight", {d}, 0, 0.1f);
                m.add(rng, h + "post_feedforward_layernorm.weight", {d}, 0, 0.1f);
            }
            if (s.type == "phi3") {
                m.add(rng, h + "mlp.gate_up_proj.weight", {2 * ff, d}, 0, wstd);
            } else {
                m.add(rng, h + "mlp.gate_proj.weight", {ff, d}, 0, wstd);
                m.add(rng, h + "mlp.up_proj.weight", {ff, d}, 0, wstd);
            }
            m.add(rng, h + "mlp.down_proj.weight", {d, ff}, 0, 0.8f / std::sqrt((float)ff));
        }
        m.add(rng, "model.norm.weight", {d}, m.gemma() ? 0 : 1, 0.1f);
        if (!s.tied) m.add(rng, "lm_head.weight", {v, d}, 0, wstd * 2);
    }
    m.config = c.dump(2);
    return m;
}

} // namespace fixture
