// test_moe.cpp - mixtures of experts on the CPU.
//
// 1. top_k: ties to the lower index, every index once, NaN probabilities included.
// 2. The op (backend/cpu/cpu_moe) against a naive double implementation written here: random
//    expert counts, top-k, widths, rows and thread counts; norm_topk both ways; the shared
//    expert on and off; f32/f16/bf16/q8/q4 expert weights (the router in f32, as files keep
//    it); router rows duplicated so two different experts tie exactly (the lower index must
//    win); the experts no row chose hold NaN (so a wrongly weighted or unselected expert shows).
// 3. The four architectures end to end through the public API, against the double reference
//    (tests/support/reference.cpp): logits, then batch / step / thread splits against a solo
//    run, and the memory estimate equal to what creation allocates, none during forward.
// 4. Hostile files: expert keys and tensors of wrong values, shapes or counts are refused with
//    GPT_ERR_FORMAT naming the key or tensor.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

#include "gpt.h"

#include "backend/cpu/cpu_moe.h"
#include "backend/cpu/thread_pool.h"
#include "core/half.h"
#include "core/memory.h"
#include "core/quant.h"
#include "dtype_values.h"
#include "fixture.h"
#include "format/keys.h"
#include "format/writer.h"
#include "model/arch.h"
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using gpt::DType;

namespace {

#define CHECK_OK(expr)                                                                                                 \
    do {                                                                                                               \
        const gpt_status st_ = (expr);                                                                                 \
        if (st_ != GPT_OK) fail_msg("%s -> %s: %s", #expr, gpt_status_str(st_), gpt_last_error());                     \
    } while (0)

size_t uniform(std::mt19937_64 &rng, size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); }

// Routing decisions closer than this (probability gap between the k-th and the (k+1)-th
// expert) may go either way in f32; a case that has one is drawn again.
constexpr double kAmbiguousGap = 1e-5;

// ---------------------------------------------------------------------------------- names

// The public ids and names agree with the agreed architecture names (general.architecture).
void test_arch_names(void **) {
    const struct {
        int id;
        const char *name;
    } want[] = {{GPT_ARCH_MIXTRAL, "mixtral"}, {GPT_ARCH_QWEN2_MOE, "qwen2_moe"}, {GPT_ARCH_OLMOE, "olmoe"}, {GPT_ARCH_QWEN3_MOE, "qwen3_moe"}};
    for (const auto &w : want) {
        assert_string_equal(gpt_arch_name(w.id), w.name);
        assert_int_equal(gpt::arch_from_name(w.name), w.id);
    }
}

// ---------------------------------------------------------------------------------- top_k

void test_top_k(void **) {
    std::mt19937_64 rng(reference::sub_seed("moe top_k"));
    for (int rep = 0; rep < 2000; rep++) {
        const uint32_t n = (uint32_t)uniform(rng, 1, 40), k = (uint32_t)uniform(rng, 1, n);
        // Few distinct values, so ties are common; some NaN.
        std::vector<float> p(n);
        for (float &v : p) v = (float)uniform(rng, 0, 4) * 0.25f;
        const bool with_nan = rep % 5 == 0;
        if (with_nan) p[uniform(rng, 0, n - 1)] = std::numeric_limits<float>::quiet_NaN();
        std::vector<uint32_t> got(k, 12345);
        gpt::cpu::top_k(p.data(), n, k, got.data());
        std::vector<uint32_t> sorted = got;
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() || sorted.back() >= n)
            fail_msg("top_k n %u k %u: an index twice or out of range", n, k);
        if (with_nan) continue;
        std::vector<uint32_t> want(n);
        for (uint32_t i = 0; i < n; i++) want[i] = i;
        std::stable_sort(want.begin(), want.end(), [&](uint32_t a, uint32_t b) { return p[a] > p[b]; });
        for (uint32_t j = 0; j < k; j++)
            if (got[j] != want[j]) fail_msg("top_k n %u k %u: place %u is %u, want %u", n, k, j, got[j], want[j]);
    }
}

// ---------------------------------------------------------------------------------- the op

// A matrix weight in dtype t: its bytes and the f32 values the engine reads from them.
struct TestWeight {
    std::vector<uint8_t> bytes;
    std::vector<float> values; // [rows][cols], as stored (rounded or dequantized)
    gpt::Weight w;
};

