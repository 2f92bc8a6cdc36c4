// test_device_info.cpp - gpt_device_get_info (the host as GPT_DEVICE_CPU against the test's
// own reading of /proc/meminfo, argument and struct_size errors, each CUDA device when there
// is one) and the context-fit decision (runtime/memory_fit.h) with made-up numbers against a
// naive rule written here.
#include "gpt.h"

#include "backend/backend.h"
#include "fixture.h"
#include "format/reader.h"
#include "runtime/load_plan.h"
#include "runtime/memory_fit.h"

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

// "KEY: N kB" of /proc/meminfo in bytes, read here independently of the library; 0 if absent.
uint64_t meminfo(const char *key) {
    FILE *f = std::fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char name[64];
    unsigned long long kb = 0, found = 0;
    while (std::fscanf(f, "%63[^:]: %llu%*[^\n]\n", name, &kb) == 2)
        if (std::string(name) == key) {
            found = kb * 1024;
            break;
        }
    std::fclose(f);
    return found;
}

gpt_device_info fresh() {
    gpt_device_info info;
    std::memset(&info, 0xab, sizeof info);
    info.struct_size = sizeof info;
    return info;
}

void test_cpu_describes_the_host(void **) {
    const uint64_t total = meminfo("MemTotal");
    const uint64_t avail_before = meminfo("MemAvailable");
    gpt_device_info info = fresh();
    assert_int_equal(gpt_device_get_info(GPT_DEVICE_CPU, &info), GPT_OK);
    const uint64_t avail_after = meminfo("MemAvailable");
    assert_int_equal(info.struct_size, sizeof info);
    assert_int_equal(info.device, GPT_DEVICE_CPU);
    assert_int_equal(info.integrated, 0);
    assert_int_equal(info.pageable_access, 0);
    assert_int_equal(info.host_mapped, 0);
    assert_int_equal(info.cc_major, 0);
    assert_int_equal(info.cc_minor, 0);
    assert_int_equal(info.multiprocessors, std::thread::hardware_concurrency());
    assert_string_equal(info.name, "cpu");
    if (total == 0) { // no /proc/meminfo: only plausibility
        assert_true(info.available_bytes <= info.total_bytes);
        return;
    }
    assert_true(info.total_bytes == total);
    // MemAvailable moves while other processes run: it must lie within what this test read
    // just before and after, give or take 256 MiB.
    const uint64_t lo = std::min(avail_before, avail_after), hi = std::max(avail_before, avail_after);
    const uint64_t slack = 256ull << 20;
    if (info.available_bytes + slack < lo || info.available_bytes > hi + slack)
        fail_msg("available_bytes %llu outside [%llu, %llu] +- 256 MiB", (unsigned long long)info.available_bytes,
                 (unsigned long long)lo, (unsigned long long)hi);
    assert_true(info.available_bytes <= info.total_bytes);
}

void test_auto_is_the_load_default(void **) {
    gpt_device_info info = fresh();
    assert_int_equal(gpt_device_get_info(GPT_DEVICE_AUTO, &info), GPT_OK);
    assert_int_equal(info.device, gpt_cuda_device_count() > 0 ? 0 : GPT_DEVICE_CPU);
}

void test_argument_errors(void **) {
    assert_int_equal(gpt_device_get_info(GPT_DEVICE_CPU, nullptr), GPT_ERR_INVALID_ARG);
    assert_non_null(std::strstr(gpt_last_error(), "info"));
    for (int32_t bad : {-3, -100, INT32_MIN}) {
        gpt_device_info info = fresh();
        assert_int_equal(gpt_device_get_info(bad, &info), GPT_ERR_INVALID_ARG);
        assert_non_null(std::strstr(gpt_last_error(), std::to_string(bad).c_str()));
    }
    const int n = gpt_cuda_device_count();
    for (int32_t missing : {n, n + 1, INT32_MAX}) {
        gpt_device_info info = fresh();
        info.device = 0x7777;
        assert_int_equal(gpt_device_get_info(missing, &info), GPT_ERR_UNSUPPORTED);
        assert_non_null(std::strstr(gpt_last_error(), std::to_string(missing).c_str()));
        assert_int_equal(info.device, 0x7777); // nothing written on failure
    }
}

