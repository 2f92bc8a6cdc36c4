// test_threads.cpp - gpt.h's threading rule, checked: one model shared by N contexts that
// generate in N threads at once gives exactly (bit for bit) what the same work gives run
// one job after another, on the CPU and, when the machine has one, on the GPU:
//   - contexts with and without their own worker threads (n_threads 1 and 2), Llama (GQA)
//     and GPT-2, f32 and f16 weights, sampled and greedy generation, all-logits forwards;
//   - contexts created and freed on one thread while others generate;
//   - tokenizer calls (tokenize, detokenize, streaming detokenizers) from many threads;
//   - an abort flag set from another thread stops a running generate at the very next
//     check (between layers or tokens), with GPT_ERR_ABORTED; the context stays usable and
//     the cache holds what gpt.h says (prompt + n_out - 1), so generation continues exactly.
// .ci/reliability.sh builds this test with ThreadSanitizer and runs it there too.
#include "gpt.h"

#include "core/parallel.h"
#include "fixture.h"
#include "reference.h"
#include "tokenizer/tokenizer_data.h"

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

#define CHECK_OK(expr)                                                                                                 \
    do {                                                                                                               \
        const gpt_status st_ = (expr);                                                                                 \
        if (st_ != GPT_OK) fail_msg("%s -> %s: %s", #expr, gpt_status_str(st_), gpt_last_error());                     \
    } while (0)

// Results are collected here and compared on the main thread (cmocka's assertions are not
// made for other threads).
struct Job {
    std::vector<int32_t> prompt;
    gpt_sampling_params sp;
    uint32_t cap = 0;
    uint32_t n_threads = 1;
};
struct Result {
    gpt_status st = GPT_ERR_INTERNAL;
    std::string error;
    std::vector<float> logits;     // all logits of the prompt
    std::vector<int32_t> tokens;   // generated, then continued from the last one
    uint32_t seq_len = 0;
};

Result run_job(gpt_model *m, uint32_t vocab, const Job &j) {
    Result r;
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = 64;
    cp.n_threads = j.n_threads;
    gpt_ctx *ctx = nullptr;
    auto bail = [&](gpt_status st, const char *what) {
        r.st = st;
        r.error = std::string(what) + ": " + (ctx ? gpt_ctx_last_error(ctx) : gpt_last_error());
        gpt_ctx_free(ctx);
        return r;
    };
    gpt_status st = gpt_ctx_create(m, &cp, &ctx);
    if (st != GPT_OK) return bail(st, "create");
    r.logits.assign(j.prompt.size() * vocab, 0.0f);
    st = gpt_forward(ctx, j.prompt.data(), 1, (uint32_t)j.prompt.size(), GPT_FORWARD_ALL_LOGITS, r.logits.data());
    if (st != GPT_OK) return bail(st, "forward");
    gpt_ctx_reset(ctx);
    r.tokens.assign(2 * j.cap, -1);
    uint32_t n = 0, n2 = 0;
    st = gpt_generate(ctx, j.prompt.data(), (uint32_t)j.prompt.size(), &j.sp, nullptr, nullptr, r.tokens.data(), j.cap, &n);
    if (st != GPT_OK || n != j.cap) return bail(st, "generate");
    st = gpt_generate(ctx, &r.tokens[n - 1], 1, &j.sp, nullptr, nullptr, r.tokens.data() + n, j.cap, &n2);
    if (st != GPT_OK || n2 != j.cap) return bail(st, "continue");
    r.seq_len = gpt_ctx_seq_len(ctx, 0);
    gpt_ctx_free(ctx);
    r.st = GPT_OK;
    return r;
}

std::vector<Job> make_jobs(uint32_t vocab, size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Job> jobs(n);
    for (size_t i = 0; i < n; i++) {
        Job &j = jobs[i];
        j.prompt.resize(3 + rng() % 12);
        for (auto &t : j.prompt) t = (int32_t)(rng() % vocab);
        gpt_sampling_params_init(&j.sp);
        j.sp.seed = rng();
        j.sp.flags = GPT_SAMPLING_IGNORE_EOS;
        if (i % 3 == 0) j.sp.temperature = 0.0f; // greedy
        if (i % 3 == 1) j.sp.repetition_penalty = 1.3f, j.sp.top_k = 5;
        j.cap = 12;
        j.n_threads = 1 + (uint32_t)(i % 2);
    }
    return jobs;
}

void compare(const Result &seq, const Result &par, size_t i, const char *what) {
    if (seq.st != GPT_OK) fail_msg("%s job %zu (sequential): %s", what, i, seq.error.c_str());
    if (par.st != GPT_OK) fail_msg("%s job %zu (in a thread): %s", what, i, par.error.c_str());
    assert_int_equal(seq.logits.size(), par.logits.size());
    if (std::memcmp(seq.logits.data(), par.logits.data(), seq.logits.size() * sizeof(float)) != 0)
        fail_msg("%s job %zu: logits differ between the threaded and the sequential run", what, i);
    if (seq.tokens != par.tokens) fail_msg("%s job %zu: generated tokens differ", what, i);
    assert_int_equal(seq.seq_len, par.seq_len);
}

gpt_model *load_fixture(const fixture::Spec &s, int32_t device, const gpt::TokenizerData *tok = nullptr) {
    const fixture::Model fx = fixture::make(s, tok);
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = device;
    mp.flags = GPT_MODEL_COPY_BUFFER;
    gpt_model *m = nullptr;
    CHECK_OK(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m));
    return m;
}

