// cublas_loader.cpp - dlopen + dlsym, once, under a std::call_once.
#include "backend/cuda/cublas_loader.h"

#include "core/error.h"

#include <atomic>
#include <dlfcn.h>
#include <mutex>
#include <string>

namespace gpt::cuda {

namespace {

#define GPT_STR2(x) #x
#define GPT_STR(x) GPT_STR2(x)
// The soname of the cuBLAS this library was compiled against (its ABI major).
constexpr const char *kSoname = "libcublas.so." GPT_STR(CUBLAS_VER_MAJOR);

CublasApi g_api;
std::atomic<bool> g_loaded{false};
std::string g_error;

void load() {
    void *h = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        g_error = std::string("cannot load cuBLAS (") + kSoname + "): " + (e ? e : "unknown error") +
                  "; install the CUDA toolkit's cuBLAS or put its directory on LD_LIBRARY_PATH";
        return;
    }
    auto sym = [&](const char *name) -> void * {
        void *p = dlsym(h, name);
        if (!p && g_error.empty()) g_error = std::string(kSoname) + " lacks " + name;
        return p;
    };
    CublasApi a;
    a.create = reinterpret_cast<decltype(a.create)>(sym("cublasCreate_v2"));
    a.destroy = reinterpret_cast<decltype(a.destroy)>(sym("cublasDestroy_v2"));
    a.set_stream = reinterpret_cast<decltype(a.set_stream)>(sym("cublasSetStream_v2"));
    a.set_workspace = reinterpret_cast<decltype(a.set_workspace)>(sym("cublasSetWorkspace_v2"));
    a.set_math_mode = reinterpret_cast<decltype(a.set_math_mode)>(sym("cublasSetMathMode"));
    a.gemm_ex = reinterpret_cast<decltype(a.gemm_ex)>(sym("cublasGemmEx"));
    a.status_name = reinterpret_cast<decltype(a.status_name)>(sym("cublasGetStatusName"));
    a.status_string = reinterpret_cast<decltype(a.status_string)>(sym("cublasGetStatusString"));
    if (!g_error.empty()) return; // the handle stays open: harmless, and dlclose could race
    g_api = a;
    g_loaded.store(true, std::memory_order_release);
}

} // namespace

const CublasApi &cublas() {
    static std::once_flag once;
    std::call_once(once, load);
    if (!g_loaded.load(std::memory_order_acquire)) fail(GPT_ERR_DEVICE, "%s", g_error.c_str());
    return g_api;
}

const CublasApi *cublas_if_loaded() { return g_loaded.load(std::memory_order_acquire) ? &g_api : nullptr; }

} // namespace gpt::cuda
