// dtype.h - the library's one element-type enum: tensors in weight files, weights in memory,
// activations and KV caches. Its values are gpt_dtype's (the ABI) and the weight file's codes
// (docs/FORMAT.md), so a value crosses every boundary unchanged.
#pragma once

#include "gpt.h"

#include <cstddef>
#include <cstdint>

namespace gpt {

enum class DType : uint8_t { F32 = GPT_DTYPE_F32, F16 = GPT_DTYPE_F16, BF16 = GPT_DTYPE_BF16 };

// Whether a stored or requested code names a DType (GPT_DTYPE_AUTO does not).
inline bool is_dtype(uint32_t code) { return code >= GPT_DTYPE_F32 && code <= GPT_DTYPE_BF16; }
inline size_t dtype_bytes(DType t) { return t == DType::F32 ? 4 : 2; }
// "f32" | "f16" | "bf16"
const char *dtype_name(DType t);

} // namespace gpt
