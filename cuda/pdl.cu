// pdl.cu - the switch for programmatic dependent launch (see common.cuh).
#include "common.cuh"

#include <cstdlib>
#include <cstring>

namespace gpt_cuda {

bool pdl_enabled() {
    static const bool on = [] {
        const char *v = std::getenv("GPT_CUDA_NO_PDL");
        return !(v && std::strcmp(v, "0") != 0 && *v);
    }();
    return on;
}

} // namespace gpt_cuda
