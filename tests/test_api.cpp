// test_api.cpp - the C API's contract (include/gpt.h): NULL arguments, versioned params
// structs, out-of-range tokens and batches, a full context, truncate/reset, generate's
// stopping rules and abort, memory estimates equal to what creation allocates, no
// allocation in forward/generate, injected allocation failures, status strings, versions
// and model info.
//
// Global operator new/delete are replaced (tests/support/alloc_hooks) to count (and on
// request fail) every C++ allocation of the library; gpt::testing counts and fails its
// host_alloc calls.
#include "gpt.h"

#include "alloc_hooks.h"
#include "api/handles.h"
#include "core/memory.h"
#include "fixture.h"
#include "reference.h"

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

// Counts of both allocators between construction and now.
struct AllocWatch {
    uint64_t n0 = alloc_hooks::count(), b0 = alloc_hooks::bytes(), h0 = gpt::testing::alloc_count(),
             hb0 = gpt::testing::alloc_bytes();
    uint64_t news() const { return alloc_hooks::count() - n0; }
    uint64_t new_bytes() const { return alloc_hooks::bytes() - b0; }
    uint64_t hosts() const { return gpt::testing::alloc_count() - h0; }
    uint64_t host_bytes() const { return gpt::testing::alloc_bytes() - hb0; }
};

#define CHECK_OK(expr)                                                                                                 \
    do {                                                                                                               \
        const gpt_status st_ = (expr);                                                                                 \
        if (st_ != GPT_OK) fail_msg("%s -> %s: %s", #expr, gpt_status_str(st_), gpt_last_error());                     \
    } while (0)

// The call fails with want, and both gpt_last_error() and (for a ctx) gpt_ctx_last_error
// contain needle.
#define CHECK_FAILS(expr, want, needle, ctx)                                                                           \
    do {                                                                                                               \
        const gpt_status st_ = (expr);                                                                                 \
        if (st_ != (want)) fail_msg("%s -> %s (%s), expected %s", #expr, gpt_status_str(st_), gpt_last_error(),        \
                                    gpt_status_str(want));                                                             \
        if (!std::strstr(gpt_last_error(), needle))                                                                    \
            fail_msg("%s: message \"%s\" lacks \"%s\"", #expr, gpt_last_error(), needle);                              \
        const gpt_ctx *c_ = (ctx);                                                                                     \
        if (c_ && !std::strstr(gpt_ctx_last_error(c_), needle))                                                        \
            fail_msg("%s: gpt_ctx_last_error \"%s\" lacks \"%s\"", #expr, gpt_ctx_last_error(c_), needle);            \
    } while (0)

struct Fixture {
    fixture::Model fx;
    gpt_model *model = nullptr;
};

fixture::Spec small_spec(uint64_t seed, int32_t eos = -1) {
    fixture::Spec s;
    s.arch = GPT_ARCH_LLAMA;
    s.n_layers = 3, s.d_model = 32, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 8, s.d_ff = 40, s.vocab_size = 67;
    s.context_length = 48;
    s.seed = seed;
    s.bos_id = 1;
    s.eos_id = eos;
    return s;
}

Fixture *g;

gpt_model *load(const fixture::Model &fx) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    gpt_model *m = nullptr;
    CHECK_OK(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m));
    return m;
}

int setup(void **) {
    g = new Fixture{fixture::make(small_spec(reference::sub_seed("api model"))), nullptr};
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    if (gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), &mp, &g->model) != GPT_OK) return -1;
    return 0;
}
int teardown(void **) {
    gpt_model_free(g->model);
    delete g;
    return 0;
}

const uint32_t V = 67;

gpt_ctx *make_ctx(uint32_t max_batch = 1, uint32_t max_seq = 0, uint32_t threads = 1, gpt_abort_fn abort_fn = nullptr,
                  void *abort_user = nullptr, uint32_t max_step = 0, gpt_model *model = nullptr) {
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_batch = max_batch;
    cp.max_seq = max_seq;
    cp.n_threads = threads;
    cp.abort_fn = abort_fn;
    cp.abort_user = abort_user;
    cp.max_step_tokens = max_step;
    gpt_ctx *ctx = nullptr;
    CHECK_OK(gpt_ctx_create(model ? model : g->model, &cp, &ctx));
    return ctx;
}

std::vector<int32_t> random_tokens(std::mt19937_64 &rng, size_t n) {
    std::vector<int32_t> t(n);
    for (auto &x : t) x = (int32_t)(rng() % V);
    return t;
}

std::vector<float> all_logits(gpt_ctx *ctx, const std::vector<int32_t> &t) {
    std::vector<float> out(t.size() * V);
    reference::poison(out.data(), out.size());
    CHECK_OK(gpt_forward(ctx, t.data(), 1, (uint32_t)t.size(), GPT_FORWARD_ALL_LOGITS, out.data()));
    return out;
}

// Logits of tokens in a fresh context.
std::vector<float> fresh_logits(const std::vector<int32_t> &t) {
    gpt_ctx *ctx = make_ctx();
    auto out = all_logits(ctx, t);
    gpt_ctx_free(ctx);
    return out;
}

void expect_same(const float *a, const float *b, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (!(std::fabs(a[i] - b[i]) <= 1e-6f * (1.0f + std::fabs(b[i]))))
            fail_msg("%s: element %zu is %.9g, expected %.9g", what, i, a[i], b[i]);
}

bool all_nan(const float *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!std::isnan(p[i])) return false;
    return true;
}

std::vector<int32_t> greedy(gpt_ctx *ctx, const std::vector<int32_t> &prompt, uint32_t cap) {
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.temperature = 0.0f;
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    std::vector<int32_t> out(cap, -1);
    uint32_t n = 0;
    CHECK_OK(gpt_generate(ctx, prompt.data(), (uint32_t)prompt.size(), &sp, nullptr, nullptr, out.data(), cap, &n));
    assert_int_equal(n, cap);
    return out;
}

// =========================================================================== tests

// The replaced operator new (tests/support/alloc_hooks) is what this binary links; without it
// the allocation checks here would pass without checking anything.
void test_alloc_hooks_linked(void **) { assert_true(alloc_hooks::installed()); }

void test_status_strings(void **) {
    const char *names[] = {"GPT_OK",          "GPT_ERR_INVALID_ARG", "GPT_ERR_IO",          "GPT_ERR_FORMAT",
                           "GPT_ERR_CHECKSUM", "GPT_ERR_UNSUPPORTED", "GPT_ERR_OUT_OF_MEMORY", "GPT_ERR_DEVICE",
                           "GPT_ERR_CONTEXT_FULL", "GPT_ERR_ABORTED", "GPT_ERR_INTERNAL"};
    const int values[] = {GPT_OK, GPT_ERR_INVALID_ARG, GPT_ERR_IO, GPT_ERR_FORMAT, GPT_ERR_CHECKSUM, GPT_ERR_UNSUPPORTED,
                          GPT_ERR_OUT_OF_MEMORY, GPT_ERR_DEVICE, GPT_ERR_CONTEXT_FULL, GPT_ERR_ABORTED, GPT_ERR_INTERNAL};
    for (int i = 0; i < 11; i++) {
        assert_int_equal(values[i], -i); // values never change meaning
        const char *s = gpt_status_str(values[i]);
        assert_non_null(s);
        const size_t n = std::strlen(names[i]);
        if (std::strncmp(s, names[i], n) != 0 || s[n] != ':' || std::strlen(s) < n + 3)
            fail_msg("gpt_status_str(%d) is \"%s\", expected \"%s: ...\"", values[i], s, names[i]);
    }
    // Statuses appended later (values -11, -12, ...) are named the same way; the first value
    // without a name and everything outside the range read as unknown.
    int n_known = 11;
    while (n_known < 64 && !std::strstr(gpt_status_str(-n_known), "unknown")) {
        const char *s = gpt_status_str(-n_known);
        if (std::strncmp(s, "GPT_ERR_", 8) != 0 || !std::strstr(s, ": "))
            fail_msg("gpt_status_str(%d) is \"%s\", expected \"GPT_ERR_...: ...\"", -n_known, s);
        n_known++;
    }
    assert_true(n_known < 64);
    for (int v : {1, 2, 100, -n_known, -n_known - 1, -1000, INT_MIN, INT_MAX}) {
        assert_non_null(gpt_status_str(v));
        assert_non_null(std::strstr(gpt_status_str(v), "unknown"));
    }
    std::set<std::string> distinct;
    for (int v = 0; v > -n_known; v--) distinct.insert(gpt_status_str(v));
    assert_int_equal(distinct.size(), n_known);
}

void test_dtype_names(void **) {
    assert_string_equal(gpt_dtype_name(GPT_DTYPE_AUTO), "auto");
    assert_string_equal(gpt_dtype_name(GPT_DTYPE_F32), "f32");
    assert_string_equal(gpt_dtype_name(GPT_DTYPE_F16), "f16");
    assert_string_equal(gpt_dtype_name(GPT_DTYPE_BF16), "bf16");
    assert_string_equal(gpt_dtype_name(GPT_DTYPE_Q8), "q8");
    assert_string_equal(gpt_dtype_name(GPT_DTYPE_Q4), "q4");
    assert_string_equal(gpt_dtype_name(6), "?");
    assert_string_equal(gpt_dtype_name(-1), "?");
}

