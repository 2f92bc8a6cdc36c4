// convert.h - `gpt convert` as a function: a Hugging Face model directory, a llama2.c
// checkpoint or a PyTorch .pt file of a training script (pt_checkpoint.h) in, one verified
// weight file out. The output appears atomically and only
// complete and verified: it is written once into a staging file beside OUT (core/staged_file.h),
// fsynced, loaded back through the public API with checksums and run for one token on the
// CPU, and only then renamed onto OUT (or linked, which refuses to replace a file, without
// --force). On any failure or interrupt nothing new is left behind and an existing OUT is
// untouched.
#pragma once

#include "convert/tensor_plan.h"

#include <csignal>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gpt::convert {

struct ConvertOptions {
    std::string src;          // model directory (config.json + safetensors) or llama2.c checkpoint
    std::string out;          // weight file to write
    uint32_t dtype = 0;       // gpt_dtype; GPT_DTYPE_AUTO: the source's dtype. Q8/Q4: matrices
                              // quantized (format/quantize.h), the rest in the source's dtype
    uint32_t group = 0;       // Q8/Q4: columns per scale (32, 64, 128); 0: format::kDefaultGroup
    bool force = false;       // replace an existing OUT
    std::string tokenizer;    // tokenizer file (or directory) to use instead of the one beside SRC
    std::string name;         // general.name; default: SRC's base name
    std::string meta;         // .pt from nanoGPT: its meta.pkl (default: data/<dataset>/meta.pkl if present)
    std::string char_vocab_from; // a text file whose sorted set of characters is the vocabulary
    uint32_t n_head = 0;      // .pt from minGPT: heads, when no config.json beside it says
    bool progress = false;    // draw a progress bar on stderr
    bool verify = true;       // load the result back and run one token before publishing it
    uint32_t verify_threads = 0; // CPU threads for that (0: all cores)
    const volatile std::sig_atomic_t *stop = nullptr; // set (by a signal handler) to abort
    // Receives each warning as it arises; default: printed to stderr.
    std::function<void(const std::string &)> on_warning;
};

struct ConvertResult {
    ModelConfig config;
    std::string source;               // "huggingface:qwen2", "llama2.c"
    std::string inputs;               // what was read
    DType dtype = DType::F32;
    DType source_dtype = DType::F32;
    uint32_t group = 0;       // quantized output: the group size; 0 otherwise
    size_t n_quantized = 0;   // tensors written quantized
    // A GPTQ/AWQ source (quant_import.h): what it was, the tensors whose codes and scales were
    // copied, those requantized (round to nearest) and the largest change that made, and those
    // written dequantized (float output, act-order, asymmetric 8-bit).
    std::string quant_source;
    size_t n_repacked = 0, n_requantized = 0, n_dequantized = 0;
    double requantize_max_diff = 0;
    uint64_t n_params = 0;
    uint64_t file_bytes = 0;
    size_t n_tensors = 0;
    double seconds = 0;
    std::string tokenizer;            // "spm, 32000 tokens (tokenizer.bin)" or "none"
    std::vector<int32_t> eos_ids;
    std::vector<std::string> warnings;
    bool verified = false;
    std::string out;
};

// Throws gpt::Error naming the file and tensor on any failure, having removed everything
// it created.
ConvertResult convert_model(const ConvertOptions &opt);

// The end-of-run summary, several lines, each ending in '\n'.
std::string format_summary(const ConvertResult &r);

} // namespace gpt::convert
