// synthetic.h - named model shapes with random weights, built in memory as a weight file, so
// `gpt bench --synthetic NAME` needs no checkpoint. Values are random normal (scaled by
// 1/sqrt(fan_in)); only the shapes matter for speed.
#pragma once

#include "core/dtype.h"
#include "model/config.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cli {

struct SyntheticShape {
    const char *name;
    const char *arch; // an architecture name (model/arch.cpp): "gpt2", "llama", "mixtral", "olmoe", ...
    uint32_t n_layers, d_model, n_heads, n_kv_heads, d_ff, vocab, context;
    bool tied, qkv_bias;
    float rope_theta;
    // Mixture of experts (0 for a dense shape): experts per layer, top-k, each expert's width.
    // Every layer is MoE; d_ff (the unused dense width) equals the expert width.
    uint32_t n_experts = 0, n_experts_used = 0, d_ff_expert = 0;
};

const std::vector<SyntheticShape> &synthetic_shapes();
const SyntheticShape *find_synthetic(const std::string &name);
// The config a synthetic shape's file carries.
gpt::ModelConfig synthetic_config(const SyntheticShape &s);
// The dtype and group a tensor of that shape gets in a synthetic file of `dtype` (a q8/q4 file
// quantizes what format/quantize.h's rule quantizes, the rest is f16).
void synthetic_tensor(uint32_t dtype, const std::string &name, const std::vector<uint64_t> &shape, gpt::DType &held, uint32_t &group);
// A weight file image, 64-byte aligned so that gpt_model_load_from_memory borrows it instead
// of copying it (Mixtral-8x7B's 93 GB image must not be held twice).
class SyntheticImage {
public:
    SyntheticImage() = default;
    explicit SyntheticImage(uint64_t size);
    uint8_t *data() const { return bytes_.get(); }
    uint64_t size() const { return size_; }
    bool empty() const { return size_ == 0; }

private:
    struct Free {
        void operator()(uint8_t *p) const;
    };
    std::unique_ptr<uint8_t, Free> bytes_;
    uint64_t size_ = 0;
};
// A weight file image in file dtype (1 f32, 2 f16, 3 bf16); tensor checksums left 0 (load
// it with GPT_MODEL_SKIP_CHECKSUMS). Generation runs on all cores.
SyntheticImage build_synthetic(const SyntheticShape &s, uint32_t dtype, uint64_t seed);
// The same as a file at path, with tensor checksums (atomic: format::Writer::write_file);
// throws gpt::Error (GPT_ERR_IO for an existing path unless overwrite).
void write_synthetic(const SyntheticShape &s, uint32_t dtype, uint64_t seed, const std::string &path, bool overwrite);
// The size of that image, computed without building it.
uint64_t synthetic_file_bytes(const SyntheticShape &s, uint32_t dtype);

} // namespace cli
