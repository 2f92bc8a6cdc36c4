// hf_config.cpp - config.json of the supported model types -> ModelConfig.
#include "convert/hf_config.h"
#include "convert/hf_config_fields.h"

#include "convert/fs_util.h"
#include "convert/json_excerpt.h"
#include "core/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_set>

namespace gpt::convert {

using nlohmann::json;

namespace {

json parse_json(const std::string &text, const std::string &source) {
    try {
        json j = json::parse(text);
        if (!j.is_object()) fail(GPT_ERR_FORMAT, "%s: not a JSON object", source.c_str());
        return j;
    } catch (const json::exception &e) {
        fail(GPT_ERR_FORMAT, "%s: malformed JSON: %s", source.c_str(), e.what());
    }
}

const char *arch_label(const ModelConfig &c) { return c.arch == GPT_ARCH_GEMMA3 ? "gemma3" : "gemma2"; }

// A list of positive factors (longrope's short_factor / long_factor).
std::vector<float> factor_list(const Fields &rf, const char *dict, const char *key, const std::string &src) {
    if (!rf.has(key)) fail(GPT_ERR_FORMAT, "%s: %s type longrope needs \"%s\"", src.c_str(), dict, key);
    const json &v = rf.at(key);
    if (!v.is_array()) fail(GPT_ERR_FORMAT, "%s: %s.%s must be a list of numbers, not %s", src.c_str(), dict, key, json_excerpt(v).c_str());
    std::vector<float> out;
    for (const json &x : v) {
        if (!x.is_number() || !(x.get<double>() > 0) || x.get<double>() > 1e9)
            fail(GPT_ERR_FORMAT, "%s: %s.%s holds %s, not a positive factor", src.c_str(), dict, key, json_excerpt(x).c_str());
        out.push_back((float)x.get<double>());
    }
    return out;
}

// rope_scaling (transformers < 5) or rope_parameters (>= 5): rope_theta, the partial rotary
// factor (v5 keeps it there), and the scalings model/rope_scaling.h runs, with the same
// defaults as transformers' modeling_rope_utils.py; any other type is refused by name.
void read_rope_dict(const Fields &f, const char *key, float *theta, double *partial, RopeScaling *out, uint32_t max_pos,
                    const std::string &src) {
    if (!f.has(key)) return;
    const json &r = f.at(key);
    if (!r.is_object()) fail(GPT_ERR_FORMAT, "%s: \"%s\" must be an object, not %s", src.c_str(), key, json_excerpt(r).c_str());
    Fields rf(r, src);
    std::string type = "default";
    if (rf.has("rope_type")) type = rf.str_or("rope_type", type);
    else if (rf.has("type")) type = rf.str_or("type", type);
    if (rf.has("rope_theta")) *theta = finite_f32(rf.num_or("rope_theta", 0), "rope_theta", src);
    if (rf.has("partial_rotary_factor")) *partial = rf.num_or("partial_rotary_factor", 1.0);
    RopeScaling s;
    if (type == "default" || type == "none") {
        if (rf.has("factor") && rf.num_or("factor", 1.0) != 1.0)
            fail(GPT_ERR_UNSUPPORTED, "%s: %s.factor %g with type '%s' is not supported", src.c_str(), key, rf.num_or("factor", 1.0), type.c_str());
        return;
    }
    // original_max_position_embeddings: in the dict (llama3, v5) or beside it (Phi-3).
    auto original = [&]() -> uint32_t {
        if (rf.has("original_max_position_embeddings")) return rf.u32("original_max_position_embeddings");
        if (f.has("original_max_position_embeddings")) return f.u32("original_max_position_embeddings");
        return max_pos;
    };
    if (type == "linear") {
        s.type = RopeScalingType::LINEAR;
        s.factor = finite_f32(rf.num_or("factor", NAN), "factor", src);
    } else if (type == "llama3") {
        s.type = RopeScalingType::LLAMA3;
        s.factor = finite_f32(rf.num_or("factor", NAN), "factor", src);
        s.low_freq_factor = finite_f32(rf.num_or("low_freq_factor", NAN), "low_freq_factor", src);
        s.high_freq_factor = finite_f32(rf.num_or("high_freq_factor", NAN), "high_freq_factor", src);
        if (!rf.has("original_max_position_embeddings"))
            fail(GPT_ERR_FORMAT, "%s: %s type llama3 needs \"original_max_position_embeddings\"", src.c_str(), key);
        s.original_context = rf.u32("original_max_position_embeddings");
    } else if (type == "longrope") {
        s.type = RopeScalingType::LONGROPE;
        s.short_factor = factor_list(rf, key, "short_factor", src);
        s.long_factor = factor_list(rf, key, "long_factor", src);
        s.original_context = original();
        // transformers: the config's attention_factor, else sqrt(1 + ln f / ln original) with f
        // the config's factor or max_position_embeddings / original (1 when f <= 1).
        const double factor = rf.has("factor") ? rf.num_or("factor", 1.0) : (double)max_pos / s.original_context;
        double att = 1.0;
        if (rf.has("attention_factor")) att = rf.num_or("attention_factor", 1.0);
        else if (factor > 1.0) att = std::sqrt(1 + std::log(factor) / std::log((double)s.original_context));
        s.attention_factor = finite_f32(att, "attention_factor", src);
    } else {
        fail(GPT_ERR_UNSUPPORTED, "%s: %s type '%s' (RoPE scaling) is not supported; this engine runs default, linear, llama3 and longrope",
             src.c_str(), key, type.c_str());
    }
    *out = s;
}

// Sets bos/eos (first valid eos) and the eos list; ids outside the vocabulary are dropped.
void set_special_ids(HfConfig &h, const std::vector<int64_t> &bos, const std::vector<int64_t> &eos, const std::string &src) {
    const int64_t v = h.config.vocab_size;
    h.config.bos_id = -1;
    for (int64_t b : bos) {
        if (b >= 0 && b < v) {
            h.config.bos_id = (int32_t)b;
            break;
        }
        h.warnings.push_back(src + ": bos_token_id " + std::to_string(b) + " is outside the vocabulary (" + std::to_string(v) + "); dropped");
    }
    h.eos_ids.clear();
    std::unordered_set<int32_t> seen; // a long list must not cost a scan per entry
    for (int64_t e : eos) {
        if (e < 0 || e >= v) {
            h.warnings.push_back(src + ": eos_token_id " + std::to_string(e) + " is outside the vocabulary (" + std::to_string(v) + "); dropped");
            continue;
        }
        if (seen.insert((int32_t)e).second) h.eos_ids.push_back((int32_t)e);
    }
    h.config.eos_id = h.eos_ids.empty() ? -1 : h.eos_ids[0];
}

void read_gpt2(HfConfig &h, const Fields &f, const std::string &src) {
    ModelConfig &c = h.config;
    c.arch = GPT_ARCH_GPT2;
    c.d_model = f.u32("n_embd");
    c.n_layers = f.u32("n_layer");
    c.n_heads = f.u32("n_head");
    if (c.d_model % c.n_heads != 0)
        fail(GPT_ERR_FORMAT, "%s: n_embd %u is not a multiple of n_head %u", src.c_str(), c.d_model, c.n_heads);
    c.n_kv_heads = c.n_heads;
    c.head_dim = c.d_model / c.n_heads;
    c.context_length = f.has("n_positions") ? f.u32("n_positions") : f.u32("n_ctx");
    c.vocab_size = f.u32("vocab_size");
    c.d_ff = f.has("n_inner") ? f.u32("n_inner") : 4 * c.d_model;
    c.norm_eps = finite_f32(f.num_or("layer_norm_epsilon", 1e-5), "layer_norm_epsilon", src);
    c.qkv_bias = true;
    c.rope_theta = 0.0f;
    c.tied_head = f.bool_or("tie_word_embeddings", true);
    const std::string act = f.str_or("activation_function", "gelu_new");
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
        fail(GPT_ERR_UNSUPPORTED, "%s: activation_function '%s' is not supported; gpt2 here runs the tanh GELU (gelu_new)", src.c_str(), act.c_str());
    if (!f.bool_or("scale_attn_weights", true))
        fail(GPT_ERR_UNSUPPORTED, "%s: scale_attn_weights false is not supported", src.c_str());
    if (f.bool_or("scale_attn_by_inverse_layer_idx", false))
        fail(GPT_ERR_UNSUPPORTED, "%s: scale_attn_by_inverse_layer_idx is not supported", src.c_str());
    if (f.bool_or("add_cross_attention", false))
        fail(GPT_ERR_UNSUPPORTED, "%s: add_cross_attention (encoder-decoder GPT-2) is not supported", src.c_str());
}

// Which layers are windowed: config.json's layer_types when present ("sliding_attention" or
// "full_attention" per layer, transformers >= 4.53), else the model type's own rule.
std::vector<uint8_t> window_layers(const Fields &f, uint32_t n_layers, const std::string &src, bool (*windowed)(uint32_t, uint32_t),
                                   uint32_t param) {
    std::vector<uint8_t> flags(n_layers);
    if (f.has("layer_types")) {
        const json &lt = f.at("layer_types");
        if (!lt.is_array() || lt.size() != n_layers)
            fail(GPT_ERR_FORMAT, "%s: \"layer_types\" must list one type per layer (%u), not %s", src.c_str(), n_layers,
                 json_excerpt(lt).c_str());
        for (uint32_t i = 0; i < n_layers; i++) {
            const std::string t = lt[i].is_string() ? lt[i].get<std::string>() : "";
            if (t != "sliding_attention" && t != "full_attention")
                fail(GPT_ERR_UNSUPPORTED, "%s: layer_types[%u] is %s; only \"sliding_attention\" and \"full_attention\" run here",
                     src.c_str(), i, json_excerpt(lt[i]).c_str());
            flags[i] = t == "sliding_attention";
        }
        return flags;
    }
    for (uint32_t i = 0; i < n_layers; i++) flags[i] = windowed(i, param);
    return flags;
}

// Stores the window, or none when no layer uses it or it is no shorter than the context
// (max_seq never exceeds context_length, so such a window never binds) unless the flags
// matter anyway (keep_flags: Gemma-3's windowed layers also pick the local RoPE). The
// per-layer list is kept only when some layer is not windowed: absent means every layer.
void set_window(ModelConfig &c, uint32_t window, std::vector<uint8_t> flags, bool keep_flags = false) {
    bool any = false, all = true;
    for (uint8_t x : flags) {
        any = any || x;
        all = all && x;
    }
    any = any && (window < c.context_length || keep_flags);
    c.sliding_window = any ? window : 0;
    c.window_layers = any && !all ? std::move(flags) : std::vector<uint8_t>();
}

} // namespace

// type: the dense family whose attention rules apply (the MoE readers pass their base).
void read_llama_family(HfConfig &h, const Fields &f, const std::string &src, const std::string &type) {
    ModelConfig &c = h.config;
    c.arch = GPT_ARCH_LLAMA;
    c.d_model = f.u32("hidden_size");
    c.n_layers = f.u32("num_hidden_layers");
    c.n_heads = f.u32("num_attention_heads");
    c.n_kv_heads = f.u32_or("num_key_value_heads", c.n_heads);
    if (f.has("head_dim")) {
        c.head_dim = f.u32("head_dim");
    } else {
        if (c.d_model % c.n_heads != 0)
            fail(GPT_ERR_FORMAT, "%s: hidden_size %u is not a multiple of num_attention_heads %u (and no head_dim given)", src.c_str(),
                 c.d_model, c.n_heads);
        c.head_dim = c.d_model / c.n_heads;
    }
    if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0)
        fail(GPT_ERR_FORMAT, "%s: num_attention_heads %u is not a multiple of num_key_value_heads %u", src.c_str(), c.n_heads, c.n_kv_heads);
    c.d_ff = f.u32("intermediate_size");
    c.vocab_size = f.u32("vocab_size");
    c.context_length = f.u32_or("max_position_embeddings", type == "llama" ? 2048 : 32768);
    c.norm_eps = finite_f32(f.num_or("rms_norm_eps", 1e-6), "rms_norm_eps", src);
    c.tied_head = f.bool_or("tie_word_embeddings", false);

