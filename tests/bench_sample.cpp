// bench_sample - the CUDA sampler (cuda/sample.cu) timed alone for each path: greedy, the
// one-kernel sort of a small vocabulary, the top_k selected and sorted, and the radix select
// by mass (top_k 0 or above 2,048, with and without top_p/min_p), at the vocabularies of
// nanoGPT's shakespeare_char, Llama-2, GPT-2 and Qwen2/Llama-3. Not a test (no pass or
// fail); built only with CUDA. Usage: bench_sample [repetitions] [eager|queued|graph]
// [vocabularies, comma-separated] (default 200 eager 65,32000,50257,151936).
//
// Logits are N(0, 1) scaled by 3 (a peaked, LM-like row: the top 2,048 of GPT-2's 50,257
// carry most of the mass) or by 0.5 (flat, as a random-weight model gives); each repetition
// draws with another uniform. Median microseconds of one launch between two events, in one
// of three ways (second argument): eager (launched and timed at once: the host's launch
// overhead shows when it exceeds the kernels' time), queued (the launches enqueued while the
// stream is busy with a 512 MiB device copy, as in generation where they queue behind the
// forward pass: the device's time only) or graph (one CUDA graph of the launches, replayed).
#include "sample.cuh"
#include "cuda_ck.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

struct Setting {
    const char *name;
    float temperature;
    uint32_t top_k;
    float top_p, min_p, penalty;
};

const Setting kSettings[] = {
    {"greedy", 0.0f, 0, 1.0f, 0.0f, 1.0f},
    {"top_k 40, top_p 0.95, min_p 0.05", 0.8f, 40, 0.95f, 0.05f, 1.0f},
    {"top_k 0, top_p 0.95, min_p 0.05", 0.8f, 0, 0.95f, 0.05f, 1.0f},
    {"top_k 0, top_p 0.9", 0.8f, 0, 0.9f, 0.0f, 1.0f},
    {"temperature only", 0.8f, 0, 1.0f, 0.0f, 1.0f},
    {"top_k 3000", 0.8f, 3000, 1.0f, 0.0f, 1.0f},
    {"top_k 0, penalty 1.1", 0.8f, 0, 1.0f, 0.0f, 1.1f},
};

} // namespace

