// test_model.cpp - both architectures end to end through the public API on the CPU device,
// against the naive double-precision reference (tests/support/reference.cpp), and the
// engine against itself: incremental decode, uneven chunks, batches with sequences of
// different lengths, many small internal steps, thread counts, greedy generation.
//
// Also the CPU kernels themselves (backend/cpu/cpu_ops: the scalar reference, or the AVX2/F16C
// or NEON paths the build runs) at every vector length up to 80, against double sums.
//
// Models: GPT-2 tied and untied; Llama with MHA, GQA 4q/2kv, 6q/1kv with q/k/v biases
// (Qwen2-like), tied and untied heads, llama3 and linear RoPE scaling, sliding windows on
// every layer (Mistral) or the upper ones (Qwen2); Qwen3 (q/k norms, head_dim 16 with
// d_model 40); Phi-3 with longrope short factors and a sliding window of 7, and with partial
// rotation (12 of 16) and long factors; Gemma-2 and Gemma-3 (post-norms, GeGLU, soft-caps,
// query scale, windowed layers, q/k norms, local and linearly scaled RoPE); odd widths
// (d_model 36/40/48, head_dim 6/8/10/12/16, vocab sizes that are not multiples of 8); each
// as f32, f16 and bf16. Prompts (9 to 24 tokens) are longer than every window.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

#include "gpt.h"

#include "backend/cpu/cpu_ops.h"
#include "core/half.h"
#include "fixture.h"
#include "format/keys.h"
#include "format/writer.h"
#include "model/arch.h"
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using gpt::DType;

