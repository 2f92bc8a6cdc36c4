// test_cudart_lazy.cpp - the CUDA runtime opened lazily (-Dcuda-runtime=lazy,
// lib/backend/cuda/cudart_lazy.h), through the public API on models/kjv-llama.gpt.
// Each mode runs in its own process (the runtime is opened at most once per process):
//   cpu:  a CPU generate maps no CUDA library (/proc/self/maps); then, with the runtime's
//         soname pointed at a library that does not exist, gpt_cuda_device_count() is 0 and
//         asking for CUDA device 0 fails with GPT_ERR_UNSUPPORTED and a message naming the
//         library; the CPU keeps working and still nothing is mapped.
//   cuda: asking for CUDA opens libcudart (mapped afterwards: the control showing the maps
//         check can see it). Without a GPU, loading on device 0 fails cleanly; with one, the
//         kernels registered at load were replayed into the runtime: a greedy generate on
//         the GPU gives the CPU's tokens for a random prompt.
#include "backend/cuda/cudart_lazy.h"
#include "gpt.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

std::string model_path() {
    const char *d = std::getenv("GPT_MODELS_DIR");
    return std::string(d ? d : "models") + "/kjv-llama.gpt";
}

// The first mapped file of this process whose name contains `name`, or "".
std::string mapped(const char *name) {
    std::ifstream maps("/proc/self/maps");
    if (!maps) fail_msg("cannot read /proc/self/maps");
    std::string line;
    while (std::getline(maps, line))
        if (line.find(name) != std::string::npos) return line;
    return "";
}

void assert_no_cuda_library_mapped() {
    for (const char *lib : {"libcudart", "libcuda.so", "libcublas"}) {
        const std::string line = mapped(lib);
        if (!line.empty()) fail_msg("%s is mapped: %s", lib, line.c_str());
    }
}

std::vector<int32_t> random_prompt(int32_t vocab) {
    const unsigned seed = std::random_device{}();
    std::printf("prompt seed %u\n", seed);
    std::mt19937 rng(seed);
    std::vector<int32_t> p(1 + rng() % 12);
    for (int32_t &t : p) t = static_cast<int32_t>(rng() % static_cast<unsigned>(vocab));
    return p;
}

// Greedy tokens after `prompt` on `device`; fails the test on any error.
std::vector<int32_t> greedy(int device, const std::vector<int32_t> &prompt, uint32_t n) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = device;
    gpt_model *m = nullptr;
    if (gpt_model_load(model_path().c_str(), &mp, &m) != GPT_OK) fail_msg("load on %d: %s", device, gpt_last_error());
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    gpt_ctx *c = nullptr;
    if (gpt_ctx_create(m, &cp, &c) != GPT_OK) fail_msg("context on %d: %s", device, gpt_last_error());
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.temperature = 0;
    sp.flags |= GPT_SAMPLING_IGNORE_EOS;
    std::vector<int32_t> out(n);
    uint32_t got = 0;
    if (gpt_generate(c, prompt.data(), static_cast<uint32_t>(prompt.size()), &sp, nullptr, nullptr, out.data(), n, &got) != GPT_OK)
        fail_msg("generate on %d: %s", device, gpt_ctx_last_error(c));
    out.resize(got);
    gpt_ctx_free(c);
    gpt_model_free(m);
    return out;
}

int32_t vocab_size() {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    gpt_model *m = nullptr;
    if (gpt_model_load(model_path().c_str(), &mp, &m) != GPT_OK) fail_msg("load: %s", gpt_last_error());
    gpt_model_info info;
    info.struct_size = sizeof info;
    assert_int_equal(gpt_model_get_info(m, &info), GPT_OK);
    gpt_model_free(m);
    return static_cast<int32_t>(info.vocab_size);
}

// Loading on CUDA device 0 fails with GPT_ERR_UNSUPPORTED and a message containing `why`.
void assert_cuda_load_fails(const char *why) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = 0;
    gpt_model *m = nullptr;
    const gpt_status st = gpt_model_load(model_path().c_str(), &mp, &m);
    const std::string msg = gpt_last_error();
    std::printf("device 0: status %d, \"%s\"\n", st, msg.c_str());
    assert_int_equal(st, GPT_ERR_UNSUPPORTED);
    assert_null(m);
    if (msg.find(why) == std::string::npos) fail_msg("message lacks \"%s\": %s", why, msg.c_str());
}

void test_cpu_only_then_missing_runtime(void **) {
    const std::vector<int32_t> prompt = random_prompt(vocab_size());
    const std::vector<int32_t> first = greedy(GPT_DEVICE_CPU, prompt, 8);
    assert_int_equal(first.size(), 8);
    assert_no_cuda_library_mapped();
    assert_false(gpt::cuda::cudart_loaded());

    const char *missing = "libgpt-test-missing-cudart.so.0";
    gpt::cuda::cudart_use_library_for_testing(missing);
    assert_int_equal(gpt_cuda_device_count(), 0);
    assert_false(gpt::cuda::cudart_loaded());
    assert_cuda_load_fails(missing);
    assert_cuda_load_fails("cannot load the CUDA runtime");
    const std::vector<int32_t> again = greedy(GPT_DEVICE_CPU, prompt, 8);
    assert_true(again == first);
    assert_no_cuda_library_mapped();
}

void test_cuda_opens_runtime(void **) {
    const std::vector<int32_t> prompt = random_prompt(vocab_size());
    assert_true(mapped("libcudart").empty());
    const int n = gpt_cuda_device_count();
    std::printf("%d CUDA devices\n", n);
    assert_true(gpt::cuda::cudart_loaded());
    const std::string line = mapped("libcudart");
    if (line.empty()) fail_msg("libcudart is not mapped after gpt_cuda_device_count");
    std::printf("mapped: %s\n", line.c_str());
    if (n == 0) {
        assert_cuda_load_fails("0 available");
        return;
    }
    const std::vector<int32_t> cpu = greedy(GPT_DEVICE_CPU, prompt, 8);
    const std::vector<int32_t> gpu = greedy(0, prompt, 8);
    assert_int_equal(gpu.size(), cpu.size());
    for (size_t i = 0; i < cpu.size(); ++i)
        if (gpu[i] != cpu[i]) fail_msg("token %zu: GPU %d, CPU %d", i, gpu[i], cpu[i]);
}

} // namespace

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "cpu") {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_cpu_only_then_missing_runtime)};
        return cmocka_run_group_tests(tests, nullptr, nullptr);
    }
    if (mode == "cuda") {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_cuda_opens_runtime)};
        return cmocka_run_group_tests(tests, nullptr, nullptr);
    }
    std::fprintf(stderr, "usage: %s cpu|cuda (each in its own process)\n", argv[0]);
    return 2;
}