void test_struct_size(void **) {
    const uint32_t refused[] = {0, 1, 4, 7, (uint32_t)sizeof(gpt_device_info) - 8, (uint32_t)sizeof(gpt_device_info) - 1,
                                (uint32_t)sizeof(gpt_device_info) + 1, 4097, 8192, 0xdeadbeef};
    for (uint32_t bad : refused) {
        gpt_device_info info;
        std::memset(&info, 0xab, sizeof info);
        info.struct_size = bad;
        if (gpt_device_get_info(GPT_DEVICE_CPU, &info) != GPT_ERR_INVALID_ARG) fail_msg("struct_size %u: not refused", bad);
        assert_non_null(std::strstr(gpt_last_error(), "struct_size"));
        const uint8_t *rest = reinterpret_cast<const uint8_t *>(&info) + sizeof(uint32_t);
        for (size_t i = 0; i < sizeof info - sizeof(uint32_t); i++)
            if (rest[i] != 0xab) fail_msg("struct_size %u: byte %zu written", bad, i + 4);
    }
    struct Newer {
        gpt_device_info i;
        uint8_t future[40];
    } nw;
    std::memset(&nw, 0xab, sizeof nw);
    nw.i.struct_size = sizeof nw;
    assert_int_equal(gpt_device_get_info(GPT_DEVICE_CPU, &nw.i), GPT_OK);
    assert_int_equal(nw.i.struct_size, sizeof(gpt_device_info));
    assert_int_equal(nw.i.device, GPT_DEVICE_CPU);
    for (uint8_t b : nw.future) assert_int_equal(b, 0xab);
}

// Each CUDA device (skipped without one): plausible facts, and the integrated rule for
// available_bytes (MemAvailable) against this test's own reading.
void test_cuda_devices(void **) {
    const int n = gpt_cuda_device_count();
    if (n == 0) skip();
    for (int d = 0; d < n; d++) {
        gpt_device_info info = fresh();
        assert_int_equal(gpt_device_get_info(d, &info), GPT_OK);
        assert_int_equal(info.device, d);
        assert_true(info.integrated <= 1 && info.pageable_access <= 1 && info.host_mapped <= 1);
        assert_true(info.cc_major >= 5);
        assert_true(info.multiprocessors > 0);
        assert_true(info.total_bytes > 0);
        assert_true(std::strlen(info.name) > 0 && std::strlen(info.name) < sizeof info.name);
        std::printf("device %d: %s, cc %u.%u, %u SMs, integrated %u, pageable %u, host-mapped %u, %.2f / %.2f GiB\n", d,
                    info.name, info.cc_major, info.cc_minor, info.multiprocessors, info.integrated, info.pageable_access,
                    info.host_mapped, info.available_bytes / 1073741824.0, info.total_bytes / 1073741824.0);
        if (info.integrated) {
            const uint64_t a = meminfo("MemAvailable");
            const uint64_t diff = a > info.available_bytes ? a - info.available_bytes : info.available_bytes - a;
            assert_true(diff < (512ull << 20));
        } else {
            assert_true(info.available_bytes <= info.total_bytes);
        }
    }
}

// The rule of memory_fit.h, written the plain way: separate pools on a discrete device, one
// pool (MemAvailable) for the sum on an integrated one; 0 = unknown, never short.
gpt::MemoryFit::Short naive_fit(uint64_t nh, uint64_t nd, uint64_t ah, uint64_t ad, bool shared) {
    if (shared) return ah != 0 && (unsigned __int128)nh + nd > ah ? gpt::MemoryFit::SHARED : gpt::MemoryFit::NONE;
    if (ah != 0 && nh > ah) return gpt::MemoryFit::HOST;
    if (ad != 0 && nd > ad) return gpt::MemoryFit::DEVICE;
    return gpt::MemoryFit::NONE;
}

