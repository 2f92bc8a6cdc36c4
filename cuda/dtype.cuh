// dtype.cuh - the element-type and activation codes the launchers take (ints, so cuda/ needs
// nothing from lib/). Their values are the library's DType / gpt_dtype and backend.h's
// Activation; lib/backend/cuda asserts it.
#pragma once

namespace gpt_cuda {

enum Dtype : int { F32 = 1, F16 = 2, BF16 = 3, Q8 = 4, Q4 = 5 };
// Q8 and Q4 are weight-only (lib/core/quant.h's layout: the integer plane, then the f16
// scales [rows][k / group]); activations are never quantized.
enum ActCode : int { ACT_NONE = 0, ACT_GELU_TANH = 1, ACT_GELU_ERF = 2, ACT_RELU = 3, ACT_SILU = 4 };

} // namespace gpt_cuda
