// moe.cpp - the mixture-of-experts decoders. They share one layer: an RMSNorm, a fused q|k|v
// projection (biases when qkv_bias says), RoPE attention (a sliding window where the config
// sets one), an RMSNorm and the mixture-of-experts FFN (model/moe_ffn.h: router, top-k, SwiGLU
// experts, an optional shared expert, dense layers where moe_layers marks 0). The families
// differ only in their q/k norms:
//   mixtral    none; the router's top-k always renormalised (config.cpp refuses
//              norm_topk_prob 0); Llama attention with Mistral's window
//   qwen2_moe  none; q/k/v biases, many small experts plus a shared expert scaled by
//              sigmoid(H . shared_gate), renormalised only with norm_topk_prob
//   olmoe      an RMSNorm over the whole q projection (weights [q_dim]) and the whole k
//              projection ([kv_dim]) before the head split and RoPE; clip_qkv refused by the
//              converter; norm_topk_prob false in OLMoE-1B-7B
//   qwen3_moe  Qwen3's RMSNorm over head_dim on every q and k head (weights [head_dim])
#include "model/arch.h"
#include "model/moe_ffn.h"
#include "model/rope_scaling.h"

#include <string>

namespace gpt {

namespace {

enum class QkNorm : uint8_t { NONE, PER_HEAD, WHOLE };

struct MoeDecoderLayer {
    Weight attn_norm; // [d_model]
    Weight qkv_w;     // [q_dim + 2 kv_dim, d_model]: q heads, then k heads, then v heads
    Weight qkv_b;     // [q_dim + 2 kv_dim]; only with qkv_bias
    Weight q_norm;    // PER_HEAD: [head_dim]; WHOLE: [q_dim]
    Weight k_norm;    // PER_HEAD: [head_dim]; WHOLE: [kv_dim]
    Weight attn_out;  // [d_model, q_dim]
    Weight ffn_norm;  // [d_model]
    MoeFfnWeights ffn;
};

class MoeDecoder final : public Architecture {
public:
    MoeDecoder(const ModelConfig &c, QkNorm qk) : c_(c), qk_(qk), layers_(c.n_layers) {}

    std::vector<TensorSlot> tensors() override {
        const uint64_t d = c_.d_model, v = c_.vocab_size, qkv = c_.qkv_dim();
        const uint64_t q_norm = qk_ == QkNorm::WHOLE ? c_.q_dim() : c_.head_dim;
        const uint64_t k_norm = qk_ == QkNorm::WHOLE ? c_.kv_dim() : c_.head_dim;
        std::vector<TensorSlot> t;
        t.push_back({"tok_emb.weight", {v, d}, &tok_emb_});
        for (uint32_t i = 0; i < c_.n_layers; i++) {
            MoeDecoderLayer &l = layers_[i];
            const std::string p = "blk." + std::to_string(i) + ".";
            t.push_back({p + "attn_norm.weight", {d}, &l.attn_norm});
            t.push_back({p + "attn_qkv.weight", {qkv, d}, &l.qkv_w});
            if (c_.qkv_bias) t.push_back({p + "attn_qkv.bias", {qkv}, &l.qkv_b});
            if (qk_ != QkNorm::NONE) {
                t.push_back({p + "attn_q_norm.weight", {q_norm}, &l.q_norm});
                t.push_back({p + "attn_k_norm.weight", {k_norm}, &l.k_norm});
            }
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
            const MoeDecoderLayer &l = layers_[i];
            ex.norm(NormKind::RMS, l.attn_norm, nullptr, eps);
            ex.matmul(Act::H, l.qkv_w, c_.qkv_bias ? &l.qkv_b : nullptr, Act::QKV, Activation::NONE);
            AttentionSpec att;
            att.layer = i;
            att.rope = 0;
            att.window = c_.window_of(i);
            if (qk_ != QkNorm::NONE) {
                att.q_norm = &l.q_norm;
                att.k_norm = &l.k_norm;
                att.qk_norm_eps = eps; // transformers builds both norms with rms_norm_eps
                att.qk_norm_whole = qk_ == QkNorm::WHOLE;
            }
            ex.attention(att);
            ex.matmul(Act::ATT, l.attn_out, nullptr, Act::X, Activation::NONE);
            run_moe_ffn(ex, c_, i, l.ffn_norm, l.ffn); // ffn_norm, then the FFN
            if (a.hook) a.hook->between_layers();
        }
        ex.norm(NormKind::RMS, out_norm_, nullptr, eps);
        ex.logits(c_.tied_head ? tok_emb_ : head_, a.host_all_logits, 0.0f, nullptr);
    }

private:
    const ModelConfig c_;
    const QkNorm qk_;
    Weight tok_emb_; // [vocab, d_model]
    std::vector<MoeDecoderLayer> layers_;
    Weight out_norm_; // [d_model]
    Weight head_;     // [vocab, d_model]; unused when tied
};

} // namespace

std::unique_ptr<Architecture> make_mixtral(const ModelConfig &c) { return std::make_unique<MoeDecoder>(c, QkNorm::NONE); }
std::unique_ptr<Architecture> make_qwen2_moe(const ModelConfig &c) { return std::make_unique<MoeDecoder>(c, QkNorm::NONE); }
std::unique_ptr<Architecture> make_olmoe(const ModelConfig &c) { return std::make_unique<MoeDecoder>(c, QkNorm::WHOLE); }
std::unique_ptr<Architecture> make_qwen3_moe(const ModelConfig &c) { return std::make_unique<MoeDecoder>(c, QkNorm::PER_HEAD); }

} // namespace gpt
