// config.cpp - hyperparameters from metadata, with limits that keep every size computed
// from them far from overflow.
#include "model/config.h"

#include "core/error.h"
#include "model/arch.h"
#include "format/keys.h"

#include <algorithm>
#include <cmath>

namespace gpt {

namespace {

// Sliding window (any architecture with rotary positions) and Gemma's fields; validate()
// checks their values.
void read_window_and_gemma(const format::Metadata &m, ModelConfig &c, const std::string &source) {
    // The per-layer flags are optional: absent, every layer is windowed.
    m.get_u32(keys::kSlidingWindow, &c.sliding_window);
    if (const std::vector<int32_t> *flags = m.get_i32s(keys::kWindowLayers)) {
        if (!c.sliding_window) fail(GPT_ERR_FORMAT, "%s: %s is set without %s", source.c_str(), keys::kWindowLayers, keys::kSlidingWindow);
        if (flags->size() != c.n_layers)
            fail(GPT_ERR_FORMAT, "%s: %s holds %zu flags for %u layers", source.c_str(), keys::kWindowLayers, flags->size(), c.n_layers);
        for (int32_t f : *flags) {
            if (f != 0 && f != 1) fail(GPT_ERR_FORMAT, "%s: %s holds %d; each flag is 0 or 1", source.c_str(), keys::kWindowLayers, f);
            c.window_layers.push_back((uint8_t)f);
        }
    }
    m.get_f32(keys::kAttnSoftcap, &c.attn_softcap);
    m.get_f32(keys::kLogitSoftcap, &c.logit_softcap);
    m.get_f32(keys::kQueryPreAttnScalar, &c.query_pre_attn_scalar);
    if (c.arch == GPT_ARCH_GEMMA3) c.rope_theta_local = m.require_f32(keys::kRopeThetaLocal);
    uint32_t flag = 0;
    c.embed_scale = m.get_u32(keys::kEmbedScale, &flag) && flag != 0;
}

// The mixture-of-experts keys; validate() checks their values. Mixtral always renormalises
// the chosen probabilities; the others say so in norm_topk_prob (absent: no, transformers'
// default for OLMoE and Qwen2-MoE).
void read_moe(const format::Metadata &m, ModelConfig &c, const std::string &source) {
    if (!c.is_moe()) {
        for (const char *k : {keys::kNExperts, keys::kNExpertsUsed, keys::kDFFExpert, keys::kDFFShared, keys::kNormTopkProb, keys::kMoeLayers})
            if (m.find(k)) fail(GPT_ERR_FORMAT, "%s: %s is set on %s, which has no mixture of experts", source.c_str(), k, arch_to_name(c.arch));
        return;
    }
    c.n_experts = m.require_u32(keys::kNExperts);
    c.n_experts_used = m.require_u32(keys::kNExpertsUsed);
    c.d_ff_expert = m.require_u32(keys::kDFFExpert);
    m.get_u32(keys::kDFFShared, &c.d_ff_shared);
    uint32_t flag = c.arch == GPT_ARCH_MIXTRAL ? 1 : 0;
    m.get_u32(keys::kNormTopkProb, &flag);
    if (flag > 1) fail(GPT_ERR_FORMAT, "%s: %s is %u; it is 0 or 1", source.c_str(), keys::kNormTopkProb, flag);
    c.norm_topk_prob = flag != 0;
    if (const std::vector<int32_t> *flags = m.get_i32s(keys::kMoeLayers)) {
        if (flags->size() != c.n_layers)
            fail(GPT_ERR_FORMAT, "%s: %s holds %zu flags for %u layers", source.c_str(), keys::kMoeLayers, flags->size(), c.n_layers);
        for (int32_t f : *flags) {
            if (f != 0 && f != 1) fail(GPT_ERR_FORMAT, "%s: %s holds %d; each flag is 0 or 1", source.c_str(), keys::kMoeLayers, f);
            c.moe_layers.push_back((uint8_t)f);
        }
    }
}

} // namespace

const char *ffn_activation_name(FfnActivation a) {
    switch (a) {
    case FfnActivation::GELU_TANH: return "gelu_tanh";
    case FfnActivation::GELU_ERF: return "gelu_erf";
    case FfnActivation::RELU: return "relu";
    }
    return "?";
}

ModelConfig ModelConfig::from_metadata(const format::Metadata &m, const std::string &source) {
    ModelConfig c;
    const std::string arch = m.require_str(keys::kArchitecture);
    const int a = arch_from_name(arch);
    if (!a) fail(GPT_ERR_UNSUPPORTED, "%s: unknown architecture '%s' (this library runs gpt2, llama, qwen3, phi3, gemma2, gemma3, mixtral, qwen2_moe, olmoe and qwen3_moe)", source.c_str(),
                  arch.c_str());
    c.arch = (gpt_arch)a;
    m.get_str(keys::kName, &c.name);
    c.n_layers = m.require_u32(keys::kNLayers);
    c.d_model = m.require_u32(keys::kDModel);
    c.n_heads = m.require_u32(keys::kNHeads);
    c.n_kv_heads = c.n_heads;
    m.get_u32(keys::kNKvHeads, &c.n_kv_heads);
    c.head_dim = c.n_heads ? c.d_model / c.n_heads : 0;
    m.get_u32(keys::kHeadDim, &c.head_dim);
    c.d_ff = m.require_u32(keys::kDFF);
    c.vocab_size = m.require_u32(keys::kVocabSize);
    c.context_length = m.require_u32(keys::kContextLength);
    c.norm_eps = m.require_f32(keys::kNormEps);
    if (c.rotary()) {
        c.rope_theta = m.require_f32(keys::kRopeTheta);
        m.get_u32(keys::kRopeDim, &c.rope_dim);
        c.rope_scaling = RopeScaling::from_metadata(m, source);
    } else {
        c.rope_theta = 0.0f;
    }
    read_window_and_gemma(m, c, source);
    read_moe(m, c, source);
    uint32_t flag = 0;
    c.tied_head = m.get_u32(keys::kTiedHead, &flag) && flag != 0;
    flag = 0;
    c.qkv_bias = c.arch == GPT_ARCH_GPT2 || (m.get_u32(keys::kQkvBias, &flag) && flag != 0);
    std::string act;
    if (m.get_str(keys::kFfnActivation, &act)) {
        if (act == "gelu_tanh") c.ffn_activation = FfnActivation::GELU_TANH;
        else if (act == "gelu_erf") c.ffn_activation = FfnActivation::GELU_ERF;
        else if (act == "relu") c.ffn_activation = FfnActivation::RELU;
        else fail(GPT_ERR_UNSUPPORTED, "%s: %s '%s' is not gelu_tanh, gelu_erf or relu", source.c_str(), keys::kFfnActivation, act.c_str());
    }
    flag = 0;
    c.head_bias = m.get_u32(keys::kHeadBias, &flag) && flag != 0;
    m.get_i32(keys::kTokBos, &c.bos_id);
    m.get_i32(keys::kTokEos, &c.eos_id);
    if (c.eos_id >= 0) c.eos_ids.push_back(c.eos_id);
    if (const std::vector<int32_t> *ids = m.get_i32s(keys::kTokEosIds)) {
        if (ids->size() > kMaxEosIds)
            fail(GPT_ERR_FORMAT, "%s: %s holds %zu ids, more than %u", source.c_str(), keys::kTokEosIds, ids->size(), kMaxEosIds);
        for (int32_t id : *ids) {
            if (id < 0 || (uint32_t)id >= c.vocab_size)
                fail(GPT_ERR_FORMAT, "%s: %s holds %d, outside the vocabulary [0, %u)", source.c_str(), keys::kTokEosIds, id,
                     c.vocab_size);
            if (std::find(c.eos_ids.begin(), c.eos_ids.end(), id) == c.eos_ids.end()) c.eos_ids.push_back(id);
        }
    }
    c.validate(source);
    return c;
}

void ModelConfig::validate(const std::string &source) const {
    const char *s = source.c_str();
    auto in_range = [&](const char *what, uint64_t v, uint64_t lo, uint64_t hi) {
        if (v < lo || v > hi)
            fail(GPT_ERR_FORMAT, "%s: %s is %llu, outside [%llu, %llu]", s, what, (unsigned long long)v,
                 (unsigned long long)lo, (unsigned long long)hi);
    };
    // Generous limits (largest open models are well inside) that keep products of two
    // fields below 2^40, so size arithmetic in uint64 cannot overflow.
    in_range(keys::kNLayers, n_layers, 1, 1024);
    in_range(keys::kDModel, d_model, 1, 1u << 16);
    in_range(keys::kNHeads, n_heads, 1, 1024);
    in_range(keys::kNKvHeads, n_kv_heads, 1, n_heads);
    in_range(keys::kHeadDim, head_dim, 1, 1024);
    in_range(keys::kDFF, d_ff, 1, 1u << 18);
    in_range(keys::kVocabSize, vocab_size, 1, 1u << 22);
    in_range(keys::kContextLength, context_length, 1, 1u << 22);
    if (n_heads % n_kv_heads != 0)
        fail(GPT_ERR_FORMAT, "%s: n_heads (%u) is not a multiple of n_kv_heads (%u)", s, n_heads, n_kv_heads);
    if (arch == GPT_ARCH_GPT2 && (n_kv_heads != n_heads || head_dim * n_heads != d_model))
        fail(GPT_ERR_FORMAT, "%s: gpt2 needs n_kv_heads == n_heads and head_dim * n_heads == d_model", s);
    if (arch != GPT_ARCH_GPT2 && (ffn_activation != FfnActivation::GELU_TANH || head_bias))
        fail(GPT_ERR_UNSUPPORTED, "%s: %s and %s apply to gpt2 only", s, keys::kFfnActivation, keys::kHeadBias);
    if (rotary() && head_dim % 2 != 0)
        fail(GPT_ERR_FORMAT, "%s: head_dim %u must be even for rotary embeddings", s, head_dim);
    if (rotary() && rope_dim != 0 && (rope_dim < 2 || rope_dim > head_dim || rope_dim % 2 != 0))
        fail(GPT_ERR_FORMAT, "%s: %s %u must be even and in [2, head_dim %u]", s, keys::kRopeDim, rope_dim, head_dim);
    if (rotary()) rope_scaling.validate(rot_dim(), source);
    if (!rotary() && rope_scaling.type != RopeScalingType::NONE)
        fail(GPT_ERR_FORMAT, "%s: RoPE scaling on an architecture without rotary positions", s);
    // Gemma-3 scales only its global layers, and only linearly (transformers' Gemma3 configs).
    if (is_gemma() && rope_scaling.type != RopeScalingType::NONE &&
        (arch != GPT_ARCH_GEMMA3 || rope_scaling.type != RopeScalingType::LINEAR))
        fail(GPT_ERR_UNSUPPORTED, "%s: %s '%s' on %s; gemma3 runs linear scaling on its global layers, gemma2 none", s,
             keys::kRopeScalingType, rope_scaling_name(rope_scaling.type), arch_to_name(arch));
    if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps) || norm_eps > 1.0f)
        fail(GPT_ERR_FORMAT, "%s: norm_eps %g is not a small positive number", s, (double)norm_eps);
    if (rotary() && (!(rope_theta > 0.0f) || !std::isfinite(rope_theta)))
        fail(GPT_ERR_FORMAT, "%s: rope_theta %g is not positive", s, (double)rope_theta);
    if (arch == GPT_ARCH_GEMMA3 && (!(rope_theta_local > 0.0f) || !std::isfinite(rope_theta_local)))
        fail(GPT_ERR_FORMAT, "%s: %s %g is not positive", s, keys::kRopeThetaLocal, (double)rope_theta_local);
    auto non_negative = [&](const char *what, float v) {
        if (!(v >= 0.0f) || !std::isfinite(v)) fail(GPT_ERR_FORMAT, "%s: %s %g is not a finite number >= 0", s, what, (double)v);
    };
    non_negative(keys::kAttnSoftcap, attn_softcap);
    non_negative(keys::kLogitSoftcap, logit_softcap);
    non_negative(keys::kQueryPreAttnScalar, query_pre_attn_scalar);
    if (sliding_window) {
        if (!rotary()) fail(GPT_ERR_FORMAT, "%s: %s is set for gpt2, which has no windowed attention", s, keys::kSlidingWindow);
        if (!window_layers.empty() && window_layers.size() != n_layers)
            fail(GPT_ERR_FORMAT, "%s: %s holds %zu flags for %u layers", s, keys::kWindowLayers, window_layers.size(), n_layers);
    }
    validate_moe(source);
    if (bos_id < -1 || bos_id >= (int64_t)vocab_size) fail(GPT_ERR_FORMAT, "%s: bos_id %d out of range", s, bos_id);
    if (eos_id < -1 || eos_id >= (int64_t)vocab_size) fail(GPT_ERR_FORMAT, "%s: eos_id %d out of range", s, eos_id);
}