void test_arch_names(void **) {
    assert_string_equal(gpt_arch_name(GPT_ARCH_GPT2), "gpt2");
    assert_string_equal(gpt_arch_name(GPT_ARCH_LLAMA), "llama");
    assert_string_equal(gpt_arch_name(GPT_ARCH_QWEN3), "qwen3");
    assert_string_equal(gpt_arch_name(GPT_ARCH_PHI3), "phi3");
    assert_string_equal(gpt_arch_name(0), "?");
    assert_string_equal(gpt_arch_name(1000), "?");
}

void test_versions(void **) {
    assert_int_equal(gpt_version(), GPT_VERSION_NUMBER);
    assert_int_equal(GPT_VERSION_NUMBER, GPT_VERSION_MAJOR * 10000 + GPT_VERSION_MINOR * 100 + GPT_VERSION_PATCH);
    char want[32];
    std::snprintf(want, sizeof want, "%d.%d.%d", GPT_VERSION_MAJOR, GPT_VERSION_MINOR, GPT_VERSION_PATCH);
    assert_string_equal(gpt_version_string(), want);
    const char *info = gpt_build_info();
    assert_non_null(info);
    assert_non_null(std::strstr(info, want));
    assert_non_null(std::strstr(info, "cpu"));
    assert_true(gpt_cuda_device_count() >= 0);
}

void test_last_error_per_thread(void **) {
    gpt_model *m = nullptr;
    CHECK_FAILS(gpt_model_load(nullptr, nullptr, &m), GPT_ERR_INVALID_ARG, "path is NULL", nullptr);
    std::string other;
    std::thread t([&] {
        other = gpt_last_error(); // a new thread starts with ""
        gpt_model *m2 = nullptr;
        gpt_model_load("/nonexistent/x.gpt", nullptr, &m2);
        other += "|";
        other += gpt_last_error();
    });
    t.join();
    assert_non_null(std::strstr(other.c_str(), "|/nonexistent/x.gpt: cannot open"));
    assert_int_equal(other[0], '|');
    assert_non_null(std::strstr(gpt_last_error(), "path is NULL")); // this thread's message is untouched
}

void test_null_arguments_load(void **) {
    gpt_model *m = reinterpret_cast<gpt_model *>(0x1);
    CHECK_FAILS(gpt_model_load(nullptr, nullptr, &m), GPT_ERR_INVALID_ARG, "path is NULL", nullptr);
    assert_null(m);
    CHECK_FAILS(gpt_model_load("/tmp/x.gpt", nullptr, nullptr), GPT_ERR_INVALID_ARG, "out is NULL", nullptr);
    m = reinterpret_cast<gpt_model *>(0x1);
    CHECK_FAILS(gpt_model_load_from_memory(nullptr, 1000, nullptr, &m), GPT_ERR_INVALID_ARG, "NULL", nullptr);
    assert_null(m);
    CHECK_FAILS(gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), nullptr, nullptr), GPT_ERR_INVALID_ARG,
                "out is NULL", nullptr);
}

void test_null_arguments_model_info(void **) {
    gpt_model_info info;
    info.struct_size = sizeof info;
    CHECK_FAILS(gpt_model_get_info(nullptr, &info), GPT_ERR_INVALID_ARG, "NULL", nullptr);
    CHECK_FAILS(gpt_model_get_info(g->model, nullptr), GPT_ERR_INVALID_ARG, "NULL", nullptr);
}

void test_null_arguments_estimate_memory(void **) {
    uint64_t h = 7, d = 7;
    CHECK_FAILS(gpt_ctx_estimate_memory(nullptr, nullptr, &h, &d), GPT_ERR_INVALID_ARG, "model is NULL", nullptr);
    CHECK_OK(gpt_ctx_estimate_memory(g->model, nullptr, nullptr, nullptr)); // params and OUTs may be NULL
    CHECK_OK(gpt_ctx_estimate_memory(g->model, nullptr, &h, nullptr));
    assert_true(h > 0);
}

void test_null_arguments_ctx_create(void **) {
    gpt_ctx *ctx = reinterpret_cast<gpt_ctx *>(0x1);
    CHECK_FAILS(gpt_ctx_create(nullptr, nullptr, &ctx), GPT_ERR_INVALID_ARG, "NULL", nullptr);
    assert_null(ctx);
    CHECK_FAILS(gpt_ctx_create(g->model, nullptr, nullptr), GPT_ERR_INVALID_ARG, "NULL", nullptr);
    CHECK_OK(gpt_ctx_create(g->model, nullptr, &ctx)); // params NULL: defaults
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 0);
    gpt_ctx_free(ctx);
}

void test_null_arguments_forward(void **) {
    gpt_ctx *ctx = nullptr;
    CHECK_OK(gpt_ctx_create(g->model, nullptr, &ctx));
    const int32_t toks[2] = {1, 2};
    float logits[V];
    CHECK_FAILS(gpt_forward(nullptr, toks, 1, 2, 0, logits), GPT_ERR_INVALID_ARG, "ctx is NULL", nullptr);
    CHECK_FAILS(gpt_forward(ctx, nullptr, 1, 2, 0, logits), GPT_ERR_INVALID_ARG, "tokens is NULL", ctx);
    CHECK_OK(gpt_forward(ctx, toks, 1, 2, 0, nullptr)); // logits NULL: fill the cache only
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 2);
    gpt_ctx_free(ctx);
}

// With two tokens cached.
void test_null_arguments_generate(void **) {
    gpt_ctx *ctx = nullptr;
    CHECK_OK(gpt_ctx_create(g->model, nullptr, &ctx));
    const int32_t toks[2] = {1, 2};
    CHECK_OK(gpt_forward(ctx, toks, 1, 2, 0, nullptr));
    int32_t out[4];
    uint32_t n = 99;
    CHECK_FAILS(gpt_generate(nullptr, toks, 2, nullptr, nullptr, nullptr, out, 4, &n), GPT_ERR_INVALID_ARG, "ctx is NULL",
                nullptr);
    assert_int_equal(n, 0);
    n = 99;
    CHECK_FAILS(gpt_generate(ctx, nullptr, 2, nullptr, nullptr, nullptr, out, 4, &n), GPT_ERR_INVALID_ARG, "prompt", ctx);
    assert_int_equal(n, 0);
    CHECK_FAILS(gpt_generate(ctx, toks, 0, nullptr, nullptr, nullptr, out, 4, &n), GPT_ERR_INVALID_ARG, "prompt", ctx);
    CHECK_FAILS(gpt_generate(ctx, toks, 2, nullptr, nullptr, nullptr, nullptr, 4, &n), GPT_ERR_INVALID_ARG, "out is NULL", ctx);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 2); // refused before anything ran
    // out may be NULL with cap 0 (the prompt is only cached), n_out may be NULL.
    CHECK_OK(gpt_generate(ctx, toks, 2, nullptr, nullptr, nullptr, nullptr, 0, &n));
    assert_int_equal(n, 0);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 4);
    CHECK_OK(gpt_generate(ctx, toks, 2, nullptr, nullptr, nullptr, out, 2, nullptr));
    gpt_ctx_free(ctx);
}

// gpt_ctx_truncate refuses NULL; destructors and queries accept it; params_init(NULL) is a
// no-op.
void test_null_handles(void **) {
    CHECK_FAILS(gpt_ctx_truncate(nullptr, 0, 0), GPT_ERR_INVALID_ARG, "ctx is NULL", nullptr);

    gpt_model_free(nullptr);
    gpt_ctx_free(nullptr);
    gpt_ctx_reset(nullptr);
    assert_int_equal(gpt_ctx_seq_len(nullptr, 0), 0);
    assert_string_equal(gpt_ctx_last_error(nullptr), "");
    gpt_model_params_init(nullptr);
    gpt_ctx_params_init(nullptr);
    gpt_sampling_params_init(nullptr);
}

void test_params_defaults(void **) {
    gpt_model_params mp;
    std::memset(&mp, 0xab, sizeof mp);
    gpt_model_params_init(&mp);
    assert_int_equal(mp.struct_size, sizeof mp);
    assert_int_equal(mp.device, GPT_DEVICE_AUTO);
    assert_int_equal(mp.weight_dtype, GPT_DTYPE_AUTO);
    assert_int_equal(mp.flags, 0);
    gpt_ctx_params cp;
    std::memset(&cp, 0xab, sizeof cp);
    gpt_ctx_params_init(&cp);
    assert_int_equal(cp.struct_size, sizeof cp);
    assert_int_equal(cp.max_batch, 1);
    assert_int_equal(cp.max_seq, 0);
    assert_int_equal(cp.max_step_tokens, 0);
    assert_int_equal(cp.compute_dtype, GPT_DTYPE_AUTO);
    assert_int_equal(cp.kv_dtype, GPT_DTYPE_AUTO);
    assert_int_equal(cp.n_threads, 0);
    assert_int_equal(cp.flags, 0);
    assert_null(cp.abort_fn);
    assert_null(cp.abort_user);
    gpt_sampling_params sp;
    std::memset(&sp, 0xab, sizeof sp);
    gpt_sampling_params_init(&sp);
    assert_int_equal(sp.struct_size, sizeof sp);
    assert_true(sp.temperature == 0.8f && sp.top_k == 40 && sp.top_p == 0.95f && sp.min_p == 0.05f);
    assert_true(sp.repetition_penalty == 1.0f && sp.repetition_last_n == 64 && sp.flags == 0 && sp.seed == 0);
    assert_null(sp.stop_tokens);
    assert_int_equal(sp.n_stop_tokens, 0);
    assert_int_equal(sp.reserved, 0);
}

