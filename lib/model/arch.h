// arch.h - what an architecture is, and the one table of them (arch.cpp).
// An architecture is one file in lib/model/ holding: the weights it needs (its own struct),
// the table that binds them to the weight file's tensors (names and shapes derived from the
// config), the shape and features the backend sizes its buffers from, and the forward pass
// written with the backend's ops (lib/backend/backend.h). Adding one is that file, one line
// in arch.cpp's table, and a kernel only when it needs an operation the backends lack.
#pragma once

#include "backend/backend.h"
#include "core/tensor.h"
#include "model/config.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpt {

// One tensor an architecture expects: its file name, its shape, and the weight it fills
// (nullptr in a table made only to be read: tensor_table).
struct TensorSlot {
    std::string name;
    std::vector<uint64_t> shape;
    Weight *dst = nullptr;
};

// Called between layers; may throw (GPT_ERR_ABORTED). Never called while recording.
struct LayerHook {
    virtual void between_layers() = 0;
    virtual ~LayerHook() = default;
};

struct ForwardArgs {
    LayerHook *hook = nullptr;          // may be null
    float *host_all_logits = nullptr;   // [rows][vocab] when all logits are wanted
};

// An architecture bound to one config: owns its weights; immutable once they are bound and
// placed, so any number of contexts may run forward at once.
class Architecture {
public:
    virtual ~Architecture() = default;
    // The tensors of the config in file order, each bound to the weight it fills. A tied
    // head has no slot of its own.
    virtual std::vector<TensorSlot> tensors() = 0;
    // Dimensions and features for the backend.
    virtual ModelShape shape() const = 0;
    // One step over the executor's staged rows.
    virtual void forward(Executor &ex, const ForwardArgs &a) const = 0;
};

// The table of architectures: gpt_arch <-> name <-> factory. make_architecture throws
// GPT_ERR_UNSUPPORTED for an id it does not know.
std::unique_ptr<Architecture> make_architecture(const ModelConfig &c);
int arch_from_name(const std::string &name); // 0 for an unknown name
const char *arch_to_name(int arch);          // "?" for an unknown id

// The tensors (names and shapes, dst nullptr) of a config, in file order.
std::vector<TensorSlot> tensor_table(const ModelConfig &c);
// Parameter count (a tied head counted once).
uint64_t parameter_count(const ModelConfig &c);
// Mixture of experts: the parameters one token leaves unused (the n_experts - n_experts_used
// experts it is not routed to, on every MoE layer); 0 for a dense model.
uint64_t unused_expert_parameters(const ModelConfig &c);
// The dimensions of a config (the expert ones too), with every feature off (each architecture
// sets its own).
ModelShape shape_dims(const ModelConfig &c);

// The architectures (one file each).
std::unique_ptr<Architecture> make_gpt2(const ModelConfig &c);
std::unique_ptr<Architecture> make_llama(const ModelConfig &c);
std::unique_ptr<Architecture> make_qwen3(const ModelConfig &c);
std::unique_ptr<Architecture> make_phi3(const ModelConfig &c);
std::unique_ptr<Architecture> make_gemma2(const ModelConfig &c); // model/gemma.cpp
std::unique_ptr<Architecture> make_gemma3(const ModelConfig &c); // model/gemma.cpp
std::unique_ptr<Architecture> make_mixtral(const ModelConfig &c); // model/moe.cpp
std::unique_ptr<Architecture> make_qwen2_moe(const ModelConfig &c); // model/moe.cpp
std::unique_ptr<Architecture> make_olmoe(const ModelConfig &c); // model/moe.cpp
std::unique_ptr<Architecture> make_qwen3_moe(const ModelConfig &c); // model/moe.cpp

} // namespace gpt