void ModelConfig::validate_moe(const std::string &source) const {
    const char *s = source.c_str();
    if (!is_moe()) {
        if (n_experts || n_experts_used || d_ff_expert || d_ff_shared || norm_topk_prob || !moe_layers.empty())
            fail(GPT_ERR_FORMAT, "%s: expert fields set on %s, which has no mixture of experts", s, arch_to_name(arch));
        return;
    }
    auto in_range = [&](const char *what, uint64_t v, uint64_t lo, uint64_t hi) {
        if (v < lo || v > hi)
            fail(GPT_ERR_FORMAT, "%s: %s is %llu, outside [%llu, %llu]", s, what, (unsigned long long)v, (unsigned long long)lo,
                 (unsigned long long)hi);
    };
    // With d_model <= 2^16 the stacked expert matrices stay below 2^8 * 2^19 * 2^16 = 2^43 elements.
    in_range(keys::kNExperts, n_experts, 1, kMaxExperts);
    in_range(keys::kNExpertsUsed, n_experts_used, 1, n_experts);
    in_range(keys::kDFFExpert, d_ff_expert, 1, 1u << 18);
    in_range(keys::kDFFShared, d_ff_shared, 0, 1u << 18);
    if (d_ff_shared && arch != GPT_ARCH_QWEN2_MOE)
        fail(GPT_ERR_FORMAT, "%s: %s is set on %s; only qwen2_moe has a shared expert", s, keys::kDFFShared, arch_to_name(arch));
    if (arch == GPT_ARCH_MIXTRAL && !norm_topk_prob)
        fail(GPT_ERR_FORMAT, "%s: %s is 0 on mixtral, which always renormalises", s, keys::kNormTopkProb);
    if (!moe_layers.empty() && moe_layers.size() != n_layers)
        fail(GPT_ERR_FORMAT, "%s: %s holds %zu flags for %u layers", s, keys::kMoeLayers, moe_layers.size(), n_layers);
    for (uint8_t f : moe_layers)
        if (f > 1) fail(GPT_ERR_FORMAT, "%s: %s holds %u; each flag is 0 or 1", s, keys::kMoeLayers, (unsigned)f);
}