    float theta = finite_f32(f.num_or("rope_theta", 10000.0), "rope_theta", src);
    double partial = f.num_or("partial_rotary_factor", 1.0);
    read_rope_dict(f, "rope_scaling", &theta, &partial, &c.rope_scaling, c.context_length, src);
    read_rope_dict(f, "rope_parameters", &theta, &partial, &c.rope_scaling, c.context_length, src);
    c.rope_theta = theta;
    if (partial != 1.0) {
        // transformers rotates int(head_dim * partial_rotary_factor) dimensions (phi3 only).
        if (type != "phi3")
            fail(GPT_ERR_UNSUPPORTED, "%s: partial_rotary_factor %g is not supported for %s", src.c_str(), partial, type.c_str());
        const double dims = c.head_dim * partial;
        if (!(partial > 0 && partial <= 1) || (uint32_t)dims % 2 != 0 || (uint32_t)dims < 2)
            fail(GPT_ERR_UNSUPPORTED, "%s: partial_rotary_factor %g rotates %g of head_dim %u dimensions; an even count >= 2 is needed",
                 src.c_str(), partial, dims, c.head_dim);
        c.rope_dim = (uint32_t)dims;
    }

    const std::string act = f.str_or("hidden_act", "silu");
    if (act != "silu" && act != "swish")
        fail(GPT_ERR_UNSUPPORTED, "%s: hidden_act '%s' is not supported; the %s MLP here is SwiGLU (silu)", src.c_str(), act.c_str(), type.c_str());
    if (f.bool_or("mlp_bias", false)) fail(GPT_ERR_UNSUPPORTED, "%s: mlp_bias (biases in the MLP) is not supported", src.c_str());

