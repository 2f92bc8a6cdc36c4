// bench_quant_gemv - the quantized decode GEMV's variants (cuda/gemv_quant.cu and, on tensor
// cores, gemv_quant_mma.cu; gemv.cuh's QuantGemvVariant) timed one by one at the Qwen2-7B and
// TinyLlama-1.1B shapes, so one GPU run compares them all. Not a test (no pass or fail, but
// exit status 2 on a mismatch with tiled); built only with CUDA. ("tk": threads per set of 4
// weight rows, for mma per tile of 16.)
// Usage: bench_quant_gemv [launches per batch, default 200] [shape filter, e.g. qwen7b]
//
// Each case (shape x q8 g32 / q4 g32 / q4 g128 x rows 1, 2, 4 x variant) is timed as the
// decode step runs it: a CUDA graph of `launches` back-to-back launches (with PDL, as the
// decode graphs), replayed once to warm up, then 5 timed replays; the median replay over the
// launch count is the time per launch. The launches rotate over copies of the matrix whose
// total exceeds 3x the L2 size, so the weights come from DRAM. Shapes: each model's qkv (with
// biases for Qwen2), o (residual add), gate_up (SwiGLU pairs), down (residual add) and head
// (f32 logits). Beside each variant: the f16 GEMV of the same shape (rows 1-2; launch_gemv)
// and a device-to-device copy of the quantized matrix's bytes (its GB/s counted as read +
// write: the bandwidth ceiling). Each variant's output is compared with the default (tiled)
// variant's on the same inputs, epilogue included: "maxrel" is max |y - y_tiled| / max
// |y_tiled| (rounding-order differences only; a broken variant shows as ~1). Last, a summary
// (short enough for a terminal's tail): per model, quantization and row count, one layer's
// four matrices summed for each variant, the f16 GEMV and the copy.
#include "core/half.h"
#include "core/quant.h"
#include "gemv.cuh"
#include "cuda_ck.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

constexpr int kF16 = 2, kQ8 = 4, kQ4 = 5, kActSilu = 4; // cuda/dtype.cuh's codes
constexpr int kBatches = 5;

// A decode matrix: y = x . W^T with the epilogue the executor fuses into it.
struct Shape {
    const char *model, *name;
    uint32_t k, n; // n output columns (GLU: n pairs of gate and up rows)
    bool bias, glu, residual;
    bool head = false; // f32 logits; not part of a layer's sum
};
const Shape kShapes[] = {
    {"qwen7b", "qkv", 3584, 4608, true, false, false},     {"qwen7b", "o", 3584, 3584, false, false, true},
    {"qwen7b", "gate_up", 3584, 18944, false, true, false}, {"qwen7b", "down", 18944, 3584, false, false, true},
    {"tinyllama", "qkv", 2048, 2560, false, false, false},  {"tinyllama", "o", 2048, 2048, false, false, true},
    {"tinyllama", "gate_up", 2048, 5632, false, true, false}, {"tinyllama", "down", 5632, 2048, false, false, true},
    {"qwen7b", "head", 3584, 152064, false, false, false, true}, {"tinyllama", "head", 2048, 32000, false, false, false, true},
};
struct Quant {
    const char *name;
    int wq;
    uint32_t group;
};
const Quant kQuants[] = {{"q8g32", kQ8, 32}, {"q4g32", kQ4, 32}, {"q4g128", kQ4, 128}};

uint64_t g_state = 0x9E3779B97F4A7C15ull;
uint64_t next_random() { // xorshift64*: fast enough for 64 MB
    g_state ^= g_state >> 12;
    g_state ^= g_state << 25;
    g_state ^= g_state >> 27;
    return g_state * 0x2545F4914F6CDD1Dull;
}

