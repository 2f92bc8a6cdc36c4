// moe_grouped_gemm.cu - the grouped expert GEMM (moe_grouped_gemm.cuh) on tensor cores:
// WMMA 16x16x16 fragments, f16 or bf16 operands, f32 accumulation.
//
// One block computes a 64 x 128 tile of y: 64 grouped rows of one expert times 128 rows of
// that expert's matrix. grid.x enumerates m-tiles over all experts in order (expert e has
// ceil(rows_e / 64) of them); it is sized by the upper bound ceil(pairs / 64) + n_experts,
// and each block finds its expert from the device offsets (one warp, a prefix sum over the
// experts' tile counts); blocks past the last tile return at once. grid.y is the n-tile.
// K advances in steps of 32 through a 3-stage cp.async pipeline (16-byte copies; rows past
// the group or the matrix and columns past k are zero-filled, so no stale value reaches the
// products). 8 warps in a 2 x 4 grid, each 32 x 32 of the tile (2 x 2 fragments). The f32
// tile then goes through shared memory (reusing the pipeline's) to guarded stores.
#include "common.cuh"
#include "moe_grouped_gemm.cuh"

#include <mma.h>

using namespace gpt_cuda;
using namespace nvcuda;

namespace {

constexpr int kBM = 64, kBN = 128, kBK = 32; // block tile: rows, output columns, k step
constexpr int kStages = 3;
constexpr int kWarpsM = 2, kWarpsN = 4, kThreads = kWarpsM * kWarpsN * 32;
constexpr int kWarpM = kBM / kWarpsM, kWarpN = kBN / kWarpsN; // 32 x 32 a warp
constexpr int kLd = kBK + 8;   // 16-bit tiles' row stride in elements (80 bytes: spreads the banks)
constexpr int kLdC = kBN + 4;  // the f32 output tile's row stride
constexpr size_t kStageElems = (size_t)(kBM + kBN) * kLd;
constexpr size_t kPipeBytes = kStages * kStageElems * 2;
constexpr size_t kOutBytes = (size_t)kBM * kLdC * 4;
constexpr size_t kSmemBytes = kPipeBytes > kOutBytes ? kPipeBytes : kOutBytes;
static_assert(kSmemBytes <= 48 * 1024, "static shared memory");
static_assert(kWarpM % 16 == 0 && kWarpN % 16 == 0 && kBK % 16 == 0, "tile shape");

// The device code exists from sm_80 (bf16 fragments, cp.async); older archs get empty kernels
// that moe_grouped_gemm_supported never lets run.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
constexpr int kFragM = kWarpM / 16, kFragN = kWarpN / 16;
constexpr int kChunks = kBK / 8; // 16-byte copies a tile row

// 16 bytes global -> shared, or 16 zero bytes when !full (then nothing is read from src).
__device__ __forceinline__ void copy16(void *dst, const void *src, bool full) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(full ? 16 : 0));
}
__device__ __forceinline__ void copy_commit() {
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N> __device__ __forceinline__ void copy_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

struct Tile {
    int expert; // -1: no work for this block
    int row0, end; // grouped rows row0 .. min(row0 + kBM, end) - 1
};

// Warp 0 walks the experts 32 at a time, scanning their m-tile counts, and publishes the
// expert holding m-tile `t` (offsets clamped to [0, pairs] and made non-decreasing per expert).
__device__ void find_tile(const int32_t *offsets, int n_experts, int pairs, int t, Tile *out) {
    const int lane = threadIdx.x & 31;
    if (lane == 0) out->expert = -1;
    __syncwarp();
    int before = 0; // m-tiles of the experts already walked
    for (int e0 = 0; e0 < n_experts && before <= t; e0 += 32) {
        const int e = e0 + lane;
        int start = 0, end = 0;
        if (e < n_experts) {
            start = min(max(offsets[e], 0), pairs);
            end = max(min(max(offsets[e + 1], 0), pairs), start);
        }
        const int tiles = (end - start + kBM - 1) / kBM;
        int incl = tiles; // inclusive prefix sum over the lanes
        for (int o = 1; o < 32; o <<= 1) {
            const int v = __shfl_up_sync(0xffffffffu, incl, o);
            if (lane >= o) incl += v;
        }
        const int first = before + incl - tiles;
        if (tiles > 0 && t >= first && t < before + incl) {
            out->expert = e;
            out->row0 = start + (t - first) * kBM;
            out->end = end;
        }
        before += __shfl_sync(0xffffffffu, incl, 31);
    }
}

#endif

template <typename T, typename Y> __global__ void __launch_bounds__(kThreads) grouped_gemm_kernel(MoeGroupedGemmArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    __shared__ __align__(128) unsigned char smem[kSmemBytes];
    __shared__ Tile tile;
    pdl_wait(); // the offsets and x come from the previous kernels
    if (threadIdx.x < 32) find_tile(a.offsets, (int)a.n_experts, (int)a.pairs, (int)blockIdx.x, &tile);
    __syncthreads();
    const int expert = tile.expert;
    if (expert < 0) return; // uniform: every thread read the same value
    const int row0 = tile.row0, end = tile.end;
    const int N = (int)a.n, K = (int)a.k, n0 = (int)blockIdx.y * kBN;
    const T *x = static_cast<const T *>(a.x);
    const T *w = static_cast<const T *>(a.w) + (uint64_t)expert * a.n * a.k;
    T *pipe = reinterpret_cast<T *>(smem);

    // Stage s <- k-tile kt: kBM rows of x and kBN rows of w, kBK columns each.
    auto load = [&](int s, int kt) {
        T *xs = pipe + (size_t)s * kStageElems, *ws = xs + kBM * kLd;
        const int k0 = kt * kBK;
        for (int i = threadIdx.x; i < (kBM + kBN) * kChunks; i += kThreads) {
            const int r = i / kChunks, c = (i % kChunks) * 8, kk = k0 + c;
            if (r < kBM) {
                const int row = row0 + r;
                const bool full = row < end && kk < K;
                copy16(xs + r * kLd + c, full ? x + (uint64_t)row * K + kk : x, full);
            } else {
                const int rn = r - kBM, col = n0 + rn;
                const bool full = col < N && kk < K;
                copy16(ws + rn * kLd + c, full ? w + (uint64_t)col * K + kk : w, full);
            }
        }
    };

    const int warp = threadIdx.x / 32, wm = warp / kWarpsN, wn = warp % kWarpsN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragM][kFragN];
    for (int i = 0; i < kFragM; i++)
        for (int j = 0; j < kFragN; j++) wmma::fill_fragment(acc[i][j], 0.0f);

    const int n_kt = (K + kBK - 1) / kBK;
    for (int s = 0; s < kStages - 1; s++) {
        if (s < n_kt) load(s, s);
        copy_commit(); // one group per stage, empty or not, so the wait count below holds
    }
    for (int kt = 0; kt < n_kt; kt++) {
        copy_wait<kStages - 2>(); // this thread's copies of k-tile kt have landed
        __syncthreads();          // everyone's have; and k-tile kt - 1's buffer is no longer read
        const int next = kt + kStages - 1;
        if (next < n_kt) load(next % kStages, next);
        copy_commit();
        const T *xs = pipe + (size_t)(kt % kStages) * kStageElems, *ws = xs + kBM * kLd;
        for (int kk = 0; kk < kBK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa[kFragM];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb[kFragN]; // w rows are b's columns
            for (int i = 0; i < kFragM; i++) wmma::load_matrix_sync(fa[i], xs + (wm * kWarpM + i * 16) * kLd + kk, kLd);
            for (int j = 0; j < kFragN; j++) wmma::load_matrix_sync(fb[j], ws + (wn * kWarpN + j * 16) * kLd + kk, kLd);
            for (int i = 0; i < kFragM; i++)
                for (int j = 0; j < kFragN; j++) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
    }
    copy_wait<0>();
    __syncthreads(); // the pipeline's memory becomes the output tile

    float *out = reinterpret_cast<float *>(smem);
    for (int i = 0; i < kFragM; i++)
        for (int j = 0; j < kFragN; j++)
            wmma::store_matrix_sync(out + (wm * kWarpM + i * 16) * kLdC + wn * kWarpN + j * 16, acc[i][j], kLdC, wmma::mem_row_major);
    __syncthreads();
    const int rows = min(kBM, end - row0), cols = min(kBN, N - n0);
    Y *y = static_cast<Y *>(a.y);
    for (int i = threadIdx.x; i < kBM * kBN; i += kThreads) {
        const int r = i / kBN, c = i % kBN;
        if (r < rows && c < cols) y[(uint64_t)(row0 + r) * N + n0 + c] = from_f32<Y>(out[r * kLdC + c]);
    }
#endif
}

template <typename T> cudaError_t launch_typed(const MoeGroupedGemmArgs &a, cudaStream_t stream) {
    // Sum over experts of ceil(rows_e / kBM) <= ceil(pairs / kBM) + n_experts.
    const dim3 grid(ceil_div(a.pairs, kBM) + a.n_experts, ceil_div(a.n, kBN));
    if (a.y_f32) return launch_pdl(grouped_gemm_kernel<T, float>, grid, kThreads, 0, stream, a);
    return launch_pdl(grouped_gemm_kernel<T, T>, grid, kThreads, 0, stream, a);
}

} // namespace

bool moe_grouped_gemm_supported(int dtype, uint32_t k) {
    return kernel_arch() >= 80 && (dtype == F16 || dtype == BF16) && k > 0 && k % 8 == 0;
}

cudaError_t launch_moe_grouped_gemm(const MoeGroupedGemmArgs &a, cudaStream_t stream) {
    if (!moe_grouped_gemm_supported(a.dtype, a.k) || !a.n || !a.n_experts) return cudaErrorInvalidValue;
    if ((reinterpret_cast<uintptr_t>(a.x) | reinterpret_cast<uintptr_t>(a.w)) % 16) return cudaErrorInvalidValue;
    // Indices are int on the device: rows, columns and k must fit.
    if (a.pairs > (uint32_t)INT32_MAX / 2 || a.n_experts > (uint32_t)INT32_MAX / 2 || a.n > (uint32_t)INT32_MAX - kBN ||
        a.k > (uint32_t)INT32_MAX - kBK)
        return cudaErrorInvalidValue;
    if (!a.pairs) return cudaSuccess;
    if (ceil_div(a.n, kBN) > 65535u) return cudaErrorInvalidValue;
    return a.dtype == F16 ? launch_typed<__half>(a, stream) : launch_typed<__nv_bfloat16>(a, stream);
}
