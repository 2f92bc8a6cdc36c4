// phi3.cpp - Phi-3 / Phi-3.5 / Phi-4-mini: the Llama block with the projections the checkpoints
// already fuse (qkv_proj: q, k, v rows; gate_up_proj: gate, up rows), RoPE on the first
// rope_dim dimensions of each head only (partial_rotary_factor; Phi-4-mini 0.75), longrope
// scaling (short / long factors and the attention factor, model/rope_scaling.h), an optional
// sliding window (query at p sees keys (p - w, p], as transformers' sliding-window causal mask
// for phi3), no biases, tied or untied head.
#include "model/arch.h"
#include "model/rope_scaling.h"

#include <string>

namespace gpt {

namespace {

struct Phi3Layer {
    Weight attn_norm; // [d_model]
    Weight qkv_w;     // [q_dim + 2 kv_dim, d_model]: q heads, then k heads, then v heads
    Weight attn_out;  // [d_model, q_dim]
    Weight ffn_norm;  // [d_model]
    Weight gate_up;   // [2 d_ff, d_model]: gate rows, then up rows
    Weight down;      // [d_model, d_ff]
};

class Phi3 final : public Architecture {
public:
    explicit Phi3(const ModelConfig &c) : c_(c), layers_(c.n_layers) {}

    std::vector<TensorSlot> tensors() override {
        const uint64_t d = c_.d_model, v = c_.vocab_size, qkv = c_.qkv_dim(), ff = c_.d_ff;
        std::vector<TensorSlot> t;
        t.push_back({"tok_emb.weight", {v, d}, &tok_emb_});
        for (uint32_t i = 0; i < c_.n_layers; i++) {
            Phi3Layer &l = layers_[i];
            const std::string p = "blk." + std::to_string(i) + ".";
            t.push_back({p + "attn_norm.weight", {d}, &l.attn_norm});
            t.push_back({p + "attn_qkv.weight", {qkv, d}, &l.qkv_w});
            t.push_back({p + "attn_out.weight", {d, c_.q_dim()}, &l.attn_out});
            t.push_back({p + "ffn_norm.weight", {d}, &l.ffn_norm});
            t.push_back({p + "ffn_gate_up.weight", {2 * ff, d}, &l.gate_up});
            t.push_back({p + "ffn_down.weight", {d, ff}, &l.down});
        }
        t.push_back({"out_norm.weight", {d}, &out_norm_});
        if (!c_.tied_head) t.push_back({"lm_head.weight", {v, d}, &head_});
        return t;
    }

    ModelShape shape() const override {
        ModelShape s = shape_dims(c_);
        s.gated_ffn = true;
        s.ropes.push_back(scaled_rope(c_.rope_theta, c_.rot_dim(), c_.rope_scaling));
        return s;
    }

    void forward(Executor &ex, const ForwardArgs &a) const override {
        const float eps = c_.norm_eps;
        ex.embed(tok_emb_, nullptr, 1.0f);
        for (uint32_t i = 0; i < c_.n_layers; i++) {
            const Phi3Layer &l = layers_[i];
            ex.norm(NormKind::RMS, l.attn_norm, nullptr, eps);
            ex.matmul(Act::H, l.qkv_w, nullptr, Act::QKV, Activation::NONE);
            AttentionSpec att;
            att.layer = i;
            att.rope = 0;
            att.window = c_.window_of(i); // every layer (window_layers is absent for phi3)
            ex.attention(att);
            ex.matmul(Act::ATT, l.attn_out, nullptr, Act::X, Activation::NONE);
            ex.norm(NormKind::RMS, l.ffn_norm, nullptr, eps);
            ex.matmul_glu(Act::H, l.gate_up, Act::FF, Activation::SILU);
            ex.matmul(Act::FF, l.down, nullptr, Act::X, Activation::NONE);
            if (a.hook) a.hook->between_layers();
        }
        ex.norm(NormKind::RMS, out_norm_, nullptr, eps);
        ex.logits(c_.tied_head ? tok_emb_ : head_, a.host_all_logits, 0.0f, nullptr);
    }

private:
    const ModelConfig c_;
    Weight tok_emb_; // [vocab, d_model]
    std::vector<Phi3Layer> layers_;
    Weight out_norm_; // [d_model]
    Weight head_;     // [vocab, d_model]; unused when tied
};

} // namespace

std::unique_ptr<Architecture> make_phi3(const ModelConfig &c) { return std::make_unique<Phi3>(c); }

} // namespace gpt
