// no_cuda.cpp - the CUDA entry points of a build made without CUDA: no devices, and a clear
// GPT_ERR_UNSUPPORTED for anyone who asks for one.
#include "backend/backend.h"
#include "core/error.h"

namespace gpt {

std::unique_ptr<Device> make_cuda_device(int ordinal) {
    fail(GPT_ERR_UNSUPPORTED, "CUDA device %d requested, but this libgpt was built without CUDA", ordinal);
}
int cuda_device_count() { return 0; }
void cuda_warm_up(int) noexcept {}
const char *cuda_build_info() { return "cuda: not built"; }
DeviceFacts cuda_device_facts(int ordinal) {
    fail(GPT_ERR_UNSUPPORTED, "CUDA device %d asked about, but this libgpt was built without CUDA", ordinal);
}
bool cuda_is_integrated(int) noexcept { return false; }
std::unique_ptr<Device> make_cuda_planner(bool) {
    fail(GPT_ERR_UNSUPPORTED, "a CUDA memory plan needs a libgpt built with CUDA (its buffer sizes come from the CUDA backend)");
}

} // namespace gpt
