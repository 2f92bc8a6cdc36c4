// tensor_plan.h - what a conversion writes, decided before anything is written: every
// output tensor as a stack of source matrices (copied, transposed or row-permuted), filled
// on demand in the chosen dtype so a large model streams through one tensor at a time.
#pragma once

#include "format/spec.h"
#include "model/config.h"
#include "tokenizer/tokenizer_data.h"

#include <csignal>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpt::convert {

struct QuantLinear; // hf_quantized.h

// A 2-D view of source bytes. Vectors are [n][1].
struct SrcMatrix {
    std::string what;               // "model.safetensors: tensor 'h.0.attn.c_attn.weight'", for messages
    const uint8_t *data = nullptr;  // first stored element; any alignment
    uint64_t avail = 0;             // bytes readable at data (checked against the extent)
    DType dtype = DType::F32;
    uint64_t rows = 0, cols = 0;    // logical shape
    bool transposed = false;        // stored as [cols][rows] (GPT-2 Conv1D weights)
    std::vector<uint32_t> row_perm; // logical row r is stored row row_perm[r]; empty: identity
    float add = 0;                  // added to every value in f32 (Gemma's norms store 1 + w)
    // A GPTQ/AWQ linear (hf_quantized.h): the values are its dequantized weights, data is null
    // and dtype is its scales' dtype.
    std::shared_ptr<const QuantLinear> quant;
};

struct PlannedTensor {
    std::string name;               // our name (model/gpt2.cpp, model/llama.cpp)
    std::vector<uint64_t> shape;    // [rows, cols] or [n]
    std::vector<SrcMatrix> parts;   // stacked along rows (q | k | v, gate | up)
    bool keep_f32 = false;          // written as f32 whatever the file's dtype (Gemma's 1 + w norms)
    uint64_t numel() const;
};

struct TensorPlan {
    ModelConfig config;
    std::vector<PlannedTensor> tensors;         // in the file order of tensor_table()
    DType source_dtype = DType::F32; // most source parameters are in it
    std::string source;                         // general.source: "huggingface:mistral", "llama2.c"
    std::string inputs;                         // what was read, for the summary
    std::vector<int32_t> eos_ids;               // every end-of-sequence id when there are several
    TokenizerData tokenizer;                    // kind NONE when none was found
    std::string tokenizer_file;                 // where it came from
    std::vector<std::string> warnings;
    std::vector<std::shared_ptr<void>> keep_alive; // mappings the parts point into
};

// Writes t's elements, converted to `out`, into dst (exactly t.numel() * size(out) bytes).
// Same-dtype values are copied bit for bit; conversions round to nearest even. Checks
// *stop (a signal flag; may be null) and throws GPT_ERR_ABORTED when it is set.
void fill_tensor(const PlannedTensor &t, DType out, uint8_t *dst, uint64_t nbytes,
                 const volatile std::sig_atomic_t *stop);

// The plan must hold exactly the tensors (names and shapes) that the engine's table for
// p.config expects, each part inside its source bytes; throws GPT_ERR_INTERNAL otherwise.
void check_plan(const TensorPlan &p);

// Row permutation for q or k weights of n_heads heads of head_dim rows each, taking
// interleaved RoPE pairs (2i, 2i+1) (llama2.c, Meta) to rotate-half pairs (i, i + hd/2)
// (Hugging Face, this engine): new row h*hd + t*hd/2 + i = old row h*hd + 2i + t.
std::vector<uint32_t> rope_interleaved_to_half_perm(uint32_t n_heads, uint32_t head_dim);

// The dtype most parameters of the plan are stored in (the default output dtype).
DType dominant_dtype(const std::vector<PlannedTensor> &tensors);


} // namespace gpt::convert
