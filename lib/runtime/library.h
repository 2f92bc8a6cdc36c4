// library.h - library-wide facts the API reports: the build, the GPUs, names of ids.
#pragma once

#include <cstdint>

namespace gpt {

// "cpu; cuda runtime 13.0, driver 13.0" or "cpu; cuda: not built".
const char *backends_info();
// CUDA devices usable now (0 without a driver, a GPU or CUDA in the build).
int gpu_count();
// "gpt2" | "llama" | "?"
const char *architecture_name(int arch);
// "f32" | "f16" | "bf16" | "auto" | "?"
const char *dtype_code_name(uint32_t code);

} // namespace gpt
