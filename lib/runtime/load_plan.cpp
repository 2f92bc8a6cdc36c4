// load_plan.cpp - a load and a context planned from descriptors (load_plan.h).
#include "runtime/load_plan.h"

#include "core/error.h"
#include "core/quant.h"
#include "model/arch.h"
#include "runtime/context.h"

#include <string>

namespace gpt {

LoadPlan plan_load(const ModelConfig &c, const DescribeTensor &describe, uint64_t file_bytes, Device &device,
                   uint32_t weight_dtype, const gpt_ctx_params &cp) {
    std::unique_ptr<Architecture> arch = make_architecture(c);
    std::vector<Weight *> weights;
    for (const TensorSlot &slot : arch->tensors()) {
        Weight &w = *slot.dst;
        w.data = nullptr; // descriptors only: a planner reads no data
        describe(slot.name, slot.shape, w.dtype, w.group);
        w.rows = slot.shape[0];
        w.cols = slot.shape.size() > 1 ? slot.shape[1] : 1;
        weights.push_back(&w);
    }
    if (weights.empty()) fail(GPT_ERR_FORMAT, "the %s architecture has no tensors", arch_to_name(c.arch));
    LoadPlan plan;
    plan.file_dtype = weights.front()->dtype;
    if (weight_dtype != GPT_DTYPE_AUTO && !is_dtype(weight_dtype))
        fail(GPT_ERR_INVALID_ARG, "weight_dtype %u is not a gpt_dtype", weight_dtype);
    const DType want = weight_dtype == GPT_DTYPE_AUTO ? plan.file_dtype : static_cast<DType>(weight_dtype);
    if (is_quantized(want) && want != plan.file_dtype)
        fail(GPT_ERR_UNSUPPORTED, "weight_dtype %s asked for a %s file: quantize the file with `gpt quantize` instead",
             dtype_name(want), dtype_name(plan.file_dtype));
    // Only the descriptors are placed: there are no bytes to check or release.
    struct NoBytes final : WeightSource {
        void check(size_t, uint64_t) override {}
        void check_all() override {}
        void release(size_t, uint64_t, uint64_t) override {}
        bool read_only_mapping() const override { return true; }
    } no_bytes;
    Placement how;
    how.want = want;
    how.host_weights = device.keeps_host_weights();
    plan.weight_dtype = device.ordinal() == GPT_DEVICE_CPU ? plan.file_dtype : device.place_weights(weights, how, no_bytes);
    plan.embedding_bytes = weight_bytes(*weights.front());
    plan.weight_host_bytes = device.keeps_host_weights() ? file_bytes : 0;
    plan.weight_device_bytes = device.ordinal() == GPT_DEVICE_CPU ? 0 : device.weight_bytes();
    plan.exec = Context::resolve(c, device, cp);
    plan.context = Context::memory_of(c, arch->shape(), device, plan.exec);
    return plan;
}

LoadPlan plan_load(const format::WeightFile &f, Device &device, uint32_t weight_dtype, const gpt_ctx_params &cp) {
    const ModelConfig c = ModelConfig::from_metadata(f.metadata(), f.source());
    const char *src = f.source().c_str();
    auto describe = [&](const std::string &name, const std::vector<uint64_t> &shape, DType &dtype, uint32_t &group) {
        const format::TensorEntry *t = f.find(name);
        if (!t) fail(GPT_ERR_FORMAT, "%s: tensor '%s' is missing", src, name.c_str());
        bool same = t->ndim == shape.size();
        for (uint32_t d = 0; same && d < t->ndim; d++) same = t->dims[d] == shape[d];
        if (!same) fail(GPT_ERR_FORMAT, "%s: tensor '%s' has a shape its config does not give it", src, name.c_str());
        dtype = t->dtype;
        group = t->group;
    };
    return plan_load(c, describe, f.size(), device, weight_dtype, cp);
}

} // namespace gpt