std::vector<fixture::Spec> specs() {
    fixture::Spec llama;
    llama.arch = GPT_ARCH_LLAMA;
    llama.n_layers = 2, llama.d_model = 32, llama.n_heads = 4, llama.n_kv_heads = 2, llama.head_dim = 8, llama.d_ff = 48;
    llama.vocab_size = 97, llama.context_length = 64, llama.seed = reference::sub_seed("threads llama");
    fixture::Spec gpt2 = llama;
    gpt2.arch = GPT_ARCH_GPT2;
    gpt2.n_kv_heads = 4;
    gpt2.dtype = gpt::DType::F16;
    gpt2.seed = reference::sub_seed("threads gpt2");
    return {llama, gpt2};
}

// N jobs one after another, then the same N jobs in N threads at once (started together),
// twice over: identical logits and tokens.
void parallel_equals_sequential(int32_t device, const char *what) {
    for (const fixture::Spec &s : specs()) {
        gpt_model *m = load_fixture(s, device);
        const size_t N = 6;
        const std::vector<Job> jobs = make_jobs(s.vocab_size, N, s.seed + 1);
        std::vector<Result> seq(N);
        for (size_t i = 0; i < N; i++) seq[i] = run_job(m, s.vocab_size, jobs[i]);
        for (int round = 0; round < 2; round++) {
            std::vector<Result> par(N);
            std::atomic<size_t> ready{0};
            std::vector<std::thread> threads;
            for (size_t i = 0; i < N; i++)
                threads.emplace_back([&, i] {
                    ready.fetch_add(1);
                    while (ready.load() < N) std::this_thread::yield(); // start together
                    par[i] = run_job(m, s.vocab_size, jobs[i]);
                });
            for (auto &t : threads) t.join();
            for (size_t i = 0; i < N; i++) compare(seq[i], par[i], i, what);
        }
        gpt_model_free(m);
    }
}

void test_cpu_parallel_equals_sequential(void **) { parallel_equals_sequential(GPT_DEVICE_CPU, "cpu"); }

void test_gpu_parallel_equals_sequential(void **) {
    if (gpt_cuda_device_count() == 0) {
        std::printf("# no CUDA device (%s): skipped\n", gpt_build_info());
        skip();
    }
    parallel_equals_sequential(0, "cuda:0");
}