int always_abort(void *) { return 1; }

// struct_size: only a size some version of gpt.h gave the struct (so far each has had one:
// sizeof) or a plausible larger one from a newer header (<= 4096, a multiple of the struct's
// alignment; its extra fields ignored) is accepted. Regression: sizes ending inside a field
// were accepted, so gpt_ctx_params.struct_size 33-38 copied part of abort_fn and the library
// then called the torn pointer (SIGSEGV); 9 copied one byte of max_seq; 0xDEADBEEF passed.
// Each params struct in turn.

// Every size below sizeof(T) (field boundaries and mid-field alike), sizeof + 1, past 4096
// and garbage.
template <typename T> std::vector<uint32_t> refused_sizes() {
    std::vector<uint32_t> bad;
    for (uint32_t n = 0; n < sizeof(T); n++) bad.push_back(n);
    bad.push_back(sizeof(T) + 1);
    bad.push_back(4096 + 8);
    bad.push_back(0xDEADBEEFu);
    return bad;
}

// ctx params: refused at every bad size (the abort callback would abort every forward if it
// were read from a torn copy: it never is); a newer caller's longer struct is accepted.
void test_ctx_params_struct_size(void **) {
    std::mt19937_64 rng(reference::sub_seed("params_struct_size"));
    const auto toks = random_tokens(rng, 6);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = 8;
    cp.n_threads = 1;
    cp.abort_fn = always_abort;
    gpt_ctx *ctx = nullptr;
    for (uint32_t bad : refused_sizes<gpt_ctx_params>()) {
        cp.struct_size = bad;
        char what[64];
        std::snprintf(what, sizeof what, "struct_size %u", bad);
        if (gpt_ctx_create(g->model, &cp, &ctx) != GPT_ERR_INVALID_ARG || ctx)
            fail_msg("gpt_ctx_create with %s: not refused (%s)", what, gpt_last_error());
        if (!std::strstr(gpt_last_error(), "struct_size")) fail_msg("%s: message '%s'", what, gpt_last_error());
        if (gpt_ctx_estimate_memory(g->model, &cp, nullptr, nullptr) != GPT_ERR_INVALID_ARG)
            fail_msg("gpt_ctx_estimate_memory with %s: not refused", what);
    }
    // A newer caller's longer struct: the extra tail is ignored, the known fields are read.
    struct Newer {
        gpt_ctx_params p;
        uint64_t future[8];
    } nw;
    gpt_ctx_params_init(&nw.p);
    nw.p.struct_size = sizeof nw;
    nw.p.n_threads = 1;
    nw.p.max_seq = 8;
    std::memset(nw.future, 0xee, sizeof nw.future);
    CHECK_OK(gpt_ctx_create(g->model, &nw.p, &ctx));
    CHECK_OK(gpt_forward(ctx, toks.data(), 1, 6, 0, nullptr));
    CHECK_FAILS(gpt_forward(ctx, toks.data(), 1, 6, 0, nullptr), GPT_ERR_CONTEXT_FULL, "max_seq 8", ctx); // max_seq was read
    gpt_ctx_free(ctx);
}

// Model params: refused at every bad size; a newer caller's longer struct is read.
void test_model_params_struct_size(void **) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    gpt_model *m = nullptr;
    for (uint32_t bad : refused_sizes<gpt_model_params>()) {
        mp.struct_size = bad;
        if (gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), &mp, &m) != GPT_ERR_INVALID_ARG || m)
            fail_msg("gpt_model_load_from_memory with struct_size %u: not refused", bad);
        if (!std::strstr(gpt_last_error(), "struct_size")) fail_msg("struct_size %u: message '%s'", bad, gpt_last_error());
    }
    struct Newer {
        gpt_model_params p;
        uint32_t future[6];
    } nw;
    gpt_model_params_init(&nw.p);
    nw.p.struct_size = sizeof nw;
    nw.p.device = GPT_DEVICE_CPU;
    nw.p.flags = 0xfffffff0u; // read: refused as unknown flags
    std::memset(nw.future, 0xee, sizeof nw.future);
    CHECK_FAILS(gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), &nw.p, &m), GPT_ERR_INVALID_ARG,
                "gpt_model_params.flags", nullptr);
    nw.p.flags = 0;
    CHECK_OK(gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), &nw.p, &m));
    gpt_model_free(m);
}

// Sampling params: refused at every bad size (seed and stop_tokens would be garbage, a wild
// pointer among them); a newer caller's longer struct generates exactly as today's.
void test_sampling_params_struct_size(void **) {
    std::mt19937_64 rng(reference::sub_seed("params_struct_size"));
    const auto toks = random_tokens(rng, 6);
    gpt_ctx *a = make_ctx(), *b = make_ctx();
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.temperature = 1.3f;
    sp.top_k = 0;
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    sp.seed = 0x1234567;
    int32_t out1[12], out2[12];
    uint32_t n1 = 0, n2 = 0;
    const uint32_t older = offsetof(gpt_sampling_params, reserved) + sizeof(uint32_t); // before issue #18
    for (uint32_t bad : refused_sizes<gpt_sampling_params>()) {
        if (bad == older) continue;
        sp.struct_size = bad;
        if (gpt_generate(a, toks.data(), 3, &sp, nullptr, nullptr, out1, 12, &n1) != GPT_ERR_INVALID_ARG || n1 != 0)
            fail_msg("gpt_generate with struct_size %u: not refused", bad);
        if (!std::strstr(gpt_ctx_last_error(a), "struct_size")) fail_msg("struct_size %u: message '%s'", bad, gpt_ctx_last_error(a));
    }
    assert_int_equal(gpt_ctx_seq_len(a, 0), 0); // nothing was run
    struct Newer {
        gpt_sampling_params p;
        uint64_t future[4];
    } nw;
    nw.p = sp;
    nw.p.struct_size = sizeof nw;
    std::memset(nw.future, 0xee, sizeof nw.future);
    sp.struct_size = sizeof sp;
    CHECK_OK(gpt_generate(a, toks.data(), 3, &nw.p, nullptr, nullptr, out1, 12, &n1));
    CHECK_OK(gpt_generate(b, toks.data(), 3, &sp, nullptr, nullptr, out2, 12, &n2));
    assert_int_equal(n1, 12);
    assert_int_equal(n2, 12);
    assert_memory_equal(out1, out2, sizeof out1);
    // An older caller's struct ends at `reserved`: the fields after it are not read (garbage
    // there would be refused: a NULL stop_strings with a count, a non-finite penalty).
    struct Older {
        gpt_sampling_params p;
    } old;
    std::memset(&old, 0xee, sizeof old);
    std::memcpy(&old.p, &sp, older);
    old.p.struct_size = older;
    gpt_ctx_reset(a);
    gpt_ctx_reset(b);
    CHECK_OK(gpt_generate(a, toks.data(), 3, &old.p, nullptr, nullptr, out1, 12, &n1));
    CHECK_OK(gpt_generate(b, toks.data(), 3, &sp, nullptr, nullptr, out2, 12, &n2));
    assert_int_equal(n1, n2);
    assert_memory_equal(out1, out2, sizeof(int32_t) * n1);
    gpt_ctx_free(a);
    gpt_ctx_free(b);
}

// gpt_model_info (an OUT struct): the same sizes are refused, nothing written; a newer
// caller's longer struct gets today's fields, struct_size set to the bytes filled, its tail
// untouched.
void test_model_info_struct_size(void **) {
    gpt_model_info info;
    const uint32_t old_size = offsetof(gpt_model_info, name) + sizeof info.name; // gpt.h before 0.6.0
    for (uint32_t bad : refused_sizes<gpt_model_info>()) {
        if (bad < sizeof(uint32_t) || bad == old_size) continue; // struct_size itself must be there to be read
        std::memset(&info, 0xab, sizeof info);
        info.struct_size = bad;
        if (gpt_model_get_info(g->model, &info) != GPT_ERR_INVALID_ARG) fail_msg("struct_size %u: not refused", bad);
        const uint8_t *rest = reinterpret_cast<const uint8_t *>(&info) + sizeof(uint32_t);
        for (size_t i = 0; i < sizeof info - sizeof(uint32_t); i++)
            if (rest[i] != 0xab) fail_msg("struct_size %u: byte %zu written", bad, i + 4);
    }
    info.struct_size = 0;
    CHECK_FAILS(gpt_model_get_info(g->model, &info), GPT_ERR_INVALID_ARG, "struct_size", nullptr);
    struct Newer {
        gpt_model_info i;
        uint8_t future[24];
    } nw;
    std::memset(&nw, 0xab, sizeof nw);
    nw.i.struct_size = sizeof nw;
    CHECK_OK(gpt_model_get_info(g->model, &nw.i));
    assert_int_equal(nw.i.arch, GPT_ARCH_LLAMA);
    assert_int_equal(nw.i.d_model, 32);
    assert_int_equal(nw.i.struct_size, sizeof(gpt_model_info)); // what this library filled
    for (uint8_t b : nw.future) assert_int_equal(b, 0xab);
    // A caller built with gpt.h before 0.6.0: its struct ends at `name`; nothing past it written.
    std::memset(&info, 0xab, sizeof info);
    info.struct_size = old_size;
    CHECK_OK(gpt_model_get_info(g->model, &info));
    assert_int_equal(info.struct_size, old_size);
    assert_int_equal(info.d_model, 32);
    const uint8_t *past = reinterpret_cast<const uint8_t *>(&info) + old_size;
    for (size_t i = 0; i < sizeof info - old_size; i++)
        if (past[i] != 0xab) fail_msg("an old caller's struct: byte %zu past its end written", old_size + i);
}

