// llama.cpp - Llama family (Llama, Mistral, Qwen2): RMSNorm, rotate-half RoPE, grouped-query
// attention (n_kv_heads divides n_heads), optional q/k/v biases (Qwen2), SwiGLU MLP, tied or
// untied head.
#include "model/arch.h"

#include <string>

namespace gpt {

void llama_tensor_slots(const ModelConfig &c, ModelWeights &w, std::vector<TensorSlot> &out) {
    const uint64_t d = c.d_model, v = c.vocab_size;
    out.push_back({"tok_emb.weight", {v, d}, &w.tok_emb});
    for (uint32_t i = 0; i < c.n_layers; i++) {
        LayerWeights &l = w.layers[i];
        const std::string p = "blk." + std::to_string(i) + ".";
        out.push_back({p + "attn_norm.weight", {d}, &l.attn_norm_w});
        out.push_back({p + "attn_qkv.weight", {c.qkv_dim(), d}, &l.attn_qkv_w});
        if (c.qkv_bias) out.push_back({p + "attn_qkv.bias", {c.qkv_dim()}, &l.attn_qkv_b});
        out.push_back({p + "attn_out.weight", {d, c.q_dim()}, &l.attn_out_w});
        out.push_back({p + "ffn_norm.weight", {d}, &l.ffn_norm_w});
        out.push_back({p + "ffn_gate_up.weight", {2ull * c.d_ff, d}, &l.ffn_up_w});
        out.push_back({p + "ffn_down.weight", {d, c.d_ff}, &l.ffn_down_w});
    }
    out.push_back({"out_norm.weight", {d}, &w.out_norm_w});
    if (!c.tied_head) out.push_back({"lm_head.weight", {v, d}, &w.lm_head});
}

void llama_forward(const ModelConfig &c, const ModelWeights &w, Executor &ex, const ForwardArgs &a) {
    ex.embed(w.tok_emb, nullptr);
    for (uint32_t i = 0; i < c.n_layers; i++) {
        const LayerWeights &l = w.layers[i];
        ex.norm(NormKind::RMS, l.attn_norm_w, nullptr, c.norm_eps);
        ex.matmul(Act::H, l.attn_qkv_w, c.qkv_bias ? &l.attn_qkv_b : nullptr, Act::QKV, Activation::NONE);
        ex.attention({i, true, c.rope_theta});
        ex.matmul(Act::ATT, l.attn_out_w, nullptr, Act::X, Activation::NONE);
        ex.norm(NormKind::RMS, l.ffn_norm_w, nullptr, c.norm_eps);
        ex.matmul_swiglu(Act::H, l.ffn_up_w, Act::FF);
        ex.matmul(Act::FF, l.ffn_down_w, nullptr, Act::X, Activation::NONE);
        if (a.hook) a.hook->between_layers();
    }
    ex.norm(NormKind::RMS, w.out_norm_w, nullptr, c.norm_eps);
    ex.logits(w.lm_head, a.host_all_logits);
}

} // namespace gpt
