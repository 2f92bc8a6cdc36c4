// cluster.cuh - thread block clusters (sm_90) from the device side: the block's rank and the
// cluster's size, the cluster barrier, and reads of a partner block's shared memory
// (distributed shared memory). Launches: common.cuh's launch_pdl_cluster. In code for older
// archs these are a cluster of one block (rank 0, size 1, no barrier) and the reads return 0.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

namespace gpt_cuda {

// Thread block clusters (sm_90): the block's rank in its cluster and the cluster's size (0 and
// 1 without a cluster launch, and in code for older archs); a barrier of all the cluster's
// threads in two halves (arrive releases this thread's writes, wait acquires the others'); and
// reads of another block's shared memory: peer_addr maps this block's shared variable at p to
// the same variable in block `rank`.
__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
    return r;
}
__device__ __forceinline__ uint32_t cluster_size() {
    uint32_t n = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
#endif
    return n;
}
__device__ __forceinline__ void cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ uint32_t peer_addr(const void *p, uint32_t rank) {
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mapa.shared::cluster.u32 %0, %0, %1;" : "+r"(a) : "r"(rank));
#endif
    return a;
}
// (volatile: kept after the barrier that made the data ready)
__device__ __forceinline__ int4 peer_load16(uint32_t addr) {
    int4 v = make_int4(0, 0, 0, 0);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("ld.shared::cluster.v4.s32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
#endif
    return v;
}
__device__ __forceinline__ int2 peer_load8(uint32_t addr) {
    int2 v = make_int2(0, 0);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("ld.shared::cluster.v2.s32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr));
#endif
    return v;
}
__device__ __forceinline__ float peer_load_f32(uint32_t addr) {
    float v = 0.0f;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(addr));
#endif
    return v;
}

} // namespace gpt_cuda
