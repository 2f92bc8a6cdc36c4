// cudart_lazy.cpp - the CUDA runtime behind dlopen (see cudart_lazy.h). Three parts:
//  1. the registrations nvcc's generated code makes at load (__cudaRegister*): recorded, and
//     replayed into the real runtime once it is open;
//  2. the loader: dlopen + dlsym once (std::call_once), then the replay;
//  3. one forwarding definition per runtime function the library, its tools and tests call
//     (`nm -u` on the objects of a -Dcuda-runtime=shared build lists them; a function missing
//     here is an undefined symbol at link time, never a silent fallback).
// Every definition here is hidden (the library is built with -fvisibility=hidden and
// lib/libgpt.map exports gpt_* only), so nothing interposes another libcudart in the process.
#include "backend/cuda/cudart_lazy.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <vector>

// The registration entry points, as crt/host_runtime.h and crt/device_functions.h declare them
// (those headers are for nvcc's generated code only).
extern "C" {
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress, const char *deviceName, int ext,
                       size_t size, int constant, int global);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream);
#if CUDART_VERSION >= 13000 // CUDA 13's launch stubs look a kernel up once, then launch it by handle
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream);
#endif
}

#define GPT_CUDART_STR2(x) #x
#define GPT_CUDART_STR(x) GPT_CUDART_STR2(x)

// The runtime functions forwarded as they are: name, parameters, arguments. Those that need
// an answer of their own without the runtime (device count, versions, errors) come after.
// Each name is the header's, so a versioned one (cudaGetDeviceProperties -> _v2 in CUDA 12, the
// per-thread-stream variants) is defined and looked up under the name the header maps it to.
#define GPT_CUDART_FORWARDED(X)                                                                                          \
    X(cudaDeviceGetAttribute, (int *value, enum cudaDeviceAttr attr, int device), (value, attr, device))                 \
    X(cudaDeviceSynchronize, (void), ())                                                                                 \
    X(cudaEventCreate, (cudaEvent_t * event), (event))                                                                   \
    X(cudaEventCreateWithFlags, (cudaEvent_t * event, unsigned int flags), (event, flags))                               \
    X(cudaEventDestroy, (cudaEvent_t event), (event))                                                                    \
    X(cudaEventElapsedTime, (float *ms, cudaEvent_t start, cudaEvent_t end), (ms, start, end))                           \
    X(cudaEventRecord, (cudaEvent_t event, cudaStream_t stream), (event, stream))                                        \
    X(cudaEventSynchronize, (cudaEvent_t event), (event))                                                                \
    X(cudaFree, (void *ptr), (ptr))                                                                                      \
    X(cudaFreeHost, (void *ptr), (ptr))                                                                                  \
    X(cudaFuncGetAttributes, (struct cudaFuncAttributes * attr, const void *func), (attr, func))                         \
    X(cudaFuncSetAttribute, (const void *func, enum cudaFuncAttribute attr, int value), (func, attr, value))             \
    X(cudaGetDevice, (int *device), (device))                                                                            \
    X(cudaGetDeviceProperties, (struct cudaDeviceProp * prop, int device), (prop, device))                               \
    X(cudaGraphDestroy, (cudaGraph_t graph), (graph))                                                                    \
    X(cudaGraphExecDestroy, (cudaGraphExec_t exec), (exec))                                                              \
    X(cudaGraphInstantiate, (cudaGraphExec_t * exec, cudaGraph_t graph, unsigned long long flags), (exec, graph, flags)) \
    X(cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t stream), (exec, stream))                                      \
    X(cudaHostAlloc, (void **ptr, size_t size, unsigned int flags), (ptr, size, flags))                                  \
    X(cudaHostGetDevicePointer, (void **dev, void *host, unsigned int flags), (dev, host, flags))                        \
    X(cudaHostRegister, (void *ptr, size_t size, unsigned int flags), (ptr, size, flags))                                \
    X(cudaHostUnregister, (void *ptr), (ptr))                                                                            \
    X(cudaLaunchKernel, (const void *func, dim3 grid, dim3 block, void **args, size_t smem, cudaStream_t stream),        \
      (func, grid, block, args, smem, stream)) /* CUDA 12's launch stubs */                                              \
    X(cudaLaunchKernelExC, (const cudaLaunchConfig_t *config, const void *func, void **args), (config, func, args))      \
    X(cudaMalloc, (void **ptr, size_t size), (ptr, size))                                                                \
    X(cudaMemGetInfo, (size_t * free_bytes, size_t *total_bytes), (free_bytes, total_bytes))                             \
    X(cudaMemcpy, (void *dst, const void *src, size_t n, enum cudaMemcpyKind kind), (dst, src, n, kind))                 \
    X(cudaMemcpyAsync, (void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t stream),            \
      (dst, src, n, kind, stream))                                                                                       \
    X(cudaMemset, (void *ptr, int value, size_t n), (ptr, value, n))                                                     \
    X(cudaMemsetAsync, (void *ptr, int value, size_t n, cudaStream_t stream), (ptr, value, n, stream))                   \
    X(cudaOccupancyMaxActiveClusters, (int *clusters, const void *func, const cudaLaunchConfig_t *config),               \
      (clusters, func, config))                                                                                          \
    X(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,                                                            \
      (int *blocks, const void *func, int block_size, size_t smem, unsigned int flags),                                  \
      (blocks, func, block_size, smem, flags))                                                                           \
    X(cudaPointerGetAttributes, (struct cudaPointerAttributes * attr, const void *ptr), (attr, ptr))                     \
    X(cudaSetDevice, (int device), (device))                                                                             \
    X(cudaStreamBeginCapture, (cudaStream_t stream, enum cudaStreamCaptureMode mode), (stream, mode))                    \
    X(cudaStreamCreateWithFlags, (cudaStream_t * stream, unsigned int flags), (stream, flags))                           \
    X(cudaStreamDestroy, (cudaStream_t stream), (stream))                                                                \
    X(cudaStreamEndCapture, (cudaStream_t stream, cudaGraph_t *graph), (stream, graph))                                  \
    X(cudaStreamSynchronize, (cudaStream_t stream), (stream))

