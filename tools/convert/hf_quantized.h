// hf_quantized.h - one GPTQ or AWQ quantized linear of a checkpoint (base.qweight, .qzeros,
// .scales, GPTQ's optional .g_idx): its tensors checked against the config and each other,
// dequantized, and repacked exactly into our q4/q8 (core/quant.h) where that is possible.
//
// Layouts, for a linear of N outputs and K inputs, g inputs a group, p = 32 / bits codes a word
// (every packed tensor int32, code e of a word in bits e*bits .. e*bits + bits-1):
//   GPTQ  qweight [K/p, N]: input k of output n is code k % p of word [k / p][n]
//         qzeros  [K/g, N/p]: the zero of group j, output n is code n % p of word [j][n / p];
//                 v1 ("gptq") stores zero - 1, v2 the zero
//         scales  [K/g, N]; g_idx [K] (optional): the group of input k (k / g unless act-order)
//   AWQ   qweight [K, N/8]: output n = 8c + t of input k is code ORDER[t] of word [k][c], with
//         ORDER = {0, 4, 1, 5, 2, 6, 3, 7} (AutoAWQ's interleave); qzeros [K/g, N/8] likewise;
//         scales [K/g, N]; the zeros are stored as they are
// The weight is W[n][k] = (code - zero) * scale of k's group, at output n.
#pragma once

#include "convert/hf_quant_config.h"
#include "convert/safetensors.h"
#include "core/dtype.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpt::convert {

struct QuantLinear {
    std::string base;       // "model.layers.0.self_attn.q_proj"
    std::string file;       // where its qweight lives (for messages)
    QuantConfig cfg;
    uint64_t rows = 0, cols = 0; // N outputs, K inputs
    uint64_t group = 0, n_groups = 0;
    const StTensor *qweight = nullptr, *qzeros = nullptr, *scales = nullptr, *g_idx = nullptr;
    bool trivial_order = true; // every input k in group k / group (no g_idx, or g_idx says so)
    bool zeros_mid = true;     // every zero is 2^(bits-1): symmetric
    bool f16_scales = true;    // scales are f16 (copied bit for bit by an exact repack)

    // Every tensor this linear consumed.
    std::vector<const StTensor *> tensors() const;
};

// The linear `base` (base + ".qweight" present) of `rows` outputs and `cols` inputs; throws
// GPT_ERR_FORMAT / GPT_ERR_UNSUPPORTED naming the file and tensor for any shape, dtype or value
// that does not fit (NaN/Inf scales, g_idx out of range, a group that does not divide K).
std::shared_ptr<const QuantLinear> open_quant_linear(const SafetensorsSet &st, const QuantConfig &cfg, const std::string &base,
                                                     uint64_t rows, uint64_t cols);

// Whether it repacks exactly into t (Q4 or Q8) with `group` columns a scale: contiguous groups
// of that size, f16 scales, and codes minus zeros inside t's range (q4: symmetric 4-bit only).
bool repacks_exactly(const QuantLinear &q, DType t, uint32_t group);

// out[rows][cols] = the dequantized weights, (code - zero) * scale in f32.
void dequantize_linear(const QuantLinear &q, float *out);

// The exact repack (repacks_exactly must hold): ints gets rows * packed_row_bytes(t, cols) bytes
// (the integer plane's rows of this linear), scales rows * (cols / group) f16 values (bytes).
void repack_linear(const QuantLinear &q, DType t, uint8_t *ints, uint8_t *scales);

// A float `name` ending in ".bias" of a quantized linear whose values are all zero: GPTQ
// exporters write such biases for layers that have none; they are dropped.
bool is_zero_bias_of_quantized(const SafetensorsSet &st, const std::string &name);

} // namespace gpt::convert