// gpt_model_get_info of a model of the given kind reports its config, dtype, sizes and flags.
struct InfoCase {
    gpt_arch arch;
    bool tied, bias;
    gpt::DType dt;
};
void check_model_info(const InfoCase &c, const char *seed_name) {
    std::mt19937_64 rng(reference::sub_seed(seed_name));
    fixture::Spec s = small_spec(rng(), 5);
    s.arch = c.arch;
    s.tied_head = c.tied;
    s.qkv_bias = c.bias;
    s.dtype = c.dt;
    if (c.arch == GPT_ARCH_GPT2) s.n_kv_heads = s.n_heads;
    const fixture::Model fx = fixture::make(s);
    gpt_model *m = load(fx);
    gpt_model_info info;
    std::memset(&info, 0xab, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(gpt_model_get_info(m, &info));
    const gpt::ModelConfig &cf = fx.config;
    assert_int_equal(info.struct_size, sizeof info);
    assert_int_equal(info.arch, c.arch);
    assert_int_equal(info.n_layers, cf.n_layers);
    assert_int_equal(info.d_model, cf.d_model);
    assert_int_equal(info.n_heads, cf.n_heads);
    assert_int_equal(info.n_kv_heads, cf.n_kv_heads);
    assert_int_equal(info.head_dim, cf.head_dim);
    assert_int_equal(info.d_ff, cf.d_ff);
    assert_int_equal(info.vocab_size, cf.vocab_size);
    assert_int_equal(info.context_length, cf.context_length);
    assert_int_equal(info.file_dtype, (uint32_t)c.dt);
    assert_int_equal(info.weight_dtype, (uint32_t)c.dt); // the CPU keeps the file's dtype
    assert_int_equal(info.device, GPT_DEVICE_CPU);
    assert_int_equal(info.bos_token, 1);
    assert_int_equal(info.eos_token, 5);
    assert_int_equal(info.flags, (c.tied ? GPT_MODEL_INFO_TIED_HEAD : 0u) | GPT_MODEL_INFO_QKV_BIAS * (c.bias ? 1u : 0u));
    assert_true(info.norm_eps == cf.norm_eps);
    assert_true(info.rope_theta == (c.arch == GPT_ARCH_LLAMA ? cf.rope_theta : 0.0f));
    uint64_t params = 0;
    for (const auto &t : fx.tensors) params += t.second.size(); // a tied head is stored once
    assert_int_equal(info.n_params, params);
    assert_int_equal(info.n_active_params, params); // dense: every parameter is used
    assert_int_equal(info.n_experts, 0);
    assert_int_equal(info.n_experts_used, 0);
    assert_int_equal(info.d_ff_expert, 0);
    assert_int_equal(info.d_ff_shared, 0);
    assert_int_equal(info.host_bytes, fx.file.size());
    assert_int_equal(info.device_bytes, 0);
    assert_string_equal(info.name, "fixture");
    gpt_model_free(m);
}

void test_model_info_llama(void **) {
    check_model_info({GPT_ARCH_LLAMA, false, false, gpt::DType::F32}, "model_info llama untied f32");
}
void test_model_info_llama_tied_bias(void **) {
    check_model_info({GPT_ARCH_LLAMA, true, true, gpt::DType::BF16}, "model_info llama tied bias bf16");
}
void test_model_info_gpt2_tied(void **) {
    check_model_info({GPT_ARCH_GPT2, true, true, gpt::DType::F16}, "model_info gpt2 tied f16");
}
void test_model_info_gpt2_untied(void **) {
    check_model_info({GPT_ARCH_GPT2, false, true, gpt::DType::F32}, "model_info gpt2 untied f32");
}

// Ids outside the vocabulary (>= vocab, negative) anywhere in a batch: refused, nothing
// written or cached.
void test_bad_tokens(void **) {
    std::mt19937_64 rng(reference::sub_seed("bad_tokens"));
    gpt_ctx *ctx = make_ctx(2);
    auto toks = random_tokens(rng, 8);
    CHECK_OK(gpt_forward(ctx, toks.data(), 2, 2, 0, nullptr));
    std::vector<float> logits(2 * 4 * V);
    for (int32_t bad : {(int32_t)V, (int32_t)V + 1, -1, INT32_MIN, INT32_MAX}) {
        for (size_t at : {0ul, 3ul, 7ul}) {
            auto t = toks;
            t[at] = bad;
            reference::poison(logits.data(), logits.size());
            CHECK_FAILS(gpt_forward(ctx, t.data(), 2, 4, GPT_FORWARD_ALL_LOGITS, logits.data()), GPT_ERR_INVALID_ARG,
                        "outside the vocabulary", ctx);
            assert_true(all_nan(logits.data(), logits.size())); // nothing written
            assert_int_equal(gpt_ctx_seq_len(ctx, 0), 2);
            assert_int_equal(gpt_ctx_seq_len(ctx, 1), 2);
            int32_t out[3];
            uint32_t n = 5;
            CHECK_FAILS(gpt_generate(ctx, t.data(), 8, nullptr, nullptr, nullptr, out, 3, &n), GPT_ERR_INVALID_ARG,
                        "outside the vocabulary", ctx);
            assert_int_equal(n, 0);
        }
    }
    gpt_ctx_free(ctx);
}

// Batch sizes 0 and past max_batch, n_tokens 0, unknown flags.
void test_bad_batches(void **) {
    std::mt19937_64 rng(reference::sub_seed("bad_tokens"));
    gpt_ctx *ctx = make_ctx(2);
    auto toks = random_tokens(rng, 8);
    CHECK_OK(gpt_forward(ctx, toks.data(), 2, 2, 0, nullptr));
    CHECK_FAILS(gpt_forward(ctx, toks.data(), 3, 1, 0, nullptr), GPT_ERR_INVALID_ARG, "max_batch 2", ctx);
    CHECK_FAILS(gpt_forward(ctx, toks.data(), 0, 1, 0, nullptr), GPT_ERR_INVALID_ARG, "at least 1", ctx);
    CHECK_FAILS(gpt_forward(ctx, toks.data(), 1, 0, 0, nullptr), GPT_ERR_INVALID_ARG, "at least 1", ctx);
    CHECK_FAILS(gpt_forward(ctx, toks.data(), 1, 1, 0x10, nullptr), GPT_ERR_INVALID_ARG, "flags", ctx);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 2);
    assert_int_equal(gpt_ctx_seq_len(ctx, 2), 0); // an unknown sequence reads as 0
    gpt_ctx_free(ctx);
}

void test_ctx_params_out_of_range(void **) {
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = 49;
    gpt_ctx *c2 = nullptr;
    CHECK_FAILS(gpt_ctx_create(g->model, &cp, &c2), GPT_ERR_INVALID_ARG, "context length 48", nullptr);
    gpt_ctx_params_init(&cp);
    cp.max_batch = 1u << 20;
    CHECK_FAILS(gpt_ctx_create(g->model, &cp, &c2), GPT_ERR_INVALID_ARG, "max_batch", nullptr);
    gpt_ctx_params_init(&cp);
    cp.compute_dtype = 9;
    CHECK_FAILS(gpt_ctx_create(g->model, &cp, &c2), GPT_ERR_INVALID_ARG, "compute_dtype", nullptr);
    gpt_ctx_params_init(&cp);
    cp.max_step_tokens = 0xffffffffu;
    CHECK_FAILS(gpt_ctx_create(g->model, &cp, &c2), GPT_ERR_INVALID_ARG, "max_step_tokens", nullptr);
    assert_null(c2);
}

// A model made for 2^22 positions (a 10 KB file; real ones say 131,072): the default context
// holds 4096 positions, not the model's length (regression: a default context committed
// gigabytes and spent a minute in gpt_ctx_create, which cannot be aborted); a context that
// cannot fit in memory is refused up front with OUT_OF_MEMORY and the numbers.
void test_ctx_default_max_seq_and_memory_refusal(void **) {
    fixture::Spec s;
    s.arch = GPT_ARCH_LLAMA;
    s.n_layers = 1, s.d_model = 8, s.n_heads = 1, s.n_kv_heads = 1, s.head_dim = 256, s.d_ff = 8, s.vocab_size = 16;
    s.context_length = 1u << 22;
    s.seed = reference::sub_seed("long context model");
    const fixture::Model fx = fixture::make(s);
    gpt_model *m = load(fx);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.n_threads = 1;
    uint64_t host_default = 0, host_4096 = 0, host_full = 0;
    CHECK_OK(gpt_ctx_estimate_memory(m, &cp, &host_default, nullptr));
    cp.max_seq = 4096;
    CHECK_OK(gpt_ctx_estimate_memory(m, &cp, &host_4096, nullptr));
    cp.max_seq = 1u << 22;
    CHECK_OK(gpt_ctx_estimate_memory(m, &cp, &host_full, nullptr)); // an estimate is only arithmetic
    if (host_default != host_4096)
        fail_msg("the default context takes %" PRIu64 " bytes, max_seq 4096 %" PRIu64 " (the model's 2^22: %" PRIu64 ")",
                 host_default, host_4096, host_full);
    assert_true(host_full > 500 * host_4096);
    cp.max_seq = 0;
    gpt_ctx *c = nullptr;
    CHECK_OK(gpt_ctx_create(m, &cp, &c));
    std::vector<int32_t> toks(4097, 3);
    CHECK_FAILS(gpt_forward(c, toks.data(), 1, 4097, 0, nullptr), GPT_ERR_CONTEXT_FULL, "max_seq 4096", c);
    gpt_ctx_free(c);
    // 4096 sequences of 2^22 positions: 32 TiB of KV cache, more than any host here has.
    cp.max_seq = 1u << 22;
    cp.max_batch = 4096;
    c = reinterpret_cast<gpt_ctx *>(0x1);
    CHECK_FAILS(gpt_ctx_create(m, &cp, &c), GPT_ERR_OUT_OF_MEMORY, "MiB of host memory", nullptr);
    assert_null(c);
    if (!std::strstr(gpt_last_error(), "max_seq 4194304 x max_batch 4096") || !std::strstr(gpt_last_error(), "available"))
        fail_msg("the refusal does not give the numbers: %s", gpt_last_error());
    gpt_model_free(m);
}

