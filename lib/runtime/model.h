// model.h - a loaded model: config, weights placed on a device, tokenizer data. Immutable
// after load, so any number of threads may create contexts on it and run them at once.
#pragma once

#include "gpt.h"
#include "backend/backend.h"
#include "format/reader.h"
#include "model/config.h"
#include "model/weights.h"
#include "tokenizer/tokenizer_data.h"

#include <memory>
#include <string>

namespace gpt {

class Tokenizer;

class Model {
public:
    static std::unique_ptr<Model> load(std::unique_ptr<format::WeightFile> file, const gpt_model_params &params);
    ~Model();

    const ModelConfig &config() const { return config_; }
    const ModelWeights &weights() const { return weights_; }
    const Device &device() const { return *device_; }
    const TokenizerData &tokenizer_data() const { return tok_data_; }
    const Tokenizer *tokenizer() const { return tokenizer_.get(); } // nullptr when the file has none
    DType weight_dtype() const { return weight_dtype_; }
    DType file_dtype() const { return file_dtype_; }
    uint64_t host_bytes() const;
    uint64_t device_bytes() const { return device_->weight_bytes(); }
    const std::string &source() const { return source_; }

private:
    Model() = default;
    void bind_tensors(const format::WeightFile &f, ModelWeights &host);

    ModelConfig config_;
    TokenizerData tok_data_;
    std::unique_ptr<Tokenizer> tokenizer_;
    std::unique_ptr<format::WeightFile> file_; // kept while weights point into it (CPU)
    std::unique_ptr<Device> device_;
    ModelWeights weights_;
    DType weight_dtype_ = DType::F32;
    DType file_dtype_ = DType::F32;
    std::string source_;
};

// Resolves GPT_DEVICE_AUTO and checks an explicit device; throws on a bad request.
std::unique_ptr<Device> open_device(int32_t requested);

} // namespace gpt
