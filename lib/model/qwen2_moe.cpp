// qwen2_moe.cpp - Qwen2-MoE: Qwen2 attention (q/k/v biases when qkv_bias says) and
// many small SwiGLU experts (softmax router, top-k, renormalised only with norm_topk_prob) plus
// a shared expert run on every token, scaled by sigmoid(H . shared_gate); the layers
// moe_layers marks 0 (mlp_only_layers, decoder_sparse_step) hold a dense SwiGLU FFN.
#include "model/arch.h"
#include "model/moe_ffn.h"
#include "model/rope_scaling.h"

#include <string>

namespace gpt {

namespace {

struct Qwen2MoeLayer {
    Weight attn_norm; // [d_model]
    Weight qkv_w;     // [q_dim + 2 kv_dim, d_model]: q heads, then k heads, then v heads
    Weight qkv_b;     // [q_dim + 2 kv_dim]; only with qkv_bias
    Weight attn_out;  // [d_model, q_dim]
    Weight ffn_norm;  // [d_model]
    MoeFfnWeights ffn;
};

class Qwen2Moe final : public Architecture {
public:
    explicit Qwen2Moe(const ModelConfig &c) : c_(c), layers_(c.n_layers) {}

    std::vector<TensorSlot> tensors() override {
        const uint64_t d = c_.d_model, v = c_.vocab_size, qkv = c_.qkv_dim();
        std::vector<TensorSlot> t;
        t.push_back({"tok_emb.weight", {v, d}, &tok_emb_});
        for (uint32_t i = 0; i < c_.n_layers; i++) {
            Qwen2MoeLayer &l = layers_[i];
            const std::string p = "blk." + std::to_string(i) + ".";
            t.push_back({p + "attn_norm.weight", {d}, &l.attn_norm});
            t.push_back({p + "attn_qkv.weight", {qkv, d}, &l.qkv_w});
            if (c_.qkv_bias) t.push_back({p + "attn_qkv.bias", {qkv}, &l.qkv_b});
            t.push_back({p + "attn_out.weight", {d, c_.q_dim()}, &l.attn_out});
            t.push_back({p + "ffn_norm.weight", {d}, &l.ffn_norm});
            add_moe_ffn_tensors(c_, i, p, l.ffn, t);
        }
        t.push_back({"out_norm.weight", {d}, &out_norm_});
        if (!c_.tied_head) t.push_back({"lm_head.weight", {v, d}, &head_});
        return t;
    }

    ModelShape shape() const override {
        ModelShape s = moe_shape(c_);
        s.ropes.push_back(scaled_rope(c_.rope_theta, c_.rot_dim(), c_.rope_scaling));
        return s;
    }

    void forward(Executor &ex, const ForwardArgs &a) const override {
        const float eps = c_.norm_eps;
        ex.embed(tok_emb_, nullptr, 1.0f);
        for (uint32_t i = 0; i < c_.n_layers; i++) {
            const Qwen2MoeLayer &l = layers_[i];
            ex.norm(NormKind::RMS, l.attn_norm, nullptr, eps);
            ex.matmul(Act::H, l.qkv_w, c_.qkv_bias ? &l.qkv_b : nullptr, Act::QKV, Activation::NONE);
            AttentionSpec att;
            att.layer = i;
            att.rope = 0;
            att.window = c_.window_of(i);
            ex.attention(att);
            ex.matmul(Act::ATT, l.attn_out, nullptr, Act::X, Activation::NONE);
            ex.norm(NormKind::RMS, l.ffn_norm, nullptr, eps);
            run_moe_ffn(ex, c_, i, l.ffn);
            if (a.hook) a.hook->between_layers();
        }
        ex.norm(NormKind::RMS, out_norm_, nullptr, eps);
        ex.logits(c_.tied_head ? tok_emb_ : head_, a.host_all_logits, 0.0f, nullptr);
    }

private:
    const ModelConfig c_;
    Weight tok_emb_; // [vocab, d_model]
    std::vector<Qwen2MoeLayer> layers_;
    Weight out_norm_; // [d_model]
    Weight head_;     // [vocab, d_model]; unused when tied
};

} // namespace

std::unique_ptr<Architecture> make_qwen2_moe(const ModelConfig &c) { return std::make_unique<Qwen2Moe>(c); }

} // namespace gpt