// One thread creates, uses and frees contexts in a loop while others generate: everything
// matches the sequential results.
void test_create_and_free_while_running(void **) {
    const fixture::Spec s = specs()[0];
    gpt_model *m = load_fixture(s, GPT_DEVICE_CPU);
    const size_t N = 4;
    const std::vector<Job> jobs = make_jobs(s.vocab_size, N, s.seed + 2);
    std::vector<Result> seq(N), par(N);
    for (size_t i = 0; i < N; i++) seq[i] = run_job(m, s.vocab_size, jobs[i]);
    std::atomic<bool> done{false};
    std::atomic<uint32_t> churn{0};
    std::string churn_error;
    std::thread churner([&] {
        const int32_t t[3] = {1, 2, 3};
        while (!done.load()) {
            gpt_ctx_params cp;
            gpt_ctx_params_init(&cp);
            cp.max_seq = 8 + churn.load() % 16;
            cp.n_threads = 1 + churn.load() % 2;
            gpt_ctx *c = nullptr;
            uint64_t host = 0;
            if (gpt_ctx_estimate_memory(m, &cp, &host, nullptr) != GPT_OK || gpt_ctx_create(m, &cp, &c) != GPT_OK ||
                gpt_forward(c, t, 1, 3, 0, nullptr) != GPT_OK) {
                churn_error = gpt_last_error();
                gpt_ctx_free(c);
                return;
            }
            gpt_ctx_free(c);
            churn.fetch_add(1);
        }
    });
    std::vector<std::thread> threads;
    for (size_t i = 0; i < N; i++) threads.emplace_back([&, i] { par[i] = run_job(m, s.vocab_size, jobs[i]); });
    for (auto &t : threads) t.join();
    done = true;
    churner.join();
    if (!churn_error.empty()) fail_msg("context churn: %s", churn_error.c_str());
    for (size_t i = 0; i < N; i++) compare(seq[i], par[i], i, "with context churn");
    std::printf("# %u contexts created and freed meanwhile\n", churn.load());
    gpt_model_free(m);
}

// A SentencePiece-style tokenizer: <unk> <s> </s>, the 256 byte tokens, a few pieces.
gpt::TokenizerData small_spm() {
    gpt::TokenizerData d = fixture::spm_base();
    float score = -1;
    for (const char *p : {"\xE2\x96\x81", "t", "h", "e", "a", "th", "he", "the", "\xE2\x96\x81t", "\xE2\x96\x81the"})
        fixture::add_token(d, p, gpt::TOKEN_NORMAL, score--);
    return d;
}

// Tokenize, detokenize and stream from many threads on one model: each thread's results
// equal the sequential ones.
void test_tokenizer_calls_in_parallel(void **) {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = specs()[0];
    s.vocab_size = (uint32_t)tok.tokens.size();
    s.bos_id = 1, s.eos_id = 2;
    gpt_model *m = load_fixture(s, GPT_DEVICE_CPU, &tok);
    const std::vector<std::string> texts = {"the theta hat", "\xC3\xA9t\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC", "a\xFF b\xFE<s>the",
                                            std::string(300, 't'), "   leading spaces", "", "\xF0\x9F\x98\x80 x"};
    auto work = [&](const std::string &text, std::vector<int32_t> &ids, std::string &back, std::string &streamed) -> bool {
        uint32_t n = 0;
        if (gpt_tokenize(m, text.data(), text.size(), GPT_TOKENIZE_PARSE_SPECIAL, nullptr, 0, &n) != GPT_OK) return false;
        ids.assign(n, 0);
        if (gpt_tokenize(m, text.data(), text.size(), GPT_TOKENIZE_PARSE_SPECIAL, ids.data(), n, &n) != GPT_OK) return false;
        size_t nb = 0;
        if (gpt_detokenize(m, ids.data(), n, GPT_DETOKENIZE_RENDER_SPECIAL, nullptr, 0, &nb) != GPT_OK) return false;
        back.assign(nb + 1, '\0');
        if (gpt_detokenize(m, ids.data(), n, GPT_DETOKENIZE_RENDER_SPECIAL, &back[0], back.size(), &nb) != GPT_OK) return false;
        back.resize(nb);
        gpt_detokenizer *d = nullptr;
        if (gpt_detokenizer_create(m, GPT_DETOKENIZE_RENDER_SPECIAL, &d) != GPT_OK) return false;
        streamed.clear();
        char buf[64];
        for (int32_t id : ids) {
            if (gpt_detokenizer_push(d, id, buf, sizeof buf, &nb) != GPT_OK) return false;
            streamed.append(buf, nb);
        }
        if (gpt_detokenizer_flush(d, buf, sizeof buf, &nb) != GPT_OK) return false;
        streamed.append(buf, nb);
        gpt_detokenizer_free(d);
        return true;
    };
    const size_t T = texts.size();
    std::vector<std::vector<int32_t>> ids(T);
    std::vector<std::string> back(T), streamed(T);
    for (size_t i = 0; i < T; i++) {
        if (!work(texts[i], ids[i], back[i], streamed[i])) fail_msg("sequential text %zu: %s", i, gpt_last_error());
        assert_true(back[i] == streamed[i]);
    }
    const size_t N = 6;
    std::vector<int> bad(N, 0);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < N; t++)
        threads.emplace_back([&, t] {
            for (int rep = 0; rep < 20; rep++)
                for (size_t i = 0; i < T; i++) {
                    const size_t k = (i + t) % T;
                    std::vector<int32_t> x;
                    std::string b, st;
                    if (!work(texts[k], x, b, st) || x != ids[k] || b != back[k] || st != streamed[k]) bad[t]++;
                }
        });
    for (auto &th : threads) th.join();
    for (size_t t = 0; t < N; t++)
        if (bad[t]) fail_msg("thread %zu: %d tokenizer results differ from the sequential ones", t, bad[t]);
    gpt_model_free(m);
}