    if (type == "phi3") {
        // Phi3Attention has no biases whatever attention_bias says; lm_head_bias is Phi-4's.
        c.arch = GPT_ARCH_PHI3;
        c.qkv_bias = false;
        if (f.bool_or("lm_head_bias", false)) fail(GPT_ERR_UNSUPPORTED, "%s: lm_head_bias (a bias on the head) is not supported", src.c_str());
        // transformers masks keys outside (p - sliding_window, p] for phi3 (its sliding-window
        // causal mask); a window as long as the context changes nothing.
        if (f.has("sliding_window")) set_window(c, f.u32("sliding_window"), std::vector<uint8_t>(c.n_layers, 1));
    } else if (type == "qwen2") {
        c.qkv_bias = true; // Qwen2 always has q/k/v biases and no o_proj bias
    } else {
        // llama, mistral, qwen3: attention_bias puts biases on q, k, v and o.
        c.qkv_bias = f.bool_or("attention_bias", false);
        h.o_proj_bias = c.qkv_bias;
    }
    if (type == "qwen3") {
        c.arch = GPT_ARCH_QWEN3;
        if (f.bool_or("use_sliding_window", false))
            fail(GPT_ERR_UNSUPPORTED, "%s: use_sliding_window is true; %s runs here with full attention only", src.c_str(), h.model_type.c_str());
    }
    // Sliding windows as transformers applies them: Mistral on every layer whenever
    // sliding_window is set; Qwen2 only with use_sliding_window, on layers >= max_window_layers.
    // (Qwen2-MoE configs write sliding_window 0 with use_sliding_window false: not read then.)
    if ((type == "mistral" || type == "qwen2") && f.has("sliding_window")) {
        if (type == "mistral") {
            const uint32_t w = f.u32("sliding_window");
            set_window(c, w, window_layers(f, c.n_layers, src, [](uint32_t, uint32_t) { return true; }, 0));
        } else if (f.bool_or("use_sliding_window", false)) {
            const uint32_t w = f.u32("sliding_window");
            // Qwen2Config's default is 28; 0 (every layer windowed) is allowed.
            const double first = f.num_or("max_window_layers", 28);
            if (!(first >= 0) || first != std::floor(first) || first > 1e9)
                fail(GPT_ERR_FORMAT, "%s: \"max_window_layers\" must be a non-negative integer, not %s", src.c_str(),
                     json_excerpt(f.at("max_window_layers")).c_str());
            set_window(c, w, window_layers(f, c.n_layers, src, [](uint32_t i, uint32_t m) { return i >= m; }, (uint32_t)first));
        }
    }
}

