// dtype.cpp - element-type names.
#include "core/dtype.h"

namespace gpt {

const char *dtype_name(DType t) {
    switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::Q8: return "q8";
    case DType::Q4: return "q4";
    }
    return "?";
}

} // namespace gpt
