// gemma.cpp - Gemma-2 and Gemma-3 (text). One decoder serves both; Gemma-3 only adds q/k
// norms and gives its windowed (local) layers a RoPE of their own.
//   x = tok_emb[token] * sqrt(d_model)  (the factor rounded to the embedding's dtype, as
//                                        transformers rounds its normalizer)
//   per layer: x += post_attn_norm(attn_out(attention(attn_norm(x))))
//              x += post_ffn_norm(down(gelu_tanh(gate h) * up h)),  h = ffn_norm(x)
//   logits = cap * tanh((tok_emb . out_norm(x)) / cap)   (tied head; no cap when 0)
// Every norm is RMSNorm times (1 + w): the converter stores 1 + w in f32 (docs/FORMAT.md),
// so the backend's plain norm(x) * w applies it. Attention scores are scaled by
// query_pre_attn_scalar^-1/2 and soft-capped (Gemma-2); layers flagged in window_layers see
// only the last sliding_window keys.
#include "model/arch.h"
#include "model/rope_scaling.h"

#include "core/half.h"

#include <cmath>
#include <string>

namespace gpt {

namespace {

struct GemmaLayer {
    Weight attn_norm;      // [d_model]
    Weight qkv_w;          // [q_dim + 2 kv_dim, d_model]: q heads, then k heads, then v heads
    Weight q_norm, k_norm; // [head_dim]; gemma3 only
    Weight attn_out;       // [d_model, q_dim]
    Weight attn_post_norm; // [d_model]
    Weight ffn_norm;       // [d_model]
    Weight gate_up;        // [2 d_ff, d_model]: gate rows, then up rows
    Weight down;           // [d_model, d_ff]
    Weight ffn_post_norm;  // [d_model]
};

// v rounded to the dtype the embedding is held in: transformers multiplies by
// torch.tensor(sqrt(hidden), dtype=hidden dtype).
float round_to(DType t, float v) {
    if (t == DType::F16) return f16_to_f32(f32_to_f16(v));
    if (t == DType::BF16) return bf16_to_f32(f32_to_bf16(v));
    return v;
}

class Gemma final : public Architecture {
public:
    explicit Gemma(const ModelConfig &c) : c_(c), layers_(c.n_layers) {}

    std::vector<TensorSlot> tensors() override {
        const uint64_t d = c_.d_model, v = c_.vocab_size, qkv = c_.qkv_dim(), ff = c_.d_ff, hd = c_.head_dim;
        std::vector<TensorSlot> t;
        t.push_back({"tok_emb.weight", {v, d}, &tok_emb_});
        for (uint32_t i = 0; i < c_.n_layers; i++) {
            GemmaLayer &l = layers_[i];
            const std::string p = "blk." + std::to_string(i) + ".";
            t.push_back({p + "attn_norm.weight", {d}, &l.attn_norm});
            t.push_back({p + "attn_qkv.weight", {qkv, d}, &l.qkv_w});
            if (qk_norms()) {
                t.push_back({p + "attn_q_norm.weight", {hd}, &l.q_norm});
                t.push_back({p + "attn_k_norm.weight", {hd}, &l.k_norm});
            }
            t.push_back({p + "attn_out.weight", {d, c_.q_dim()}, &l.attn_out});
            t.push_back({p + "attn_post_norm.weight", {d}, &l.attn_post_norm});
            t.push_back({p + "ffn_norm.weight", {d}, &l.ffn_norm});
            t.push_back({p + "ffn_gate_up.weight", {2 * ff, d}, &l.gate_up});
            t.push_back({p + "ffn_down.weight", {d, ff}, &l.down});
            t.push_back({p + "ffn_post_norm.weight", {d}, &l.ffn_post_norm});
        }
        t.push_back({"out_norm.weight", {d}, &out_norm_});
        return t; // the head is always the embedding (Gemma ties them)
    }

    ModelShape shape() const override {
        ModelShape s = shape_dims(c_);
        s.gated_ffn = true;
        // Gemma-3: the global layers' RoPE carries the scaling (linear), the local one does not.
        s.ropes.push_back(scaled_rope(c_.rope_theta, c_.rot_dim(), c_.rope_scaling));
        if (c_.arch == GPT_ARCH_GEMMA3) s.ropes.push_back(rope_default(c_.rope_theta_local, c_.rot_dim()));
        return s;
    }

    void forward(Executor &ex, const ForwardArgs &a) const override {
        const float eps = c_.norm_eps;
        const float embed_scale = c_.embed_scale ? round_to(tok_emb_.dtype, std::sqrt((float)c_.d_model)) : 1.0f;
        const float scale = c_.query_pre_attn_scalar > 0 ? (float)std::pow((double)c_.query_pre_attn_scalar, -0.5) : 0.0f;
        ex.embed(tok_emb_, nullptr, embed_scale);
        for (uint32_t i = 0; i < c_.n_layers; i++) {
            const GemmaLayer &l = layers_[i];
            ex.norm(NormKind::RMS, l.attn_norm, nullptr, eps);
            ex.matmul(Act::H, l.qkv_w, nullptr, Act::QKV, Activation::NONE);
            AttentionSpec att;
            att.layer = i;
            att.window = c_.window_of(i);
            // Gemma-3's windowed layers rotate with the local base (rope 1).
            att.rope = c_.arch == GPT_ARCH_GEMMA3 && att.window ? 1 : 0;
            if (qk_norms()) {
                att.q_norm = &l.q_norm;
                att.k_norm = &l.k_norm;
                att.qk_norm_eps = eps;
            }
            att.scale = scale;
            att.softcap = c_.attn_softcap;
            ex.attention(att);
            // Post-norms: project into H, then X += norm(H) * w.
            ex.matmul(Act::ATT, l.attn_out, nullptr, Act::H, Activation::NONE);
            ex.norm_add(NormKind::RMS, Act::H, l.attn_post_norm, eps);
            ex.norm(NormKind::RMS, l.ffn_norm, nullptr, eps);
            ex.matmul_glu(Act::H, l.gate_up, Act::FF, Activation::GELU_TANH);
            ex.matmul(Act::FF, l.down, nullptr, Act::H, Activation::NONE);
            ex.norm_add(NormKind::RMS, Act::H, l.ffn_post_norm, eps);
            if (a.hook) a.hook->between_layers();
        }
        ex.norm(NormKind::RMS, out_norm_, nullptr, eps);
        ex.logits(tok_emb_, a.host_all_logits, c_.logit_softcap, nullptr);
    }

private:
    bool qk_norms() const { return c_.arch == GPT_ARCH_GEMMA3; }

    const ModelConfig c_;
    Weight tok_emb_; // [vocab, d_model], also the head
    std::vector<GemmaLayer> layers_;
    Weight out_norm_; // [d_model]
};

} // namespace

std::unique_ptr<Architecture> make_gemma2(const ModelConfig &c) { return std::make_unique<Gemma>(c); }
std::unique_ptr<Architecture> make_gemma3(const ModelConfig &c) { return std::make_unique<Gemma>(c); }

} // namespace gpt
