// moe_stream.cu - the gate|up expert GEMV of a one-row decode step, weights streamed through
// shared memory (moe_stream.cuh says when and why).
//
// The work of a step is a list of weight rows: units (slot s, GLU column j), two rows each
// (gate, up). One wave of blocks (as many as the device holds) splits the units over its
// warps, unit u to warp u mod (warps in the grid), and each warp walks its rows in order
// through a ring of `stages` rows in shared memory: while it computes row q, rows q + 1 ..
// q + stages - 1 are on their way, each one bulk copy (TMA) issued by lane 0 with an
// evict-first L2 hint (the weights are read once a step), its arrival signalled on the
// stage's mbarrier.
//
// Each lane's sum runs over its vectors (lane, lane + 32, ...) in order, element by element
// (FMA), then the warp sum: the order of moe.cu's gate_up_kernel, so the same bits. x (H)
// stays in registers.
#include "moe_stream.cuh"
#include "common.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace gpt_cuda;

namespace {

constexpr uint32_t kWarps = 8;  // warps a block
constexpr uint32_t kMaxVpl = 8; // 16-byte vectors of a row a lane takes: rows up to 256 vectors
// Shared memory a block's ring may take. H200 (PERFORMANCE 57): 64 KB (two blocks an SM)
// beat 32-48 KB and 96-192 KB rings.
constexpr size_t kRingBytes = 64 * 1024;
// Rows shorter than this many vectors a lane (moe-768's d_model: 3) ran slower streamed than
// in moe.cu's kernel: the ring's per-row wait and the warp sums weigh more.
constexpr uint32_t kMinVpl = 4;
// Rows of a warp's ring at most: the shortest rows taken in the ring's bytes.
constexpr uint32_t kMaxStages = kRingBytes / (kWarps * 32 * kMinVpl * 16);

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ uint64_t evict_first_policy() {
    uint64_t p;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
    return p;
}
__device__ __forceinline__ void mbar_init(uint64_t *bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// `bytes` from src to dst in one bulk copy, completing the mbarrier's phase when they land.
__device__ __forceinline__ void bulk_row(void *dst, const void *src, uint32_t bytes, uint64_t *bar, uint64_t policy) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
    uint32_t done = 0;
    while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done)
                     : "r"(smem_addr(bar)), "r"(parity)
                     : "memory");
}

// A warp's rows through its ring: row q is kv 16-byte vectors at src(q), held whole in stage
// q mod stages (vector i at stage + i); `ring` is the warp's, `bars` its stages' mbarriers.
struct RowRing {
    uint4 *ring;
    uint64_t *bars;
    uint32_t vpl, stages, kv, lane;
    uint64_t policy;

    __device__ __forceinline__ uint4 *stage(uint32_t q) const { return ring + (q % stages) * vpl * 32; }
    __device__ __forceinline__ void init() const {
        if (lane == 0) {
            for (uint32_t s = 0; s < stages; s++) mbar_init(bars + s);
            mbar_init_fence();
        }
        __syncwarp();
    }
    // Row q's copy (none past `rows`) into a stage every lane is done reading.
    template <typename Src> __device__ __forceinline__ void issue(uint32_t q, uint32_t rows, Src src) const {
        if (lane == 0 && q < rows) bulk_row(stage(q), src(q), kv * 16, bars + q % stages, policy);
    }
    // Rows 0 .. stages - 2 on their way.
    template <typename Src> __device__ __forceinline__ void start(uint32_t rows, Src src) const {
        for (uint32_t q = 0; q + 1 < stages; q++) issue(q, rows, src);
    }
    // Issues row q + stages - 1 into the stage row q - 1 used, then waits for row q.
    template <typename Src> __device__ __forceinline__ void next(uint32_t q, uint32_t rows, Src src) const {
        __syncwarp(); // every lane is done with row q - 1
        issue(q + stages - 1, rows, src);
        mbar_wait(bars + q % stages, (q / stages) & 1);
    }
    // This lane's share of row q . x, x's vector t given by xvec(t) (after next(q)).
    template <typename T, typename XVec> __device__ __forceinline__ float dot(uint32_t q, XVec xvec) const {
        constexpr uint32_t N = 16 / sizeof(T);
        const uint4 *slot = stage(q) + lane;
        float acc = 0.0f;
#pragma unroll
        for (uint32_t t = 0; t < kMaxVpl; t++) {
            if (t >= vpl || lane + 32 * t >= kv) break;
            float wf[N], xf[N];
            widen16(slot[32 * t], wf, T{});
            widen16(xvec(t), xf, T{});
#pragma unroll
            for (uint32_t e = 0; e < N; e++) acc += wf[e] * xf[e];
        }
        return acc;
    }
};

__device__ __forceinline__ uint32_t clamped_expert(int32_t e, uint32_t n_experts) {
    return e < 0 ? 0u : min((uint32_t)e, n_experts - 1); // always a row of the matrix
}
#endif