// Device pools that fill every buffer by tiling: random code bytes (q8's -128, which the
// quantizer never writes, avoided) and random f16 values in [2^-10, 2^-6] (scales, f16
// weights, x).
struct Pools {
    void *bytes = nullptr, *halves = nullptr;
    static constexpr uint64_t kBytes = 64ull << 20, kHalves = 8ull << 20;
    Pools() {
        std::vector<uint8_t> b(kBytes);
        for (uint64_t i = 0; i < kBytes; i += 8) {
            uint64_t r = next_random();
            for (int j = 0; j < 8; j++, r >>= 8) b[i + j] = (uint8_t)r == 0x80 ? 0x81 : (uint8_t)r;
        }
        std::vector<uint16_t> h(kHalves);
        for (auto &v : h) v = gpt::f32_to_f16(std::ldexp(1.0f + (float)(next_random() >> 40) / (1u << 24), -10 + (int)(next_random() % 4)));
        CK(cudaMalloc(&bytes, kBytes));
        CK(cudaMalloc(&halves, kHalves * 2));
        CK(cudaMemcpy(bytes, b.data(), kBytes, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(halves, h.data(), kHalves * 2, cudaMemcpyHostToDevice));
    }
    // dst[0, n) from src (src_bytes long) read from offset salt * 16 (even: halves stay whole).
    static void tile(void *dst, const void *src, uint64_t src_bytes, uint64_t n, uint64_t salt) {
        const uint64_t off = salt * 16 % 4096, chunk = src_bytes - 4096;
        for (uint64_t o = 0; o < n; o += chunk)
            CK(cudaMemcpy(static_cast<uint8_t *>(dst) + o, static_cast<const uint8_t *>(src) + off, std::min(chunk, n - o),
                          cudaMemcpyDeviceToDevice));
    }
    // n bytes of random codes; every offset differs so copies differ.
    void fill_bytes(void *dst, uint64_t n, uint64_t salt) { tile(dst, bytes, kBytes, n, salt); }
    void fill_halves(void *dst, uint64_t n_halves, uint64_t salt) { tile(dst, halves, kHalves * 2, n_halves * 2, salt); }
};

// `copies` device copies of one weight matrix, their total above 3x L2.
struct Copies {
    std::vector<void *> p;
    uint64_t bytes = 0;
    Copies(uint64_t bytes_, uint64_t l2) : bytes(bytes_) { p.resize(std::max<uint64_t>(2, (3 * l2 + bytes - 1) / bytes)); }
    ~Copies() {
        for (void *q : p) cudaFree(q);
    }
    Copies(const Copies &) = delete;
};

// Median microseconds per launch: a graph of `launches` calls of launch(i) (i the launch's
// index), one warm-up replay, the median of kBatches timed replays.
double time_us(int launches, cudaStream_t s, const std::function<void(int)> &launch) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < launches; i++) launch(i);
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<double> us;
    for (int t = 0; t < kBatches; t++) {
        CK(cudaEventRecord(a, s));
        CK(cudaGraphLaunch(exec, s));
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        us.push_back(1000.0 * ms / launches);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaGetLastError());
    std::sort(us.begin(), us.end());
    return us[kBatches / 2];
}

double gbs(double bytes, double us) { return bytes / (us * 1e-6) / 1e9; }

// The GEMV arguments of a shape (weights set per launch).
GemvArgs args_of(const Shape &sh, uint32_t rows, const void *x, const float *bias, void *y, float *residual) {
    GemvArgs a{};
    a.x = x;
    a.ldx = sh.k;
    a.bias = sh.bias ? bias : nullptr;
    a.y = y;
    a.residual = sh.residual ? residual : nullptr;
    a.rows = rows;
    a.n = sh.n;
    a.k = sh.k;
    a.act = sh.glu ? kActSilu : 0;
    a.glu = sh.glu;
    a.y_f32 = sh.head;
    a.dtype = kF16;
    return a;
}

// Output of one launch from a fresh residual (zeros), as floats.
// (The fills run on the legacy stream, which a non-blocking stream does not wait for: hence
// the device-wide synchronisation first.)
std::vector<float> output_of(const GemvArgs &a, cudaStream_t s, const std::function<cudaError_t()> &launch) {
    const uint64_t n = (uint64_t)a.rows * a.n;
    CK(cudaDeviceSynchronize());
    if (a.residual) CK(cudaMemsetAsync(a.residual, 0, 4 * n, s));
    else CK(cudaMemsetAsync(a.y, 0xff, (a.y_f32 ? 4 : 2) * n, s));
    CK(launch());
    CK(cudaStreamSynchronize(s));
    std::vector<float> out(n);
    if (a.residual || a.y_f32) {
        CK(cudaMemcpy(out.data(), a.residual ? a.residual : a.y, 4 * n, cudaMemcpyDeviceToHost));
    } else {
        std::vector<uint16_t> h(n);
        CK(cudaMemcpy(h.data(), a.y, 2 * n, cudaMemcpyDeviceToHost));
        for (uint64_t i = 0; i < n; i++) out[i] = gpt::f16_to_f32(h[i]);
    }
    return out;
}

