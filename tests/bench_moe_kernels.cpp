// bench_moe_kernels - each decode kernel of the mixture-of-experts FFN (cuda/moe.cu) timed
// alone, with the dense GEMV (cuda/gemv.cu) of a 2048 x 2048 f16 matrix as the yardstick: a
// GPU has no profiler here, so this says which kernel loses the time. Not a test (no pass or
// fail); built only with CUDA. Usage: bench_moe_kernels [repetitions] (default 200).
//
// Per kernel: warm-up, then one pair of events around each launch, the median of the
// repetitions in microseconds, and the GB/s of weights that launch reads (each distinct
// expert's rows once). The weights are bigger than L2 and every repetition takes another of
// kIdSets random routings (and the dense GEMV another of kDenseCopies matrices), so the
// weights come from DRAM as in a real step, not from the L2 of the previous repetition.
// Last, the routing kernels of a 512-token prefill (router, top-k, grouping by expert) and
// its two grouped expert GEMMs (cuda/moe_grouped_gemm.cu: gate|up, down), in TFLOP/s, beside
// the per-expert cuBLAS GEMMs they replace (group sizes known on the host ahead: that path's
// read-back and sync are not in its time).
#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/gemm.h"
#include "gemv.cuh"
#include "moe.cuh"
#include "moe_grouped_gemm.cuh"
#include "cuda_ck.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr int kIdSets = 32;       // routings cycled through
constexpr int kDenseCopies = 16;  // 2048 x 2048 f16 matrices cycled through (128 MiB)
constexpr int kF16 = 2, kActSilu = 4; // cuda/dtype.cuh's F16 and ACT_SILU

// n random f16 values in [-scale, scale] on the device.
void *random_f16(uint64_t n, float scale, std::mt19937 &rng) {
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<__half> h(n);
    for (auto &v : h) v = __float2half(u(rng));
    void *d = nullptr;
    CK(cudaMalloc(&d, n * 2));
    CK(cudaMemcpy(d, h.data(), n * 2, cudaMemcpyHostToDevice));
    return d;
}

// Median microseconds of `reps` launches of launch(i), i the repetition.
double median_us(int reps, const std::function<void(int)> &launch) {
    for (int i = 0; i < 20; i++) launch(i);
    CK(cudaDeviceSynchronize());
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev) CK(cudaEventCreate(&e));
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(ev[2 * i]));
        launch(i);
        CK(cudaEventRecord(ev[2 * i + 1]));
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    std::vector<double> us(reps);
    for (int i = 0; i < reps; i++) {
        float ms = 0.0f;
        CK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
        us[i] = 1000.0 * ms;
    }
    for (auto &e : ev) CK(cudaEventDestroy(e));
    std::sort(us.begin(), us.end());
    return us[reps / 2];
}

void report(const char *shape, uint32_t rows, const char *kernel, double us, double weight_bytes) {
    const double gbs = weight_bytes > 0 ? weight_bytes / (us * 1e-6) / 1e9 : 0.0;
    std::printf("%-10s rows %u  %-8s %9.2f us  %8.1f MB  %7.0f GB/s\n", shape, rows, kernel, us, weight_bytes / 1e6, gbs);
}

struct Shape {
    const char *name;
    uint32_t d, n_experts, top_k, ff;
};