// glu_out[s][j] = act(x . gate_e[j]) * (x . up_e[j]), e = ids[s], for the one row x.
template <typename T> __global__ void __launch_bounds__(kWarps * 32) gate_up_stream_kernel(MoeExpertArgs a, uint32_t vpl, uint32_t stages) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ uint4 ring[]; // [kWarps][stages][vpl][32]
    __shared__ uint32_t expert[kMoeMaxTopK];
    __shared__ uint64_t bars[kWarps][kMaxStages];
    pdl_wait(); // the routing and x come from the kernels before
    pdl_launch_dependents();
    for (uint32_t s = threadIdx.x; s < a.top_k; s += blockDim.x) expert[s] = clamped_expert(a.ids[s], a.n_experts);
    __syncthreads();
    constexpr uint32_t N = 16 / sizeof(T);
    const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, kv = a.d / N;
    const uint32_t units = a.top_k * a.ff, gw = blockIdx.x * kWarps + warp, tw = gridDim.x * kWarps;
    const uint32_t rows = gw < units ? 2 * ((units - 1 - gw) / tw + 1) : 0;
    const T *w = static_cast<const T *>(a.w);
    auto unit_of = [&](uint32_t q) { return gw + (q / 2) * tw; };
    auto src = [&](uint32_t q) {
        const uint32_t u = unit_of(q), s = u / a.ff, j = u - s * a.ff;
        return reinterpret_cast<const uint4 *>(w + ((uint64_t)expert[s] * 2 * a.ff + (q % 2) * a.ff + j) * a.d);
    };
    const RowRing rr{ring + (uint64_t)warp * stages * vpl * 32, bars[warp], vpl, stages, kv, lane, evict_first_policy()};
    rr.init();
    rr.start(rows, src);
    uint4 xr[kMaxVpl];
    const uint4 *x = static_cast<const uint4 *>(a.x);
#pragma unroll
    for (uint32_t t = 0; t < kMaxVpl; t++) xr[t] = t < vpl && lane + 32 * t < kv ? x[lane + 32 * t] : make_uint4(0, 0, 0, 0);
    float gate = 0.0f;
    for (uint32_t q = 0; q < rows; q++) {
        rr.next(q, rows, src);
        const float v = rr.dot<T>(q, [&](uint32_t t) { return xr[t]; });
        if (q % 2 == 0) {
            gate = v;
            continue;
        }
        const float gs = warp_sum(gate), us = warp_sum(v);
        if (lane == 0) {
            const uint32_t u = unit_of(q), s = u / a.ff, j = u - s * a.ff;
            // Gate and up rounded to the activation type first, as the dense GLU stores them.
            static_cast<T *>(a.glu_out)[(uint64_t)s * a.ff + j] =
                from_f32<T>(activate(to_f32(from_f32<T>(gs)), a.act) * to_f32(from_f32<T>(us)));
        }
    }
#endif
}

struct Plan {
    uint32_t vpl, stages, blocks;
    size_t smem;
};
// The ring's depth from the shared memory a block may take, then the resident blocks with
// it. False when fewer than two stages fit.
bool plan_of(const void *kernel, uint32_t kv, Plan *p) {
    int dev = 0, optin = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    const size_t static_bytes = 1024; // the block's expert ids and mbarriers
    const size_t budget = std::min(kRingBytes, (size_t)std::max(optin, 0) > static_bytes ? (size_t)optin - static_bytes : 0);
    p->vpl = (kv + 31) / 32;
    const size_t stage_bytes = (size_t)kWarps * 32 * p->vpl * 16;
    p->stages = (uint32_t)std::min<size_t>(kMaxStages, budget / stage_bytes);
    p->smem = stage_bytes * p->stages;
    const bool ok = p->stages >= 2 && cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p->smem) == cudaSuccess &&
                    resident_blocks(kernel, kWarps * 32, p->smem, &p->blocks) == cudaSuccess;
    if (!ok) cudaGetLastError();
    return ok;
}

} // namespace

bool moe_stream_available() {
    static const bool on = [] {
        const char *v = std::getenv("GPT_MOE_STREAM");
        return !(v && std::strcmp(v, "0") == 0);
    }();
    return on && kernel_arch() >= 90;
}

bool moe_stream_gate_up_supported(const MoeExpertArgs &a) {
    const uint32_t kv = (a.act_dtype == F16 || a.act_dtype == BF16) ? a.d / 8 : 0;
    return moe_stream_available() && a.rows == 1 && a.wq == 0 && a.d % 8 == 0 && kv > 32 * (kMinVpl - 1) && kv <= 32 * kMaxVpl &&
           a.top_k >= 1 && a.top_k <= kMoeMaxTopK && a.top_k <= a.n_experts && (uint64_t)a.top_k * a.ff < (1ull << 31) &&
           reinterpret_cast<uintptr_t>(a.w) % 16 == 0 && reinterpret_cast<uintptr_t>(a.x) % 16 == 0;
}

cudaError_t launch_moe_gate_up_stream(const MoeExpertArgs &a, cudaStream_t stream) {
    if (!moe_stream_gate_up_supported(a)) return cudaErrorInvalidValue;
    auto launch = [&](auto kernel) {
        Plan p;
        if (!plan_of(reinterpret_cast<const void *>(kernel), a.d / 8, &p)) return cudaErrorNotSupported;
        return launch_pdl(kernel, p.blocks, kWarps * 32, p.smem, stream, a, p.vpl, p.stages);
    };
    return a.act_dtype == F16 ? launch(gate_up_stream_kernel<__half>) : launch(gate_up_stream_kernel<__nv_bfloat16>);
}