TestWeight make_weight(std::vector<float> v, uint64_t rows, uint64_t cols, DType t) {
    TestWeight tw;
    if (gpt::is_quantized(t)) {
        uint64_t nbytes = 0;
        assert_true(gpt::tensor_bytes(t, rows * cols, cols, 32, &nbytes));
        tw.bytes.resize(nbytes);
        gpt::quantize_matrix(v.data(), rows, cols, t, 32, tw.bytes.data(), "test weight");
        tw.w = gpt::Weight{tw.bytes.data(), t, rows, cols, 32};
        tw.values.resize(rows * cols);
        for (uint64_t r = 0; r < rows; r++) gpt::dequantize_row(tw.w, r, tw.values.data() + r * cols);
        return tw;
    }
    tw.bytes = fixture::encode(v, t);
    tw.values = fixture::rounded(v, t);
    tw.w = gpt::Weight{tw.bytes.data(), t, rows, cols, 0};
    return tw;
}

// Sets rows [r0, r1) of a weight to NaN (quantized: their scales).
void poison_rows(TestWeight &tw, uint64_t r0, uint64_t r1) {
    const uint64_t cols = tw.w.cols;
    if (gpt::is_quantized(tw.w.dtype)) {
        uint16_t *scales = const_cast<uint16_t *>(gpt::quant_scales(tw.w));
        for (uint64_t i = r0 * (cols / 32); i < r1 * (cols / 32); i++) scales[i] = 0x7e00; // f16 NaN
    } else {
        const std::vector<float> nan((r1 - r0) * cols, std::numeric_limits<float>::quiet_NaN());
        const std::vector<uint8_t> b = fixture::encode(nan, tw.w.dtype);
        std::memcpy(tw.bytes.data() + b.size() / (r1 - r0) * r0, b.data(), b.size());
    }
}