// A device that does not exist (-5; CUDA device 0 in a build without CUDA devices), an
// unknown weight_dtype.
void test_model_params_out_of_range(void **) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = -5;
    gpt_model *m = nullptr;
    CHECK_FAILS(gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), &mp, &m), GPT_ERR_INVALID_ARG, "device -5",
                nullptr);
    if (gpt_cuda_device_count() == 0) {
        mp.device = 0;
        CHECK_FAILS(gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), &mp, &m), GPT_ERR_UNSUPPORTED,
                    "CUDA device 0", nullptr);
    }
    mp.device = GPT_DEVICE_CPU;
    mp.weight_dtype = 6;
    CHECK_FAILS(gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), &mp, &m), GPT_ERR_INVALID_ARG,
                "weight_dtype", nullptr);
    // Quantizing is offline (gpt quantize): a quantized weight_dtype must be the file's.
    mp.weight_dtype = GPT_DTYPE_Q4;
    CHECK_FAILS(gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), &mp, &m), GPT_ERR_UNSUPPORTED,
                "weight_dtype q4", nullptr);
    assert_null(m);
}

// Exceeding max_seq: GPT_ERR_CONTEXT_FULL, nothing changes, the context stays usable.
void test_context_full(void **) {
    std::mt19937_64 rng(reference::sub_seed("context_full"));
    const auto toks = random_tokens(rng, 13);
    const std::vector<int32_t> first12(toks.begin(), toks.begin() + 12);
    gpt_ctx *ctx = make_ctx(1, 12);
    CHECK_OK(gpt_forward(ctx, toks.data(), 1, 8, 0, nullptr));
    std::vector<float> logits(5 * V);
    reference::poison(logits.data(), logits.size());
    CHECK_FAILS(gpt_forward(ctx, toks.data() + 8, 1, 5, GPT_FORWARD_ALL_LOGITS, logits.data()), GPT_ERR_CONTEXT_FULL,
                "max_seq 12", ctx);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 8);
    assert_true(all_nan(logits.data(), logits.size()));
    // Exactly filling it works and equals a fresh context's logits.
    reference::poison(logits.data(), logits.size());
    CHECK_OK(gpt_forward(ctx, toks.data() + 8, 1, 4, GPT_FORWARD_ALL_LOGITS, logits.data()));
    const auto want = fresh_logits(first12);
    expect_same(logits.data(), want.data() + 8 * V, 4 * V, "after CONTEXT_FULL");
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 12);
    CHECK_FAILS(gpt_forward(ctx, toks.data(), 1, 1, 0, logits.data()), GPT_ERR_CONTEXT_FULL, "max_seq", ctx);
    int32_t out[2];
    uint32_t n = 9;
    CHECK_FAILS(gpt_generate(ctx, toks.data(), 1, nullptr, nullptr, nullptr, out, 2, &n), GPT_ERR_CONTEXT_FULL, "max_seq", ctx);
    assert_int_equal(n, 0);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 12);
    gpt_ctx_free(ctx);
}

// Batch: one sequence too long refuses the whole call.
void test_context_full_batch(void **) {
    std::mt19937_64 rng(reference::sub_seed("context_full"));
    const auto toks = random_tokens(rng, 13);
    gpt_ctx *b = make_ctx(2, 12);
    CHECK_OK(gpt_forward(b, toks.data(), 2, 4, 0, nullptr));
    CHECK_OK(gpt_forward(b, toks.data(), 1, 6, 0, nullptr)); // sequence 0 holds 10, sequence 1 holds 4
    CHECK_FAILS(gpt_forward(b, toks.data(), 2, 3, 0, nullptr), GPT_ERR_CONTEXT_FULL, "sequence 0 holds 10", b);
    assert_int_equal(gpt_ctx_seq_len(b, 0), 10);
    assert_int_equal(gpt_ctx_seq_len(b, 1), 4);
    CHECK_OK(gpt_forward(b, toks.data(), 2, 2, 0, nullptr));
    gpt_ctx_free(b);
}

// Truncating past a sequence's length or an unknown sequence is refused; to its own length
// is a no-op.
void test_truncate_refusals(void **) {
    std::mt19937_64 rng(reference::sub_seed("truncate_reset"));
    const auto a = random_tokens(rng, 10);
    gpt_ctx *ctx = make_ctx(2);
    CHECK_OK(gpt_forward(ctx, a.data(), 1, 10, 0, nullptr));
    CHECK_FAILS(gpt_ctx_truncate(ctx, 0, 11), GPT_ERR_INVALID_ARG, "cannot truncate to 11", ctx);
    CHECK_FAILS(gpt_ctx_truncate(ctx, 2, 0), GPT_ERR_INVALID_ARG, "sequence 2 does not exist", ctx);
    CHECK_FAILS(gpt_ctx_truncate(ctx, 1, 1), GPT_ERR_INVALID_ARG, "cannot truncate", ctx);
    CHECK_OK(gpt_ctx_truncate(ctx, 0, 10)); // to its own length: a no-op
    CHECK_OK(gpt_ctx_truncate(ctx, 1, 0));
    gpt_ctx_free(ctx);
}

// Truncated to 6, 3 and 0 tokens, the sequence continues as a fresh one with those tokens.
void test_truncate(void **) {
    std::mt19937_64 rng(reference::sub_seed("truncate_reset"));
    const auto a = random_tokens(rng, 10), extra = random_tokens(rng, 3);
    gpt_ctx *ctx = make_ctx(2);
    CHECK_OK(gpt_forward(ctx, a.data(), 1, 10, 0, nullptr));
    for (uint32_t keep : {6u, 3u, 0u}) {
        CHECK_OK(gpt_ctx_truncate(ctx, 0, keep));
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), keep);
        const auto got = all_logits(ctx, extra);
        std::vector<int32_t> seq(a.begin(), a.begin() + keep);
        seq.insert(seq.end(), extra.begin(), extra.end());
        const auto want = fresh_logits(seq);
        expect_same(got.data(), want.data() + keep * V, 3 * V, "after truncate");
        // Put the sequence back to a[0..keep) + extra for the next round... then to a.
        gpt_ctx_reset(ctx);
        CHECK_OK(gpt_forward(ctx, a.data(), 1, 10, 0, nullptr));
    }
    gpt_ctx_free(ctx);
}

// Reset empties every sequence; the context then equals a fresh one.
void test_reset(void **) {
    std::mt19937_64 rng(reference::sub_seed("truncate_reset"));
    const auto a = random_tokens(rng, 10);
    gpt_ctx *ctx = make_ctx(2);
    CHECK_OK(gpt_forward(ctx, a.data(), 1, 10, 0, nullptr));
    CHECK_OK(gpt_forward(ctx, a.data(), 2, 3, 0, nullptr)); // seq 0: 13, seq 1: 3
    gpt_ctx_reset(ctx);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 0);
    assert_int_equal(gpt_ctx_seq_len(ctx, 1), 0);
    expect_same(all_logits(ctx, a).data(), fresh_logits(a).data(), 10 * V, "after reset");
    gpt_ctx_free(ctx);
}

struct TokenLog {
    std::vector<int32_t> seen;
    uint32_t stop_after = 0; // return nonzero on this call (1-based); 0: never
};
int on_token(int32_t t, void *user) {
    auto *log = static_cast<TokenLog *>(user);
    log->seen.push_back(t);
    return log->stop_after && log->seen.size() == log->stop_after;
}

// What the generate tests compare against: a 4-token prompt, the 16 tokens greedy decoding
// continues it with, and a position j in 3..10 whose token serves as a stop token and as
// eos, first_at the first position holding that token.
struct Greedy {
    static constexpr uint32_t P = 4, cap = 16;
    std::vector<int32_t> prompt, G;
    uint32_t j = 0, first_at = 0;
    Greedy() {
        std::mt19937_64 rng(reference::sub_seed("generate_controls"));
        prompt = random_tokens(rng, 4);
        gpt_ctx *ctx = make_ctx();
        G = greedy(ctx, prompt, cap);
        gpt_ctx_free(ctx);
        j = 3 + (uint32_t)(rng() % 8);
        while (G[first_at] != G[j]) first_at++;
    }
};

gpt_sampling_params greedy_params() {
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.temperature = 0.0f;
    return sp;
}

