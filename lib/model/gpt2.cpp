// gpt2.cpp - GPT-2: learned positions, pre-LayerNorm blocks, fused QKV with biases,
// GELU (tanh) MLP, final LayerNorm, head tied to the token embedding (or not).
#include "model/arch.h"

#include <string>

namespace gpt {

void gpt2_tensor_slots(const ModelConfig &c, ModelWeights &w, std::vector<TensorSlot> &out) {
    const uint64_t d = c.d_model, v = c.vocab_size;
    out.push_back({"tok_emb.weight", {v, d}, &w.tok_emb});
    out.push_back({"pos_emb.weight", {c.context_length, d}, &w.pos_emb});
    for (uint32_t i = 0; i < c.n_layers; i++) {
        LayerWeights &l = w.layers[i];
        const std::string p = "blk." + std::to_string(i) + ".";
        out.push_back({p + "attn_norm.weight", {d}, &l.attn_norm_w});
        out.push_back({p + "attn_norm.bias", {d}, &l.attn_norm_b});
        out.push_back({p + "attn_qkv.weight", {c.qkv_dim(), d}, &l.attn_qkv_w});
        out.push_back({p + "attn_qkv.bias", {c.qkv_dim()}, &l.attn_qkv_b});
        out.push_back({p + "attn_out.weight", {d, c.q_dim()}, &l.attn_out_w});
        out.push_back({p + "attn_out.bias", {d}, &l.attn_out_b});
        out.push_back({p + "ffn_norm.weight", {d}, &l.ffn_norm_w});
        out.push_back({p + "ffn_norm.bias", {d}, &l.ffn_norm_b});
        out.push_back({p + "ffn_up.weight", {c.d_ff, d}, &l.ffn_up_w});
        out.push_back({p + "ffn_up.bias", {c.d_ff}, &l.ffn_up_b});
        out.push_back({p + "ffn_down.weight", {d, c.d_ff}, &l.ffn_down_w});
        out.push_back({p + "ffn_down.bias", {d}, &l.ffn_down_b});
    }
    out.push_back({"out_norm.weight", {d}, &w.out_norm_w});
    out.push_back({"out_norm.bias", {d}, &w.out_norm_b});
    if (!c.tied_head) out.push_back({"lm_head.weight", {v, d}, &w.lm_head});
}

void gpt2_forward(const ModelConfig &c, const ModelWeights &w, Executor &ex, const ForwardArgs &a) {
    ex.embed(w.tok_emb, &w.pos_emb);
    for (uint32_t i = 0; i < c.n_layers; i++) {
        const LayerWeights &l = w.layers[i];
        ex.norm(NormKind::LAYER, l.attn_norm_w, &l.attn_norm_b, c.norm_eps);
        ex.matmul(Act::H, l.attn_qkv_w, &l.attn_qkv_b, Act::QKV, Activation::NONE);
        ex.attention({i, false, 0.0f});
        ex.matmul(Act::ATT, l.attn_out_w, &l.attn_out_b, Act::X, Activation::NONE);
        ex.norm(NormKind::LAYER, l.ffn_norm_w, &l.ffn_norm_b, c.norm_eps);
        ex.matmul(Act::H, l.ffn_up_w, &l.ffn_up_b, Act::FF, Activation::GELU_TANH);
        ex.matmul(Act::FF, l.ffn_down_w, &l.ffn_down_b, Act::X, Activation::NONE);
        if (a.hook) a.hook->between_layers();
    }
    ex.norm(NormKind::LAYER, w.out_norm_w, &w.out_norm_b, c.norm_eps);
    ex.logits(w.lm_head, a.host_all_logits);
}

} // namespace gpt