void test_fit_random(void **) {
    std::mt19937_64 rng(20261126);
    int shorts = 0;
    for (int i = 0; i < 200000; i++) {
        // Sizes of a few scales, zeros (unknown) and extremes near 2^64 (a wrapped sum would fit).
        auto draw = [&]() -> uint64_t {
            switch (rng() % 6) {
            case 0: return 0;
            case 1: return UINT64_MAX - rng() % 1000;
            case 2: return rng() % 4096;
            default: return rng() >> (rng() % 40);
            }
        };
        gpt::MemoryPlan need;
        need.host_bytes = draw();
        need.device_bytes = draw();
        gpt::MemoryAvailable have;
        have.host_bytes = draw();
        have.device_bytes = draw();
        have.shared = rng() & 1;
        const gpt::MemoryFit fit = gpt::check_memory_fit(need, have);
        const auto want = naive_fit(need.host_bytes, need.device_bytes, have.host_bytes, have.device_bytes, have.shared);
        if (fit.short_of != want)
            fail_msg("case %d: need %llu + %llu, have %llu / %llu, shared %d: got %d, want %d", i,
                     (unsigned long long)need.host_bytes, (unsigned long long)need.device_bytes,
                     (unsigned long long)have.host_bytes, (unsigned long long)have.device_bytes, have.shared,
                     (int)fit.short_of, (int)want);
        if (want != gpt::MemoryFit::NONE) {
            shorts++;
            assert_true(fit.need > fit.have || fit.need == UINT64_MAX); // the message's numbers say why (a sum past 2^64 saturates)
        }
    }
    assert_true(shorts > 1000); // the draws reach both outcomes
}

// The case the rule exists for: a Jetson whose page cache holds the model file. MemFree (what
// cudaMemGetInfo reports there) is 1.5 GiB, MemAvailable 6 GiB; a 2 GiB context fits.
void test_fit_integrated_counts_page_cache(void **) {
    gpt::MemoryPlan need;
    need.device_bytes = 2ull << 30;
    need.host_bytes = 16ull << 20;
    gpt::MemoryAvailable have;
    have.host_bytes = 6ull << 30;
    have.device_bytes = 3ull << 29;
    have.shared = true;
    assert_int_equal(gpt::check_memory_fit(need, have).short_of, gpt::MemoryFit::NONE);
    assert_true(gpt::available_bytes(have) == have.host_bytes);
    have.shared = false; // a discrete GPU with 1.5 GiB free: refused
    assert_int_equal(gpt::check_memory_fit(need, have).short_of, gpt::MemoryFit::DEVICE);
    assert_true(gpt::available_bytes(have) == have.device_bytes);
    // One pool: host and device needs add up. 5.99 GiB + 16 MiB > 6 GiB.
    have.shared = true;
    need.device_bytes = (6ull << 30) - (8ull << 20);
    const gpt::MemoryFit fit = gpt::check_memory_fit(need, have);
    assert_int_equal(fit.short_of, gpt::MemoryFit::SHARED);
    assert_true(fit.need == need.host_bytes + need.device_bytes && fit.have == have.host_bytes);
}