namespace {

// Tolerances. Against the double reference: the fixture rounds every weight to the file
// dtype and the reference uses those rounded values, so for every dtype only the engine's
// f32 arithmetic differs from the exact result.
double ref_tolerance(DType t) {
    switch (t) {
    case DType::F32: return 1e-4;
    case DType::F16: return 1e-4;
    case DType::BF16: return 1e-4;
    case DType::Q8:
    case DType::Q4: break; // tests/test_quant.cpp
    }
    return 0;
}
// Engine against engine with a different call pattern (incremental decode, chunks, batch,
// step splitting): the same f32 arithmetic per row, so only tiny differences are allowed.
constexpr double kSelfTolerance = 1e-5;
// n_threads 1 vs 2: work is split over outputs, never inside one dot product.
constexpr double kThreadTolerance = 1e-6;

const char *dtype_label(DType t) { return t == DType::F32 ? "f32" : t == DType::F16 ? "f16" : "bf16"; }

struct TestModel {
    std::string name;
    fixture::Model fx;
    gpt_model *model = nullptr;
    DType dtype;
    uint32_t vocab() const { return fx.config.vocab_size; }
};

std::vector<TestModel> *g_models;

// Longrope with distinct short and long factors (half per pair), the attention factor as
// transformers derives it for max_position_embeddings 4 x the original context.
void longrope(fixture::Spec &s, uint32_t original_context, uint32_t half) {
    gpt::RopeScaling &r = s.rope_scaling;
    r.type = gpt::RopeScalingType::LONGROPE;
    r.original_context = original_context;
    r.attention_factor = (float)std::sqrt(1 + std::log(4.0) / std::log((double)original_context));
    for (uint32_t i = 0; i < half; i++) {
        r.short_factor.push_back(1.0f + 0.05f * (float)i);
        r.long_factor.push_back(1.5f + 1.7f * (float)i);
    }
}

fixture::Spec base_spec(const std::string &name) {
    fixture::Spec s;
    if (name == "gpt2_tied") {
        s.arch = GPT_ARCH_GPT2;
        s.n_layers = 2, s.d_model = 48, s.n_heads = 4, s.d_ff = 72, s.vocab_size = 67, s.tied_head = true;
    } else if (name == "gpt2_untied") {
        s.arch = GPT_ARCH_GPT2;
        s.n_layers = 3, s.d_model = 40, s.n_heads = 5, s.d_ff = 56, s.vocab_size = 53, s.tied_head = false;
        s.norm_eps = 1e-3f;
    } else if (name == "gpt2_erf") { // nanoGPT's exact GELU
        s.arch = GPT_ARCH_GPT2;
        s.n_layers = 2, s.d_model = 32, s.n_heads = 2, s.d_ff = 128, s.vocab_size = 65, s.tied_head = true;
        s.ffn_activation = gpt::FfnActivation::GELU_ERF;
    } else if (name == "gpt2_relu_head_bias") { // the lecture's ReLU and lm_head bias
        s.arch = GPT_ARCH_GPT2;
        s.n_layers = 2, s.d_model = 32, s.n_heads = 4, s.d_ff = 128, s.vocab_size = 65, s.tied_head = false;
        s.ffn_activation = gpt::FfnActivation::RELU;
        s.head_bias = true;
    } else if (name == "llama_mha") {
        s.arch = GPT_ARCH_LLAMA;
        s.n_layers = 2, s.d_model = 48, s.n_heads = 4, s.n_kv_heads = 4, s.head_dim = 12, s.d_ff = 80;
        s.vocab_size = 61, s.tied_head = false;
    } else if (name == "llama_gqa_tied") {
        s.arch = GPT_ARCH_LLAMA; // q_dim 64 != d_model 40: head_dim is not d_model / n_heads
        s.n_layers = 2, s.d_model = 40, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 56;
        s.vocab_size = 67, s.tied_head = true, s.rope_theta = 500000.0f;
    } else if (name == "qwen2_like") {
        s.arch = GPT_ARCH_LLAMA;
        s.n_layers = 3, s.d_model = 48, s.n_heads = 6, s.n_kv_heads = 1, s.head_dim = 8, s.d_ff = 64;
        s.vocab_size = 75, s.tied_head = false, s.qkv_bias = true, s.rope_theta = 1000000.0f, s.norm_eps = 1e-6f;
    } else if (name == "llama3_scaled_tied") {
        // Llama 3.x: llama3 scaling whose bands (original context 64: wavelengths above 64
        // divided by 8, 16..64 blended, below 16 kept) each hold some of the 8 frequencies.
        s.arch = GPT_ARCH_LLAMA;
        s.n_layers = 2, s.d_model = 40, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 56;
        s.vocab_size = 67, s.tied_head = true, s.rope_theta = 500000.0f;
        s.rope_scaling.type = gpt::RopeScalingType::LLAMA3;
        s.rope_scaling.factor = 8, s.rope_scaling.low_freq_factor = 1, s.rope_scaling.high_freq_factor = 4;
        s.rope_scaling.original_context = 64;
    } else if (name == "llama_linear") {
        s.arch = GPT_ARCH_LLAMA;
        s.n_layers = 2, s.d_model = 36, s.n_heads = 6, s.n_kv_heads = 3, s.head_dim = 6, s.d_ff = 50;
        s.vocab_size = 59, s.rope_scaling.type = gpt::RopeScalingType::LINEAR, s.rope_scaling.factor = 4;
    } else if (name == "qwen3_gqa") {
        s.arch = GPT_ARCH_QWEN3; // q_dim 96 != d_model 40, q/k norms, attention_bias (test_convert has none)
        s.n_layers = 2, s.d_model = 40, s.n_heads = 6, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 56;
        s.vocab_size = 71, s.tied_head = true, s.rope_theta = 1000000.0f, s.norm_eps = 1e-6f, s.qkv_bias = true;
    } else if (name == "phi3_window_short") {
        // Phi-3-mini-like: full rotation, longrope whose original context (64) is the whole
        // context (short factors), a sliding window shorter than most test sequences.
        s.arch = GPT_ARCH_PHI3;
        s.n_layers = 2, s.d_model = 48, s.n_heads = 4, s.n_kv_heads = 4, s.head_dim = 12, s.d_ff = 64;
        s.vocab_size = 73, s.sliding_window = 7;
        longrope(s, 64, 6);
    } else if (name == "phi3_partial_long") {
        // Phi-4-mini-like: 3/4 of each head rotates, GQA, tied head, original context 16 below
        // the context's 64 positions (long factors).
        s.arch = GPT_ARCH_PHI3;
        s.n_layers = 2, s.d_model = 48, s.n_heads = 6, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 40;
        s.vocab_size = 61, s.tied_head = true, s.rope_dim = 12;
        longrope(s, 16, 6);
    } else if (name == "mistral_window") {
        s.arch = GPT_ARCH_LLAMA; // every layer windowed, the window shorter than every prompt
        s.n_layers = 2, s.d_model = 40, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 10, s.d_ff = 56;
        s.vocab_size = 59, s.sliding_window = 5, s.window_layers = {1, 1};
    } else if (name == "qwen2_window_upper") {
        s.arch = GPT_ARCH_LLAMA; // use_sliding_window with max_window_layers 1: layers 1.. windowed
        s.n_layers = 3, s.d_model = 48, s.n_heads = 6, s.n_kv_heads = 2, s.head_dim = 8, s.d_ff = 64;
        s.vocab_size = 63, s.qkv_bias = true, s.sliding_window = 3, s.window_layers = {0, 1, 1};
    } else if (name == "gemma2") {
        s.arch = GPT_ARCH_GEMMA2; // even layers windowed; caps small enough to bend scores and logits
        s.n_layers = 3, s.d_model = 40, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 56;
        s.vocab_size = 67, s.sliding_window = 6, s.window_layers = {1, 0, 1};
        s.attn_softcap = 2.0f, s.logit_softcap = 3.0f, s.query_pre_attn_scalar = 24.0f, s.norm_eps = 1e-6f;
    } else if (name == "gemma3") {
        s.arch = GPT_ARCH_GEMMA3; // local, local, global, local: local RoPE base, linear scaling on the global layer
        s.n_layers = 4, s.d_model = 48, s.n_heads = 3, s.n_kv_heads = 1, s.head_dim = 12, s.d_ff = 72;
        s.vocab_size = 71, s.sliding_window = 5, s.window_layers = {1, 1, 0, 1};
        s.query_pre_attn_scalar = 12.0f, s.rope_theta = 1000000.0f, s.rope_theta_local = 10000.0f;
        s.rope_scaling.type = gpt::RopeScalingType::LINEAR, s.rope_scaling.factor = 8.0f, s.norm_eps = 1e-6f;
    }
    s.context_length = 64;
    return s;
}

const char *kModelNames[] = {"gpt2_tied",         "gpt2_untied",  "gpt2_erf",  "gpt2_relu_head_bias",
                             "llama_mha",         "llama_gqa_tied", "qwen2_like", "llama3_scaled_tied",
                             "llama_linear",      "qwen3_gqa",    "phi3_window_short", "phi3_partial_long",
                             "mistral_window",    "qwen2_window_upper", "gemma2", "gemma3"};

int setup_models(void **) {
    g_models = new std::vector<TestModel>();
    g_models->reserve(3 * (sizeof kModelNames / sizeof kModelNames[0]));
    for (const char *n : kModelNames) {
        for (DType t : {DType::F32, DType::F16, DType::BF16}) {
            fixture::Spec s = base_spec(n);
            s.dtype = t;
            const std::string name = std::string(n) + "/" + dtype_label(t);
            s.seed = reference::sub_seed(("model " + name).c_str());
            g_models->push_back(TestModel{name, fixture::make(s), nullptr, t});
            TestModel &m = g_models->back();
            gpt_model_params mp;
            gpt_model_params_init(&mp);
            mp.device = GPT_DEVICE_CPU;
            const gpt_status st = gpt_model_load_from_memory(m.fx.file.data(), m.fx.file.size(), &mp, &m.model);
            if (st != GPT_OK) {
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

#define CHECK_OK(expr)                                                                                                 \
    do {                                                                                                               \
        const gpt_status st_ = (expr);                                                                                 \
        if (st_ != GPT_OK) fail_msg("%s -> %s: %s", #expr, gpt_status_str(st_), gpt_last_error());                     \
    } while (0)

gpt_ctx *make_ctx(gpt_model *m, uint32_t max_batch = 1, uint32_t max_step = 0, uint32_t threads = 2, uint32_t max_seq = 0) {
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_batch = max_batch;
    cp.max_seq = max_seq;
    cp.max_step_tokens = max_step;
    cp.n_threads = threads;
    gpt_ctx *ctx = nullptr;
    CHECK_OK(gpt_ctx_create(m, &cp, &ctx));
    return ctx;
}

std::vector<int32_t> random_tokens(std::mt19937_64 &rng, uint32_t vocab, size_t n) {
    std::uniform_int_distribution<int32_t> d(0, (int32_t)vocab - 1);
    std::vector<int32_t> t(n);
    for (auto &x : t) x = d(rng);
    return t;
}

size_t uniform(std::mt19937_64 &rng, size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); }

// All logits of a forward of tokens ([batch][n] row-major) into a NaN-poisoned buffer.
std::vector<float> forward_all(gpt_ctx *ctx, const std::vector<int32_t> &tokens, uint32_t batch, uint32_t vocab) {
    const uint32_t n = (uint32_t)(tokens.size() / batch);
    std::vector<float> out((size_t)batch * n * vocab);
    reference::poison(out.data(), out.size());
    CHECK_OK(gpt_forward(ctx, tokens.data(), batch, n, GPT_FORWARD_ALL_LOGITS, out.data()));
    return out;
}

// Last-token logits of each sequence ([batch][vocab]).
std::vector<float> forward_last(gpt_ctx *ctx, const std::vector<int32_t> &tokens, uint32_t batch, uint32_t vocab) {
    const uint32_t n = (uint32_t)(tokens.size() / batch);
    std::vector<float> out((size_t)batch * vocab);
    reference::poison(out.data(), out.size());
    CHECK_OK(gpt_forward(ctx, tokens.data(), batch, n, 0, out.data()));
    return out;
}

// A fresh single-sequence context's logits for every position of tokens.
std::vector<float> solo_run(const TestModel &m, const std::vector<int32_t> &tokens, uint32_t threads = 2) {
    gpt_ctx *ctx = make_ctx(m.model, 1, 0, threads);
    std::vector<float> out = forward_all(ctx, tokens, 1, m.vocab());
    gpt_ctx_free(ctx);
    return out;
}

void expect_close(const reference::Diff &d, double tol, const std::string &what) {
    if (!d.within(tol, what.c_str())) fail_msg("%s: out of tolerance (see above)", what.c_str());
}

// ---------------------------------------------------------------------------------- tests

// Every position's logits of the public API (ALL_LOGITS) against the double reference.
void test_logits_match_reference(void **) {
    std::mt19937_64 rng(reference::sub_seed("logits_match_reference"));
    for (const TestModel &m : *g_models) {
        for (int rep = 0; rep < 2; rep++) {
            const auto tokens = random_tokens(rng, m.vocab(), uniform(rng, 9, 24));
            gpt_ctx *ctx = make_ctx(m.model);
            const auto out = forward_all(ctx, tokens, 1, m.vocab());
            const auto ref = reference::forward(m.fx, tokens);
            expect_close(reference::compare(out.data(), ref.data(), tokens.size(), m.vocab()), ref_tolerance(m.dtype),
                         m.name + " vs reference, " + std::to_string(tokens.size()) + " tokens");
            // The last-token call agrees too.
            gpt_ctx_reset(ctx);
            const auto last = forward_last(ctx, tokens, 1, m.vocab());
            expect_close(reference::compare(last.data(), ref.data() + (tokens.size() - 1) * m.vocab(), 1, m.vocab()),
                         ref_tolerance(m.dtype), m.name + " last-token logits vs reference");
            gpt_ctx_free(ctx);
        }
    }
}

// Longrope picks its factors per context: a context no longer than the original context
// runs the short factors, a longer one the long factors (model/rope_scaling.h); the two
// differ, so each comparison can tell them apart.
void test_longrope_factors_follow_context(void **) {
    std::mt19937_64 rng(reference::sub_seed("longrope_factors_follow_context"));
    for (const TestModel &m : *g_models) {
        if (m.fx.config.arch != GPT_ARCH_PHI3 || m.fx.config.rope_scaling.original_context >= m.fx.config.context_length) continue;
        const uint32_t V = m.vocab(), orig = m.fx.config.rope_scaling.original_context;
        const auto tokens = random_tokens(rng, V, orig);
        reference::Layout short_ctx, long_ctx;
        short_ctx.max_seq = orig;
        long_ctx.max_seq = orig + 1;
        const auto ref_short = reference::forward(m.fx.config, m.fx.tensors, tokens, short_ctx);
        const auto ref_long = reference::forward(m.fx.config, m.fx.tensors, tokens, long_ctx);
        for (uint32_t max_seq : {orig, orig + 1, m.fx.config.context_length}) {
            gpt_ctx *ctx = make_ctx(m.model, 1, 0, 2, max_seq);
            const auto out = forward_all(ctx, tokens, 1, V);
            const auto &want = max_seq > orig ? ref_long : ref_short;
            const auto &other = max_seq > orig ? ref_short : ref_long;
            expect_close(reference::compare(out.data(), want.data(), tokens.size(), V), ref_tolerance(m.dtype),
                         m.name + " max_seq " + std::to_string(max_seq) + " vs reference");
            if (reference::compare(out.data(), other.data(), tokens.size(), V).row_rel < 1e-2)
                fail_msg("%s max_seq %u: the other factors give the same logits; the test cannot tell them apart", m.name.c_str(), max_seq);
            gpt_ctx_free(ctx);
        }
    }
}

// Hostile RoPE metadata: each bad value is refused at load with its status and a message
// naming the key; nothing is run.
void test_rejects_bad_rope_metadata(void **) {
    using gpt::format::MetaValue;
    namespace k = gpt::keys;
    struct Case {
        const char *model, *key;
        MetaValue value;
        gpt_status status;
    };
    const Case cases[] = {
        {"phi3_partial_long", k::kRopeScalingType, MetaValue::of_str("yarn"), GPT_ERR_UNSUPPORTED},
        {"phi3_partial_long", k::kRopeScalingShort, MetaValue::of_f32s({1, 1, 1}), GPT_ERR_FORMAT},
        {"phi3_partial_long", k::kRopeScalingLong, MetaValue::of_f32s({1, 1, 1, 1, 1, NAN}), GPT_ERR_FORMAT},
        {"phi3_partial_long", k::kRopeScalingLong, MetaValue::of_u32(3), GPT_ERR_FORMAT},
        {"phi3_partial_long", k::kRopeScalingAttnFactor, MetaValue::of_f32(INFINITY), GPT_ERR_FORMAT},
        {"phi3_partial_long", k::kRopeScalingOrigContext, MetaValue::of_u32(0), GPT_ERR_FORMAT},
        {"phi3_partial_long", k::kRopeDim, MetaValue::of_u32(13), GPT_ERR_FORMAT},
        {"phi3_partial_long", k::kRopeDim, MetaValue::of_u32(18), GPT_ERR_FORMAT},
        {"llama3_scaled_tied", k::kRopeScalingFactor, MetaValue::of_f32(0.5f), GPT_ERR_FORMAT},
        {"llama3_scaled_tied", k::kRopeScalingHighFreq, MetaValue::of_f32(0.5f), GPT_ERR_FORMAT},
        {"gpt2_tied", k::kSlidingWindow, MetaValue::of_u32(4), GPT_ERR_FORMAT},
        {"llama_linear", k::kRopeScalingFactor, MetaValue::of_f32(NAN), GPT_ERR_FORMAT},
    };
    for (const Case &c : cases) {
        const gpt::ModelConfig cfg = fixture::config_of(base_spec(c.model));
        gpt::format::Writer w;
        cfg.to_metadata(w.metadata());
        w.metadata().set(c.key, c.value);
        for (const gpt::TensorSlot &slot : gpt::tensor_table(cfg)) {
            uint64_t n = 1;
            for (uint64_t d : slot.shape) n *= d;
            const std::vector<float> zeros(n, 0.0f);
            w.add_tensor(slot.name, DType::F32, slot.shape, zeros.data(), zeros.size() * sizeof(float));
        }
        const std::vector<uint8_t> file = w.write_memory();
        gpt_model_params mp;
        gpt_model_params_init(&mp);
        mp.device = GPT_DEVICE_CPU;
        gpt_model *m = nullptr;
        const gpt_status st = gpt_model_load_from_memory(file.data(), file.size(), &mp, &m);
        if (st != c.status || !std::strstr(gpt_last_error(), c.key))
            fail_msg("%s with a bad %s: %s (%s), expected %s naming the key", c.model, c.key, gpt_status_str(st), gpt_last_error(),
                     gpt_status_str(c.status));
        assert_null(m);
        std::printf("# %s\n", gpt_last_error());
    }
}

// A prompt, then one token at a time, equals one full-sequence forward; so do uneven chunks.
void test_incremental_equals_full(void **) {
    std::mt19937_64 rng(reference::sub_seed("incremental_equals_full"));
    for (const TestModel &m : *g_models) {
        const size_t n = uniform(rng, 20, 40), prompt = uniform(rng, 1, 8);
        const auto tokens = random_tokens(rng, m.vocab(), n);
        const auto full = solo_run(m, tokens);
        const uint32_t V = m.vocab();

        gpt_ctx *ctx = make_ctx(m.model);
        std::vector<int32_t> head(tokens.begin(), tokens.begin() + prompt);
        const auto first = forward_all(ctx, head, 1, V);
        expect_close(reference::compare(first.data(), full.data(), prompt, V), kSelfTolerance, m.name + " prompt rows");
        for (size_t i = prompt; i < n; i++) {
            const auto step = forward_last(ctx, {tokens[i]}, 1, V);
            expect_close(reference::compare(step.data(), full.data() + i * V, 1, V), kSelfTolerance,
                         m.name + " decode position " + std::to_string(i));
        }
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), n);

        // A prompt asking for its last row only (its final layer then runs on that row alone
        // after the attention) leaves the same cache: the decode steps after it agree too.
        gpt_ctx_reset(ctx);
        const size_t longer = std::max<size_t>(prompt, 2);
        const auto last = forward_last(ctx, std::vector<int32_t>(tokens.begin(), tokens.begin() + longer), 1, V);
        expect_close(reference::compare(last.data(), full.data() + (longer - 1) * V, 1, V), kSelfTolerance,
                     m.name + " last-row-only prompt");
        for (size_t i = longer; i < std::min(n, longer + 4); i++) {
            const auto step = forward_last(ctx, {tokens[i]}, 1, V);
            expect_close(reference::compare(step.data(), full.data() + i * V, 1, V), kSelfTolerance,
                         m.name + " decode after a last-row-only prompt, position " + std::to_string(i));
        }

        // Uneven chunks with all logits.
        gpt_ctx_reset(ctx);
        size_t pos = 0;
        while (pos < n) {
            const size_t len = std::min(n - pos, uniform(rng, 1, 7));
            std::vector<int32_t> chunk(tokens.begin() + pos, tokens.begin() + pos + len);
            const auto out = forward_all(ctx, chunk, 1, V);
            expect_close(reference::compare(out.data(), full.data() + pos * V, len, V), kSelfTolerance,
                         m.name + " chunk at " + std::to_string(pos) + " of " + std::to_string(len));
            pos += len;
        }
        gpt_ctx_free(ctx);
    }
}

// Rewinding (gpt_ctx_truncate) past a window and going on equals a fresh run of the kept
// prefix plus the new tokens: the windowed layers still find the keys they need.
void test_truncate_then_continue(void **) {
    std::mt19937_64 rng(reference::sub_seed("truncate_then_continue"));
    for (const TestModel &m : *g_models) {
        const uint32_t V = m.vocab();
        const size_t n = uniform(rng, 16, 30), keep = uniform(rng, 8, n - 2), more = uniform(rng, 2, 9);
        const auto first = random_tokens(rng, V, n), extra = random_tokens(rng, V, more);
        gpt_ctx *ctx = make_ctx(m.model);
        forward_all(ctx, first, 1, V);
        CHECK_OK(gpt_ctx_truncate(ctx, 0, (uint32_t)keep));
        const auto got = forward_all(ctx, extra, 1, V);
        gpt_ctx_free(ctx);
        std::vector<int32_t> whole(first.begin(), first.begin() + keep);
        whole.insert(whole.end(), extra.begin(), extra.end());
        const auto fresh = solo_run(m, whole);
        expect_close(reference::compare(got.data(), fresh.data() + keep * V, more, V), kSelfTolerance,
                     m.name + " after truncating " + std::to_string(n) + " to " + std::to_string(keep));
    }
}

// B = 3 sequences in one call equal three separate runs, also once they hold different lengths.
void test_batch_equals_separate(void **) {
    std::mt19937_64 rng(reference::sub_seed("batch_equals_separate"));
    const uint32_t B = 3;
    for (const TestModel &m : *g_models) {
        const uint32_t V = m.vocab();
        gpt_ctx *ctx = make_ctx(m.model, B);
        std::vector<std::vector<int32_t>> hist(B);

        // 1. Equal lengths, different tokens.
        const uint32_t n1 = (uint32_t)uniform(rng, 4, 12);
        const auto t1 = random_tokens(rng, V, (size_t)B * n1);
        const auto out1 = forward_all(ctx, t1, B, V);
        for (uint32_t b = 0; b < B; b++) {
            hist[b].assign(t1.begin() + b * n1, t1.begin() + (b + 1) * n1);
            const auto solo = solo_run(m, hist[b]);
            expect_close(reference::compare(out1.data() + (size_t)b * n1 * V, solo.data(), n1, V), kSelfTolerance,
                         m.name + " batch row " + std::to_string(b));
        }

        // 2. Make the lengths differ: two more tokens on sequences 0 and 1, then rewind 1.
        const auto t2 = random_tokens(rng, V, 2 * 5);
        forward_last(ctx, t2, 2, V);
        for (uint32_t b = 0; b < 2; b++) hist[b].insert(hist[b].end(), t2.begin() + b * 5, t2.begin() + (b + 1) * 5);
        CHECK_OK(gpt_ctx_truncate(ctx, 1, n1 + 2));
        hist[1].resize(n1 + 2);
        for (uint32_t b = 0; b < B; b++) assert_int_equal(gpt_ctx_seq_len(ctx, b), hist[b].size());

        // 3. A batch call over sequences of lengths n1 + 5, n1 + 2 and n1.
        const uint32_t n3 = (uint32_t)uniform(rng, 1, 6);
        const auto t3 = random_tokens(rng, V, (size_t)B * n3);
        const auto out3 = forward_all(ctx, t3, B, V);
        for (uint32_t b = 0; b < B; b++) {
            hist[b].insert(hist[b].end(), t3.begin() + b * n3, t3.begin() + (b + 1) * n3);
            const auto solo = solo_run(m, hist[b]);
            expect_close(reference::compare(out3.data() + (size_t)b * n3 * V, solo.data() + (hist[b].size() - n3) * V, n3, V),
                         kSelfTolerance, m.name + " ragged batch row " + std::to_string(b));
        }
        // 4. And the last-token form: one more token each.
        const auto t4 = random_tokens(rng, V, B);
        const auto out4 = forward_last(ctx, t4, B, V);
        for (uint32_t b = 0; b < B; b++) {
            hist[b].push_back(t4[b]);
            const auto solo = solo_run(m, hist[b]);
            expect_close(reference::compare(out4.data() + (size_t)b * V, solo.data() + (hist[b].size() - 1) * V, 1, V),
                         kSelfTolerance, m.name + " ragged batch last token " + std::to_string(b));
            // And against the reference, so the batch path is checked absolutely too.
            const auto ref = reference::forward(m.fx, hist[b]);
            expect_close(reference::compare(out4.data() + (size_t)b * V, ref.data() + (hist[b].size() - 1) * V, 1, V),
                         ref_tolerance(m.dtype), m.name + " ragged batch vs reference " + std::to_string(b));
        }
        gpt_ctx_free(ctx);
    }
}

// A small max_step_tokens (many internal steps per call) equals one step.
void test_small_steps_equal_one_step(void **) {
    std::mt19937_64 rng(reference::sub_seed("small_steps_equal_one_step"));
    for (const TestModel &m : *g_models) {
        const uint32_t V = m.vocab();
        const auto tokens = random_tokens(rng, V, uniform(rng, 15, 30));
        const auto full = solo_run(m, tokens);
        for (uint32_t step : {1u, 2u, 3u, 7u}) {
            gpt_ctx *ctx = make_ctx(m.model, 1, step);
            const auto out = forward_all(ctx, tokens, 1, V);
            expect_close(reference::compare(out.data(), full.data(), tokens.size(), V), kSelfTolerance,
                         m.name + " max_step_tokens " + std::to_string(step));
            gpt_ctx_reset(ctx);
            const auto last = forward_last(ctx, tokens, 1, V);
            expect_close(reference::compare(last.data(), full.data() + (tokens.size() - 1) * V, 1, V), kSelfTolerance,
                         m.name + " last token, max_step_tokens " + std::to_string(step));
            gpt_ctx_free(ctx);
        }
        // Batched: max_step_tokens 4 with 3 sequences runs one token of each per step.
        const uint32_t B = 3, n = 9;
        const auto bt = random_tokens(rng, V, (size_t)B * n);
        gpt_ctx *one = make_ctx(m.model, B, 0), *many = make_ctx(m.model, B, 4);
        const auto a = forward_all(one, bt, B, V), b = forward_all(many, bt, B, V);
        expect_close(reference::compare(b.data(), a.data(), (size_t)B * n, V), kSelfTolerance, m.name + " batched small steps");
        gpt_ctx_free(one);
        gpt_ctx_free(many);
    }
}

// n_threads 1 and 2 (and 3) give the same logits.
void test_threads_agree(void **) {
    std::mt19937_64 rng(reference::sub_seed("threads_agree"));
    for (const TestModel &m : *g_models) {
        const uint32_t V = m.vocab();
        const auto tokens = random_tokens(rng, V, uniform(rng, 10, 30));
        const auto one = solo_run(m, tokens, 1);
        for (uint32_t th : {2u, 3u}) {
            const auto many = solo_run(m, tokens, th);
            expect_close(reference::compare(many.data(), one.data(), tokens.size(), V), kThreadTolerance,
                         m.name + " n_threads " + std::to_string(th) + " vs 1");
        }
    }
}

size_t argmax(const double *v, size_t n) {
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

// Greedy generation equals the reference's argmax applied token by token. Where the
// reference's two best logits are closer than the comparison tolerance, either is accepted
// (and the reference follows the engine's choice).
void test_greedy_generate_matches_reference(void **) {
    std::mt19937_64 rng(reference::sub_seed("greedy_generate"));
    const uint32_t kTokens = 16;
    for (const TestModel &m : *g_models) {
        const uint32_t V = m.vocab();
        const auto prompt = random_tokens(rng, V, uniform(rng, 2, 8));
        gpt_ctx *ctx = make_ctx(m.model);
        gpt_sampling_params sp;
        gpt_sampling_params_init(&sp);
        sp.temperature = 0.0f;
        sp.flags = GPT_SAMPLING_IGNORE_EOS;
        std::vector<int32_t> out(kTokens, -1);
        uint32_t n_out = 0;
        CHECK_OK(gpt_generate(ctx, prompt.data(), (uint32_t)prompt.size(), &sp, nullptr, nullptr, out.data(), kTokens, &n_out));
        assert_int_equal(n_out, kTokens);
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), prompt.size() + kTokens - 1);

        std::vector<int32_t> seq = prompt;
        for (uint32_t i = 0; i < kTokens; i++) {
            const auto ref = reference::forward(m.fx, seq);
            const double *row = ref.data() + (seq.size() - 1) * V;
            const size_t want = argmax(row, V);
            double max_abs = 0;
            for (uint32_t j = 0; j < V; j++) max_abs = std::max(max_abs, std::fabs(row[j]));
            if ((size_t)out[i] != want) {
                assert_true(out[i] >= 0 && (uint32_t)out[i] < V);
                const double gap = row[want] - row[out[i]];
                if (gap > ref_tolerance(m.dtype) * max_abs * 4)
                    fail_msg("%s: greedy token %u is %d (logit %.9g), the reference's argmax is %zu (logit %.9g)",
                             m.name.c_str(), i, out[i], row[out[i]], want, row[want]);
                std::printf("# %s: near tie at generated token %u (%d vs %zu, gap %.3g): accepted\n", m.name.c_str(), i,
                            out[i], want, gap);
            }
            seq.push_back(out[i]);
        }
        gpt_ctx_free(ctx);
    }
}

// The kernels on sizes the models above do not reach: vector lengths 1..80 (every tail of the
// 32-, 16-, 8- and 4-wide loops), 1..9 rows and 7 outputs (16-bit weights are read directly
// for up to 4 rows; beyond, tiles of 3 rows by 2 outputs with AVX2, else widened once), head
// dims 1..40, each dtype; against double sums of the same rounded values. Bound: recursive f32
// summation of n products errs by at most about n * 2^-24 * sum |products| (the kernels'
// tree sums err less). A result must not depend on the batch or the split of the outputs:
// every call's rows are the bits of the same rows in a larger call, and each output computed
// alone is the block's.
void test_cpu_kernels_every_length(void **) {
    std::mt19937_64 rng(reference::sub_seed("cpu_kernels_every_length"));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const double eps = std::ldexp(1.0, -24);
    constexpr uint32_t kRows = 9;
    constexpr uint64_t kOut = 7;
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        for (uint64_t k = 1; k <= 80; k++) {
            // Weights in dtype t; wf holds the values they stand for.
            std::vector<float> wf(kOut * k), x(kRows * k), bias(kOut);
            std::vector<uint16_t> wh(kOut * k);
            for (size_t i = 0; i < wf.size(); i++) {
                const float v = u(rng);
                wh[i] = t == DType::F16 ? gpt::f32_to_f16(v) : gpt::f32_to_bf16(v);
                wf[i] = t == DType::F32 ? v : t == DType::F16 ? gpt::f16_to_f32(wh[i]) : gpt::bf16_to_f32(wh[i]);
            }
            for (float &v : x) v = u(rng);
            for (float &v : bias) v = u(rng);
            const gpt::Weight w{t == DType::F32 ? static_cast<const void *>(wf.data()) : wh.data(), t, kOut, k};

            std::vector<float> widened(k);
            gpt::cpu::widen(t == DType::F32 ? static_cast<const void *>(wf.data() + k) : wh.data() + k, t, k,
                            widened.data());
            if (std::memcmp(widened.data(), wf.data() + k, k * sizeof(float)) != 0)
                fail_msg("widen %s, %llu values: not the exact values", dtype_label(t), (unsigned long long)k);

            std::vector<float> scratch(k);
            const float d = gpt::cpu::dot(x.data(), wf.data(), k);
            double want = 0, mag = 0;
            for (uint64_t i = 0; i < k; i++) want += (double)x[i] * wf[i], mag += std::fabs((double)x[i] * wf[i]);
            if (std::fabs(d - want) > (k + 2) * eps * mag + 1e-30)
                fail_msg("dot, n %llu: %.9g, want %.9g", (unsigned long long)k, d, want);

            std::vector<std::vector<float>> ys;
            for (uint32_t rows = 1; rows <= kRows; rows++) {
                std::vector<float> y(rows * kOut);
                reference::poison(y.data(), y.size());
                gpt::cpu::matmul_block(x.data(), rows, w, bias.data(), 0, kOut, y.data(), kOut, scratch.data());
                for (uint32_t r = 0; r < rows; r++)
                    for (uint64_t o = 0; o < kOut; o++) {
                        double ref = bias[o], m = std::fabs(bias[o]);
                        for (uint64_t i = 0; i < k; i++) {
                            ref += (double)x[r * k + i] * wf[o * k + i];
                            m += std::fabs((double)x[r * k + i] * wf[o * k + i]);
                        }
                        const float got = y[r * kOut + o];
                        if (!(std::fabs(got - ref) <= (k + 3) * eps * m + 1e-30))
                            fail_msg("matmul_block %s, k %llu, %u rows, row %u output %llu: %.9g, want %.9g",
                                     dtype_label(t), (unsigned long long)k, rows, r, (unsigned long long)o, got, ref);
                    }
                ys.push_back(std::move(y));
            }
            for (uint32_t rows = 1; rows < kRows; rows++)
                if (std::memcmp(ys[rows - 1].data(), ys[kRows - 1].data(), rows * kOut * sizeof(float)) != 0)
                    fail_msg("matmul_block %s, k %llu: %u rows differ from the first %u of %u", dtype_label(t),
                             (unsigned long long)k, rows, rows, kRows);
            for (uint64_t o = 0; o < kOut; o++) {
                std::vector<float> y(kRows * kOut);
                reference::poison(y.data(), y.size());
                gpt::cpu::matmul_block(x.data(), kRows, w, bias.data(), o, o + 1, y.data(), kOut, scratch.data());
                for (uint32_t r = 0; r < kRows; r++)
                    if (std::memcmp(&y[r * kOut + o], &ys[kRows - 1][r * kOut + o], sizeof(float)) != 0)
                        fail_msg("matmul_block %s, k %llu, row %u: output %llu alone differs from the block", dtype_label(t),
                                 (unsigned long long)k, r, (unsigned long long)o);
            }
        }
    }

    for (uint32_t hd = 1; hd <= 40; hd++) {
        for (uint32_t n_keys : {1u, 2u, 5u, 9u, 33u}) {
            std::vector<float> q(hd), kc(n_keys * hd), vc(n_keys * hd), scores(n_keys), out(hd);
            for (float &v : q) v = 3 * u(rng);
            for (float &v : kc) v = 3 * u(rng);
            for (float &v : vc) v = u(rng);
            const float scale = 1.0f / std::sqrt((float)hd);
            // Soft-capping (Gemma-2) on every other head size: a small cap that bends the scores.
            const float softcap = hd % 2 ? 0.0f : 0.7f;
            reference::poison(out.data(), out.size());
            gpt::cpu::attend(q.data(), kc.data(), vc.data(), n_keys, hd, scale, softcap, scores.data(), out.data());
            std::vector<double> p(n_keys);
            double mx = -INFINITY, sum = 0;
            for (uint32_t t = 0; t < n_keys; t++) {
                double s = 0;
                for (uint32_t i = 0; i < hd; i++) s += (double)q[i] * kc[t * hd + i];
                p[t] = s * scale;
                if (softcap > 0) p[t] = softcap * std::tanh(p[t] / softcap);
                mx = std::max(mx, p[t]);
            }
            for (double &v : p) sum += (v = std::exp(v - mx));
            for (uint32_t i = 0; i < hd; i++) {
                double want = 0;
                for (uint32_t t = 0; t < n_keys; t++) want += p[t] / sum * vc[t * hd + i];
                // Values in [-1, 1] and weights summing to 1: errors of order n_keys * hd * 2^-24.
                if (!(std::fabs(out[i] - want) <= 1e-5))
                    fail_msg("attend, head dim %u, %u keys, column %u: %.9g, want %.9g", hd, n_keys, i, out[i], want);
            }
        }
    }
}

} // namespace

int main(void) {
    reference::test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logits_match_reference),
        cmocka_unit_test(test_longrope_factors_follow_context),
        cmocka_unit_test(test_rejects_bad_rope_metadata),
        cmocka_unit_test(test_incremental_equals_full),
        cmocka_unit_test(test_truncate_then_continue),
        cmocka_unit_test(test_batch_equals_separate),
        cmocka_unit_test(test_small_steps_equal_one_step),
        cmocka_unit_test(test_threads_agree),
        cmocka_unit_test(test_greedy_generate_matches_reference),
        cmocka_unit_test(test_cpu_kernels_every_length),
    };
    return cmocka_run_group_tests_name("model", tests, setup_models, teardown_models);
}
