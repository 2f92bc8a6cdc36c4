// quantize.h - which tensors a quantized file holds quantized, and adding them to a Writer.
// One rule for every tool (gpt convert --dtype q8|q4, gpt quantize): a matrix (2-D) whose
// column count the group divides is quantized; anything else (norms, biases, a matrix of odd
// width) keeps its float dtype, and so do a mixture of experts' gates (`blk.i.ffn_router.weight`,
// `blk.i.ffn_shared_gate.weight`): quantization noise there would flip which experts a token
// uses. docs/FORMAT.md section 5.1 and docs/VALIDATION.md say why.
#pragma once

#include "format/writer.h"

#include <functional>
#include <string>
#include <vector>

namespace gpt::format {

// The default group size of `gpt convert` / `gpt quantize` (docs/VALIDATION.md measures 32/64/128).
inline constexpr uint32_t kDefaultGroup = 32;

bool quantizable(const std::string &name, const std::vector<uint64_t> &shape, uint32_t group);
// Whether `name` is a mixture-of-experts gate (router or shared-expert gate), kept in float.
bool is_expert_gate(const std::string &name);

// Writes the tensor's f32 values, [shape[0]][shape[1]], into dst. May throw gpt::Error.
using FillF32 = std::function<void(float *dst)>;

// Adds `name` to w: quantized to q (Q8 or Q4) with `group` when quantizable(name, shape, group),
// else in `keep` (a float dtype) through keep_fill. Returns the dtype it gets. The f32 values
// are produced when the file is written, one tensor at a time.
DType add_quantized_or_keep(Writer &w, const std::string &name, const std::vector<uint64_t> &shape, DType q, uint32_t group,
                            FillF32 fill_f32, DType keep, Writer::Fill keep_fill);

} // namespace gpt::format