// The same, with answers of their own when the runtime is missing.
#define GPT_CUDART_SPECIAL(X)                                                                                            \
    X(cudaGetDeviceCount)                                                                                                \
    X(cudaRuntimeGetVersion)                                                                                             \
    X(cudaDriverGetVersion)                                                                                              \
    X(cudaGetErrorName)                                                                                                  \
    X(cudaGetErrorString)                                                                                                \
    X(cudaGetLastError)                                                                                                  \
    X(cudaPeekAtLastError)

#if CUDART_VERSION >= 13000
#define GPT_CUDART_LAUNCH_BY_HANDLE(X) X(__cudaGetKernel) X(__cudaLaunchKernel)
#else
#define GPT_CUDART_LAUNCH_BY_HANDLE(X)
#endif
#define GPT_CUDART_INTERNAL(X)                                                                                           \
    X(__cudaRegisterFatBinary)                                                                                           \
    X(__cudaRegisterFatBinaryEnd)                                                                                        \
    X(__cudaUnregisterFatBinary)                                                                                         \
    X(__cudaRegisterFunction)                                                                                            \
    X(__cudaRegisterVar)                                                                                                 \
    X(__cudaPushCallConfiguration)                                                                                       \
    X(__cudaPopCallConfiguration)                                                                                        \
    GPT_CUDART_LAUNCH_BY_HANDLE(X)

