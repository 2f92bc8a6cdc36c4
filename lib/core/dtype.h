// dtype.h - the library's one element-type enum: tensors in weight files, weights in memory,
// activations and KV caches. Its values are gpt_dtype's (the ABI) and the weight file's codes
// (docs/FORMAT.md), so a value crosses every boundary unchanged.
//
// Q8 and Q4 are packed, weight-only types (core/quant.h): a quantized matrix has no fixed
// bytes per element, so dtype_bytes() is for the float types only; sizes of any tensor come
// from tensor_bytes() (core/quant.h).
#pragma once

#include "gpt.h"

#include <cstddef>
#include <cstdint>

namespace gpt {

enum class DType : uint8_t {
    F32 = GPT_DTYPE_F32,
    F16 = GPT_DTYPE_F16,
    BF16 = GPT_DTYPE_BF16,
    Q8 = GPT_DTYPE_Q8,
    Q4 = GPT_DTYPE_Q4,
};

// Whether a stored or requested code names a DType (GPT_DTYPE_AUTO does not).
inline bool is_dtype(uint32_t code) { return code >= GPT_DTYPE_F32 && code <= GPT_DTYPE_Q4; }
// Whether a code names a float type (f32, f16, bf16): the only ones activations and caches use.
inline bool is_float_dtype(uint32_t code) { return code >= GPT_DTYPE_F32 && code <= GPT_DTYPE_BF16; }
inline bool is_quantized(DType t) { return t == DType::Q8 || t == DType::Q4; }
// Bytes per element of a float type (4 or 2). Packed types have none: 0, so a caller that
// forgot them computes an empty size rather than reading past a tensor.
inline size_t dtype_bytes(DType t) { return t == DType::F32 ? 4 : t == DType::F16 || t == DType::BF16 ? 2 : 0; }
// "f32" | "f16" | "bf16" | "q8" | "q4"
const char *dtype_name(DType t);

} // namespace gpt
