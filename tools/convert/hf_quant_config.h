// hf_quant_config.h - config.json's "quantization_config" for the checkpoints the converter
// imports: GPTQ (4 or 8 bits, checkpoint_format "gptq" = v1, whose qzeros hold zero - 1, or
// "gptq_v2") and AWQ (4 bits, version "gemm"). Any other method, packing or bit width is
// refused with a message naming config.json, the key and its value.
#pragma once

#include <cstdint>
#include <string>

namespace gpt::convert {

enum class QuantMethod : uint8_t { NONE, GPTQ, AWQ };

struct QuantConfig {
    QuantMethod method = QuantMethod::NONE;
    uint32_t bits = 0;            // 4 or 8 (AWQ: 4)
    int64_t group = 0;            // input columns per scale; -1: one group per row (the whole K)
    bool sym = true;              // GPTQ: symmetric (every zero the midpoint); informative only
    bool desc_act = false;        // GPTQ act-order: g_idx may be a permutation of the groups
    bool zeros_minus_one = false; // GPTQ v1: qzeros store zero - 1
    std::string describe() const; // "gptq 4-bit group 128 (v1)", for messages and the summary
};

// Parses config.json's text; method NONE when it has no quantization_config. Throws
// GPT_ERR_UNSUPPORTED / GPT_ERR_FORMAT naming `source` and the key.
QuantConfig parse_quant_config(const std::string &config_text, const std::string &source);

} // namespace gpt::convert
