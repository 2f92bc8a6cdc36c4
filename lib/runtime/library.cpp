// library.cpp - library-wide facts, from the backends and the table of architectures.
#include "runtime/library.h"

#include "backend/backend.h"
#include "core/dtype.h"
#include "model/arch.h"

namespace gpt {

const char *backends_info() { return cuda_build_info(); }
int gpu_count() { return cuda_device_count(); }
const char *architecture_name(int arch) { return arch_to_name(arch); }

const char *dtype_code_name(uint32_t code) {
    if (code == GPT_DTYPE_AUTO) return "auto";
    return is_dtype(code) ? dtype_name(static_cast<DType>(code)) : "?";
}

} // namespace gpt
