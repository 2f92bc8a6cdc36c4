// model.h - a loaded model: config, the architecture holding its weights (placed on a
// device), tokenizer data. Immutable after load, so any number of threads may create
// contexts on it and run them at once.
#pragma once

#include "gpt.h"
#include "backend/backend.h"
#include "format/reader.h"
#include "model/arch.h"
#include "model/config.h"
#include "tokenizer/tokenizer_data.h"

#include <functional>
#include <memory>
#include <string>

namespace gpt {

class Tokenizer;

class Model {
public:
    // A weight file by path (mapped or read, gpt_model_params.flags), or a caller's buffer.
    // Throws gpt::Error naming the file and what was wrong.
    static std::unique_ptr<Model> load_file(const char *path, const gpt_model_params &params);
    static std::unique_ptr<Model> load_memory(const void *data, size_t size, const gpt_model_params &params);
    // An opened weight file (the two above end here).
    // device_ready (may be empty): whether the GPU's context, created on another thread, is
    // ready; until it is, the load checks tensors ahead of the device.
    static std::unique_ptr<Model> load(std::unique_ptr<format::WeightFile> file, const gpt_model_params &params,
                                       const std::function<bool()> &device_ready = {});
    ~Model();

    const ModelConfig &config() const { return config_; }
    const Architecture &architecture() const { return *arch_; }
    const ModelShape &shape() const { return shape_; }
    // Every id that ends generation (ModelConfig::eos_ids).
    const std::vector<int32_t> &eos_ids() const { return config_.eos_ids; }
    const Device &device() const { return *device_; }
    const TokenizerData &tokenizer_data() const { return tok_data_; }
    const Tokenizer *tokenizer() const { return tokenizer_.get(); } // nullptr when the file has none
    // The checkpoint's chat template (tokenizer.chat_template); empty when the file has none.
    const std::string &chat_template() const { return chat_template_; }
    DType weight_dtype() const { return weight_dtype_; }
    DType file_dtype() const { return file_dtype_; }
    uint64_t host_bytes() const;
    uint64_t device_bytes() const { return device_->weight_bytes(); }
    const std::string &source() const { return source_; }
    // What gpt_model_get_info reports (struct_size = sizeof).
    gpt_model_info info() const;

private:
    Model() = default;
    // The weights in the architecture's order, and in entries the file's tensor behind each.
    std::vector<Weight *> bind_tensors(const format::WeightFile &f, std::vector<const format::TensorEntry *> *entries);

    ModelConfig config_;
    TokenizerData tok_data_;
    std::unique_ptr<Tokenizer> tokenizer_;
    // Kept while weights point into it (CPU, host weights). Declared before device_, so it is
    // destroyed after it: a device reading host weights unregisters them before the file goes.
    std::unique_ptr<format::WeightFile> file_;
    std::unique_ptr<Device> device_;
    std::unique_ptr<Architecture> arch_;
    ModelShape shape_;
    DType weight_dtype_ = DType::F32;
    DType file_dtype_ = DType::F32;
    std::string source_;
    std::string chat_template_;
};

// Resolves GPT_DEVICE_AUTO and checks an explicit device; throws on a bad request.
std::unique_ptr<Device> open_device(int32_t requested);

} // namespace gpt
