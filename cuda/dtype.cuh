// dtype.cuh - the element-type codes the launchers take (an int, so cuda/ needs nothing from
// lib/). Their values are the library's DType / gpt_dtype; lib/backend/cuda asserts it.
#pragma once

namespace gpt_cuda {

enum Dtype : int { F32 = 1, F16 = 2, BF16 = 3 };

} // namespace gpt_cuda
