// common.cuh - shared device helpers for the kernels in cuda/: element types, conversions,
// warp and block reductions. cuda/ includes nothing from lib/: launchers take plain
// pointers, sizes, an element-type code and an explicit stream.
#pragma once

#include "dtype.cuh"
#include "pdl.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace gpt_cuda {

inline __host__ __device__ int dtype_size(int t) { return t == F32 ? 4 : 2; }
inline __host__ __device__ unsigned ceil_div(unsigned a, unsigned b) { return (a + b - 1) / b; }

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_f32<__half>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Element i of an array whose element type is a run-time code (F32, F16, BF16), widened to
// f32, and its inverse (rounding as from_f32). For prologues and epilogues, where the branch
// costs nothing beside the main loop and saves a kernel per activation type.
__device__ __forceinline__ float load_as_f32(const void *p, uint64_t i, int t) {
    if (t == F32) return static_cast<const float *>(p)[i];
    if (t == F16) return __half2float(static_cast<const __half *>(p)[i]);
    return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
}
// Elements i..i+3 (i a multiple of 4, the array 16-byte aligned) of an array of run-time type
// t, widened to f32, with one load.
__device__ __forceinline__ void load4_as_f32(const void *p, uint64_t i, int t, float f[4]) {
    if (t == F32) {
        const float4 v = reinterpret_cast<const float4 *>(p)[i / 4];
        f[0] = v.x, f[1] = v.y, f[2] = v.z, f[3] = v.w;
        return;
    }
    const uint2 v = reinterpret_cast<const uint2 *>(p)[i / 4];
    float2 lo, hi;
    if (t == F16) {
        lo = __half22float2(*reinterpret_cast<const __half2 *>(&v.x));
        hi = __half22float2(*reinterpret_cast<const __half2 *>(&v.y));
    } else {
        lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&v.x));
        hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&v.y));
    }
    f[0] = lo.x, f[1] = lo.y, f[2] = hi.x, f[3] = hi.y;
}
__device__ __forceinline__ void store_from_f32(void *p, uint64_t i, int t, float v) {
    if (t == F32) static_cast<float *>(p)[i] = v;
    else if (t == F16) static_cast<__half *>(p)[i] = __float2half_rn(v);
    else static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
}

// GELU, tanh approximation (GPT-2's MLP, GeGLU's gate); sqrt(2 / pi) = 0.79788...
__device__ __forceinline__ float gelu_tanh(float v) {
    const float k = 0.7978845608028654f;
    return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}
__device__ __forceinline__ float silu(float v) { return v / (1.0f + __expf(-v)); }
// act: an ActCode (dtype.cuh). GELU erf: 0.5 v (1 + erf(v / sqrt(2))) (PyTorch's default nn.GELU: nanoGPT, minGPT).
__device__ __forceinline__ float activate(float v, int act) {
    switch (act) {
    case ACT_GELU_TANH: return gelu_tanh(v);
    case ACT_GELU_ERF: return 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    case ACT_RELU: return v > 0.0f ? v : 0.0f;
    case ACT_SILU: return silu(v);
    default: return v;
    }
}
// cap * tanh(v / cap): Gemma-2's soft-capping of scores and logits (callers test cap > 0).
__device__ __forceinline__ float soft_cap(float v, float cap) { return cap * tanhf(v / cap); }
// acc += w * x, element by element (the attention kernels' value sums).
__device__ __forceinline__ void add_scaled(float4 &acc, float w, const float4 &x) {
    acc.x += w * x.x;
    acc.y += w * x.y;
    acc.z += w * x.z;
    acc.w += w * x.w;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the block; every thread gets the result. scratch: 32 floats of shared memory.
__device__ __forceinline__ float block_sum(float v, float *scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads(); // scratch may still be read from a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < n_warps ? scratch[lane] : 0.0f;
    return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float *scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < n_warps ? scratch[lane] : -INFINITY;
    return warp_max(v);
}

// Programmatic dependent launch (Hopper and newer): kernels are launched with
// launch_pdl so the next kernel's blocks can start while this one finishes. Every kernel
// calls pdl_wait() before it touches memory an earlier kernel writes or reads (this waits
// for the whole previous grid and its memory), and pdl_launch_dependents() once the next
// kernel may be scheduled. Weights, which no kernel writes, may be read before pdl_wait.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// launch_pdl_cluster also groups the blocks in clusters of `cluster` (1: none; more: sm_90, a
// divisor of grid.x), whose blocks run at once and can read each other's shared memory.
template <typename... KArgs, typename... Args>
cudaError_t launch_pdl_cluster(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, uint32_t cluster,
                               Args &&...args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[2];
    unsigned n = 0;
    if (pdl_enabled()) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n++].val.clusterDim = {cluster, 1, 1};
    }
    cfg.attrs = attr;
    cfg.numAttrs = n;
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}
template <typename... KArgs, typename... Args>
cudaError_t launch_pdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args &&...args) {
    return launch_pdl_cluster(kernel, grid, block, smem, stream, 1, std::forward<Args>(args)...);
}

// The 16-byte vector v of T as N = 16 / sizeof(T) floats (the third argument picks T).
__device__ __forceinline__ void widen16(const uint4 &v, float *f, float) {
    f[0] = __uint_as_float(v.x); f[1] = __uint_as_float(v.y); f[2] = __uint_as_float(v.z); f[3] = __uint_as_float(v.w);
}
__device__ __forceinline__ float2 pair_to_float2(__half2 p) { return __half22float2(p); }
__device__ __forceinline__ float2 pair_to_float2(__nv_bfloat162 p) { return __bfloat1622float2(p); }
template <typename T> __device__ __forceinline__ void widen16(const uint4 &v, float *f, T) {
    static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "f32, f16 or bf16");
    using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
    const Pair *h = reinterpret_cast<const Pair *>(&v);
    for (int i = 0; i < 4; i++) {
        const float2 p = pair_to_float2(h[i]);
        f[2 * i] = p.x;
        f[2 * i + 1] = p.y;
    }
}

// 16 bytes global -> shared, asynchronously where the GPU can (cp.async from sm_80). Copies
// issued since the last commit_copies() form a group; wait_copies_but<n>() waits until at
// most n groups are in flight, wait_copies() for all of them.
__device__ __forceinline__ void copy16(uint4 *dst, const uint4 *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
#else
    *dst = *src;
#endif
}
__device__ __forceinline__ void commit_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int n> __device__ __forceinline__ void wait_copies_but() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;" ::"n"(n) : "memory");
#endif
}
__device__ __forceinline__ void wait_copies() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// Calls f.template operator()<T>() with T the C++ type of dtype code t.
template <typename F> cudaError_t dispatch_dtype(int t, F &&f) {
    switch (t) {
    case F32: f(float{}); return cudaSuccess;
    case F16: f(__half{}); return cudaSuccess;
    case BF16: f(__nv_bfloat16{}); return cudaSuccess;
    }
    return cudaErrorInvalidValue;
}

} // namespace gpt_cuda
