// hf_config_fields.h - what the config.json readers share (hf_config.cpp, hf_config_moe.cpp):
// typed access to a JSON object that fails naming the file and the key, and the dense
// family reader the mixture-of-experts families build on.
#pragma once

#include "convert/hf_config.h"
#include "convert/json_excerpt.h"
#include "core/error.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace gpt::convert {

using nlohmann::json;

// Typed access to one JSON object, failing with the file and key in the message.
class Fields {
public:
    Fields(const json &j, const std::string &source) : j_(j), src_(source) {}

    // Present and not null.
    bool has(const char *key) const { return j_.contains(key) && !j_[key].is_null(); }
    // Present, perhaps null.
    bool present(const char *key) const { return j_.contains(key); }
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

inline float finite_f32(double v, const char *key, const std::string &src) {
    if (!std::isfinite(v) || std::fabs(v) > 3e38) fail(GPT_ERR_FORMAT, "%s: \"%s\" is %g", src.c_str(), key, v);
    return (float)v;
}

// llama, mistral, qwen2, qwen3, phi3: dimensions, RoPE, attention biases and sliding windows
// with `type`'s rules (hf_config.cpp).
void read_llama_family(HfConfig &h, const Fields &f, const std::string &src, const std::string &type);

// mixtral, qwen2_moe, olmoe, qwen3_moe (hf_config_moe.cpp).
bool is_moe_model_type(const std::string &type);
void read_moe_family(HfConfig &h, const Fields &f, const std::string &src);

} // namespace gpt::convert
