// cudart_lazy.h - the CUDA runtime, opened on first use (-Dcuda-runtime=lazy, the default).
// libgpt.so then links no CUDA library: cudart_lazy.cpp defines every cudart function the
// library's objects call (hidden, so none is exported). At load, nvcc's generated code
// registers the kernels; those calls are only recorded. The first runtime call dlopens
// libcudart.so.<major of the toolkit we were built with>, replays the recorded registrations
// into it (our fat-binary handles mapped to the real ones) and forwards every call after that
// through a table resolved once. If the runtime cannot be opened, every call fails with
// cudaErrorInsufficientDriver, cudaGetErrorString says why (the library and dlerror()),
// cudaGetDeviceCount reports 0 devices, and the CPU path is untouched.
#pragma once

namespace gpt::cuda {

// Whether libcudart has been opened (never opens it).
bool cudart_loaded();

// Tests only: open `soname` instead of the toolkit's libcudart, to exercise the failure path.
// Has an effect only before the first CUDA runtime call of the process.
void cudart_use_library_for_testing(const char *soname);

} // namespace gpt::cuda
