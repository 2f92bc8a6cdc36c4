// cuda_executor.h - factory of the CUDA context-level backend (see cuda_executor.cpp).
#pragma once

#include "backend/backend.h"

namespace gpt::cuda {
std::unique_ptr<Executor> make_cuda_executor(int device, const ModelShape &s, const ExecParams &p);
}