int main(int argc, char **argv) {
    const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
    const char *mode = argc > 2 ? argv[2] : "eager";
    const bool queued = !std::strcmp(mode, "queued"), graph = !std::strcmp(mode, "graph");
    if (!queued && !graph && std::strcmp(mode, "eager")) {
        std::fprintf(stderr, "bench_sample: mode is eager, queued or graph\n");
        return 2;
    }
    int n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev == 0) {
        std::printf("bench_sample: no CUDA device\n");
        return 0;
    }
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    std::printf("bench_sample on %s, median of %d launches (%s), us\n", prop.name, reps, mode);
    constexpr size_t kHold = 512ull << 20; // ~0.4 ms of copying on an H100/H200
    void *hold_src = nullptr, *hold_dst = nullptr;
    if (queued) {
        CK(cudaMalloc(&hold_src, kHold));
        CK(cudaMalloc(&hold_dst, kHold));
    }
    std::mt19937 rng(7);
    std::vector<uint32_t> vocabs;
    for (const char *p = argc > 3 ? argv[3] : "65,32000,50257,151936"; *p;) {
        char *end = nullptr;
        const unsigned long v = std::strtoul(p, &end, 10);
        if (end == p || v < 2 || v > 1000000) {
            std::fprintf(stderr, "bench_sample: vocabularies are numbers from 2 to 1000000, comma-separated\n");
            return 2;
        }
        vocabs.push_back((uint32_t)v);
        p = *end == ',' ? end + 1 : end;
    }
    const uint32_t batches[] = {1, 4};
    const float scales[] = {3.0f, 0.5f};
    for (const float scale : scales)
        for (const uint32_t B : batches) {
            std::printf("\nlogits N(0,1) x %.1f, batch %u\n%-36s", scale, B, "setting");
            for (const uint32_t V : vocabs) std::printf(" %9u", V);
            std::printf("\n");
            for (const Setting &s : kSettings) {
                std::printf("%-36s", s.name);
                for (const uint32_t V : vocabs) {
                    std::normal_distribution<float> nd(0.0f, 1.0f);
                    std::vector<float> logits((size_t)B * V);
                    for (auto &x : logits) x = scale * nd(rng);
                    const uint32_t n_uni = 64;
                    std::vector<float> uni((size_t)n_uni * B);
                    for (auto &u : uni) u = std::uniform_real_distribution<float>(0.0f, 1.0f)(rng);
                    std::vector<int32_t> recent((size_t)B * 64), n_recent(B, 64);
                    for (auto &t : recent) t = (int32_t)(rng() % V);
                    float *dlog, *duni;
                    int32_t *drec, *dn, *dout;
                    void *ws;
                    CK(cudaMalloc(&dlog, logits.size() * 4));
                    CK(cudaMalloc(&duni, uni.size() * 4));
                    CK(cudaMalloc(&drec, recent.size() * 4));
                    CK(cudaMalloc(&dn, B * 4));
                    CK(cudaMalloc(&dout, B * 4));
                    CK(cudaMalloc(&ws, sample_workspace_bytes(B, V)));
                    CK(cudaMemcpy(dlog, logits.data(), logits.size() * 4, cudaMemcpyHostToDevice));
                    CK(cudaMemcpy(duni, uni.data(), uni.size() * 4, cudaMemcpyHostToDevice));
                    CK(cudaMemcpy(drec, recent.data(), recent.size() * 4, cudaMemcpyHostToDevice));
                    CK(cudaMemcpy(dn, n_recent.data(), B * 4, cudaMemcpyHostToDevice));
                    SampleArgs a{};
                    a.logits = dlog;
                    a.batch = B;
                    a.vocab = V;
                    a.temperature = s.temperature;
                    a.penalty = s.penalty;
                    a.recent = s.penalty != 1.0f ? drec : nullptr;
                    a.n_recent = dn;
                    a.recent_stride = 64;
                    a.top_k = s.top_k;
                    a.top_p = s.top_p;
                    a.min_p = s.min_p;
                    a.workspace = ws;
                    a.out = dout;
                    cudaStream_t stream;
                    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
                    cudaEvent_t e0, e1;
                    CK(cudaEventCreate(&e0));
                    CK(cudaEventCreate(&e1));
                    cudaGraphExec_t exec = nullptr;
                    if (graph) { // one uniform for every replay: the graph keeps its arguments
                        a.uniform = duni;
                        cudaGraph_t g;
                        CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
                        CK(launch_sample(a, stream));
                        CK(cudaStreamEndCapture(stream, &g));
                        CK(cudaGraphInstantiate(&exec, g, 0));
                        CK(cudaGraphDestroy(g));
                    }
                    std::vector<float> us;
                    for (int r = -10; r < reps; r++) {
                        if (queued) CK(cudaMemcpyAsync(hold_dst, hold_src, kHold, cudaMemcpyDeviceToDevice, stream));
                        CK(cudaEventRecord(e0, stream));
                        if (graph) {
                            CK(cudaGraphLaunch(exec, stream));
                        } else {
                            a.uniform = duni + (size_t)((r + 10) % n_uni) * B;
                            CK(launch_sample(a, stream));
                        }
                        CK(cudaEventRecord(e1, stream));
                        CK(cudaEventSynchronize(e1));
                        float ms = 0;
                        CK(cudaEventElapsedTime(&ms, e0, e1));
                        if (r >= 0) us.push_back(1000.0f * ms);
                    }
                    if (exec) CK(cudaGraphExecDestroy(exec));
                    CK(cudaStreamDestroy(stream));
                    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
                    std::printf(" %9.1f", us[us.size() / 2]);
                    std::fflush(stdout);
                    CK(cudaEventDestroy(e0));
                    CK(cudaEventDestroy(e1));
                    for (void *p : {(void *)dlog, (void *)duni, (void *)drec, (void *)dn, (void *)dout, ws}) CK(cudaFree(p));
                }
                std::printf("\n");
            }
        }
    if (queued) {
        CK(cudaFree(hold_src));
        CK(cudaFree(hold_dst));
    }
    return 0;
}
