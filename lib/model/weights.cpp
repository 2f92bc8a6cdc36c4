// weights.cpp - dispatch of the per-architecture tensor tables and forward passes.
#include "model/arch.h"
#include "model/weights.h"

#include "core/error.h"

namespace gpt {

size_t dtype_bytes(DType t) { return t == DType::F32 ? 4 : 2; }

const char *dtype_str(DType t) {
    switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    }
    return "?";
}

std::vector<TensorSlot> tensor_slots(const ModelConfig &c, ModelWeights &w) {
    w.layers.assign(c.n_layers, LayerWeights{});
    std::vector<TensorSlot> s;
    switch (c.arch) {
    case GPT_ARCH_GPT2: gpt2_tensor_slots(c, w, s); break;
    case GPT_ARCH_LLAMA: llama_tensor_slots(c, w, s); break;
    default: fail(GPT_ERR_UNSUPPORTED, "architecture %d has no tensor table", (int)c.arch);
    }
    return s;
}

void bind_tied_head(const ModelConfig &c, ModelWeights &w) {
    if (c.tied_head) w.lm_head = w.tok_emb;
}

uint64_t parameter_count(const ModelConfig &c) {
    ModelWeights w;
    uint64_t n = 0;
    for (const TensorSlot &s : tensor_slots(c, w)) {
        uint64_t k = 1;
        for (uint64_t d : s.shape) k *= d;
        n += k;
    }
    return n;
}

void model_forward(const ModelConfig &c, const ModelWeights &w, Executor &ex, const ForwardArgs &a) {
    switch (c.arch) {
    case GPT_ARCH_GPT2: gpt2_forward(c, w, ex, a); break;
    case GPT_ARCH_LLAMA: llama_forward(c, w, ex, a); break;
    default: fail(GPT_ERR_UNSUPPORTED, "architecture %d has no forward pass", (int)c.arch);
    }
}

} // namespace gpt
