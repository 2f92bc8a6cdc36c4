// rope_scaling.h - the RoPE frequency scalings of Hugging Face configs (`rope_scaling` /
// `rope_parameters`) that this library runs, as stored in the weight file, and the RopeSpec
// they give. The formulas follow transformers' modeling_rope_utils.py:
//   linear   (_compute_linear_scaling_rope_parameters): inv_freq / factor.
//   llama3   (_compute_llama3_parameters): wavelengths 2 pi / inv_freq longer than
//            original_context / low_freq_factor are divided by factor, shorter than
//            original_context / high_freq_factor kept, and those between blended with
//            s = (original_context / wavelen - low) / (high - low):
//            (1 - s) * inv_freq / factor + s * inv_freq.
//   longrope (_compute_longrope_parameters, Phi-3): inv_freq[i] = 1 / (ext[i] * theta^(2i/rot_dim))
//            with ext = short_factor for sequences up to original_context and long_factor beyond,
//            and cos/sin multiplied by attention_factor (resolved at conversion: the config's,
//            else sqrt(1 + ln(f) / ln(original_context)) with f = max_position_embeddings /
//            original_context, or 1 when f <= 1). transformers picks the factors per forward
//            call from the largest position in it; this library picks them per context, from
//            its max_seq (RopeSpec::long_after), so a context's positions never change meaning
//            inside its KV cache. The two agree whenever a context longer than original_context
//            is only used for sequences that are longer too, and for every short context.
#pragma once

#include "core/rope.h"
#include "format/metadata.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

enum class RopeScalingType : uint8_t { NONE, LINEAR, LLAMA3, LONGROPE };

struct RopeScaling {
    RopeScalingType type = RopeScalingType::NONE;
    float factor = 1.0f;                // linear, llama3
    float low_freq_factor = 1.0f;       // llama3
    float high_freq_factor = 4.0f;      // llama3
    uint32_t original_context = 0;      // llama3, longrope: the pre-training context length
    float attention_factor = 1.0f;      // longrope: cos and sin are multiplied by it
    std::vector<float> short_factor;    // longrope: [rot_dim / 2]
    std::vector<float> long_factor;     // longrope: [rot_dim / 2]

    // Reads the model.rope_scaling.* keys (none: no scaling); throws GPT_ERR_FORMAT naming the
    // source and key for a value out of range, GPT_ERR_UNSUPPORTED for an unknown type.
    static RopeScaling from_metadata(const format::Metadata &m, const std::string &source);
    void to_metadata(format::Metadata &m) const;
    // Values within range for a rotation of rot_dim dimensions.
    void validate(uint32_t rot_dim, const std::string &source) const;
};

// "none", "linear", "llama3", "longrope".
const char *rope_scaling_name(RopeScalingType t);

// The frequencies of a rotation of rot_dim dimensions (even) with base theta under scaling s.
RopeSpec scaled_rope(double theta, uint32_t rot_dim, const RopeScaling &s);

} // namespace gpt