std::vector<float> normal_values(std::mt19937_64 &rng, uint64_t n, float std) {
    std::normal_distribution<float> nd(0.0f, std);
    std::vector<float> v(n);
    for (float &x : v) x = nd(rng);
    return v;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

// The naive MoE of one row h (double): returns the FFN output; *gap: the smallest nonzero
// gap at the top-k boundary; used[e] set for the chosen experts.
std::vector<double> naive_moe(const float *h, uint32_t d, uint32_t E, uint32_t k, uint32_t fe, uint32_t fs, bool norm_topk,
                              const std::vector<float> &router, const std::vector<float> &gu, const std::vector<float> &down,
                              const std::vector<float> *sgu, const std::vector<float> *sdown, const std::vector<float> *sgate,
                              double *gap, std::vector<bool> &used) {
    std::vector<double> p(E);
    double mx = -INFINITY, sum = 0;
    for (uint32_t e = 0; e < E; e++) {
        double s = 0;
        for (uint32_t i = 0; i < d; i++) s += (double)router[(size_t)e * d + i] * h[i];
        p[e] = s;
        mx = std::max(mx, s);
    }
    for (double &v : p) sum += (v = std::exp(v - mx));
    for (double &v : p) v /= sum;
    // Selection by repeated maximum, the lower index on ties.
    std::vector<uint32_t> chosen;
    std::vector<bool> taken(E, false);
    for (uint32_t j = 0; j < k; j++) {
        int best = -1;
        for (uint32_t e = 0; e < E; e++)
            if (!taken[e] && (best < 0 || p[e] > p[best])) best = (int)e;
        taken[best] = true;
        chosen.push_back((uint32_t)best);
    }
    if (k < E) {
        double next = -1;
        for (uint32_t e = 0; e < E; e++)
            if (!taken[e]) next = std::max(next, p[e]);
        const double g = p[chosen.back()] - next;
        if (g > 0) *gap = std::min(*gap, g);
    }
    double chosen_sum = 0;
    for (uint32_t e : chosen) chosen_sum += p[e];
    auto expert = [&](const std::vector<float> &wgu, size_t gu0, const std::vector<float> &wd, size_t d0, uint32_t f) {
        std::vector<double> a(f), y(d, 0.0);
        for (uint32_t j = 0; j < f; j++) {
            double g = 0, u = 0;
            for (uint32_t i = 0; i < d; i++) {
                g += (double)wgu[(gu0 + j) * d + i] * h[i];
                u += (double)wgu[(gu0 + f + j) * d + i] * h[i];
            }
            a[j] = silu(g) * u;
        }
        for (uint32_t o = 0; o < d; o++)
            for (uint32_t j = 0; j < f; j++) y[o] += (double)wd[(d0 + o) * f + j] * a[j];
        return y;
    };
    std::vector<double> out(d, 0.0);
    for (uint32_t e : chosen) {
        used[e] = true;
        const double w = norm_topk ? p[e] / chosen_sum : p[e];
        const std::vector<double> y = expert(gu, (size_t)e * 2 * fe, down, (size_t)e * d, fe);
        for (uint32_t o = 0; o < d; o++) out[o] += w * y[o];
    }
    if (fs) {
        double g = 0;
        for (uint32_t i = 0; i < d; i++) g += (double)(*sgate)[i] * h[i];
        g = 1.0 / (1.0 + std::exp(-g));
        const std::vector<double> y = expert(*sgu, 0, *sdown, 0, fs);
        for (uint32_t o = 0; o < d; o++) out[o] += g * y[o];
    }
    return out;
}

void test_op_matches_naive(void **) {
    std::mt19937_64 rng(reference::sub_seed("moe op"));
    const DType dtypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8, DType::Q4};
    int cases = 0, redrawn = 0;
    while (cases < 60) {
        const DType t = dtypes[cases % 5];
        const bool quant = gpt::is_quantized(t);
        gpt::ModelShape s;
        s.n_experts = (uint32_t)uniform(rng, 2, 16);
        s.n_experts_used = (uint32_t)uniform(rng, 1, std::min<uint32_t>(4, s.n_experts));
        s.d_model = quant ? 32 * (uint32_t)uniform(rng, 1, 2) : (uint32_t)uniform(rng, 5, 48);
        s.d_ff_expert = quant ? 32 * (uint32_t)uniform(rng, 1, 2) : (uint32_t)uniform(rng, 3, 40);
        s.d_ff_shared = uniform(rng, 0, 1) ? 0 : quant ? 32 : (uint32_t)uniform(rng, 3, 40);
        const bool norm_topk = uniform(rng, 0, 1);
        const uint32_t E = s.n_experts, k = s.n_experts_used, d = s.d_model, fe = s.d_ff_expert, fs = s.d_ff_shared;
        const uint32_t rows = (uint32_t)uniform(rng, 1, 9), threads = (uint32_t)uniform(rng, 1, 3);

        std::vector<float> router = normal_values(rng, (size_t)E * d, 1.5f / std::sqrt((float)d));
        // Two experts with the same router row tie exactly (the f32 and double sums alike).
        if (E > 2 && uniform(rng, 0, 1)) {
            const size_t a = uniform(rng, 0, E - 2), b = uniform(rng, a + 1, E - 1);
            std::copy(router.begin() + a * d, router.begin() + (a + 1) * d, router.begin() + b * d);
        }
        TestWeight rw = make_weight(router, E, d, DType::F32);
        TestWeight gu = make_weight(normal_values(rng, (size_t)E * 2 * fe * d, 1.0f / std::sqrt((float)d)), (uint64_t)E * 2 * fe, d, t);
        TestWeight dn = make_weight(normal_values(rng, (size_t)E * d * fe, 1.0f / std::sqrt((float)fe)), (uint64_t)E * d, fe, t);
        TestWeight sgu, sdn, sg;
        if (fs) {
            sgu = make_weight(normal_values(rng, (size_t)2 * fs * d, 1.0f / std::sqrt((float)d)), 2 * fs, d, t);
            sdn = make_weight(normal_values(rng, (size_t)d * fs, 1.0f / std::sqrt((float)fs)), d, fs, t);
            sg = make_weight(normal_values(rng, d, 1.0f / std::sqrt((float)d)), 1, d, DType::F32);
        }
        const std::vector<float> h = normal_values(rng, (size_t)rows * d, 1.0f), x0 = normal_values(rng, (size_t)rows * d, 1.0f);

        std::vector<double> want((size_t)rows * d);
        double gap = INFINITY;
        std::vector<bool> used(E, false);
        for (uint32_t r = 0; r < rows; r++) {
            const std::vector<double> y = naive_moe(h.data() + (size_t)r * d, d, E, k, fe, fs, norm_topk, rw.values, gu.values,
                                                    dn.values, fs ? &sgu.values : nullptr, fs ? &sdn.values : nullptr,
                                                    fs ? &sg.values : nullptr, &gap, used);
            for (uint32_t i = 0; i < d; i++) want[(size_t)r * d + i] = x0[(size_t)r * d + i] + y[i];
        }
        if (gap < kAmbiguousGap) { // f32 could pick another expert: draw again
            redrawn++;
            continue;
        }
        // Experts no row chose: NaN weights, which must never reach the output.
        for (uint32_t e = 0; e < E; e++)
            if (!used[e]) {
                poison_rows(gu, (uint64_t)e * 2 * fe, (uint64_t)(e + 1) * 2 * fe);
                poison_rows(dn, (uint64_t)e * d, (uint64_t)(e + 1) * d);
            }

        // Buffers exactly as cpu_moe.h sizes them, NaN-poisoned.
        const uint64_t slots = (uint64_t)rows * k;
        std::vector<float> probs(rows * E), weight(slots), gathered(slots * d),
            gate_up(std::max((slots + E) * 2 * fe, (uint64_t)rows * 2 * fs)), hidden(std::max(slots * fe, (uint64_t)rows * fs)),
            out((slots + E) * d), shared_gate(rows), delta((size_t)rows * d);
        std::vector<uint32_t> expert(slots), position(slots), slot_row(slots), slot_expert(slots), group_start(E + 1), active(E + 1);
        for (auto *v : {&probs, &weight, &gathered, &gate_up, &hidden, &out, &shared_gate, &delta}) reference::poison(v->data(), v->size());
        const uint64_t widest = std::max<uint64_t>({d, fe, fs});
        std::vector<float> scratch(widest * threads);
        gpt::cpu::MoeBuffers m{probs.data(), expert.data(), weight.data(), position.data(), slot_row.data(), slot_expert.data(),
                               group_start.data(), active.data(), gathered.data(), gate_up.data(), hidden.data(), out.data(),
                               shared_gate.data()};
        gpt::MoeSpec spec;
        spec.router = &rw.w;
        spec.gate_up = &gu.w;
        spec.down = &dn.w;
        spec.norm_topk = norm_topk;
        if (fs) {
            spec.shared_gate_up = &sgu.w;
            spec.shared_down = &sdn.w;
            spec.shared_gate = &sg.w;
        }
        std::vector<float> x = x0;
        gpt::cpu::ThreadPool pool(threads);
        gpt::cpu::moe_forward(pool, s, spec, rows, h.data(), x.data(), delta.data(), m, {scratch.data(), widest});
        char what[160];
        std::snprintf(what, sizeof what, "moe %s E %u k %u d %u fe %u fs %u norm %d rows %u threads %u", gpt::dtype_name(t), E, k,
                      d, fe, fs, (int)norm_topk, rows, threads);
        if (!reference::compare(x.data(), want.data(), rows, d).within(2e-5, what)) fail_msg("%s: out of tolerance", what);
        cases++;
    }
    std::printf("moe op: %d cases, %d drawn again for near-tied routing\n", cases, redrawn);
}