// ------------------------------------------------------------------ cross-thread abort

struct AbortFlag {
    std::atomic<bool> stop{false};
    std::atomic<uint32_t> checks_after{0}; // abort callbacks that saw the flag set
    std::atomic<uint32_t> tokens{0};
    // The token callback waits at this many tokens until the flag is set, so a setting thread
    // that the scheduler delays (2 loaded cores, sanitizers) still sets it before the run ends.
    uint32_t hold_at = UINT32_MAX;
    std::chrono::steady_clock::time_point set_at;
};
int abort_fn(void *user) {
    auto *a = static_cast<AbortFlag *>(user);
    if (!a->stop.load(std::memory_order_acquire)) return 0;
    a->checks_after.fetch_add(1);
    return 1;
}
int count_token(int32_t, void *user) {
    auto *a = static_cast<AbortFlag *>(user);
    if (a->tokens.fetch_add(1) + 1 >= a->hold_at)
        while (!a->stop.load(std::memory_order_acquire)) std::this_thread::yield();
    return 0;
}

// Another thread sets the flag while generate runs: the call returns GPT_ERR_ABORTED at
// the first check after (one callback sees the flag), n_out tokens are the uninterrupted
// run's first n_out, the cache holds prompt + n_out - 1, and continuing from the last
// token gives the uninterrupted run's remaining tokens.
void test_abort_from_another_thread(void **) {
    fixture::Spec s = specs()[0];
    s.n_layers = 6, s.d_model = 128, s.n_heads = 8, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 256, s.context_length = 256;
    gpt_model *m = load_fixture(s, GPT_DEVICE_CPU);
    const std::vector<int32_t> prompt = {5, 17, 3, 42, 9};
    const uint32_t P = (uint32_t)prompt.size(), cap = 200;
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.seed = 11;
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = 256;
    cp.n_threads = 2;
    // The uninterrupted run.
    std::vector<int32_t> full(cap);
    uint32_t n_full = 0;
    {
        gpt_ctx *ctx = nullptr;
        CHECK_OK(gpt_ctx_create(m, &cp, &ctx));
        CHECK_OK(gpt_generate(ctx, prompt.data(), P, &sp, nullptr, nullptr, full.data(), cap, &n_full));
        assert_int_equal(n_full, cap);
        gpt_ctx_free(ctx);
    }
    for (uint32_t after : {0u, 1u, 10u, 40u}) {
        AbortFlag flag;
        flag.hold_at = after + 100; // < cap
        cp.abort_fn = abort_fn;
        cp.abort_user = &flag;
        gpt_ctx *ctx = nullptr;
        CHECK_OK(gpt_ctx_create(m, &cp, &ctx));
        std::vector<int32_t> out(cap, -1);
        uint32_t n = 0;
        gpt_status st = GPT_OK;
        std::chrono::steady_clock::time_point returned;
        std::thread gen([&] {
            st = gpt_generate(ctx, prompt.data(), P, &sp, count_token, &flag, out.data(), cap, &n);
            returned = std::chrono::steady_clock::now();
        });
        while (flag.tokens.load() < after) std::this_thread::yield();
        flag.set_at = std::chrono::steady_clock::now();
        flag.stop.store(true, std::memory_order_release);
        gen.join();
        const double ms = std::chrono::duration<double, std::milli>(returned - flag.set_at).count();
        if (st != GPT_ERR_ABORTED) fail_msg("abort after %u tokens: %s (n_out %u)", after, gpt_status_str(st), n);
        assert_int_equal(flag.checks_after.load(), 1); // stopped at the first check that saw it
        assert_true(n < cap);
        for (uint32_t i = 0; i < n; i++) assert_int_equal(out[i], full[i]);
        const uint32_t len = gpt_ctx_seq_len(ctx, 0);
        if (n == 0) assert_true(len == 0 || len == P);
        else assert_int_equal(len, P + n - 1);
        std::printf("# abort set after %u tokens: returned in %.2f ms with n_out %u, cache %u\n", after, ms, n, len);
        // Usable: after a reset the same call gives the uninterrupted run (continuing from
        // the cache is checked greedily below: the sampler's random stream restarts with
        // each call).
        flag.stop = false;
        gpt_ctx_reset(ctx);
        std::vector<int32_t> again(cap);
        uint32_t n3 = 0;
        CHECK_OK(gpt_generate(ctx, prompt.data(), P, &sp, nullptr, nullptr, again.data(), cap, &n3));
        assert_true(again == full);
        gpt_ctx_free(ctx);
    }
    // Greedy: the continuation after an abort is the uninterrupted text.
    sp.temperature = 0;
    {
        cp.abort_fn = nullptr;
        gpt_ctx *ctx = nullptr;
        CHECK_OK(gpt_ctx_create(m, &cp, &ctx));
        CHECK_OK(gpt_generate(ctx, prompt.data(), P, &sp, nullptr, nullptr, full.data(), cap, &n_full));
        gpt_ctx_free(ctx);
        AbortFlag flag;
        flag.hold_at = 125; // < cap
        cp.abort_fn = abort_fn;
        cp.abort_user = &flag;
        CHECK_OK(gpt_ctx_create(m, &cp, &ctx));
        std::vector<int32_t> out(cap, -1);
        uint32_t n = 0;
        gpt_status st = GPT_OK;
        std::thread gen([&] { st = gpt_generate(ctx, prompt.data(), P, &sp, count_token, &flag, out.data(), cap, &n); });
        while (flag.tokens.load() < 25) std::this_thread::yield();
        flag.stop = true;
        gen.join();
        assert_int_equal(st, GPT_ERR_ABORTED);
        assert_true(n >= 25 && n < cap);
        flag.stop = false;
        std::vector<int32_t> rest(cap - n);
        uint32_t n2 = 0;
        CHECK_OK(gpt_generate(ctx, &out[n - 1], 1, &sp, nullptr, nullptr, rest.data(), cap - n, &n2));
        for (uint32_t i = 0; i < n2; i++) assert_int_equal(rest[i], full[n + i]);
        gpt_ctx_free(ctx);
    }
    gpt_model_free(m);
}

