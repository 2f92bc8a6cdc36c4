// dtype.cuh - the element-type codes the launchers take (an int, so cuda/ needs nothing from
// lib/). Their values are the library's DType / gpt_dtype; lib/backend/cuda asserts it.
#pragma once

namespace gpt_cuda {

enum Dtype : int { F32 = 1, F16 = 2, BF16 = 3, Q8 = 4, Q4 = 5 };
// Q8 and Q4 are weight-only (lib/core/quant.h's layout: the integer plane, then the f16
// scales [rows][k / group]); activations are never quantized.

} // namespace gpt_cuda