void ModelConfig::to_metadata(format::Metadata &m) const {
    using format::MetaValue;
    m.set(keys::kArchitecture, MetaValue::of_str(arch_to_name(arch)));
    if (!name.empty()) m.set(keys::kName, MetaValue::of_str(name));
    m.set(keys::kNLayers, MetaValue::of_u32(n_layers));
    m.set(keys::kDModel, MetaValue::of_u32(d_model));
    m.set(keys::kNHeads, MetaValue::of_u32(n_heads));
    m.set(keys::kNKvHeads, MetaValue::of_u32(n_kv_heads));
    m.set(keys::kHeadDim, MetaValue::of_u32(head_dim));
    m.set(keys::kDFF, MetaValue::of_u32(d_ff));
    m.set(keys::kVocabSize, MetaValue::of_u32(vocab_size));
    m.set(keys::kContextLength, MetaValue::of_u32(context_length));
    m.set(keys::kNormEps, MetaValue::of_f32(norm_eps));
    if (rotary()) {
        m.set(keys::kRopeTheta, MetaValue::of_f32(rope_theta));
        if (rope_dim && rope_dim != head_dim) m.set(keys::kRopeDim, MetaValue::of_u32(rope_dim));
        rope_scaling.to_metadata(m);
    }
    if (sliding_window) {
        m.set(keys::kSlidingWindow, MetaValue::of_u32(sliding_window));
        if (!window_layers.empty())
            m.set(keys::kWindowLayers, MetaValue::of_i32s(std::vector<int32_t>(window_layers.begin(), window_layers.end())));
    }
    if (attn_softcap > 0) m.set(keys::kAttnSoftcap, MetaValue::of_f32(attn_softcap));
    if (logit_softcap > 0) m.set(keys::kLogitSoftcap, MetaValue::of_f32(logit_softcap));
    if (query_pre_attn_scalar > 0) m.set(keys::kQueryPreAttnScalar, MetaValue::of_f32(query_pre_attn_scalar));
    if (arch == GPT_ARCH_GEMMA3) m.set(keys::kRopeThetaLocal, MetaValue::of_f32(rope_theta_local));
    if (embed_scale) m.set(keys::kEmbedScale, MetaValue::of_u32(1));
    if (is_moe()) {
        m.set(keys::kNExperts, MetaValue::of_u32(n_experts));
        m.set(keys::kNExpertsUsed, MetaValue::of_u32(n_experts_used));
        m.set(keys::kDFFExpert, MetaValue::of_u32(d_ff_expert));
        if (d_ff_shared) m.set(keys::kDFFShared, MetaValue::of_u32(d_ff_shared));
        m.set(keys::kNormTopkProb, MetaValue::of_u32(norm_topk_prob ? 1 : 0));
        if (!moe_layers.empty()) m.set(keys::kMoeLayers, MetaValue::of_i32s(std::vector<int32_t>(moe_layers.begin(), moe_layers.end())));
    }
    m.set(keys::kTiedHead, MetaValue::of_u32(tied_head ? 1 : 0));
    m.set(keys::kQkvBias, MetaValue::of_u32(qkv_bias ? 1 : 0));
    // Only when they differ from GPT-2's (older readers then still read every GPT-2 file).
    if (ffn_activation != FfnActivation::GELU_TANH) m.set(keys::kFfnActivation, MetaValue::of_str(ffn_activation_name(ffn_activation)));
    if (head_bias) m.set(keys::kHeadBias, MetaValue::of_u32(1));
    m.set(keys::kTokBos, MetaValue::of_i32(bos_id));
    m.set(keys::kTokEos, MetaValue::of_i32(eos_id));
    // The list only when it says more than eos_id (eos_id first, as from_metadata reads it).
    std::vector<int32_t> ids;
    if (eos_id >= 0) ids.push_back(eos_id);
    for (int32_t id : eos_ids)
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    if (ids.size() > 1) m.set(keys::kTokEosIds, MetaValue::of_i32s(ids));
}

} // namespace gpt
