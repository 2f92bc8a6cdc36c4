// library.h - library-wide facts the API reports: the build, the GPUs, names of ids.
#pragma once

#include "gpt.h"

#include <cstdint>

namespace gpt {

// "cpu; cuda runtime 13.0, driver 13.0" or "cpu; cuda: not built".
const char *backends_info();
// CUDA devices usable now (0 without a driver, a GPU or CUDA in the build).
int gpu_count();
// What gpt_device_get_info reports (struct_size = sizeof); device GPT_DEVICE_AUTO resolved as a
// model load resolves it. Throws GPT_ERR_INVALID_ARG / GPT_ERR_UNSUPPORTED for a device that
// is not there.
gpt_device_info device_info(int32_t device);
// "gpt2" | "llama" | "?"
const char *architecture_name(int arch);
// "f32" | "f16" | "bf16" | "auto" | "?"
const char *dtype_code_name(uint32_t code);

} // namespace gpt