double max_rel(const std::vector<float> &got, const std::vector<float> &want) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < got.size(); i++) {
        if (!std::isfinite(got[i]) || !std::isfinite(want[i])) return INFINITY;
        diff = std::max(diff, (double)std::fabs(got[i] - want[i]));
        scale = std::max(scale, (double)std::fabs(want[i]));
    }
    return scale > 0 ? diff / scale : diff;
}

} // namespace

int main(int argc, char **argv) {
    const int launches = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
    const char *filter = argc > 2 ? argv[2] : "";
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        std::fprintf(stderr, "bench_quant_gemv: no CUDA device\n");
        return 1;
    }
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, dev));
    const uint64_t l2 = (uint64_t)prop.l2CacheSize;
    std::printf("%s, %d SMs, L2 %.0f MB; %d launches per graph, median of %d replays; GB/s of the matrix's bytes\n"
                "(copy: read + write of the quantized bytes); tk threads per set, blocks launched; maxrel vs tiled\n",
                prop.name, prop.multiProcessorCount, l2 / 1e6, launches, kBatches);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    Pools pools;
    const uint32_t max_k = 18944, max_n = 152064;
    void *x, *y;
    float *bias, *residual;
    CK(cudaMalloc(&x, 2ull * kGemvQuantMaxRows * max_k));
    CK(cudaMalloc(&y, 4ull * kGemvQuantMaxRows * max_n));
    CK(cudaMalloc(&bias, 4ull * max_n));
    CK(cudaMalloc(&residual, 4ull * kGemvQuantMaxRows * max_n));
    pools.fill_halves(x, (uint64_t)kGemvQuantMaxRows * max_k, 1);
    CK(cudaMemset(bias, 0, 4ull * max_n));
    // One layer's sums (the shapes that are not heads), keyed "model quant rows": microseconds
    // per variant, and the quantized bytes; f16 keyed "model rows", the copy "model quant".
    std::map<std::string, std::vector<double>> layer_us;
    std::map<std::string, double> layer_bytes, f16_layer_us, f16_layer_bytes, copy_layer_us;
    bool all_ok = true;

    for (const Shape &sh : kShapes) {
        const std::string shape = std::string(sh.model) + "." + sh.name;
        if (!std::strstr(shape.c_str(), filter)) continue;
        const uint64_t wrows = sh.glu ? 2ull * sh.n : sh.n;
        // The f16 GEMV of the shape, rows 1 and 2.
        double f16_us[3] = {0, 0, 0};
        const uint64_t f16_bytes = wrows * sh.k * 2;
        {
            Copies w(f16_bytes, l2);
            for (size_t c = 0; c < w.p.size(); c++) {
                CK(cudaMalloc(&w.p[c], f16_bytes));
                pools.fill_halves(w.p[c], wrows * sh.k, c);
            }
            CK(cudaDeviceSynchronize()); // the fills (legacy stream) before the timed stream reads them
            for (uint32_t rows = 1; rows <= kGemvMaxRows; rows++) {
                GemvArgs a = args_of(sh, rows, x, bias, y, residual);
                f16_us[rows] = time_us(launches, s, [&](int i) {
                    a.w = w.p[i % w.p.size()];
                    CK(launch_gemv(a, s));
                });
                if (!sh.head) f16_layer_us[std::string(sh.model) + " rows " + std::to_string(rows)] += f16_us[rows];
            }
            if (!sh.head) f16_layer_bytes[sh.model] += (double)f16_bytes;
        }
        for (const Quant &q : kQuants) {
            uint64_t bytes = 0;
            if (!gpt::tensor_bytes(q.wq == kQ8 ? gpt::DType::Q8 : gpt::DType::Q4, wrows * sh.k, sh.k, q.group, &bytes)) return 1;
            const uint64_t plane = wrows * (q.wq == kQ8 ? sh.k : sh.k / 2);
            Copies w(bytes, l2);
            for (size_t c = 0; c < w.p.size(); c++) {
                CK(cudaMalloc(&w.p[c], bytes));
                pools.fill_bytes(w.p[c], plane, c);
                pools.fill_halves(static_cast<uint8_t *>(w.p[c]) + plane, (bytes - plane) / 2, c + 7);
            }
            for (uint32_t rows : {1u, 2u, 4u}) {
                GemvArgs a = args_of(sh, rows, x, bias, y, residual);
                a.wq = q.wq;
                a.group = q.group;
                a.w = w.p[0];
                QuantGemvPlan base_plan{};
                CK(quant_gemv_plan(a, QGEMV_TILED, &base_plan));
                const std::vector<float> want = output_of(a, s, [&] { return launch_gemv_quant_plan(a, base_plan, s); });
                for (int v = 0; v < QGEMV_VARIANTS; v++) {
                    QuantGemvPlan plan{};
                    CK(quant_gemv_plan(a, v, &plan));
                    a.w = w.p[0];
                    const double rel = max_rel(output_of(a, s, [&] { return launch_gemv_quant_plan(a, plan, s); }), want);
                    if (!(rel < 1e-2)) all_ok = false;
                    const double us = time_us(launches, s, [&](int i) {
                        a.w = w.p[i % w.p.size()];
                        CK(launch_gemv_quant_plan(a, plan, s));
                    });
                    if (!sh.head) {
                        const std::string key = std::string(sh.model) + " " + q.name + " rows " + std::to_string(rows);
                        layer_us[key].resize(QGEMV_VARIANTS);
                        layer_us[key][v] += us;
                        if (v == 0) layer_bytes[key] += (double)bytes;
                    }
                    char f16[64] = "f16 n/a";
                    if (rows <= kGemvMaxRows)
                        std::snprintf(f16, sizeof f16, "f16 %7.2f us %5.0f GB/s", f16_us[rows], gbs((double)f16_bytes, f16_us[rows]));
                    std::printf("%-17s %-7s rows %u  %-16s tk %3u blocks %5u cl %u  %8.2f us %5.0f GB/s | %s | maxrel %.1e%s\n",
                                shape.c_str(), q.name, rows, quant_gemv_variant_name(v), 1u << plan.log_tk, plan.blocks,
                                plan.cluster ? plan.cluster : 1, us,
                                gbs((double)bytes, us), f16, rel, rel < 1e-2 ? "" : "  MISMATCH");
                }
            }
            // The ceiling: copying the same bytes (into the next copy; timed last, it overwrites weights).
            const double copy_us = time_us(launches, s, [&](int i) {
                CK(cudaMemcpyAsync(w.p[(i + 1) % w.p.size()], w.p[i % w.p.size()], bytes, cudaMemcpyDeviceToDevice, s));
            });
            std::printf("%-17s %-7s copy of %.1f MB: %8.2f us %5.0f GB/s (read + write)\n", shape.c_str(), q.name, bytes / 1e6, copy_us,
                        gbs(2.0 * bytes, copy_us));
            if (!sh.head) copy_layer_us[std::string(sh.model) + " " + q.name] += copy_us;
            std::fflush(stdout);
        }
    }
    // The summary: one line per model, quantization and row count.
    std::printf("\nper layer (qkv + o + gate_up + down): us, and GB/s of its bytes in [] (the copy: read + write)\n%-24s", "");
    for (int v = 0; v < QGEMV_VARIANTS; v++) std::printf(" %17s", quant_gemv_variant_name(v));
    std::printf(" %17s %17s\n", "f16 gemv", "copy (r+w)");
    for (const auto &kv : layer_us) {
        const std::string &key = kv.first;
        const double b = layer_bytes[key];
        std::printf("%-24s", key.c_str());
        for (double us : kv.second) std::printf(" %9.2f [%5.0f]", us, gbs(b, us));
        const std::string model = key.substr(0, key.find(' ')), rows = key.substr(key.rfind(' ') + 1);
        const std::string quant = key.substr(model.size() + 1, key.find(' ', model.size() + 1) - model.size() - 1);
        const auto f16 = f16_layer_us.find(model + " rows " + rows);
        if (f16 != f16_layer_us.end()) std::printf(" %9.2f [%5.0f]", f16->second, gbs(f16_layer_bytes[model], f16->second));
        else std::printf(" %17s", "n/a");
        const double copy = copy_layer_us[model + " " + quant];
        std::printf(" %9.2f [%5.0f]\n", copy, gbs(2 * b, copy));
    }
    std::printf(all_ok ? "all variants agree with tiled\n" : "SOME VARIANT DISAGREES WITH TILED (MISMATCH above)\n");
    cudaFree(x);
    cudaFree(y);
    cudaFree(bias);
    cudaFree(residual);
    cudaStreamDestroy(s);
    return all_ok ? 0 : 2;
}