// ------------------------------------------------------------------ GPU abort

struct CountingAbort {
    uint32_t calls = 0, abort_at = 0; // abort on this call (1-based) and after; 0: never
};
int counting_abort(void *user) {
    auto *a = static_cast<CountingAbort *>(user);
    a->calls++;
    return a->abort_at && a->calls >= a->abort_at;
}

// On the GPU (CUDA graphs on and off): an abort at each check in turn stops generate with
// GPT_ERR_ABORTED, n_out tokens equal to the uninterrupted run's, the cache holding prompt +
// n_out - 1 (gpt.h), and the context generating normally afterwards. A decode step replayed
// from a CUDA graph is checked before it starts, not between its layers (the CPU checks
// between layers too: test_api.cpp's test_abort_forward / test_abort_generate).
void test_gpu_abort(void **) {
    if (gpt_cuda_device_count() == 0) {
        std::printf("# no CUDA device (%s): skipped\n", gpt_build_info());
        skip();
    }
    const fixture::Spec s = specs()[0];
    gpt_model *m = load_fixture(s, 0);
    const std::vector<int32_t> prompt = {4, 8, 15, 16, 23};
    const uint32_t P = (uint32_t)prompt.size(), cap = 8;
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.temperature = 0;
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    for (uint32_t flags : {0u, (uint32_t)GPT_CTX_NO_GRAPHS}) {
        // A fresh context for every run: the first decode step of a context is captured into a
        // CUDA graph, and capturing runs the layers on the host (checking between them) while
        // a replay is checked only before it starts, so the number of checks differs between
        // a context's first and later runs. Every check, those during capture included, is hit.
        CountingAbort a;
        auto make_ctx = [&] {
            gpt_ctx_params cp;
            gpt_ctx_params_init(&cp);
            cp.max_seq = 32;
            cp.flags = flags;
            cp.abort_fn = counting_abort;
            cp.abort_user = &a;
            gpt_ctx *c = nullptr;
            CHECK_OK(gpt_ctx_create(m, &cp, &c));
            return c;
        };
        gpt_ctx *ctx = make_ctx();
        std::vector<int32_t> full(cap);
        uint32_t n_full = 0;
        CHECK_OK(gpt_generate(ctx, prompt.data(), P, &sp, nullptr, nullptr, full.data(), cap, &n_full));
        gpt_ctx_free(ctx);
        const uint32_t total = a.calls;
        assert_true(total >= cap);
        for (uint32_t at = 1; at <= total; at++) {
            ctx = make_ctx();
            a.calls = 0;
            a.abort_at = at;
            std::vector<int32_t> out(cap, -1);
            uint32_t n = 77;
            const gpt_status st = gpt_generate(ctx, prompt.data(), P, &sp, nullptr, nullptr, out.data(), cap, &n);
            a.abort_at = 0;
            if (st != GPT_ERR_ABORTED) fail_msg("graphs %s, abort at check %u of %u: %s", flags ? "off" : "on", at, total, gpt_status_str(st));
            assert_true(n < cap);
            for (uint32_t i = 0; i < n; i++) assert_int_equal(out[i], full[i]);
            const uint32_t len = gpt_ctx_seq_len(ctx, 0);
            if (n == 0) assert_true(len == 0 || len == P);
            else assert_int_equal(len, P + n - 1);
            if (n > 0) { // continues from the cache
                std::vector<int32_t> rest(cap - n);
                uint32_t n2 = 0;
                CHECK_OK(gpt_generate(ctx, &out[n - 1], 1, &sp, nullptr, nullptr, rest.data(), cap - n, &n2));
                assert_int_equal(n2, cap - n);
                for (uint32_t i = 0; i < n2; i++) assert_int_equal(rest[i], full[n + i]);
            }
            gpt_ctx_free(ctx);
        }
    }
    gpt_model_free(m);
}

} // namespace