void bench_moe(const Shape &s, uint32_t rows, int reps, std::mt19937 &rng) {
    const uint32_t E = s.n_experts, k = s.top_k, d = s.d, ff = s.ff, pairs = rows * k;
    void *x = random_f16((uint64_t)rows * d, 1.0f, rng);
    void *router = random_f16((uint64_t)E * d, 0.05f, rng);
    void *gate_up = random_f16((uint64_t)E * 2 * ff * d, 0.02f, rng);
    void *down = random_f16((uint64_t)E * d * ff, 0.02f, rng);
    void *glu = random_f16((uint64_t)pairs * ff, 0.1f, rng);
    float *logits, *weights, *residual;
    int32_t *ids;
    CK(cudaMalloc(&logits, 4ull * rows * E));
    CK(cudaMalloc(&weights, 4ull * pairs));
    CK(cudaMalloc(&residual, 4ull * rows * d));
    CK(cudaMemset(residual, 0, 4ull * rows * d));
    CK(cudaMalloc(&ids, 4ull * pairs * kIdSets));
    // Each routing: k distinct random experts per row, as top-k gives; the distinct experts
    // of a set are what gate_up and down read.
    std::vector<int32_t> h_ids(pairs * kIdSets);
    std::vector<float> h_w(pairs, 1.0f / k);
    double distinct = 0;
    for (int t = 0; t < kIdSets; t++) {
        std::set<int32_t> used;
        for (uint32_t r = 0; r < rows; r++) {
            std::vector<int32_t> perm(E);
            for (uint32_t e = 0; e < E; e++) perm[e] = (int32_t)e;
            std::shuffle(perm.begin(), perm.end(), rng);
            for (uint32_t j = 0; j < k; j++) {
                h_ids[(uint64_t)t * pairs + r * k + j] = perm[j];
                used.insert(perm[j]);
            }
        }
        distinct += (double)used.size() / kIdSets;
    }
    CK(cudaMemcpy(ids, h_ids.data(), 4ull * h_ids.size(), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(weights, h_w.data(), 4ull * pairs, cudaMemcpyHostToDevice));
    {
        std::vector<float> h_l((uint64_t)rows * E);
        std::normal_distribution<float> n01;
        for (auto &v : h_l) v = n01(rng);
        CK(cudaMemcpy(logits, h_l.data(), 4ull * h_l.size(), cudaMemcpyHostToDevice));
    }
    int32_t *topk_ids;
    float *topk_w;
    CK(cudaMalloc(&topk_ids, 4ull * pairs));
    CK(cudaMalloc(&topk_w, 4ull * pairs));

    MoeExpertArgs a{};
    a.wq = 0;
    a.group = 0;
    a.rows = rows;
    a.n_experts = E;
    a.top_k = k;
    a.d = d;
    a.ff = ff;
    a.act = kActSilu;
    a.act_dtype = kF16;
    MoeExpertArgs g = a, dn = a;
    g.x = x;
    g.w = gate_up;
    g.glu_out = glu;
    dn.x = glu;
    dn.w = down;
    dn.weights = weights;
    dn.residual = residual;

    double us = median_us(reps, [&](int) { CK(launch_moe_router(x, router, 0, 0, rows, E, d, kF16, logits, nullptr)); });
    report(s.name, rows, "router", us, 2.0 * E * d);
    us = median_us(reps, [&](int) { CK(launch_moe_topk(logits, rows, E, k, 1, topk_ids, topk_w, nullptr)); });
    report(s.name, rows, "topk", us, 0);
    us = median_us(reps, [&](int i) {
        g.ids = ids + (uint64_t)(i % kIdSets) * pairs;
        CK(launch_moe_gate_up(g, nullptr));
    });
    report(s.name, rows, "gate_up", us, distinct * 2.0 * ff * d * 2);
    us = median_us(reps, [&](int i) {
        dn.ids = ids + (uint64_t)(i % kIdSets) * pairs;
        CK(launch_moe_down(dn, nullptr));
    });
    report(s.name, rows, "down", us, distinct * (double)d * ff * 2);

    for (void *p : {x, router, gate_up, down, glu}) CK(cudaFree(p));
    for (void *p : {(void *)logits, (void *)weights, (void *)residual, (void *)ids, (void *)topk_ids, (void *)topk_w}) CK(cudaFree(p));
}

// The routing kernels of a prefill step (router, top-k, the grouping by expert) over `rows` rows.
void bench_prefill_routing(const Shape &s, uint32_t rows, int reps, std::mt19937 &rng) {
    const uint32_t E = s.n_experts, k = s.top_k, d = s.d, pairs = rows * k;
    void *x = random_f16((uint64_t)rows * d, 1.0f, rng);
    void *router = random_f16((uint64_t)E * d, 0.05f, rng);
    float *logits, *weights;
    int32_t *ids, *offsets, *perm, *inv;
    CK(cudaMalloc(&logits, 4ull * rows * E));
    CK(cudaMalloc(&weights, 4ull * pairs));
    CK(cudaMalloc(&ids, 4ull * pairs));
    CK(cudaMalloc(&offsets, 4ull * (E + 1)));
    CK(cudaMalloc(&perm, 4ull * pairs));
    CK(cudaMalloc(&inv, 4ull * pairs));
    CK(launch_moe_router(x, router, 0, 0, rows, E, d, kF16, logits, nullptr));
    CK(launch_moe_topk(logits, rows, E, k, 1, ids, weights, nullptr));
    double us = median_us(reps, [&](int) { CK(launch_moe_router(x, router, 0, 0, rows, E, d, kF16, logits, nullptr)); });
    report(s.name, rows, "router", us, 2.0 * E * d);
    us = median_us(reps, [&](int) { CK(launch_moe_topk(logits, rows, E, k, 1, ids, weights, nullptr)); });
    report(s.name, rows, "topk", us, 0);
    us = median_us(reps, [&](int) { CK(launch_moe_group(ids, pairs, E, offsets, perm, inv, nullptr)); });
    report(s.name, rows, "group", us, 0);
    for (void *p : {x, router, (void *)logits, (void *)weights, (void *)ids, (void *)offsets, (void *)perm, (void *)inv}) CK(cudaFree(p));
}

// The grouped GEMMs of a prefill of `rows` rows: random top-k routings grouped on the device
// (launch_moe_group), then gate|up ([pairs][d] x [2 ff][d]^T per expert, f16 out) and down
// ([pairs][ff] x [d][ff]^T, f32 out). Every expert's weights (768 MB for OLMoE) exceed L2.
void bench_grouped_gemm(const Shape &s, uint32_t rows, int reps, std::mt19937 &rng) {
    const uint32_t E = s.n_experts, k = s.top_k, d = s.d, ff = s.ff, pairs = rows * k;
    if (!moe_grouped_gemm_supported(kF16, d) || !moe_grouped_gemm_supported(kF16, ff)) {
        std::printf("grouped gemm: not supported by these kernels' arch\n");
        return;
    }
    void *x = random_f16((uint64_t)pairs * d, 1.0f, rng);
    void *gate_up = random_f16((uint64_t)E * 2 * ff * d, 0.02f, rng);
    void *down = random_f16((uint64_t)E * d * ff, 0.02f, rng);
    void *glu = random_f16((uint64_t)pairs * ff, 0.1f, rng);
    void *gu_out = nullptr;
    float *down_out = nullptr;
    int32_t *ids, *offsets, *perm, *inv;
    CK(cudaMalloc(&gu_out, 2ull * pairs * 2 * ff));
    CK(cudaMalloc(&down_out, 4ull * pairs * d));
    CK(cudaMalloc(&ids, 4ull * pairs));
    CK(cudaMalloc(&offsets, 4ull * (E + 1)));
    CK(cudaMalloc(&perm, 4ull * pairs));
    CK(cudaMalloc(&inv, 4ull * pairs));
    std::vector<int32_t> h_ids(pairs);
    for (uint32_t r = 0; r < rows; r++) {
        std::vector<int32_t> order(E);
        for (uint32_t e = 0; e < E; e++) order[e] = (int32_t)e;
        std::shuffle(order.begin(), order.end(), rng);
        for (uint32_t j = 0; j < k; j++) h_ids[r * k + j] = order[j];
    }
    CK(cudaMemcpy(ids, h_ids.data(), 4ull * pairs, cudaMemcpyHostToDevice));
    CK(launch_moe_group(ids, pairs, E, offsets, perm, inv, nullptr));
    MoeGroupedGemmArgs g{};
    g.x = x;
    g.w = gate_up;
    g.offsets = offsets;
    g.y = gu_out;
    g.pairs = pairs;
    g.n_experts = E;
    g.n = 2 * ff;
    g.k = d;
    g.dtype = kF16;
    MoeGroupedGemmArgs dn = g;
    dn.x = glu;
    dn.w = down;
    dn.y = down_out;
    dn.n = d;
    dn.k = ff;
    dn.y_f32 = 1;
    std::vector<int32_t> off(E + 1);
    CK(cudaMemcpy(off.data(), offsets, 4ull * (E + 1), cudaMemcpyDeviceToHost));
    cublasHandle_t cublas = nullptr;
    if (gpt::cuda::cublas().create(&cublas) != CUBLAS_STATUS_SUCCESS) {
        std::fprintf(stderr, "bench_moe_kernels: cublasCreate failed\n");
        std::exit(1);
    }
    for (const MoeGroupedGemmArgs *a : {&g, &dn}) {
        const char *name = a == &g ? "gate_up" : "down";
        const double flop = 2.0 * pairs * a->n * a->k, bytes = 2.0 * E * a->n * a->k;
        auto line = [&](const char *how, double us) {
            std::printf("%-10s rows %u  %-8s %-7s %9.2f us  %6.1f TFLOP/s  %7.0f GB/s of weights (%u pairs, %u experts)\n", s.name,
                        rows, how, name, us, flop / (us * 1e-6) / 1e12, bytes / (us * 1e-6) / 1e9, pairs, E);
        };
        line("grouped", median_us(reps, [&](int) { CK(launch_moe_grouped_gemm(*a, nullptr)); }));
        const gpt::DType y_dtype = a->y_f32 ? gpt::DType::F32 : gpt::DType::F16;
        line("cublas", median_us(reps, [&](int) {
                 for (uint32_t e = 0; e < E; e++) {
                     const uint32_t n = (uint32_t)(off[e + 1] - off[e]);
                     if (!n) continue;
                     const gpt::Weight w{static_cast<const uint8_t *>(a->w) + 2ull * e * a->n * a->k, gpt::DType::F16, a->n, a->k, 0};
                     gpt::cuda::gemm(cublas, w, static_cast<const uint8_t *>(a->x) + 2ull * off[e] * a->k, gpt::DType::F16, a->k,
                                     static_cast<uint8_t *>(a->y) + (uint64_t)off[e] * a->n * (a->y_f32 ? 4 : 2), y_dtype, n, false);
                 }
             }));
    }
    gpt::cuda::cublas().destroy(cublas);
    for (void *p : {x, gate_up, down, glu, gu_out, (void *)down_out, (void *)ids, (void *)offsets, (void *)perm, (void *)inv})
        CK(cudaFree(p));
}

// The yardstick: y = W x for a 2048 x 2048 f16 W, one or two rows of x.
void bench_dense(uint32_t rows, int reps, std::mt19937 &rng) {
    const uint32_t n = 2048, k = 2048;
    std::vector<void *> w(kDenseCopies);
    for (auto &p : w) p = random_f16((uint64_t)n * k, 0.02f, rng);
    void *x = random_f16((uint64_t)rows * k, 1.0f, rng);
    void *y = random_f16((uint64_t)rows * n, 1.0f, rng);
    GemvArgs a{};
    a.x = x;
    a.ldx = k;
    a.y = y;
    a.rows = rows;
    a.n = n;
    a.k = k;
    a.dtype = kF16;
    const double us = median_us(reps, [&](int i) {
        a.w = w[i % kDenseCopies];
        CK(launch_gemv(a, nullptr));
    });
    report("dense", rows, "gemv", us, 2.0 * n * k);
    for (void *p : w) CK(cudaFree(p));
    CK(cudaFree(x));
    CK(cudaFree(y));
}

} // namespace

int main(int argc, char **argv) {
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        std::fprintf(stderr, "bench_moe_kernels: no CUDA device\n");
        return 1;
    }
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, dev));
    std::printf("%s, %d repetitions, median per launch; GB/s of weights read\n", prop.name, reps);
    std::mt19937 rng(19);
    const Shape olmoe{"olmoe", 2048, 64, 8, 1024}, founding{"moe-768", 768, 8, 2, 3072};
    for (const Shape &s : {olmoe, founding})
        for (uint32_t rows : {1u, 4u}) bench_moe(s, rows, reps, rng);
    bench_prefill_routing(olmoe, 512, reps, rng);
    bench_grouped_gemm(olmoe, 512, reps, rng);
    bench_dense(1, reps, rng);
    bench_dense(2, reps, rng);
    return 0;
}
