// quant_import.h - how a plan holding GPTQ/AWQ linears (hf_quantized.h) is written: the
// dtype and group it gets by default, the tensors repacked exactly into q4/q8 (codes and f16
// scales copied), and the rest requantized (round to nearest, core/quant.h) or dequantized.
#pragma once

#include "convert/tensor_plan.h"

#include <csignal>
#include <cstdint>
#include <string>

namespace gpt::convert {

struct QuantImport {
    size_t n_linears = 0;     // quantized source matrices in the plan (0: not a GPTQ/AWQ checkpoint)
    std::string source;       // "gptq 4-bit group 128 (v1)"
    int64_t source_group = 0; // quantization_config.group_size as written (-1: whole row)
    uint32_t group = 0;       // the linears' common group when it is 32, 64 or 128; 0: none we can write
    // The default output: Q4 when every linear repacks exactly into q4 (symmetric 4-bit, contiguous
    // groups), else Q8 when every one does into q8 (asymmetric 4-bit, symmetric 8-bit), else the
    // plan's float dtype (dequantized: act-order, asymmetric 8-bit, non-f16 scales).
    DType natural = DType::F16;
};

QuantImport inspect_quantized(const TensorPlan &p);

bool has_quantized_parts(const PlannedTensor &t);
// Every part a quantized linear that repacks exactly into q with `group`.
bool repacks_exactly(const PlannedTensor &t, DType q, uint32_t group);

// The exact repack of t (repacks_exactly holds) into dst: tensor_bytes(q, ...) bytes.
void fill_repacked(const PlannedTensor &t, DType q, uint32_t group, uint8_t *dst, uint64_t nbytes,
                   const volatile std::sig_atomic_t *stop);
// t dequantized and quantized again with round to nearest at `group`; *max_diff is raised to
// the largest |ours - dequantized| over the tensor.
void fill_requantized(const PlannedTensor &t, DType q, uint32_t group, uint8_t *dst, uint64_t nbytes, double *max_diff,
                      const volatile std::sig_atomic_t *stop);

} // namespace gpt::convert