// ---------------------------------------------------------------------------------- models

struct MoeModel {
    std::string name;
    fixture::Model fx;
    gpt_model *model = nullptr;
    uint32_t vocab() const { return fx.config.vocab_size; }
};

fixture::Spec spec_of(gpt_arch arch) {
    fixture::Spec s;
    s.arch = arch;
    s.vocab_size = 61;
    switch (arch) {
    case GPT_ARCH_MIXTRAL: // 4 experts, top-2, GQA 4q/2kv
        s.n_layers = 2, s.d_model = 40, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 10;
        s.n_experts = 4, s.n_experts_used = 2, s.d_ff_expert = 36;
        break;
    case GPT_ARCH_QWEN2_MOE: // 6 experts, top-3, a shared expert, q/k/v biases, a dense middle layer
        s.n_layers = 3, s.d_model = 36, s.n_heads = 6, s.n_kv_heads = 2, s.head_dim = 6, s.d_ff = 44, s.qkv_bias = true;
        s.n_experts = 6, s.n_experts_used = 3, s.d_ff_expert = 20, s.d_ff_shared = 28, s.norm_topk_prob = false;
        s.moe_layers = {1, 0, 1};
        break;
    case GPT_ARCH_OLMOE: // 8 experts, top-4, whole-projection q/k norms
        s.n_layers = 2, s.d_model = 32, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 8;
        s.n_experts = 8, s.n_experts_used = 4, s.d_ff_expert = 16, s.norm_topk_prob = false;
        break;
    case GPT_ARCH_QWEN3_MOE: // 5 experts, top-1, per-head q/k norms, head_dim beside d_model, a dense first layer
        s.n_layers = 2, s.d_model = 40, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 24;
        s.n_experts = 5, s.n_experts_used = 1, s.d_ff_expert = 30, s.norm_topk_prob = true, s.moe_layers = {0, 1};
        break;
    default: break;
    }
    return s;
}

