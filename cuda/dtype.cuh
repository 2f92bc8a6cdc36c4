// dtype.cuh - the element-type and activation codes the launchers take (ints, so cuda/ needs
// nothing from lib/). Their values are the library's DType / gpt_dtype and backend.h's
// Activation; lib/backend/cuda asserts it.
#pragma once

namespace gpt_cuda {

enum Dtype : int { F32 = 1, F16 = 2, BF16 = 3 };
enum ActCode : int { ACT_NONE = 0, ACT_GELU_TANH = 1, ACT_GELU_ERF = 2, ACT_RELU = 3, ACT_SILU = 4 };

} // namespace gpt_cuda
