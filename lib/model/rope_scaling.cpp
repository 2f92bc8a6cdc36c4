// rope_scaling.cpp - scaled RoPE frequencies (see rope_scaling.h), stored and checked.
#include "model/rope_scaling.h"

#include "core/error.h"
#include "format/keys.h"

#include <cmath>

namespace gpt {

namespace {

constexpr double kPi = 3.14159265358979323846;

bool finite_in(float v, float lo, float hi) { return std::isfinite(v) && v >= lo && v <= hi; }

} // namespace

const char *rope_scaling_name(RopeScalingType t) {
    switch (t) {
    case RopeScalingType::NONE: return "none";
    case RopeScalingType::LINEAR: return "linear";
    case RopeScalingType::LLAMA3: return "llama3";
    case RopeScalingType::LONGROPE: return "longrope";
    }
    return "?";
}

RopeScaling RopeScaling::from_metadata(const format::Metadata &m, const std::string &source) {
    RopeScaling s;
    std::string type;
    if (!m.get_str(keys::kRopeScalingType, &type)) return s;
    const char *src = source.c_str();
    if (type == "linear") s.type = RopeScalingType::LINEAR;
    else if (type == "llama3") s.type = RopeScalingType::LLAMA3;
    else if (type == "longrope") s.type = RopeScalingType::LONGROPE;
    else fail(GPT_ERR_UNSUPPORTED, "%s: %s '%s' is not one this library runs (linear, llama3, longrope)", src, keys::kRopeScalingType, type.c_str());
    if (s.type == RopeScalingType::LINEAR || s.type == RopeScalingType::LLAMA3) s.factor = m.require_f32(keys::kRopeScalingFactor);
    if (s.type == RopeScalingType::LLAMA3) {
        s.low_freq_factor = m.require_f32(keys::kRopeScalingLowFreq);
        s.high_freq_factor = m.require_f32(keys::kRopeScalingHighFreq);
    }
    if (s.type == RopeScalingType::LLAMA3 || s.type == RopeScalingType::LONGROPE)
        s.original_context = m.require_u32(keys::kRopeScalingOrigContext);
    if (s.type == RopeScalingType::LONGROPE) {
        s.attention_factor = m.require_f32(keys::kRopeScalingAttnFactor);
        const std::vector<float> *sf = m.get_f32s(keys::kRopeScalingShort), *lf = m.get_f32s(keys::kRopeScalingLong);
        if (!sf || !lf) fail(GPT_ERR_FORMAT, "%s: longrope needs %s and %s (f32 arrays)", src, keys::kRopeScalingShort, keys::kRopeScalingLong);
        s.short_factor = *sf;
        s.long_factor = *lf;
    }
    return s;
}

void RopeScaling::to_metadata(format::Metadata &m) const {
    using format::MetaValue;
    if (type == RopeScalingType::NONE) return;
    m.set(keys::kRopeScalingType, MetaValue::of_str(rope_scaling_name(type)));
    if (type == RopeScalingType::LINEAR || type == RopeScalingType::LLAMA3) m.set(keys::kRopeScalingFactor, MetaValue::of_f32(factor));
    if (type == RopeScalingType::LLAMA3) {
        m.set(keys::kRopeScalingLowFreq, MetaValue::of_f32(low_freq_factor));
        m.set(keys::kRopeScalingHighFreq, MetaValue::of_f32(high_freq_factor));
    }
    if (type == RopeScalingType::LLAMA3 || type == RopeScalingType::LONGROPE)
        m.set(keys::kRopeScalingOrigContext, MetaValue::of_u32(original_context));
    if (type == RopeScalingType::LONGROPE) {
        m.set(keys::kRopeScalingAttnFactor, MetaValue::of_f32(attention_factor));
        m.set(keys::kRopeScalingShort, MetaValue::of_f32s(short_factor));
        m.set(keys::kRopeScalingLong, MetaValue::of_f32s(long_factor));
    }
}

void RopeScaling::validate(uint32_t rot_dim, const std::string &source) const {
    const char *src = source.c_str();
    if (type == RopeScalingType::NONE) return;
    // Factors below 1 would compress positions (no published model does); above 2^20 is nonsense.
    if ((type == RopeScalingType::LINEAR || type == RopeScalingType::LLAMA3) && !finite_in(factor, 1.0f, 1048576.0f))
        fail(GPT_ERR_FORMAT, "%s: %s %g is not in [1, 2^20]", src, keys::kRopeScalingFactor, (double)factor);
    if (type == RopeScalingType::LLAMA3) {
        if (!finite_in(low_freq_factor, 1e-6f, 1e6f) || !finite_in(high_freq_factor, 1e-6f, 1e6f) || !(high_freq_factor > low_freq_factor))
            fail(GPT_ERR_FORMAT, "%s: llama3 RoPE scaling needs 0 < %s (%g) < %s (%g)", src, keys::kRopeScalingLowFreq,
                 (double)low_freq_factor, keys::kRopeScalingHighFreq, (double)high_freq_factor);
    }
    if ((type == RopeScalingType::LLAMA3 || type == RopeScalingType::LONGROPE) && (original_context < 1 || original_context > (1u << 22)))
        fail(GPT_ERR_FORMAT, "%s: %s %u is outside [1, 2^22]", src, keys::kRopeScalingOrigContext, original_context);
    if (type == RopeScalingType::LONGROPE) {
        if (!finite_in(attention_factor, 1e-3f, 1e3f))
            fail(GPT_ERR_FORMAT, "%s: %s %g is not a positive number", src, keys::kRopeScalingAttnFactor, (double)attention_factor);
        for (const auto *f : {&short_factor, &long_factor}) {
            const char *key = f == &short_factor ? keys::kRopeScalingShort : keys::kRopeScalingLong;
            if (f->size() != rot_dim / 2)
                fail(GPT_ERR_FORMAT, "%s: %s holds %zu values; the rotation of %u dimensions needs %u", src, key, f->size(), rot_dim, rot_dim / 2);
            for (float v : *f)
                if (!finite_in(v, 1e-6f, 1e9f)) fail(GPT_ERR_FORMAT, "%s: %s holds %g, not a positive factor", src, key, (double)v);
        }
    }
}

RopeSpec scaled_rope(double theta, uint32_t rot_dim, const RopeScaling &s) {
    RopeSpec r = rope_default(theta, rot_dim);
    switch (s.type) {
    case RopeScalingType::NONE: break;
    case RopeScalingType::LINEAR:
        for (double &f : r.inv_freq) f /= s.factor;
        break;
    case RopeScalingType::LLAMA3: {
        const double low_wavelen = s.original_context / (double)s.low_freq_factor;
        const double high_wavelen = s.original_context / (double)s.high_freq_factor;
        for (double &f : r.inv_freq) {
            const double wavelen = 2 * kPi / f;
            if (wavelen > low_wavelen) {
                f /= s.factor;
            } else if (wavelen >= high_wavelen) {
                const double smooth = (s.original_context / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
                f = (1 - smooth) * f / s.factor + smooth * f;
            }
        }
        break;
    }
    case RopeScalingType::LONGROPE: {
        RopeSpec base = r;
        for (uint32_t i = 0; i < r.half(); i++) {
            r.inv_freq[i] = base.inv_freq[i] / s.short_factor[i];
            r.inv_freq_long.push_back(base.inv_freq[i] / s.long_factor[i]);
        }
        r.long_after = s.original_context;
        r.attention_factor = s.attention_factor;
        break;
    }
    }
    return r;
}

} // namespace gpt