std::vector<MoeModel> *g_models;

int setup_models(void **) {
    g_models = new std::vector<MoeModel>();
    for (gpt_arch a : {GPT_ARCH_MIXTRAL, GPT_ARCH_QWEN2_MOE, GPT_ARCH_OLMOE, GPT_ARCH_QWEN3_MOE}) {
        for (DType t : {DType::F32, DType::BF16}) {
            fixture::Spec s = spec_of(a);
            s.dtype = t;
            const std::string name = std::string(gpt::arch_to_name(a)) + "/" + gpt::dtype_name(t);
            s.seed = reference::sub_seed(("moe model " + name).c_str());
            g_models->push_back(MoeModel{name, fixture::make(s), nullptr});
            MoeModel &m = g_models->back();
            gpt_model_params mp;
            gpt_model_params_init(&mp);
            mp.device = GPT_DEVICE_CPU;
            if (gpt_model_load_from_memory(m.fx.file.data(), m.fx.file.size(), &mp, &m.model) != GPT_OK) {
                std::printf("loading %s failed: %s\n", name.c_str(), gpt_last_error());
                return -1;
            }
        }
    }
    return 0;
}

int teardown_models(void **) {
    for (auto &m : *g_models) gpt_model_free(m.model);
    delete g_models;
    g_models = nullptr;
    return 0;
}

gpt_ctx_params ctx_params(uint32_t max_batch, uint32_t max_step, uint32_t threads) {
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_batch = max_batch;
    cp.max_step_tokens = max_step;
    cp.n_threads = threads;
    return cp;
}

gpt_ctx *make_ctx(gpt_model *m, uint32_t max_batch = 1, uint32_t max_step = 0, uint32_t threads = 2) {
    const gpt_ctx_params cp = ctx_params(max_batch, max_step, threads);
    gpt_ctx *ctx = nullptr;
    CHECK_OK(gpt_ctx_create(m, &cp, &ctx));
    return ctx;
}

std::vector<int32_t> random_tokens(std::mt19937_64 &rng, uint32_t vocab, size_t n) {
    std::vector<int32_t> t(n);
    for (auto &x : t) x = (int32_t)uniform(rng, 0, vocab - 1);
    return t;
}

std::vector<float> forward_all(gpt_ctx *ctx, const std::vector<int32_t> &tokens, uint32_t batch, uint32_t vocab) {
    const uint32_t n = (uint32_t)(tokens.size() / batch);
    std::vector<float> out((size_t)batch * n * vocab);
    reference::poison(out.data(), out.size());
    CHECK_OK(gpt_forward(ctx, tokens.data(), batch, n, GPT_FORWARD_ALL_LOGITS, out.data()));
    return out;
}

std::vector<float> solo_run(const MoeModel &m, const std::vector<int32_t> &tokens, uint32_t threads = 2) {
    gpt_ctx *ctx = make_ctx(m.model, 1, 0, threads);
    std::vector<float> out = forward_all(ctx, tokens, 1, m.vocab());
    gpt_ctx_free(ctx);
    return out;
}

void expect_close(const float *out, const float *ref, size_t rows, size_t cols, double tol, const std::string &what) {
    if (!reference::compare(out, ref, rows, cols).within(tol, what.c_str())) fail_msg("%s: out of tolerance", what.c_str());
}

// Every position's logits against the double reference. A prompt whose routing the
// reference finds near-tied (where f32 may choose another expert) is drawn again.
void test_models_match_reference(void **) {
    std::mt19937_64 rng(reference::sub_seed("moe models vs reference"));
    for (const MoeModel &m : *g_models) {
        int checked = 0;
        for (int attempt = 0; checked < 2 && attempt < 20; attempt++) {
            const auto tokens = random_tokens(rng, m.vocab(), uniform(rng, 6, 20));
            double gap = INFINITY;
            const auto ref = reference::forward(m.fx.config, m.fx.tensors, tokens, reference::Layout(), &gap);
            if (gap < kAmbiguousGap) continue;
            gpt_ctx *ctx = make_ctx(m.model);
            const auto out = forward_all(ctx, tokens, 1, m.vocab());
            gpt_ctx_free(ctx);
            if (!reference::compare(out.data(), ref.data(), tokens.size(), m.vocab()).within(1e-4, m.name.c_str()))
                fail_msg("%s vs reference, %zu tokens: out of tolerance", m.name.c_str(), tokens.size());
            checked++;
        }
        if (checked < 2) fail_msg("%s: no prompt with unambiguous routing in 20 draws", m.name.c_str());
    }
}