// The cache holds every generated token but the last; the last token as the next prompt
// continues the text.
void test_generate_continuation(void **) {
    const Greedy gr;
    const auto &prompt = gr.prompt;
    const uint32_t P = Greedy::P, cap = Greedy::cap;
    gpt_ctx *ctx = make_ctx();
    const auto G = greedy(ctx, prompt, cap);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), P + cap - 1); // every generated token but the last
    gpt_ctx_reset(ctx);
    const auto first = greedy(ctx, prompt, 6);
    const auto rest = greedy(ctx, {first.back()}, cap - 6);
    for (uint32_t i = 0; i < cap; i++) assert_int_equal(i < 6 ? first[i] : rest[i - 6], G[i]);
    gpt_ctx_free(ctx);
}

// cap: exactly cap tokens, nothing written past them.
void test_generate_cap(void **) {
    const Greedy gr;
    const uint32_t P = Greedy::P, cap = Greedy::cap;
    gpt_ctx *ctx = make_ctx();
    gpt_sampling_params sp = greedy_params();
    std::vector<int32_t> out(cap + 4, -77);
    uint32_t n = 0;
    for (uint32_t c : {1u, 5u}) {
        gpt_ctx_reset(ctx);
        std::fill(out.begin(), out.end(), -77);
        CHECK_OK(gpt_generate(ctx, gr.prompt.data(), P, &sp, nullptr, nullptr, out.data(), c, &n));
        assert_int_equal(n, c);
        for (uint32_t i = 0; i < cap + 4; i++) assert_int_equal(out[i], i < c ? gr.G[i] : -77);
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), P + c - 1);
    }
    gpt_ctx_free(ctx);
}

// Stop tokens: generation ends at the first occurrence, which is written and counted.
void test_generate_stop_tokens(void **) {
    const Greedy gr;
    const uint32_t P = Greedy::P, cap = Greedy::cap;
    const auto &G = gr.G;
    gpt_ctx *ctx = make_ctx();
    gpt_sampling_params sp = greedy_params();
    std::vector<int32_t> out(cap + 4, -77);
    uint32_t n = 0;
    const int32_t stops[3] = {(int32_t)V + 100, G[gr.j], -1}; // ids that never occur are harmless
    sp.stop_tokens = stops;
    sp.n_stop_tokens = 3;
    CHECK_OK(gpt_generate(ctx, gr.prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n));
    assert_int_equal(n, gr.first_at + 1);
    assert_int_equal(out[gr.first_at], G[gr.j]);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), P + gr.first_at);
    gpt_ctx_free(ctx);
}

// The token callback sees every token in order; nonzero stops after that token.
void test_generate_token_callback(void **) {
    const Greedy gr;
    const uint32_t P = Greedy::P, cap = Greedy::cap;
    gpt_ctx *ctx = make_ctx();
    gpt_sampling_params sp = greedy_params();
    std::vector<int32_t> out(cap + 4, -77);
    uint32_t n = 0;
    for (uint32_t k : {1u, 4u, cap}) {
        TokenLog log;
        log.stop_after = k;
        gpt_ctx_reset(ctx);
        CHECK_OK(gpt_generate(ctx, gr.prompt.data(), P, &sp, on_token, &log, out.data(), cap, &n));
        assert_int_equal(n, k);
        assert_int_equal(log.seen.size(), k);
        for (uint32_t i = 0; i < k; i++) assert_int_equal(log.seen[i], gr.G[i]);
    }
    gpt_ctx_free(ctx);
}

// CONTEXT_FULL part way: n_out counts what was written, the cache is full.
void test_generate_context_full(void **) {
    const Greedy gr;
    const uint32_t P = Greedy::P, cap = Greedy::cap;
    gpt_sampling_params sp = greedy_params();
    std::vector<int32_t> out(cap + 4, -77);
    uint32_t n = 0;
    for (uint32_t room : {1u, 5u}) {
        gpt_ctx *small = make_ctx(1, P + room);
        std::fill(out.begin(), out.end(), -77);
        n = 0;
        CHECK_FAILS(gpt_generate(small, gr.prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n), GPT_ERR_CONTEXT_FULL,
                    "full", small);
        assert_int_equal(n, room + 1);
        for (uint32_t i = 0; i <= room; i++) assert_int_equal(out[i], gr.G[i]);
        assert_int_equal(out[room + 1], -77);
        assert_int_equal(gpt_ctx_seq_len(small, 0), P + room);
        gpt_ctx_free(small);
    }
}

// GPT_SAMPLING_CONTEXT_SHIFT: past max_seq each token is the argmax of the logits of the last
// max_seq tokens, computed here afresh through gpt_forward on a cleared context (as the
// training scripts' generate() crops to block_size); a prompt longer than max_seq too.
void test_generate_context_shift(void **) {
    const uint32_t W = 6, cap = 3 * W, V = g->fx.config.vocab_size;
    std::mt19937_64 rng(reference::sub_seed("context shift"));
    for (uint32_t P : {4u, 9u}) {
        const std::vector<int32_t> prompt = random_tokens(rng, P);
        // The reference: crop, forward the window from an empty cache, argmax.
        gpt_ctx *ref = make_ctx(1, W);
        std::vector<int32_t> seq = prompt, want;
        std::vector<float> logits(V);
        for (uint32_t i = 0; i < cap; i++) {
            gpt_ctx_reset(ref);
            const uint32_t n = std::min<uint32_t>((uint32_t)seq.size(), W);
            CHECK_OK(gpt_forward(ref, seq.data() + seq.size() - n, 1, n, 0, logits.data()));
            const int32_t tok = (int32_t)(std::max_element(logits.begin(), logits.end()) - logits.begin());
            want.push_back(tok);
            seq.push_back(tok);
        }
        gpt_ctx_free(ref);
        gpt_ctx *ctx = make_ctx(1, W);
        gpt_sampling_params sp = greedy_params();
        sp.flags = GPT_SAMPLING_CONTEXT_SHIFT | GPT_SAMPLING_IGNORE_EOS;
        std::vector<int32_t> out(cap, -77);
        uint32_t n_out = 0;
        CHECK_OK(gpt_generate(ctx, prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n_out));
        assert_int_equal(n_out, cap);
        for (uint32_t i = 0; i < cap; i++) assert_int_equal(out[i], want[i]);
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), W); // the last window, every token but the last
        // Without the flag the same context fills up; an unknown flag bit is refused.
        gpt_ctx_reset(ctx);
        sp.flags = GPT_SAMPLING_IGNORE_EOS;
        if (P < W) CHECK_FAILS(gpt_generate(ctx, prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n_out), GPT_ERR_CONTEXT_FULL, "full", ctx);
        sp.flags = 0x4;
        CHECK_FAILS(gpt_generate(ctx, prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n_out), GPT_ERR_INVALID_ARG, "flags", ctx);
        gpt_ctx_free(ctx);
    }
}

// EOS: a model whose eos is a token greedy decoding produces (same weights: the same seed
// draws the same tensors) stops there, unless IGNORE_EOS.
void test_generate_eos(void **) {
    const Greedy gr;
    const uint32_t P = Greedy::P, cap = Greedy::cap;
    const auto &G = gr.G;
    gpt_sampling_params sp = greedy_params();
    std::vector<int32_t> out(cap + 4, -77);
    uint32_t n = 0;
    fixture::Model with_eos = fixture::make(small_spec(reference::sub_seed("api model"), G[gr.j]));
    gpt_model *em = load(with_eos);
    gpt_ctx *ec = make_ctx(1, 0, 1, nullptr, nullptr, 0, em);
    CHECK_OK(gpt_generate(ec, gr.prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n));
    assert_int_equal(n, gr.first_at + 1);
    assert_int_equal(out[gr.first_at], G[gr.j]);
    gpt_ctx_reset(ec);
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    CHECK_OK(gpt_generate(ec, gr.prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n));
    assert_int_equal(n, cap);
    for (uint32_t i = 0; i < cap; i++) assert_int_equal(out[i], G[i]);
    gpt_ctx_free(ec);
    gpt_model_free(em);
}

// End-of-generation ids beyond eos_id (tokenizer.eos_ids: an instruct model's end-of-turn
// token): generation stops at any of them, unless IGNORE_EOS; gpt_model_get_eos_tokens lists
// them, eos_id first, with the usual sizing. Regression: the list was written by the
// converter but never read, so generation ran on past the end of a turn.
void test_generate_eos_ids(void **) {
    const Greedy gr;
    const uint32_t P = Greedy::P, cap = Greedy::cap;
    const auto &G = gr.G;
    // eos_id a token greedy decoding never produces here; the list holds the one it does.
    int32_t unused = 0;
    while (std::find(G.begin(), G.end(), unused) != G.end()) unused++;
    fixture::Spec spec = small_spec(reference::sub_seed("api model"), unused);
    spec.eos_ids = {unused, G[gr.j]};
    fixture::Model fx = fixture::make(spec);
    gpt_model *em = load(fx);

    uint32_t n = 77;
    CHECK_OK(gpt_model_get_eos_tokens(em, nullptr, 0, &n)); // size query
    assert_int_equal(n, 2);
    int32_t ids[3] = {-5, -5, -5};
    CHECK_FAILS(gpt_model_get_eos_tokens(em, ids, 1, &n), GPT_ERR_BUFFER_TOO_SMALL, "holds 1", nullptr);
    assert_int_equal(n, 2);
    CHECK_OK(gpt_model_get_eos_tokens(em, ids, 3, &n));
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], unused);
    assert_int_equal(ids[1], G[gr.j]);
    assert_int_equal(ids[2], -5);
    CHECK_FAILS(gpt_model_get_eos_tokens(em, nullptr, 2, &n), GPT_ERR_INVALID_ARG, "NULL", nullptr);
    CHECK_FAILS(gpt_model_get_eos_tokens(nullptr, ids, 3, &n), GPT_ERR_INVALID_ARG, "NULL", nullptr);
    CHECK_OK(gpt_model_get_eos_tokens(g->model, ids, 3, &n)); // a model without eos
    assert_int_equal(n, 0);

    gpt_sampling_params sp = greedy_params();
    std::vector<int32_t> out(cap + 4, -77);
    gpt_ctx *ec = make_ctx(1, 0, 1, nullptr, nullptr, 0, em);
    CHECK_OK(gpt_generate(ec, gr.prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n));
    assert_int_equal(n, gr.first_at + 1);
    assert_int_equal(out[gr.first_at], G[gr.j]);
    gpt_ctx_reset(ec);
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    CHECK_OK(gpt_generate(ec, gr.prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n));
    assert_int_equal(n, cap);
    gpt_ctx_free(ec);
    gpt_model_free(em);
}

