// load_plan.h - what loading a model and creating one context on it would take, computed
// before anything is loaded: from the tensor table (a weight file's, or one described by the
// caller) with the device's own placement and plan rules (Device::place_weights on
// descriptors, Device::choose, Device::plan), never from arithmetic of its own. `gpt info
// --plan` prints it; docs/JETSON.md's table is made with it.
#pragma once

#include "gpt.h"
#include "backend/backend.h"
#include "format/reader.h"
#include "model/config.h"

#include <cstdint>
#include <functional>

namespace gpt {

struct LoadPlan {
    DType file_dtype = DType::F32;   // of the token embedding (the file's dtype)
    DType weight_dtype = DType::F32; // the matrices as held
    uint64_t weight_host_bytes = 0;  // gpt_model_info.host_bytes
    uint64_t weight_device_bytes = 0; // gpt_model_info.device_bytes
    uint64_t embedding_bytes = 0;    // the token embedding as held (a decode step reads one row
                                     // of it, unless the head is tied to it)
    ExecParams exec;                 // the context's resolved params
    MemoryPlan context;              // gpt_ctx_estimate_memory
};

// The dtype and group (0 for float dtypes) of one tensor of the architecture's table.
using DescribeTensor = std::function<void(const std::string &name, const std::vector<uint64_t> &shape, DType &dtype,
                                          uint32_t &group)>;

// file_bytes: the weight file's size (what a device keeping the weights in the file holds).
// weight_dtype: gpt_model_params.weight_dtype. The CPU device is never handed the
// descriptors (it would read the vectors): its weights are the file.
LoadPlan plan_load(const ModelConfig &c, const DescribeTensor &describe, uint64_t file_bytes, Device &device,
                   uint32_t weight_dtype, const gpt_ctx_params &cp);
// The same from an opened file's metadata and table (shapes checked against the config);
// no tensor data is read.
LoadPlan plan_load(const format::WeightFile &f, Device &device, uint32_t weight_dtype, const gpt_ctx_params &cp);

} // namespace gpt