// Batches, small steps, incremental decode and thread counts give the solo run's logits.
void test_models_splits_agree(void **) {
    std::mt19937_64 rng(reference::sub_seed("moe splits"));
    for (const MoeModel &m : *g_models) {
        const uint32_t V = m.vocab(), B = 3, n = (uint32_t)uniform(rng, 5, 12);
        const auto tokens = random_tokens(rng, V, (size_t)B * n);
        std::vector<std::vector<float>> solo;
        for (uint32_t b = 0; b < B; b++)
            solo.push_back(solo_run(m, std::vector<int32_t>(tokens.begin() + b * n, tokens.begin() + (b + 1) * n)));
        for (uint32_t step : {0u, 1u, 4u}) {
            gpt_ctx *ctx = make_ctx(m.model, B, step);
            const auto out = forward_all(ctx, tokens, B, V);
            for (uint32_t b = 0; b < B; b++)
                expect_close(out.data() + (size_t)b * n * V, solo[b].data(), n, V, 1e-5,
                             m.name + " batch row " + std::to_string(b) + ", max_step_tokens " + std::to_string(step));
            gpt_ctx_free(ctx);
        }
        // Token by token.
        gpt_ctx *ctx = make_ctx(m.model);
        for (uint32_t i = 0; i < n; i++) {
            const auto out = forward_all(ctx, std::vector<int32_t>(1, tokens[i]), 1, V);
            expect_close(out.data(), solo[0].data() + (size_t)i * V, 1, V, 1e-5, m.name + " decode token " + std::to_string(i));
        }
        gpt_ctx_free(ctx);
        for (uint32_t th : {1u, 3u}) {
            const auto many = solo_run(m, std::vector<int32_t>(tokens.begin(), tokens.begin() + n), th);
            expect_close(many.data(), solo[0].data(), n, V, 1e-6, m.name + " n_threads " + std::to_string(th));
        }
    }
}

// gpt_ctx_estimate_memory is what creation allocates (the expert buffers included), and a
// forward allocates nothing.
void test_models_memory(void **) {
    std::mt19937_64 rng(reference::sub_seed("moe memory"));
    for (const MoeModel &m : *g_models) {
        for (uint32_t batch : {1u, 3u})
            for (uint32_t step : {0u, 5u}) {
                const gpt_ctx_params cp = ctx_params(batch, step, 2);
                uint64_t host = 0;
                CHECK_OK(gpt_ctx_estimate_memory(m.model, &cp, &host, nullptr));
                const uint64_t b0 = gpt::testing::alloc_bytes();
                gpt_ctx *ctx = nullptr;
                CHECK_OK(gpt_ctx_create(m.model, &cp, &ctx));
                const uint64_t allocated = gpt::testing::alloc_bytes() - b0, n0 = gpt::testing::alloc_count();
                if (allocated != host)
                    fail_msg("%s batch %u step %u: estimate %llu bytes, creation allocated %llu", m.name.c_str(), batch, step,
                             (unsigned long long)host, (unsigned long long)allocated);
                forward_all(ctx, random_tokens(rng, m.vocab(), (size_t)batch * 7), batch, m.vocab());
                if (gpt::testing::alloc_count() != n0) fail_msg("%s: forward allocated", m.name.c_str());
                gpt_ctx_free(ctx);
            }
    }
}

// unused_expert_parameters (what gpt bench leaves out of a token's bytes and FLOPs): the
// stacked expert tensors of the table hold E experts, a token uses k of them.
void test_unused_expert_parameters(void **) {
    for (const MoeModel &m : *g_models) {
        const gpt::ModelConfig &c = m.fx.config;
        uint64_t unused = 0;
        for (const gpt::TensorSlot &slot : gpt::tensor_table(c))
            if (slot.name.find(".ffn_experts_") != std::string::npos)
                unused += slot.shape[0] * slot.shape[1] / c.n_experts * (c.n_experts - c.n_experts_used);
        assert_true(unused > 0);
        if (gpt::unused_expert_parameters(c) != unused)
            fail_msg("%s: unused_expert_parameters %llu, the table says %llu", m.name.c_str(),
                     (unsigned long long)gpt::unused_expert_parameters(c), (unsigned long long)unused);
    }
}

