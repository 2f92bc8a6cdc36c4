// cuda_planner.cpp - a CUDA device on paper (gpt info --plan): it lays out weights and plans
// contexts with the CUDA device's own rules (cuda_plan.h) but holds and runs nothing, so what
// a model and a context would take on a GPU is known before loading, on any machine with a
// CUDA build (a Jetson's numbers from a desktop).
#include "backend/backend.h"
#include "backend/cuda/cuda_plan.h"
#include "core/error.h"

#include <algorithm>

namespace gpt {

namespace {

class CudaPlanner final : public Device {
public:
    explicit CudaPlanner(bool host_weights) : host_weights_(host_weights) {}

    const char *name() const override { return host_weights_ ? "cuda (on paper, weights in host memory)" : "cuda (on paper)"; }
    int32_t ordinal() const override { return 0; }
    bool integrated() const override { return false; }
    bool keeps_host_weights() const override { return host_weights_; }
    uint64_t weight_bytes() const override { return bytes_; }

    // Only the weights' descriptors are read (dtype, shape, group), never their data. With
    // host weights the matrices are read in place from the file; the vectors (norms, biases),
    // which the kernels take in f32, are widened into device memory as in device mode.
    DType place_weights(const std::vector<Weight *> &weights, const Placement &how, WeightSource &) override {
        const DType want = how.want;
        quantized_ = is_quantized(want);
        matrix_dtype_ = quantized_ ? DType::F16 : want;
        bytes_ = max_quant_cols_ = max_quant_numel_ = 0;
        for (Weight *w : weights) {
            const bool in_place = host_weights_ && !w->is_vector();
            const DType to = in_place ? w->dtype : cuda::placed_dtype(*w, want);
            if (!in_place) bytes_ += cuda::align256(cuda::placed_bytes(*w, to));
            if (is_quantized(to)) {
                max_quant_cols_ = std::max(max_quant_cols_, w->cols);
                max_quant_numel_ = std::max(max_quant_numel_, w->numel());
            }
            w->dtype = to;
        }
        return want;
    }

    void choose(ExecParams &p, uint32_t compute, uint32_t kv, uint32_t) const override {
        cuda::choose_params(p, matrix_dtype_, quantized_, max_quant_cols_, max_quant_numel_, compute, kv);
    }
    MemoryPlan plan(const ModelShape &s, const ExecParams &p) const override { return cuda::memory_plan(s, p); }
    MemoryPlan available_memory() const override { return {}; }
    std::unique_ptr<Executor> create_executor(const ModelShape &, const ExecParams &) const override {
        fail(GPT_ERR_UNSUPPORTED, "a CUDA device on paper plans memory only");
    }

private:
    bool host_weights_;
    bool quantized_ = false;
    DType matrix_dtype_ = DType::F16;
    uint64_t bytes_ = 0, max_quant_cols_ = 0, max_quant_numel_ = 0;
};

} // namespace

std::unique_ptr<Device> make_cuda_planner(bool host_weights) { return std::make_unique<CudaPlanner>(host_weights); }

} // namespace gpt
