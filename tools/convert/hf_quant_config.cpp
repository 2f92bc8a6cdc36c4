// hf_quant_config.cpp - config.json's quantization_config (see hf_quant_config.h).
#include "convert/hf_quant_config.h"

#include "convert/hf_config_fields.h"

#include <algorithm>
#include <cctype>

namespace gpt::convert {

namespace {

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char)std::tolower(c); });
    return s;
}

// group_size: a positive integer or -1.
int64_t read_group(const json &q, const char *key, const std::string &src) {
    const json &v = q[key];
    if (!v.is_number_integer() || (v.get<int64_t>() <= 0 && v.get<int64_t>() != -1) || v.get<int64_t>() > (1 << 24))
        fail(GPT_ERR_FORMAT, "%s: quantization_config.%s must be a positive integer or -1, not %s", src.c_str(), key,
             json_excerpt(v).c_str());
    return v.get<int64_t>();
}

uint32_t read_bits(const Fields &f, const char *key, const std::string &src, bool awq) {
    const uint32_t bits = f.u32(key);
    if (bits != 4 && (awq || bits != 8))
        fail(GPT_ERR_UNSUPPORTED, "%s: quantization_config.%s is %u; %s", src.c_str(), key, bits,
             awq ? "AWQ imports 4-bit checkpoints only" : "GPTQ imports 4-bit and 8-bit checkpoints only");
    return bits;
}

void read_gptq(QuantConfig &c, const json &q, const Fields &f, const std::string &src) {
    c.method = QuantMethod::GPTQ;
    c.bits = read_bits(f, "bits", src, false);
    if (!f.has("group_size")) fail(GPT_ERR_FORMAT, "%s: quantization_config.group_size is missing", src.c_str());
    c.group = read_group(q, "group_size", src);
    c.sym = f.bool_or("sym", true);
    c.desc_act = f.bool_or("desc_act", false);
    // transformers / optimum write checkpoint_format, GPTQModel format; v1 is the default.
    const char *key = f.has("checkpoint_format") ? "checkpoint_format" : "format";
    const std::string fmt = lower(f.str_or(key, "gptq"));
    if (fmt == "gptq") c.zeros_minus_one = true;
    else if (fmt != "gptq_v2")
        fail(GPT_ERR_UNSUPPORTED, "%s: quantization_config.%s is \"%s\"; only the \"gptq\" (v1) and \"gptq_v2\" packings import "
                                  "(marlin, bitblas and other kernel-specific packings do not)", src.c_str(), key, fmt.c_str());
}

void read_awq(QuantConfig &c, const json &q, const Fields &f, const std::string &src) {
    c.method = QuantMethod::AWQ;
    // transformers' AwqConfig spells them bits / group_size, AutoAWQ's own file w_bit / q_group_size.
    c.bits = read_bits(f, f.has("bits") ? "bits" : "w_bit", src, true);
    const char *gkey = f.has("group_size") ? "group_size" : "q_group_size";
    if (!f.has(gkey)) fail(GPT_ERR_FORMAT, "%s: quantization_config.group_size is missing", src.c_str());
    c.group = read_group(q, gkey, src);
    if (!f.bool_or("zero_point", true))
        fail(GPT_ERR_UNSUPPORTED, "%s: quantization_config.zero_point is false; AWQ's GEMM packing has zero points, "
                                  "a checkpoint without them is not importable", src.c_str());
    const std::string version = lower(f.str_or("version", "gemm"));
    if (version != "gemm")
        fail(GPT_ERR_UNSUPPORTED, "%s: quantization_config.version is \"%s\"; only AWQ's \"gemm\" packing imports "
                                  "(gemv, gemv_fast, marlin and exllama packings do not)", src.c_str(), version.c_str());
    c.sym = false;
}

} // namespace

std::string QuantConfig::describe() const {
    if (method == QuantMethod::NONE) return "none";
    std::string s = method == QuantMethod::GPTQ ? "gptq " : "awq ";
    s += std::to_string(bits) + "-bit group " + (group < 0 ? std::string("-1 (whole row)") : std::to_string(group));
    if (method == QuantMethod::GPTQ) {
        s += zeros_minus_one ? " (v1" : " (v2";
        s += desc_act ? ", desc_act)" : ")";
    }
    return s;
}

QuantConfig parse_quant_config(const std::string &text, const std::string &src) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception &) {
        fail(GPT_ERR_FORMAT, "%s: not valid JSON", src.c_str());
    }
    QuantConfig c;
    if (!j.is_object() || !j.contains("quantization_config") || j["quantization_config"].is_null()) return c;
    const json &q = j["quantization_config"];
    if (!q.is_object())
        fail(GPT_ERR_FORMAT, "%s: \"quantization_config\" must be an object, not %s", src.c_str(), json_excerpt(q).c_str());
    const std::string where = src + ": quantization_config"; // Fields keeps a reference
    const Fields f(q, where);
    if (!f.has("quant_method")) fail(GPT_ERR_FORMAT, "%s: quantization_config.quant_method is missing", src.c_str());
    const std::string method = lower(f.str_or("quant_method", ""));
    if (method == "gptq") read_gptq(c, q, f, src);
    else if (method == "awq") read_awq(c, q, f, src);
    else
        fail(GPT_ERR_UNSUPPORTED, "%s: quantization_config.quant_method is \"%s\"; only \"gptq\" and \"awq\" checkpoints import "
                                  "(dequantize others to float first)", src.c_str(), method.c_str());
    return c;
}

} // namespace gpt::convert