// gpt_model_get_info of a MoE model: its expert counts and widths, and the parameters a token
// uses (every stored parameter less the unchosen experts', counted from the tensor table).
void test_model_info_experts(void **) {
    for (const MoeModel &m : *g_models) {
        const gpt::ModelConfig &c = m.fx.config;
        gpt_model_info info;
        std::memset(&info, 0xab, sizeof info);
        info.struct_size = sizeof info;
        if (gpt_model_get_info(m.model, &info) != GPT_OK) fail_msg("%s: %s", m.name.c_str(), gpt_last_error());
        assert_int_equal(info.n_experts, c.n_experts);
        assert_int_equal(info.n_experts_used, c.n_experts_used);
        assert_int_equal(info.d_ff_expert, c.d_ff_expert);
        assert_int_equal(info.d_ff_shared, c.d_ff_shared);
        uint64_t stored = 0, unused = 0;
        for (const gpt::TensorSlot &slot : gpt::tensor_table(c)) {
            uint64_t n = 1;
            for (uint64_t d : slot.shape) n *= d;
            stored += n;
            if (slot.name.find(".ffn_experts_") != std::string::npos) unused += n / c.n_experts * (c.n_experts - c.n_experts_used);
        }
        assert_int_equal(info.n_params, stored);
        if (info.n_active_params != stored - unused)
            fail_msg("%s: n_active_params %llu, the table says %llu", m.name.c_str(), (unsigned long long)info.n_active_params,
                     (unsigned long long)(stored - unused));
    }
}

// ---------------------------------------------------------------------------------- hostile files

// Writes a file of the config's metadata (edited by edit_meta) and the fixture's tensors,
// with `tensor` replaced by one of `shape` (or dropped when shape is empty); loads it and
// expects GPT_ERR_FORMAT with a message containing needle.
void expect_refused(const fixture::Model &fx, const std::function<void(gpt::format::Metadata &)> &edit_meta,
                    const std::string &tensor, const std::vector<uint64_t> &shape, const char *needle, const char *what) {
    gpt::format::Writer w;
    fx.config.to_metadata(w.metadata());
    if (edit_meta) edit_meta(w.metadata());
    std::vector<std::vector<float>> keep;
    for (const auto &[name, values] : fx.tensors) {
        if (name != tensor) {
            std::vector<uint64_t> sh;
            for (const gpt::TensorSlot &slot : gpt::tensor_table(fx.config))
                if (slot.name == name) sh = slot.shape;
            w.add_tensor(name, DType::F32, sh, values.data(), values.size() * 4);
            continue;
        }
        if (shape.empty()) continue;
        uint64_t n = 1;
        for (uint64_t d : shape) n *= d;
        keep.emplace_back(n, 0.5f);
        w.add_tensor(name, DType::F32, shape, keep.back().data(), n * 4);
    }
    const std::vector<uint8_t> bytes = w.write_memory();
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    gpt_model *model = nullptr;
    const gpt_status st = gpt_model_load_from_memory(bytes.data(), bytes.size(), &mp, &model);
    if (st == GPT_OK) {
        gpt_model_free(model);
        fail_msg("%s: loaded", what);
    }
    if (st != GPT_ERR_FORMAT) fail_msg("%s: %s (%s), want GPT_ERR_FORMAT", what, gpt_status_str(st), gpt_last_error());
    if (!std::strstr(gpt_last_error(), needle)) fail_msg("%s: message \"%s\" lacks \"%s\"", what, gpt_last_error(), needle);
}