namespace gpt::cuda {

namespace {

// ---- 1. registrations, recorded

struct FunctionRegistration {
    const char *host_fun;
    char *device_fun;
    const char *device_name;
    int thread_limit;
    uint3 *tid, *bid;
    dim3 *block_dim, *grid_dim;
    int *warp_size;
};
struct VarRegistration {
    char *host_var, *device_address;
    const char *device_name;
    int ext;
    size_t size;
    int constant, global;
};
// One __cudaRegisterFatBinary: its address is the handle nvcc's code keeps and passes back.
struct FatBinary {
    void *fat_cubin = nullptr;
    bool ended = false;     // __cudaRegisterFatBinaryEnd was called
    void **real = nullptr;  // the real runtime's handle, once replayed
    std::vector<FunctionRegistration> functions;
    std::vector<VarRegistration> vars;
};

// Registrations arrive from other objects' static constructors, in any order relative to ours:
// the registry is made on first use and never destroyed (the unregistrations run at exit).
struct Registry {
    std::mutex mutex;
    std::vector<FatBinary *> binaries;
};
Registry &registry() {
    static Registry *r = new Registry;
    return *r;
}

FatBinary *binary_of(void **handle) { return reinterpret_cast<FatBinary *>(handle); }

// ---- 2. the loader

struct Api {
#define GPT_CUDART_MEMBER(name, ...) decltype(&::name) name;
#define GPT_CUDART_MEMBER1(name) decltype(&::name) name;
    GPT_CUDART_FORWARDED(GPT_CUDART_MEMBER)
    GPT_CUDART_SPECIAL(GPT_CUDART_MEMBER1)
    GPT_CUDART_INTERNAL(GPT_CUDART_MEMBER1)
#undef GPT_CUDART_MEMBER
#undef GPT_CUDART_MEMBER1
};

// What calls return without the runtime: the closest code to "no usable CUDA here".
constexpr cudaError_t kUnavailable = cudaErrorInsufficientDriver;

Api g_api;
std::atomic<const Api *> g_ready{nullptr};
std::once_flag g_once;
std::string g_soname = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
std::string g_error; // why the runtime is unavailable; set once, under g_once
thread_local cudaError_t t_last_error = cudaSuccess;

void replay(const Api &a, FatBinary &b) {
    b.real = a.__cudaRegisterFatBinary(b.fat_cubin);
    for (const FunctionRegistration &f : b.functions)
        a.__cudaRegisterFunction(b.real, f.host_fun, f.device_fun, f.device_name, f.thread_limit, f.tid, f.bid, f.block_dim,
                                 f.grid_dim, f.warp_size);
    for (const VarRegistration &v : b.vars)
        a.__cudaRegisterVar(b.real, v.host_var, v.device_address, v.device_name, v.ext, v.size, v.constant, v.global);
    if (b.ended) a.__cudaRegisterFatBinaryEnd(b.real);
}

// At exit, before the runtime's own teardown (registered after it, so run first), and when
// libgpt is unloaded: give the runtime back what was registered while it is still whole.
void unregister_all() {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (FatBinary *b : r.binaries)
        if (b->real) {
            g_api.__cudaUnregisterFatBinary(b->real);
            b->real = nullptr;
        }
}

void load() {
    void *h = dlopen(g_soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        g_error = "cannot load the CUDA runtime (" + g_soname + "): " + (e ? e : "unknown error") +
                  "; install the CUDA toolkit's runtime or put its directory on LD_LIBRARY_PATH";
        return;
    }
    Api a;
    auto sym = [&](const char *name) -> void * {
        void *p = dlsym(h, name);
        if (!p && g_error.empty()) g_error = "cannot use the CUDA runtime: " + g_soname + " lacks " + name;
        return p;
    };
#define GPT_CUDART_RESOLVE(name, ...) a.name = reinterpret_cast<decltype(a.name)>(sym(GPT_CUDART_STR(name)));
#define GPT_CUDART_RESOLVE1(name) GPT_CUDART_RESOLVE(name)
    GPT_CUDART_FORWARDED(GPT_CUDART_RESOLVE)
    GPT_CUDART_SPECIAL(GPT_CUDART_RESOLVE1)
    GPT_CUDART_INTERNAL(GPT_CUDART_RESOLVE1)
#undef GPT_CUDART_RESOLVE
#undef GPT_CUDART_RESOLVE1
    if (!g_error.empty()) return; // the handle stays open: harmless, and dlclose could race
    g_api = a;
    {
        Registry &r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        for (FatBinary *b : r.binaries) replay(g_api, *b);
        g_ready.store(&g_api, std::memory_order_release);
    }
    std::atexit(unregister_all);
}

// The runtime's functions, loading it on the first call; nullptr when it cannot be loaded.
const Api *api() {
    if (const Api *a = g_ready.load(std::memory_order_acquire)) return a;
    std::call_once(g_once, load);
    return g_ready.load(std::memory_order_acquire);
}

cudaError_t unavailable() {
    t_last_error = kUnavailable;
    return kUnavailable;
}

} // namespace

bool cudart_loaded() { return g_ready.load(std::memory_order_acquire) != nullptr; }

void cudart_use_library_for_testing(const char *soname) {
    if (!cudart_loaded() && soname) g_soname = soname;
}

} // namespace gpt::cuda

using gpt::cuda::api;
using gpt::cuda::binary_of;
using gpt::cuda::FatBinary;
using gpt::cuda::registry;

// ---- registration entry points: recorded; forwarded at once if the runtime is already open

void **__cudaRegisterFatBinary(void *fatCubin) {
    auto *b = new FatBinary;
    b->fat_cubin = fatCubin;
    auto &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.binaries.push_back(b);
    if (const auto *a = gpt::cuda::g_ready.load(std::memory_order_acquire)) b->real = a->__cudaRegisterFatBinary(fatCubin);
    return reinterpret_cast<void **>(b);
}