// ------------------------------------------------------------------ the library's fan-out

// parallel_for_or_throw: of several items that throw, the lowest index's exception reaches the
// caller (as a loop in order would meet it), every item below it ran, none ran twice; without
// a throw every item runs once.
void test_parallel_for_or_throw(void **) {
    std::mt19937_64 rng(reference::sub_seed("parallel_for_or_throw"));
    for (int trial = 0; trial < 200; trial++) {
        const size_t n = 1 + rng() % 2000;
        // Scattered items, or (every other trial) a run of neighbours whose lowest throws last
        // in time: it sleeps first, so with two threads a higher one has thrown before it.
        std::vector<size_t> throwing;
        for (int k = trial % 4; k > 0; k--) throwing.push_back(trial % 8 < 4 ? rng() % n : std::min(n - 1, n / 3 + (size_t)k));
        const size_t slow = throwing.empty() ? n : *std::min_element(throwing.begin(), throwing.end());
        std::vector<std::atomic<int>> ran(n);
        std::string caught = "none";
        try {
            gpt::parallel_for_or_throw(n, 1 + rng() % 8, [&](size_t i) {
                ran[i].fetch_add(1);
                if (i == slow) std::this_thread::sleep_for(std::chrono::milliseconds(2));
                if (std::find(throwing.begin(), throwing.end(), i) != throwing.end()) throw std::runtime_error(std::to_string(i));
            });
        } catch (const std::runtime_error &e) {
            caught = e.what();
        }
        const size_t first = throwing.empty() ? n : *std::min_element(throwing.begin(), throwing.end());
        if (caught != (throwing.empty() ? "none" : std::to_string(first)))
            fail_msg("trial %d: caught %s, the lowest throwing item is %zu of %zu", trial, caught.c_str(), first, n);
        for (size_t i = 0; i < n; i++) {
            if (ran[i].load() > 1) fail_msg("trial %d: item %zu ran %d times", trial, i, ran[i].load());
            if (i <= first && ran[i].load() != 1) fail_msg("trial %d: item %zu (below the failure at %zu) did not run", trial, i, first);
        }
    }
}

int main(void) {
    reference::test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parallel_for_or_throw),
        cmocka_unit_test(test_cpu_parallel_equals_sequential),
        cmocka_unit_test(test_gpu_parallel_equals_sequential),
        cmocka_unit_test(test_create_and_free_while_running),
        cmocka_unit_test(test_tokenizer_calls_in_parallel),
        cmocka_unit_test(test_abort_from_another_thread),
        cmocka_unit_test(test_gpu_abort),
    };
    return cmocka_run_group_tests_name("threads", tests, nullptr, nullptr);
}