// ------------------------------------------------------------------------------ abort

struct AbortState {
    uint32_t calls = 0;
    uint32_t abort_at = 0; // abort on this call (1-based) and after; 0: never
};
int abort_cb(void *user) {
    auto *s = static_cast<AbortState *>(user);
    s->calls++;
    return s->abort_at && s->calls >= s->abort_at;
}

// Abort at each callback of a forward call in turn (steps of max_step tokens; 0: one step):
// ABORTED, nothing cached, the context usable; a one-token decode is checked too.
void check_abort_forward(uint32_t max_step) {
    std::mt19937_64 rng(reference::sub_seed("abort_forward"));
    const auto toks = random_tokens(rng, 10);
    const auto want = fresh_logits(toks);
    AbortState st;
    gpt_ctx *ctx = make_ctx(1, 0, 1, abort_cb, &st, max_step);
    // Count the callbacks of the uninterrupted call: between steps and between layers.
    CHECK_OK(gpt_forward(ctx, toks.data(), 1, 4, 0, nullptr));
    st.calls = 0;
    CHECK_OK(gpt_forward(ctx, toks.data() + 4, 1, 6, GPT_FORWARD_ALL_LOGITS, nullptr));
    const uint32_t total = st.calls;
    const uint32_t steps = max_step ? (6 + max_step - 1) / max_step : 1;
    if (total < steps * (1 + g->fx.config.n_layers))
        fail_msg("abort callback called %u times in %u steps of a %u-layer model", total, steps, g->fx.config.n_layers);
    // Abort at each callback in turn: ABORTED, nothing cached, the context usable.
    for (uint32_t at = 1; at <= total; at++) {
        gpt_ctx_reset(ctx);
        CHECK_OK(gpt_forward(ctx, toks.data(), 1, 4, 0, nullptr));
        st.calls = 0;
        st.abort_at = at;
        std::vector<float> logits(6 * V);
        reference::poison(logits.data(), logits.size());
        CHECK_FAILS(gpt_forward(ctx, toks.data() + 4, 1, 6, GPT_FORWARD_ALL_LOGITS, logits.data()), GPT_ERR_ABORTED,
                    "abort", ctx);
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), 4);
        st.abort_at = 0;
        reference::poison(logits.data(), logits.size());
        CHECK_OK(gpt_forward(ctx, toks.data() + 4, 1, 6, GPT_FORWARD_ALL_LOGITS, logits.data()));
        expect_same(logits.data(), want.data() + 4 * V, 6 * V, "after an aborted forward");
    }
    // A one-token decode is checked too (between tokens).
    gpt_ctx_reset(ctx);
    st.calls = 0;
    st.abort_at = 1;
    CHECK_FAILS(gpt_forward(ctx, toks.data(), 1, 1, 0, nullptr), GPT_ERR_ABORTED, "abort", ctx);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), 0);
    gpt_ctx_free(ctx);
}

void test_abort_forward(void **) { check_abort_forward(0); }

void test_abort_forward_in_steps(void **) { check_abort_forward(3); }

// Abort at every callback of a generate call in turn: GPT_ERR_ABORTED, n_out the tokens
// written, the cache holding the prompt and every generated token but the last (gpt.h),
// so the last token as the next prompt continues the same text.
void test_abort_generate(void **) {
    std::mt19937_64 rng(reference::sub_seed("abort_generate"));
    const auto prompt = random_tokens(rng, 5);
    const uint32_t P = 5, cap = 8;
    AbortState st;
    gpt_ctx *ctx = make_ctx(1, 0, 1, abort_cb, &st);
    const auto G = greedy(ctx, prompt, cap);
    const uint32_t total = st.calls;
    assert_true(total >= cap);
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.temperature = 0.0f;
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    for (uint32_t at = 1; at <= total; at++) {
        gpt_ctx_reset(ctx);
        st.calls = 0;
        st.abort_at = at;
        std::vector<int32_t> out(cap, -1);
        uint32_t n = 77;
        const gpt_status s = gpt_generate(ctx, prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n);
        st.abort_at = 0;
        if (s != GPT_ERR_ABORTED) fail_msg("abort at callback %u of %u: %s", at, total, gpt_status_str(s));
        assert_true(n < cap);
        for (uint32_t i = 0; i < n; i++) assert_int_equal(out[i], G[i]);
        const uint32_t len = gpt_ctx_seq_len(ctx, 0);
        if (n == 0) {
            // Stopped before any token: the prompt is cached or (stopped inside it) nothing.
            if (len != 0 && len != P) fail_msg("abort at callback %u: n_out 0, cache %u", at, len);
            continue;
        }
        if (len != P + n - 1)
            fail_msg("abort at callback %u: n_out %u, the cache holds %u tokens, gpt.h says prompt + n_out - 1 = %u", at, n,
                     len, P + n - 1);
        const auto rest = greedy(ctx, {out[n - 1]}, cap - n);
        for (uint32_t i = n; i < cap; i++) assert_int_equal(rest[i - n], G[i]);
    }
    gpt_ctx_free(ctx);
}

// ------------------------------------------------------------------------ memory

// gpt_ctx_estimate_memory reports exactly what gpt_ctx_create allocates: every sized
// buffer comes from host_alloc, and what else creation allocates is a few small objects.
void test_estimate_memory(void **) {
    struct P {
        uint32_t batch, seq, step, threads;
    } ps[] = {{1, 0, 0, 1}, {1, 8, 0, 1}, {3, 16, 0, 1}, {2, 48, 5, 2}, {4, 7, 1, 1}, {1, 48, 64, 3}};
    for (const P &p : ps) {
        gpt_ctx_params cp;
        gpt_ctx_params_init(&cp);
        cp.max_batch = p.batch;
        cp.max_seq = p.seq;
        cp.max_step_tokens = p.step;
        cp.n_threads = p.threads;
        uint64_t host = 0, dev = 77;
        CHECK_OK(gpt_ctx_estimate_memory(g->model, &cp, &host, &dev));
        assert_int_equal(dev, 0);
        AllocWatch w;
        gpt_ctx *ctx = nullptr;
        CHECK_OK(gpt_ctx_create(g->model, &cp, &ctx));
        const uint64_t hb = w.host_bytes(), nb = w.new_bytes();
        gpt_ctx_free(ctx);
        if (hb != host || nb > 16384)
            fail_msg("batch %u seq %u step %u threads %u: estimate %" PRIu64 " bytes; creation host_alloc'd %" PRIu64
                     " and new'd %" PRIu64,
                     p.batch, p.seq, p.step, p.threads, host, hb, nb);
        // The estimate grows with what it covers.
        uint64_t bigger = 0;
        cp.max_seq = 48;
        cp.max_batch = p.batch + 1;
        CHECK_OK(gpt_ctx_estimate_memory(g->model, &cp, &bigger, nullptr));
        if (!(bigger > host))
            fail_msg("batch %u seq %u step %u threads %u: the estimate (%" PRIu64
                     " bytes) does not grow with max_seq 48 and one more sequence (%" PRIu64 ")",
                     p.batch, p.seq, p.step, p.threads, host, bigger);
    }
}

