// arch.cpp - the table of architectures and what is derived from it; the forward-pass and
// tensor-table dispatch goes through here and nowhere else.
#include "model/arch.h"

#include "core/error.h"

namespace gpt {

namespace {

struct ArchEntry {
    gpt_arch id;
    const char *name;
    std::unique_ptr<Architecture> (*make)(const ModelConfig &);
};

constexpr ArchEntry kArchitectures[] = {
    {GPT_ARCH_GPT2, "gpt2", make_gpt2},
    {GPT_ARCH_LLAMA, "llama", make_llama},
    {GPT_ARCH_QWEN3, "qwen3", make_qwen3},
    {GPT_ARCH_PHI3, "phi3", make_phi3},
    {GPT_ARCH_GEMMA2, "gemma2", make_gemma2},
    {GPT_ARCH_GEMMA3, "gemma3", make_gemma3},
    {GPT_ARCH_MIXTRAL, "mixtral", make_mixtral},
    {GPT_ARCH_QWEN2_MOE, "qwen2_moe", make_qwen2_moe},
    {GPT_ARCH_OLMOE, "olmoe", make_olmoe},
    {GPT_ARCH_QWEN3_MOE, "qwen3_moe", make_qwen3_moe},
};

} // namespace

std::unique_ptr<Architecture> make_architecture(const ModelConfig &c) {
    for (const ArchEntry &e : kArchitectures)
        if (e.id == c.arch) return e.make(c);
    fail(GPT_ERR_UNSUPPORTED, "architecture %d is not one this library runs", (int)c.arch);
}

int arch_from_name(const std::string &name) {
    for (const ArchEntry &e : kArchitectures)
        if (name == e.name) return e.id;
    return 0;
}

const char *arch_to_name(int arch) {
    for (const ArchEntry &e : kArchitectures)
        if (e.id == arch) return e.name;
    return "?";
}

std::vector<TensorSlot> tensor_table(const ModelConfig &c) {
    std::vector<TensorSlot> slots = make_architecture(c)->tensors();
    for (TensorSlot &s : slots) s.dst = nullptr;
    return slots;
}

uint64_t parameter_count(const ModelConfig &c) {
    uint64_t n = 0;
    for (const TensorSlot &s : tensor_table(c)) {
        uint64_t k = 1;
        for (uint64_t d : s.shape) k *= d;
        n += k;
    }
    return n;
}

uint64_t unused_expert_parameters(const ModelConfig &c) {
    uint64_t n = 0;
    for (uint32_t l = 0; l < c.n_layers; l++)
        if (c.moe_layer(l)) n += (uint64_t)(c.n_experts - c.n_experts_used) * 3 * c.d_model * c.d_ff_expert;
    return n;
}

ModelShape shape_dims(const ModelConfig &c) {
    ModelShape s;
    s.n_layers = c.n_layers;
    s.d_model = c.d_model;
    s.n_heads = c.n_heads;
    s.n_kv_heads = c.n_kv_heads;
    s.head_dim = c.head_dim;
    s.d_ff = c.d_ff;
    s.vocab_size = c.vocab_size;
    s.n_experts = c.n_experts;
    s.n_experts_used = c.n_experts_used;
    s.d_ff_expert = c.d_ff_expert;
    s.d_ff_shared = c.d_ff_shared;
    return s;
}

} // namespace gpt
