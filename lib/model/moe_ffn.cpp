// moe_ffn.cpp - the FFN half of a mixture-of-experts layer (model/moe_ffn.h).
#include "model/moe_ffn.h"

namespace gpt {

void add_moe_ffn_tensors(const ModelConfig &c, uint32_t layer, const std::string &p, MoeFfnWeights &w,
                         std::vector<TensorSlot> &t) {
    const uint64_t d = c.d_model;
    if (!c.moe_layer(layer)) {
        t.push_back({p + "ffn_gate_up.weight", {2ull * c.d_ff, d}, &w.gate_up});
        t.push_back({p + "ffn_down.weight", {d, c.d_ff}, &w.down});
        return;
    }
    const uint64_t e = c.n_experts, fe = c.d_ff_expert, fs = c.d_ff_shared;
    t.push_back({p + "ffn_router.weight", {e, d}, &w.router});
    t.push_back({p + "ffn_experts_gate_up.weight", {e * 2 * fe, d}, &w.experts_gate_up});
    t.push_back({p + "ffn_experts_down.weight", {e * d, fe}, &w.experts_down});
    if (fs) {
        t.push_back({p + "ffn_shared_gate_up.weight", {2 * fs, d}, &w.shared_gate_up});
        t.push_back({p + "ffn_shared_down.weight", {d, fs}, &w.shared_down});
        t.push_back({p + "ffn_shared_gate.weight", {1, d}, &w.shared_gate});
    }
}

void run_moe_ffn(Executor &ex, const ModelConfig &c, uint32_t layer, const Weight &ffn_norm, const MoeFfnWeights &w) {
    if (!c.moe_layer(layer)) {
        ex.norm(NormKind::RMS, ffn_norm, nullptr, c.norm_eps);
        ex.matmul_glu(Act::H, w.gate_up, Act::FF, Activation::SILU);
        ex.matmul(Act::FF, w.down, nullptr, Act::X, Activation::NONE);
        return;
    }
    MoeSpec m;
    m.norm = &ffn_norm; // the backend norms (and may fold the norm into the router)
    m.norm_eps = c.norm_eps;
    m.router = &w.router;
    m.gate_up = &w.experts_gate_up;
    m.down = &w.experts_down;
    m.act = Activation::SILU;
    m.norm_topk = c.norm_topk_prob;
    if (c.d_ff_shared) {
        m.shared_gate_up = &w.shared_gate_up;
        m.shared_down = &w.shared_down;
        m.shared_gate = &w.shared_gate;
    }
    ex.moe(m);
}

ModelShape moe_shape(const ModelConfig &c) {
    ModelShape s = shape_dims(c);
    s.gated_ffn = true; // the dense layers' FFN (moe_layers 0), sized from d_ff
    return s;
}

} // namespace gpt