// forward and generate allocate nothing (gpt.h): no operator new, no host_alloc, no
// executor allocation, also with worker threads, batches, stop tokens, penalties, logit bias
// and callbacks (stop strings keep text: gpt.h says they allocate).
void test_no_allocation_in_forward_and_generate(void **) {
    std::mt19937_64 rng(reference::sub_seed("no_allocation"));
    const auto toks = random_tokens(rng, 24);
    for (uint32_t threads : {1u, 2u}) {
        gpt_ctx *ctx = make_ctx(3, 0, threads, nullptr, nullptr, 4);
        const uint64_t exec_allocs = ctx->impl->executor().allocation_count();
        std::vector<float> logits(3 * 8 * V);
        std::vector<int32_t> out(16);
        const int32_t stops[2] = {(int32_t)V + 1, (int32_t)V + 2};
        gpt_sampling_params sp;
        gpt_sampling_params_init(&sp);
        sp.stop_tokens = stops;
        sp.n_stop_tokens = 2;
        sp.flags = GPT_SAMPLING_IGNORE_EOS;
        sp.repetition_penalty = 1.2f;
        const gpt_logit_bias bias[2] = {{1, 2.0f}, {(int32_t)V - 1, -3.0f}};
        sp.logit_bias = bias; // penalties and bias work in memory the context sized
        sp.n_logit_bias = 2;
        sp.frequency_penalty = 0.5f;
        sp.presence_penalty = 0.25f;
        TokenLog log;
        log.seen.reserve(64);
        uint32_t n = 0;
        AllocWatch w;
        CHECK_OK(gpt_forward(ctx, toks.data(), 1, 8, GPT_FORWARD_ALL_LOGITS, logits.data()));
        CHECK_OK(gpt_forward(ctx, toks.data(), 1, 1, 0, logits.data()));
        CHECK_OK(gpt_forward(ctx, toks.data(), 3, 8, GPT_FORWARD_ALL_LOGITS, logits.data()));
        CHECK_OK(gpt_forward(ctx, toks.data(), 3, 2, 0, logits.data()));
        CHECK_OK(gpt_forward(ctx, toks.data(), 2, 1, 0, nullptr));
        CHECK_OK(gpt_ctx_truncate(ctx, 1, 3));
        gpt_ctx_reset(ctx);
        CHECK_OK(gpt_generate(ctx, toks.data(), 5, &sp, on_token, &log, out.data(), 16, &n));
        sp.temperature = 0.0f;
        CHECK_OK(gpt_generate(ctx, out.data() + 15, 1, &sp, nullptr, nullptr, out.data(), 8, &n));
        CHECK_OK(gpt_generate(ctx, toks.data(), 3, nullptr, nullptr, nullptr, out.data(), 4, &n));
        (void)gpt_ctx_seq_len(ctx, 0);
        if (w.news() || w.hosts())
            fail_msg("n_threads %u: forward/generate made %" PRIu64 " operator new and %" PRIu64 " host_alloc calls", threads,
                     w.news(), w.hosts());
        if (ctx->impl->executor().allocation_count() != exec_allocs)
            fail_msg("n_threads %u: the executor allocated %" PRIu64 " times", threads,
                     (uint64_t)(ctx->impl->executor().allocation_count() - exec_allocs));
        gpt_ctx_free(ctx);
    }
}

// Every host_alloc during load and context creation failing in turn, and every operator
// new: GPT_ERR_OUT_OF_MEMORY, OUT pointers NULL, nothing leaked (LeakSanitizer in CI). One
// test per way of loading.
enum LoadHow { NO_MMAP_FILE, MISALIGNED_BUFFER, COPY_BUFFER, MAPPED_FILE };

void check_allocation_failures(LoadHow how) {
    const std::string path = fixture::write_temp(g->fx.file);
    // A misaligned copy of the file (load_from_memory copies it with host_alloc).
    std::vector<uint8_t> shifted(g->fx.file.size() + 1);
    std::memcpy(shifted.data() + 1, g->fx.file.data(), g->fx.file.size());
    const char *how_name = how == NO_MMAP_FILE ? "read()" : how == MAPPED_FILE ? "mmap" : how == COPY_BUFFER ? "copied buffer"
                                                                                                          : "misaligned buffer";
    for (bool via_new : {false, true}) {
        uint32_t failures = 0;
        for (int64_t k = 0;; k++) {
            gpt_model_params mp;
            gpt_model_params_init(&mp);
            mp.device = GPT_DEVICE_CPU;
            gpt_model *m = reinterpret_cast<gpt_model *>(0x1);
            gpt_ctx *ctx = reinterpret_cast<gpt_ctx *>(0x1);
            if (via_new) alloc_hooks::fail_nth(k);
            else gpt::testing::fail_alloc_after(k);
            gpt_status st;
            if (how == NO_MMAP_FILE || how == MAPPED_FILE) {
                mp.flags = how == NO_MMAP_FILE ? GPT_MODEL_NO_MMAP : 0;
                st = gpt_model_load(path.c_str(), &mp, &m);
            } else if (how == MISALIGNED_BUFFER) {
                st = gpt_model_load_from_memory(shifted.data() + 1, g->fx.file.size(), &mp, &m);
            } else {
                mp.flags = GPT_MODEL_COPY_BUFFER;
                st = gpt_model_load_from_memory(g->fx.file.data(), g->fx.file.size(), &mp, &m);
            }
            gpt_ctx_params cp;
            gpt_ctx_params_init(&cp);
            cp.n_threads = 2;
            cp.max_seq = 16;
            const bool loaded = st == GPT_OK;
            if (loaded) st = gpt_ctx_create(m, &cp, &ctx);
            const bool injected = via_new ? alloc_hooks::fired() : false;
            alloc_hooks::disarm();
            gpt::testing::fail_alloc_after(-1);
            if (st == GPT_OK) {
                if (via_new && injected) fail_msg("operator new %" PRId64 " failed but the calls succeeded", k);
                // Beyond the last allocation: all ran; the context works.
                const int32_t t[2] = {1, 2};
                CHECK_OK(gpt_forward(ctx, t, 1, 2, 0, nullptr));
                gpt_ctx_free(ctx);
                gpt_model_free(m);
                break;
            }
            failures++;
            if (st != GPT_ERR_OUT_OF_MEMORY)
                fail_msg("allocation %" PRId64 " (%s, %s) failing gave %s: %s", k, via_new ? "new" : "host_alloc",
                         how == NO_MMAP_FILE ? "read()" : how == MAPPED_FILE ? "mmap" : "buffer", gpt_status_str(st),
                         gpt_last_error());
            if (!via_new && !std::strstr(gpt_last_error(), "(injected)"))
                fail_msg("host_alloc %" PRId64 ": message \"%s\"", k, gpt_last_error());
            if (loaded) {
                assert_null(ctx);
                gpt_model_free(m);
            } else {
                assert_null(m);
            }
            assert_true(k < 100000);
        }
        // Loading without mmap copies the file, creation allocates the context: at least
        // those host_alloc calls were made to fail.
        const uint32_t at_least = !via_new ? (how == MAPPED_FILE ? 1u : 2u) : 5u;
        if (failures < at_least)
            fail_msg("%s, %s: %u allocation points failed, expected at least %u", via_new ? "operator new" : "host_alloc", how_name,
                     failures, at_least);
        std::printf("# %s, %s: %u allocation points failed cleanly\n", via_new ? "operator new" : "host_alloc", how_name, failures);
    }
    ::unlink(path.c_str());
}

void test_allocation_failures_read_file(void **) { check_allocation_failures(NO_MMAP_FILE); }
void test_allocation_failures_mapped_file(void **) { check_allocation_failures(MAPPED_FILE); }
void test_allocation_failures_copy_buffer(void **) { check_allocation_failures(COPY_BUFFER); }
void test_allocation_failures_misaligned_buffer(void **) { check_allocation_failures(MISALIGNED_BUFFER); }

} // namespace

int main(void) {
    reference::test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_hooks_linked),
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_arch_names),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_last_error_per_thread),
        cmocka_unit_test(test_null_arguments_load),
        cmocka_unit_test(test_null_arguments_model_info),
        cmocka_unit_test(test_null_arguments_estimate_memory),
        cmocka_unit_test(test_null_arguments_ctx_create),
        cmocka_unit_test(test_null_arguments_forward),
        cmocka_unit_test(test_null_arguments_generate),
        cmocka_unit_test(test_null_handles),
        cmocka_unit_test(test_params_defaults),
        cmocka_unit_test(test_ctx_params_struct_size),
        cmocka_unit_test(test_model_params_struct_size),
        cmocka_unit_test(test_sampling_params_struct_size),
        cmocka_unit_test(test_model_info_struct_size),
        cmocka_unit_test(test_model_info_llama),
        cmocka_unit_test(test_model_info_llama_tied_bias),
        cmocka_unit_test(test_model_info_gpt2_tied),
        cmocka_unit_test(test_model_info_gpt2_untied),
        cmocka_unit_test(test_bad_tokens),
        cmocka_unit_test(test_bad_batches),
        cmocka_unit_test(test_ctx_params_out_of_range),
        cmocka_unit_test(test_ctx_default_max_seq_and_memory_refusal),
        cmocka_unit_test(test_model_params_out_of_range),
        cmocka_unit_test(test_context_full),
        cmocka_unit_test(test_context_full_batch),
        cmocka_unit_test(test_truncate_refusals),
        cmocka_unit_test(test_truncate),
        cmocka_unit_test(test_reset),
        cmocka_unit_test(test_generate_continuation),
        cmocka_unit_test(test_generate_cap),
        cmocka_unit_test(test_generate_stop_tokens),
        cmocka_unit_test(test_generate_token_callback),
        cmocka_unit_test(test_generate_context_full),
        cmocka_unit_test(test_generate_context_shift),
        cmocka_unit_test(test_generate_eos),
        cmocka_unit_test(test_generate_eos_ids),
        cmocka_unit_test(test_abort_forward),
        cmocka_unit_test(test_abort_forward_in_steps),
        cmocka_unit_test(test_abort_generate),
        cmocka_unit_test(test_estimate_memory),
        cmocka_unit_test(test_no_allocation_in_forward_and_generate),
        cmocka_unit_test(test_allocation_failures_read_file),
        cmocka_unit_test(test_allocation_failures_mapped_file),
        cmocka_unit_test(test_allocation_failures_copy_buffer),
        cmocka_unit_test(test_allocation_failures_misaligned_buffer),
    };
    return cmocka_run_group_tests_name("api", tests, setup, teardown);
}