void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun, const char *deviceName, int thread_limit,
                            uint3 *tid, uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize) {
    auto &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    FatBinary *b = binary_of(handle);
    b->functions.push_back({hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize});
    if (b->real) gpt::cuda::g_api.__cudaRegisterFunction(b->real, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize);
}

void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress, const char *deviceName, int ext, size_t size,
                       int constant, int global) {
    auto &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    FatBinary *b = binary_of(handle);
    b->vars.push_back({hostVar, deviceAddress, deviceName, ext, size, constant, global});
    if (b->real) gpt::cuda::g_api.__cudaRegisterVar(b->real, hostVar, deviceAddress, deviceName, ext, size, constant, global);
}

void __cudaRegisterFatBinaryEnd(void **handle) {
    auto &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    FatBinary *b = binary_of(handle);
    b->ended = true;
    if (b->real) gpt::cuda::g_api.__cudaRegisterFatBinaryEnd(b->real);
}

// From nvcc's atexit handler (or libgpt's unloading): forget the record, and unregister the real
// binary unless unregister_all did already.
void __cudaUnregisterFatBinary(void **handle) {
    auto &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    FatBinary *b = binary_of(handle);
    if (b->real) gpt::cuda::g_api.__cudaUnregisterFatBinary(b->real);
    for (size_t i = 0; i < r.binaries.size(); ++i)
        if (r.binaries[i] == b) {
            r.binaries.erase(r.binaries.begin() + static_cast<std::ptrdiff_t>(i));
            break;
        }
    delete b;
}

// ---- launches (kernel<<<...>>> and nvcc's launch stubs)

unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, struct CUstream_st *stream) {
    const auto *a = api();
    if (!a) {
        gpt::cuda::unavailable();
        return 1; // non-zero: the generated code skips the launch
    }
    return a->__cudaPushCallConfiguration(gridDim, blockDim, sharedMem, stream);
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream) {
    const auto *a = api();
    return a ? a->__cudaPopCallConfiguration(gridDim, blockDim, sharedMem, stream) : gpt::cuda::unavailable();
}

#if CUDART_VERSION >= 13000
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun) {
    const auto *a = api();
    return a ? a->__cudaGetKernel(kernel, hostFun) : gpt::cuda::unavailable();
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream) {
    const auto *a = api();
    return a ? a->__cudaLaunchKernel(kernel, gridDim, blockDim, args, sharedMem, stream) : gpt::cuda::unavailable();
}
#endif

// ---- the runtime's public functions

#define GPT_CUDART_DEFINE(name, params, args)                                                                            \
    cudaError_t CUDARTAPI name params {                                                                                  \
        const auto *a = api();                                                                                           \
        return a ? a->name args : gpt::cuda::unavailable();                                                              \
    }
GPT_CUDART_FORWARDED(GPT_CUDART_DEFINE)
#undef GPT_CUDART_DEFINE

cudaError_t CUDARTAPI cudaGetDeviceCount(int *count) {
    const auto *a = api();
    if (a) return a->cudaGetDeviceCount(count);
    if (count) *count = 0;
    return gpt::cuda::unavailable();
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *version) {
    const auto *a = api();
    if (a) return a->cudaRuntimeGetVersion(version);
    if (version) *version = 0;
    return gpt::cuda::unavailable();
}

cudaError_t CUDARTAPI cudaDriverGetVersion(int *version) {
    const auto *a = api();
    if (a) return a->cudaDriverGetVersion(version);
    if (version) *version = 0;
    return gpt::cuda::unavailable();
}

// Without the runtime the only error is kUnavailable, and its message is why.
const char *CUDARTAPI cudaGetErrorName(cudaError_t error) {
    const auto *a = api();
    if (a) return a->cudaGetErrorName(error);
    return error == gpt::cuda::kUnavailable ? "cudaErrorInsufficientDriver" : "cudaErrorUnknown";
}

const char *CUDARTAPI cudaGetErrorString(cudaError_t error) {
    const auto *a = api();
    if (a) return a->cudaGetErrorString(error);
    return error == gpt::cuda::kUnavailable ? gpt::cuda::g_error.c_str() : "unknown error (the CUDA runtime is not loaded)";
}

cudaError_t CUDARTAPI cudaGetLastError(void) {
    const auto *a = api();
    if (a) return a->cudaGetLastError();
    const cudaError_t e = gpt::cuda::t_last_error;
    gpt::cuda::t_last_error = cudaSuccess;
    return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) {
    const auto *a = api();
    return a ? a->cudaPeekAtLastError() : gpt::cuda::t_last_error;
}