namespace {

// Gemma's RoPE dicts: rope_scaling (linear or none; Gemma-3's applies to its global layers),
// or transformers 5's rope_parameters, flat or keyed by layer type.
void read_gemma_rope(const Fields &f, ModelConfig &c, const std::string &src) {
    auto one = [&](const json &r, const std::string &what, bool global) {
        if (r.is_null()) return;
        if (!r.is_object()) fail(GPT_ERR_FORMAT, "%s: \"%s\" must be an object, not %s", src.c_str(), what.c_str(), json_excerpt(r).c_str());
        Fields rf(r, src);
        const std::string type = rf.has("rope_type") ? rf.str_or("rope_type", "default") : rf.str_or("type", "default");
        const double factor = rf.num_or("factor", 1.0);
        if (type == "linear" && c.arch == GPT_ARCH_GEMMA3 && global) {
            if (!(factor >= 1.0) || factor > 1e6) fail(GPT_ERR_FORMAT, "%s: %s.factor %g is not in [1, 1e6]", src.c_str(), what.c_str(), factor);
            // The global layers' scaling (model/rope_scaling.h); the local layers run unscaled.
            c.rope_scaling = RopeScaling();
            if (factor != 1.0) {
                c.rope_scaling.type = RopeScalingType::LINEAR;
                c.rope_scaling.factor = (float)factor;
            }
        } else if (type != "default" || factor != 1.0) {
            fail(GPT_ERR_UNSUPPORTED, "%s: %s type '%s' (factor %g) is not supported here; %s runs unscaled RoPE%s", src.c_str(),
                 what.c_str(), type.c_str(), factor, arch_label(c), c.arch == GPT_ARCH_GEMMA3 ? " and linear scaling on its global layers" : "");
        }
        if (rf.has("rope_theta")) {
            float &theta = global ? c.rope_theta : c.rope_theta_local;
            theta = finite_f32(rf.num_or("rope_theta", 0), "rope_theta", src);
        }
    };
    if (f.has("rope_scaling")) one(f.at("rope_scaling"), "rope_scaling", true);
    if (f.has("rope_parameters")) {
        const json &rp = f.at("rope_parameters");
        if (rp.is_object() && (rp.contains("full_attention") || rp.contains("sliding_attention"))) {
            if (rp.contains("full_attention")) one(rp["full_attention"], "rope_parameters.full_attention", true);
            if (rp.contains("sliding_attention")) {
                const float global_theta = c.rope_theta;
                one(rp["sliding_attention"], "rope_parameters.sliding_attention", c.arch != GPT_ARCH_GEMMA3);
                // Gemma-2 has one RoPE for all layers: both entries must agree.
                if (c.arch != GPT_ARCH_GEMMA3 && rp.contains("full_attention") && c.rope_theta != global_theta)
                    fail(GPT_ERR_UNSUPPORTED, "%s: rope_parameters gives gemma2's sliding and full layers different rope_theta",
                         src.c_str());
            }
        } else {
            one(rp, "rope_parameters", true);
        }
    }
}

// Gemma-2 and Gemma-3 (text). Missing keys take transformers' Gemma2Config /
// Gemma3TextConfig defaults, as transformers itself would.
void read_gemma(HfConfig &h, const Fields &f, const std::string &src) {
    ModelConfig &c = h.config;
    const bool g3 = h.model_type == "gemma3_text";
    c.arch = g3 ? GPT_ARCH_GEMMA3 : GPT_ARCH_GEMMA2;
    c.d_model = f.u32("hidden_size");
    c.n_layers = f.u32("num_hidden_layers");
    c.n_heads = f.u32("num_attention_heads");
    c.n_kv_heads = f.u32_or("num_key_value_heads", c.n_heads);
    c.head_dim = f.u32_or("head_dim", 256);
    if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0)
        fail(GPT_ERR_FORMAT, "%s: num_attention_heads %u is not a multiple of num_key_value_heads %u", src.c_str(), c.n_heads, c.n_kv_heads);
    c.d_ff = f.u32("intermediate_size");
    c.vocab_size = f.u32("vocab_size");
    c.context_length = f.u32_or("max_position_embeddings", g3 ? 131072 : 8192);
    c.norm_eps = finite_f32(f.num_or("rms_norm_eps", 1e-6), "rms_norm_eps", src);
    c.embed_scale = true;
    c.qkv_bias = false;
    if (!f.bool_or("tie_word_embeddings", true))
        fail(GPT_ERR_UNSUPPORTED, "%s: tie_word_embeddings false: %s here always uses the embedding as its head", src.c_str(), arch_label(c));
    c.tied_head = true;
    if (f.bool_or("attention_bias", false)) fail(GPT_ERR_UNSUPPORTED, "%s: attention_bias (q/k/v/o biases) is not supported for %s", src.c_str(), arch_label(c));
    const std::string act = f.str_or("hidden_activation", "gelu_pytorch_tanh");
    if (act != "gelu_pytorch_tanh")
        fail(GPT_ERR_UNSUPPORTED, "%s: hidden_activation '%s' is not supported; %s here runs GeGLU with the tanh GELU (gelu_pytorch_tanh)",
             src.c_str(), act.c_str(), arch_label(c));

