// hf_model_moe.cpp - a layer's experts, router and shared expert (see hf_model_moe.h).
#include "convert/hf_model_moe.h"

namespace gpt::convert {

namespace {

void add(TensorPlan &p, const std::string &name, std::vector<uint64_t> shape, std::vector<SrcMatrix> parts) {
    p.tensors.push_back(PlannedTensor{name, std::move(shape), std::move(parts)});
}

// The names of expert e's gate, up and down projections under `mlp`.
struct ExpertNames {
    std::string gate, up, down;
};
ExpertNames expert_names(const std::string &mlp, bool mixtral, uint32_t e) {
    const std::string x = mlp + "experts." + std::to_string(e) + ".";
    if (mixtral) return {x + "w1.weight", x + "w3.weight", x + "w2.weight"};
    return {x + "gate_proj.weight", x + "up_proj.weight", x + "down_proj.weight"};
}

} // namespace

void plan_moe_ffn(TensorPlan &p, Source &s, uint32_t layer) {
    const ModelConfig &c = p.config;
    const uint64_t d = c.d_model, n = c.n_experts, ff = c.d_ff_expert;
    const bool mixtral = c.arch == GPT_ARCH_MIXTRAL;
    const std::string hf = "model.layers." + std::to_string(layer) + ".", o = "blk." + std::to_string(layer) + ".";
    // Mixtral's checkpoints name the block block_sparse_moe; transformers 5 renames it mlp.
    const std::string mlp = hf + (mixtral && !s.find(hf + "mlp.gate.weight") ? "block_sparse_moe." : "mlp.");

    add(p, o + "ffn_router.weight", {n, d}, {s.matrix(mlp + "gate.weight", n, d)});

    const std::string fused_gate_up = mlp + "experts.gate_up_proj", fused_down = mlp + "experts.down_proj";
    if (s.find(fused_gate_up) || s.find(fused_down)) {
        // [E, 2 ff, d] and [E, d, ff] are already our row order.
        add(p, o + "ffn_experts_gate_up.weight", {n * 2 * ff, d}, {s.stacked(fused_gate_up, n, 2 * ff, d)});
        add(p, o + "ffn_experts_down.weight", {n * d, ff}, {s.stacked(fused_down, n, d, ff)});
    } else {
        std::vector<SrcMatrix> gate_up, down;
        gate_up.reserve(2 * n);
        down.reserve(n);
        for (uint32_t e = 0; e < n; e++) {
            const ExpertNames x = expert_names(mlp, mixtral, e);
            gate_up.push_back(s.matrix(x.gate, ff, d));
            gate_up.push_back(s.matrix(x.up, ff, d));
            down.push_back(s.matrix(x.down, d, ff));
        }
        add(p, o + "ffn_experts_gate_up.weight", {n * 2 * ff, d}, std::move(gate_up));
        add(p, o + "ffn_experts_down.weight", {n * d, ff}, std::move(down));
    }

    if (c.d_ff_shared) {
        const uint64_t fs = c.d_ff_shared;
        const std::string se = mlp + "shared_expert.";
        add(p, o + "ffn_shared_gate_up.weight", {2 * fs, d}, {s.matrix(se + "gate_proj.weight", fs, d), s.matrix(se + "up_proj.weight", fs, d)});
        add(p, o + "ffn_shared_down.weight", {d, fs}, {s.matrix(se + "down_proj.weight", d, fs)});
        add(p, o + "ffn_shared_gate.weight", {1, d}, {s.matrix(mlp + "shared_expert_gate.weight", 1, d)});
    }
}

} // namespace gpt::convert
