// gpt2.cpp - GPT-2: learned positions, pre-LayerNorm blocks, fused QKV with biases,
// GELU (tanh) MLP with biases, final LayerNorm, head tied to the token embedding (or not).
// The same shape serves models trained with PyTorch scripts: the MLP's activation may be
// exact GELU (nanoGPT) or ReLU (the lecture's gpt.py), and the head may have a bias.
#include "model/arch.h"

#include <string>

namespace gpt {

namespace {

struct Gpt2Layer {
    Weight attn_norm_w, attn_norm_b; // [d_model]
    Weight qkv_w;                    // [3 d_model, d_model]: q heads, then k heads, then v heads
    Weight qkv_b;                    // [3 d_model]
    Weight attn_out_w;               // [d_model, d_model]
    Weight attn_out_b;               // [d_model]
    Weight ffn_norm_w, ffn_norm_b;   // [d_model]
    Weight up_w;                     // [d_ff, d_model]
    Weight up_b;                     // [d_ff]
    Weight down_w;                   // [d_model, d_ff]
    Weight down_b;                   // [d_model]
};

class Gpt2 final : public Architecture {
public:
    explicit Gpt2(const ModelConfig &c) : c_(c), layers_(c.n_layers) {}

    std::vector<TensorSlot> tensors() override {
        const uint64_t d = c_.d_model, v = c_.vocab_size, qkv = c_.qkv_dim(), ff = c_.d_ff;
        std::vector<TensorSlot> t;
        t.push_back({"tok_emb.weight", {v, d}, &tok_emb_});
        t.push_back({"pos_emb.weight", {c_.context_length, d}, &pos_emb_});
        for (uint32_t i = 0; i < c_.n_layers; i++) {
            Gpt2Layer &l = layers_[i];
            const std::string p = "blk." + std::to_string(i) + ".";
            t.push_back({p + "attn_norm.weight", {d}, &l.attn_norm_w});
            t.push_back({p + "attn_norm.bias", {d}, &l.attn_norm_b});
            t.push_back({p + "attn_qkv.weight", {qkv, d}, &l.qkv_w});
            t.push_back({p + "attn_qkv.bias", {qkv}, &l.qkv_b});
            t.push_back({p + "attn_out.weight", {d, c_.q_dim()}, &l.attn_out_w});
            t.push_back({p + "attn_out.bias", {d}, &l.attn_out_b});
            t.push_back({p + "ffn_norm.weight", {d}, &l.ffn_norm_w});
            t.push_back({p + "ffn_norm.bias", {d}, &l.ffn_norm_b});
            t.push_back({p + "ffn_up.weight", {ff, d}, &l.up_w});
            t.push_back({p + "ffn_up.bias", {ff}, &l.up_b});
            t.push_back({p + "ffn_down.weight", {d, ff}, &l.down_w});
            t.push_back({p + "ffn_down.bias", {d}, &l.down_b});
        }
        t.push_back({"out_norm.weight", {d}, &out_norm_w_});
        t.push_back({"out_norm.bias", {d}, &out_norm_b_});
        if (!c_.tied_head) t.push_back({"lm_head.weight", {v, d}, &head_});
        if (c_.head_bias) t.push_back({"lm_head.bias", {v}, &head_b_});
        return t;
    }

    ModelShape shape() const override { return shape_dims(c_); }

    void forward(Executor &ex, const ForwardArgs &a) const override {
        const float eps = c_.norm_eps;
        const Activation act = c_.ffn_activation == FfnActivation::GELU_ERF ? Activation::GELU_ERF
                               : c_.ffn_activation == FfnActivation::RELU   ? Activation::RELU
                                                                            : Activation::GELU_TANH;
        ex.embed(tok_emb_, &pos_emb_, 1.0f);
        for (uint32_t i = 0; i < c_.n_layers; i++) {
            const Gpt2Layer &l = layers_[i];
            ex.norm(NormKind::LAYER, l.attn_norm_w, &l.attn_norm_b, eps);
            ex.matmul(Act::H, l.qkv_w, &l.qkv_b, Act::QKV, Activation::NONE);
            AttentionSpec att;
            att.layer = i;
            ex.attention(att);
            ex.matmul(Act::ATT, l.attn_out_w, &l.attn_out_b, Act::X, Activation::NONE);
            ex.norm(NormKind::LAYER, l.ffn_norm_w, &l.ffn_norm_b, eps);
            ex.matmul(Act::H, l.up_w, &l.up_b, Act::FF, act);
            ex.matmul(Act::FF, l.down_w, &l.down_b, Act::X, Activation::NONE);
            if (a.hook) a.hook->between_layers();
        }
        ex.norm(NormKind::LAYER, out_norm_w_, &out_norm_b_, eps);
        ex.logits(c_.tied_head ? tok_emb_ : head_, a.host_all_logits, 0.0f, c_.head_bias ? &head_b_ : nullptr);
    }

private:
    const ModelConfig c_;
    Weight tok_emb_;             // [vocab, d_model]
    Weight pos_emb_;             // [context_length, d_model]
    std::vector<Gpt2Layer> layers_;
    Weight out_norm_w_, out_norm_b_; // [d_model]
    Weight head_;                // [vocab, d_model]; unused when tied
    Weight head_b_;              // [vocab]; only with head_bias
};

} // namespace

std::unique_ptr<Architecture> make_gpt2(const ModelConfig &c) { return std::make_unique<Gpt2>(c); }

} // namespace gpt