    c.query_pre_attn_scalar = finite_f32(f.num_or("query_pre_attn_scalar", 256), "query_pre_attn_scalar", src);
    if (!(c.query_pre_attn_scalar > 0)) fail(GPT_ERR_FORMAT, "%s: \"query_pre_attn_scalar\" must be positive", src.c_str());
    // Soft-caps: a missing key takes the class default (Gemma-2: 50 and 30; Gemma-3: none), null is none.
    auto cap = [&](const char *key, double def) -> float {
        const double v = f.has(key) ? f.num_or(key, 0) : f.present(key) ? 0.0 : def; // present but null: none
        if (!(v >= 0) || !std::isfinite(v)) fail(GPT_ERR_FORMAT, "%s: \"%s\" is %g; a soft-cap is a positive number or null", src.c_str(), key, v);
        return finite_f32(v, key, src);
    };
    c.attn_softcap = cap("attn_logit_softcapping", g3 ? 0.0 : 50.0);
    c.logit_softcap = cap("final_logit_softcapping", g3 ? 0.0 : 30.0);

    c.rope_theta = finite_f32(f.num_or("rope_theta", g3 ? 1000000.0 : 10000.0), "rope_theta", src);
    if (g3) c.rope_theta_local = finite_f32(f.num_or("rope_local_base_freq", 10000.0), "rope_local_base_freq", src);
    read_gemma_rope(f, c, src);

