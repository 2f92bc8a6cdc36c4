// arch.h - what each architecture file provides: its tensor table and its forward pass,
// written with the backend's shared ops (lib/backend/backend.h).
#pragma once

#include "backend/backend.h"
#include "model/config.h"
#include "model/weights.h"

#include <vector>

namespace gpt {

// Called between layers; may throw (GPT_ERR_ABORTED). Never called while recording.
struct LayerHook {
    virtual void between_layers() = 0;
    virtual ~LayerHook() = default;
};

struct ForwardArgs {
    LayerHook *hook = nullptr;          // may be null
    float *host_all_logits = nullptr;   // [rows][vocab] when all logits are wanted
};

void gpt2_tensor_slots(const ModelConfig &c, ModelWeights &w, std::vector<TensorSlot> &out);
void gpt2_forward(const ModelConfig &c, const ModelWeights &w, Executor &ex, const ForwardArgs &a);

void llama_tensor_slots(const ModelConfig &c, ModelWeights &w, std::vector<TensorSlot> &out);
void llama_forward(const ModelConfig &c, const ModelWeights &w, Executor &ex, const ForwardArgs &a);

// Dispatch on c.arch.
void model_forward(const ModelConfig &c, const ModelWeights &w, Executor &ex, const ForwardArgs &a);

} // namespace gpt