void test_hostile_files(void **) {
    using gpt::format::MetaValue;
    namespace keys = gpt::keys;
    fixture::Spec s = spec_of(GPT_ARCH_QWEN2_MOE);
    s.seed = reference::sub_seed("moe hostile");
    const fixture::Model fx = fixture::make(s);
    const uint64_t E = s.n_experts, d = s.d_model, fe = s.d_ff_expert, fs = s.d_ff_shared;
    auto set_u32 = [](const char *key, uint32_t v) { return [=](gpt::format::Metadata &m) { m.set(key, MetaValue::of_u32(v)); }; };
    auto set_layers = [](std::vector<int32_t> f) { return [=](gpt::format::Metadata &m) { m.set(keys::kMoeLayers, MetaValue::of_i32s(f)); }; };

    // Keys.
    expect_refused(fx, set_u32(keys::kNExpertsUsed, s.n_experts + 1), "", {}, keys::kNExpertsUsed, "top-k above the expert count");
    expect_refused(fx, set_u32(keys::kNExpertsUsed, 0), "", {}, keys::kNExpertsUsed, "top-k 0");
    expect_refused(fx, set_u32(keys::kNExperts, 0), "", {}, keys::kNExperts, "no experts");
    expect_refused(fx, set_u32(keys::kNExperts, 100000), "", {}, keys::kNExperts, "too many experts");
    expect_refused(fx, set_u32(keys::kDFFExpert, 0), "", {}, keys::kDFFExpert, "expert width 0");
    expect_refused(fx, set_u32(keys::kNormTopkProb, 2), "", {}, keys::kNormTopkProb, "norm_topk_prob 2");
    expect_refused(fx, set_layers({1, 0}), "", {}, keys::kMoeLayers, "moe_layers too short");
    expect_refused(fx, set_layers({1, 0, 1, 1}), "", {}, keys::kMoeLayers, "moe_layers too long");
    expect_refused(fx, set_layers({1, 2, 1}), "", {}, keys::kMoeLayers, "moe_layers flag 2");
    expect_refused(fx, [](gpt::format::Metadata &m) { m.set(keys::kNExperts, MetaValue::of_str("8")); }, "", {}, keys::kNExperts,
                   "n_experts of the wrong type");
    {
        fixture::Spec ls;
        ls.seed = s.seed;
        const fixture::Model llama = fixture::make(ls);
        expect_refused(llama, set_u32(keys::kNExperts, 4), "", {}, keys::kNExperts, "experts on llama");
        fixture::Spec ms = spec_of(GPT_ARCH_MIXTRAL);
        ms.seed = s.seed;
        const fixture::Model mixtral = fixture::make(ms);
        expect_refused(mixtral, set_u32(keys::kNormTopkProb, 0), "", {}, keys::kNormTopkProb, "mixtral without renormalising");
        expect_refused(mixtral, set_u32(keys::kDFFShared, 8), "", {}, keys::kDFFShared, "a shared expert on mixtral");
    }
    // Tensors: wrong shapes, counts, missing ones (layer 0 is MoE, layer 1 dense).
    expect_refused(fx, nullptr, "blk.0.ffn_router.weight", {E - 1, d}, "blk.0.ffn_router.weight", "router short of an expert");
    expect_refused(fx, nullptr, "blk.0.ffn_router.weight", {E, d + 1}, "blk.0.ffn_router.weight", "router too wide");
    expect_refused(fx, nullptr, "blk.0.ffn_router.weight", {E * d}, "blk.0.ffn_router.weight", "router 1-D");
    expect_refused(fx, nullptr, "blk.0.ffn_router.weight", {}, "blk.0.ffn_router.weight", "router missing");
    expect_refused(fx, nullptr, "blk.0.ffn_experts_gate_up.weight", {(E - 1) * 2 * fe, d}, "blk.0.ffn_experts_gate_up.weight",
                   "gate_up of one expert fewer");
    expect_refused(fx, nullptr, "blk.0.ffn_experts_down.weight", {E * d, fe + 1}, "blk.0.ffn_experts_down.weight",
                   "down of another width");
    expect_refused(fx, nullptr, "blk.2.ffn_experts_down.weight", {}, "blk.2.ffn_experts_down.weight", "down missing");
    expect_refused(fx, nullptr, "blk.0.ffn_shared_gate.weight", {2, d}, "blk.0.ffn_shared_gate.weight", "shared gate of 2 rows");
    expect_refused(fx, nullptr, "blk.2.ffn_shared_down.weight", {d, fs - 1}, "blk.2.ffn_shared_down.weight", "shared down narrow");
    // A dense layer's FFN is the llama one: expert tensors there are not what the table expects.
    expect_refused(fx, set_layers({1, 1, 1}), "", {}, "blk.1.ffn_router.weight", "dense layer declared MoE");
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arch_names),
        cmocka_unit_test(test_top_k),
        cmocka_unit_test(test_op_matches_naive),
        cmocka_unit_test(test_models_match_reference),
        cmocka_unit_test(test_models_splits_agree),
        cmocka_unit_test(test_models_memory),
        cmocka_unit_test(test_unused_expert_parameters),
        cmocka_unit_test(test_model_info_experts),
        cmocka_unit_test(test_hostile_files),
    };
    return cmocka_run_group_tests(tests, setup_models, teardown_models);
}
