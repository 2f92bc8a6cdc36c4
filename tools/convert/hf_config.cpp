// hf_config.cpp - config.json of the supported model types -> ModelConfig.
#include "convert/hf_config.h"

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

// Typed access to one JSON object, failing with the file and key in the message.
class Fields {
public:
    Fields(const json &j, const std::string &source) : j_(j), src_(source) {}

    // Present and not null.
    bool has(const char *key) const { return j_.contains(key) && !j_[key].is_null(); }
    const json &at(const char *key) const { return j_[key]; }

    uint32_t u32(const char *key) const {
        if (!has(key)) fail(GPT_ERR_FORMAT, "%s: \"%s\" is missing", src_.c_str(), key);
        const json &v = j_[key];
        if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > 0x7fffffff)
            fail(GPT_ERR_FORMAT, "%s: \"%s\" must be a positive integer, not %s", src_.c_str(), key, json_excerpt(v).c_str());
        return (uint32_t)v.get<int64_t>();
    }
    uint32_t u32_or(const char *key, uint32_t def) const { return has(key) ? u32(key) : def; }

    double num_or(const char *key, double def) const {
        if (!has(key)) return def;
        const json &v = j_[key];
        if (!v.is_number()) fail(GPT_ERR_FORMAT, "%s: \"%s\" must be a number, not %s", src_.c_str(), key, json_excerpt(v).c_str());
        return v.get<double>();
    }
    bool bool_or(const char *key, bool def) const {
        if (!has(key)) return def;
        const json &v = j_[key];
        if (!v.is_boolean()) fail(GPT_ERR_FORMAT, "%s: \"%s\" must be true or false, not %s", src_.c_str(), key, json_excerpt(v).c_str());
        return v.get<bool>();
    }
    std::string str_or(const char *key, const std::string &def) const {
        if (!has(key)) return def;
        const json &v = j_[key];
        if (!v.is_string()) fail(GPT_ERR_FORMAT, "%s: \"%s\" must be a string, not %s", src_.c_str(), key, json_excerpt(v).c_str());
        return v.get<std::string>();
    }
    // A token id, a list of them, or null.
    std::vector<int64_t> ids(const char *key) const {
        std::vector<int64_t> out;
        if (!has(key)) return out;
        const json &v = j_[key];
        auto one = [&](const json &x) {
            if (!x.is_number_integer()) fail(GPT_ERR_FORMAT, "%s: \"%s\" must be a token id or a list of them, not %s", src_.c_str(), key, json_excerpt(v).c_str());
            // Above 2^63 a 64-bit read would wrap (2^64 - 1 to -1): no such id, so refuse it.
            if (x.is_number_unsigned() && x.get<uint64_t>() > (uint64_t)INT64_MAX)
                fail(GPT_ERR_FORMAT, "%s: \"%s\" holds %s, which is not a token id", src_.c_str(), key, json_excerpt(x).c_str());
            out.push_back(x.get<int64_t>());
        };
        if (v.is_array())
            for (const json &x : v) one(x);
        else one(v);
        return out;
    }

private:
    const json &j_;
    const std::string &src_;
};

json parse_json(const std::string &text, const std::string &source) {
    try {
        json j = json::parse(text);
        if (!j.is_object()) fail(GPT_ERR_FORMAT, "%s: not a JSON object", source.c_str());
        return j;
    } catch (const json::exception &e) {
        fail(GPT_ERR_FORMAT, "%s: malformed JSON: %s", source.c_str(), e.what());
    }
}

float finite_f32(double v, const char *key, const std::string &src) {
    if (!std::isfinite(v) || std::fabs(v) > 3e38) fail(GPT_ERR_FORMAT, "%s: \"%s\" is %g", src.c_str(), key, v);
    return (float)v;
}

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

void read_llama_family(HfConfig &h, const Fields &f, const std::string &src) {
    ModelConfig &c = h.config;
    const std::string &type = h.model_type;
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
        if (f.has("sliding_window")) c.sliding_window = f.u32("sliding_window");
        if (c.sliding_window >= c.context_length) c.sliding_window = 0;
    } else if (type == "qwen2") {
        c.qkv_bias = true; // Qwen2 always has q/k/v biases and no o_proj bias
        if (f.bool_or("use_sliding_window", false) && f.has("sliding_window"))
            h.warnings.push_back(src + ": use_sliding_window is set (window " + std::to_string(f.u32("sliding_window")) +
                                 "); this engine runs full attention, which matches only for contexts within the window");
    } else {
        // llama, mistral, qwen3: attention_bias puts biases on q, k, v and o.
        c.qkv_bias = f.bool_or("attention_bias", false);
        h.o_proj_bias = c.qkv_bias;
    }
    if (type == "qwen3") {
        c.arch = GPT_ARCH_QWEN3;
        if (f.bool_or("use_sliding_window", false))
            fail(GPT_ERR_UNSUPPORTED, "%s: use_sliding_window is true; qwen3 runs here with full attention only", src.c_str());
    }
    if (type == "mistral" && f.has("sliding_window")) {
        const uint32_t w = f.u32("sliding_window");
        if (w < c.context_length)
            h.warnings.push_back(src + ": sliding_window " + std::to_string(w) +
                                 ": this engine runs full attention, which matches Mistral for contexts up to " + std::to_string(w) +
                                 " tokens (context_length stays " + std::to_string(c.context_length) + ")");
    }
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
        read_llama_family(h, f, src);
    else
        fail(GPT_ERR_UNSUPPORTED, "%s: model_type '%s' is not supported (supported: gpt2, llama, mistral, qwen2, qwen3, phi3)", src.c_str(),
             h.model_type.c_str());
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