    // Windowed layers: Gemma-2 the even ones (0, 2, ...); Gemma-3 all but every
    // sliding_window_pattern-th (5, 11, ... with the default 6).
    const uint32_t w = f.u32_or("sliding_window", 4096);
    const uint32_t pattern = g3 ? f.u32_or("sliding_window_pattern", 6) : 2;
    set_window(c, w, window_layers(f, c.n_layers, src, [](uint32_t i, uint32_t p) { return (i + 1) % p != 0; }, pattern), g3);
}

} // namespace

HfConfig parse_hf_config(const std::string &text, const std::string &src) {
    const json j = parse_json(text, src);
    Fields f(j, src);
    HfConfig h;
    if (!f.has("model_type")) fail(GPT_ERR_FORMAT, "%s: no \"model_type\"", src.c_str());
    h.model_type = f.str_or("model_type", "");
    if (h.model_type == "gpt2") read_gpt2(h, f, src);
    else if (h.model_type == "llama" || h.model_type == "mistral" || h.model_type == "qwen2" || h.model_type == "qwen3" ||
             h.model_type == "phi3")
        read_llama_family(h, f, src, h.model_type);
    else if (is_moe_model_type(h.model_type)) read_moe_family(h, f, src);
    else if (h.model_type == "gemma2" || h.model_type == "gemma3_text") read_gemma(h, f, src);
    else if (h.model_type == "gemma3")
        fail(GPT_ERR_UNSUPPORTED, "%s: model_type 'gemma3' is the multimodal Gemma-3; only its text models (gemma3_text, e.g. "
                                  "gemma-3-1b) convert here", src.c_str());
    else
        fail(GPT_ERR_UNSUPPORTED,
             "%s: model_type '%s' is not supported (supported: gpt2, llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3_text, mixtral, qwen2_moe, olmoe, qwen3_moe)",
             src.c_str(), h.model_type.c_str());
    h.quant = parse_quant_config(text, src);
    h.torch_dtype = f.has("torch_dtype") ? f.str_or("torch_dtype", "") : f.str_or("dtype", "");

    std::vector<int64_t> bos = f.ids("bos_token_id"), eos = f.ids("eos_token_id");
    set_special_ids(h, bos, eos, src);
    h.config.validate(src);
    return h;
}

HfConfig load_hf_config(const std::string &dir) {
    const std::string path = join_path(dir, "config.json");
    if (!path_exists(path)) fail(GPT_ERR_IO, "%s: no config.json (a Hugging Face model directory needs one)", dir.c_str());
    HfConfig h = parse_hf_config(read_text_file(path), path);

    // generation_config.json often lists more end-of-turn ids (Llama 3 instruct, Qwen2 chat).
    const std::string gpath = join_path(dir, "generation_config.json");
    if (is_regular_file(gpath)) {
        const json g = parse_json(read_text_file(gpath), gpath);
        Fields gf(g, gpath);
        std::vector<int64_t> eos(h.eos_ids.begin(), h.eos_ids.end());
        for (int64_t e : gf.ids("eos_token_id")) eos.push_back(e);
        std::vector<int64_t> bos;
        if (h.config.bos_id >= 0) bos.push_back(h.config.bos_id);
        else bos = gf.ids("bos_token_id");
        set_special_ids(h, bos, eos, gpath);
        h.config.validate(path);
    }
    return h;
}

} // namespace gpt::convert