// The plan made before loading (runtime/load_plan.h, from the file's table) against what the
// real load reports afterwards (gpt_model_get_info's host/device bytes, gpt_ctx_estimate_memory),
// for random models, dtypes and context params: on the CPU, and on each CUDA device (device
// weights) against the CUDA planner when a GPU is here.
void test_plan_matches_load(void **) {
    std::mt19937_64 rng(77);
    const gpt_arch archs[] = {GPT_ARCH_LLAMA, GPT_ARCH_GPT2, GPT_ARCH_QWEN3, GPT_ARCH_GEMMA2};
    const gpt::DType dtypes[] = {gpt::DType::F32, gpt::DType::F16, gpt::DType::BF16};
    const int gpus = gpt_cuda_device_count();
    for (int round = 0; round < 12; round++) {
        fixture::Spec s;
        s.arch = archs[rng() % 4];
        s.n_layers = 1 + rng() % 3;
        s.n_heads = 2 + 2 * (rng() % 3);
        s.n_kv_heads = s.arch == GPT_ARCH_GPT2 ? s.n_heads : s.n_heads / 2;
        s.head_dim = 8 * (1 + rng() % 3);
        s.d_model = s.arch == GPT_ARCH_GPT2 ? s.n_heads * s.head_dim : 16 * (1 + rng() % 4);
        s.d_ff = 16 * (1 + rng() % 5);
        s.vocab_size = 50 + rng() % 200;
        s.context_length = 64 + rng() % 200;
        s.tied_head = rng() & 1;
        s.dtype = dtypes[rng() % 3];
        s.seed = rng();
        const fixture::Model fx = fixture::make(s);
        gpt_ctx_params cp;
        gpt_ctx_params_init(&cp);
        cp.max_seq = 1 + rng() % s.context_length;
        cp.max_batch = 1 + rng() % 4;
        gpt::format::ReadOptions opt;
        opt.verify_checksums = false;
        const auto file = gpt::format::WeightFile::from_memory(fx.file.data(), fx.file.size(), false, opt);

        for (int device = -1; device < gpus; device++) {
            gpt_model_params mp;
            gpt_model_params_init(&mp);
            mp.device = device;
            gpt_model *m = nullptr;
            assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_OK);
            gpt_model_info mi;
            mi.struct_size = sizeof mi;
            assert_int_equal(gpt_model_get_info(m, &mi), GPT_OK);
            uint64_t ctx_host = 0, ctx_dev = 0;
            assert_int_equal(gpt_ctx_estimate_memory(m, &cp, &ctx_host, &ctx_dev), GPT_OK);
            gpt_model_free(m);

            std::unique_ptr<gpt::Device> d = device < 0 ? gpt::make_cpu_device() : gpt::make_cuda_planner(false);
            const gpt::LoadPlan plan = gpt::plan_load(*file, *d, GPT_DTYPE_AUTO, cp);
            if (plan.weight_host_bytes != mi.host_bytes || plan.weight_device_bytes != mi.device_bytes ||
                plan.context.host_bytes != ctx_host || plan.context.device_bytes != ctx_dev)
                fail_msg("round %d, device %d (%s): plan %llu/%llu + %llu/%llu, load %llu/%llu + %llu/%llu", round, device,
                         gpt_arch_name(s.arch), (unsigned long long)plan.weight_host_bytes,
                         (unsigned long long)plan.weight_device_bytes, (unsigned long long)plan.context.host_bytes,
                         (unsigned long long)plan.context.device_bytes, (unsigned long long)mi.host_bytes,
                         (unsigned long long)mi.device_bytes, (unsigned long long)ctx_host, (unsigned long long)ctx_dev);
            assert_int_equal((uint32_t)plan.weight_dtype, mi.weight_dtype);
            assert_true(plan.weight_host_bytes + plan.weight_device_bytes > 0);
#ifdef GPT_MODEL_HOST_WEIGHTS
            // The host-weights mode (jetson-load's flag) against the planner's host mode.
            if (device >= 0) {
                mp.flags = GPT_MODEL_HOST_WEIGHTS;
                assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_OK);
                assert_int_equal(gpt_model_get_info(m, &mi), GPT_OK);
                assert_int_equal(gpt_ctx_estimate_memory(m, &cp, &ctx_host, &ctx_dev), GPT_OK);
                gpt_model_free(m);
                auto planner = gpt::make_cuda_planner(true);
                const gpt::LoadPlan hp = gpt::plan_load(*file, *planner, GPT_DTYPE_AUTO, cp);
                if (hp.weight_host_bytes != mi.host_bytes || hp.weight_device_bytes != mi.device_bytes ||
                    hp.context.host_bytes != ctx_host || hp.context.device_bytes != ctx_dev)
                    fail_msg("round %d, device %d, host weights: plan %llu/%llu + %llu/%llu, load %llu/%llu + %llu/%llu", round,
                             device, (unsigned long long)hp.weight_host_bytes, (unsigned long long)hp.weight_device_bytes,
                             (unsigned long long)hp.context.host_bytes, (unsigned long long)hp.context.device_bytes,
                             (unsigned long long)mi.host_bytes, (unsigned long long)mi.device_bytes,
                             (unsigned long long)ctx_host, (unsigned long long)ctx_dev);
            }
#endif
        }
    }
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_describes_the_host),
        cmocka_unit_test(test_auto_is_the_load_default),
        cmocka_unit_test(test_argument_errors),
        cmocka_unit_test(test_struct_size),
        cmocka_unit_test(test_cuda_devices),
        cmocka_unit_test(test_fit_random),
        cmocka_unit_test(test_fit_integrated_counts_page_cache),
        cmocka_unit_test(test_plan_matches_load),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
