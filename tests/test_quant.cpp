// test_quant.cpp - weight-only quantization (q8, q4) on the CPU, each piece against an
// independent reference written here from docs/FORMAT.md section 5.1 (no library decoder):
//   - the quantizer: bytes decoded here; every scale is f16(max|w| / qmax) of its group and
//     every integer the nearest to w / scale, within range;
//   - dequantize_row and the CPU kernels (matmul_block, embedding_row): against "decode in
//     double, then a naive matmul" on odd shapes (K not a multiple of 256, N odd, groups
//     32/64/128, output ranges that do not start at 0), random data, poisoned outputs;
//   - whole models: a quantized file (every matrix the rule quantizes) through the public API
//     against the double reference forward on the values decoded here, for Llama and GPT-2
//     (learned positions, tied head), with a matrix whose width the group does not divide
//     kept in f32.
#include "gpt.h"

#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/half.h"
#include "core/quant.h"
#include "fixture.h"
#include "format/quantize.h"
#include "format/writer.h"
#include "model/arch.h"
#include "reference.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

// cmocka last: it defines a fail() macro.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

using gpt::DType;

const char *label(DType t) { return t == DType::Q8 ? "q8" : "q4"; }

// The spec's decoding, in double: element c of row r = q[r][c] * scale[r][c / g].
std::vector<double> decode(const std::vector<uint8_t> &b, DType t, uint64_t rows, uint64_t cols, uint64_t g) {
    const uint64_t row_bytes = t == DType::Q8 ? cols : cols / 2;
    const uint8_t *scales = b.data() + rows * row_bytes;
    std::vector<double> out(rows * cols);
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            int q;
            if (t == DType::Q8) q = (int8_t)b[r * row_bytes + c];
            else {
                const uint8_t byte = b[r * row_bytes + c / 2];
                q = (c % 2 == 0 ? byte & 15 : byte >> 4) - 8;
            }
            const uint64_t si = r * (cols / g) + c / g;
            const uint16_t s = (uint16_t)(scales[2 * si] | scales[2 * si + 1] << 8);
            out[r * cols + c] = q * (double)gpt::f16_to_f32(s);
        }
    return out;
}

std::vector<uint8_t> quantize(const std::vector<float> &w, DType t, uint64_t rows, uint64_t cols, uint32_t g) {
    uint64_t n = 0;
    assert_true(gpt::tensor_bytes(t, rows * cols, cols, g, &n));
    // The byte count from the spec: integers, then one f16 per group.
    assert_int_equal(n, (t == DType::Q8 ? rows * cols : rows * cols / 2) + 2 * rows * (cols / g));
    std::vector<uint8_t> b(n + 16, 0xa5); // guard bytes past the end stay untouched
    gpt::quantize_matrix(w.data(), rows, cols, t, g, b.data(), "test");
    for (uint64_t i = n; i < n + 16; i++) assert_int_equal(b[i], 0xa5);
    b.resize(n);
    return b;
}

// Random rows with groups of varied range: zeros, tiny, ordinary, large, one outlier.
std::vector<float> draw(std::mt19937_64 &rng, uint64_t rows, uint64_t cols, uint32_t g) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::uniform_int_distribution<int> kind(0, 5);
    std::vector<float> w(rows * cols);
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c0 = 0; c0 < cols; c0 += g) {
            const int k = kind(rng);
            const float scale = k == 0 ? 0.0f : k == 1 ? 1e-3f : k == 2 ? 30.0f : 0.05f;
            for (uint64_t c = c0; c < c0 + g; c++) w[r * cols + c] = scale * nd(rng);
            if (k == 5) w[r * cols + c0 + (uint64_t)(rng() % g)] = 4.0f; // an outlier
        }
    return w;
}

// ------------------------------------------------------------------------- quantizer

void test_quantizer_rounds_to_nearest(void **) {
    std::mt19937_64 rng(reference::sub_seed("quantizer_rounds_to_nearest"));
    for (DType t : {DType::Q8, DType::Q4})
        for (uint32_t g : {32u, 64u, 128u})
            for (uint64_t cols : {(uint64_t)g, (uint64_t)3 * g, (uint64_t)5 * g}) {
                const uint64_t rows = 7;
                const std::vector<float> w = draw(rng, rows, cols, g);
                const std::vector<uint8_t> b = quantize(w, t, rows, cols, g);
                const std::vector<double> deq = decode(b, t, rows, cols, g);
                const int qmax = t == DType::Q8 ? 127 : 7;
                const uint8_t *scales = b.data() + rows * (t == DType::Q8 ? cols : cols / 2);
                for (uint64_t r = 0; r < rows; r++)
                    for (uint64_t c0 = 0; c0 < cols; c0 += g) {
                        float mx = 0;
                        for (uint64_t c = c0; c < c0 + g; c++) mx = std::max(mx, std::fabs(w[r * cols + c]));
                        const uint64_t si = r * (cols / g) + c0 / g;
                        const uint16_t s16 = (uint16_t)(scales[2 * si] | scales[2 * si + 1] << 8);
                        if (s16 != gpt::f32_to_f16(mx / (float)qmax))
                            fail_msg("%s g %u: row %llu group %llu: scale %#x, want f16(%g / %d)", label(t), g,
                                     (unsigned long long)r, (unsigned long long)(c0 / g), s16, (double)mx, qmax);
                        const double s = gpt::f16_to_f32(s16);
                        for (uint64_t c = c0; c < c0 + g; c++) {
                            const double x = w[r * cols + c], y = deq[r * cols + c];
                            const double q = s > 0 ? y / s : 0;
                            // In range, and the nearest multiple of s (clamped at +-qmax: the
                            // scale's f16 rounding may put the largest value just outside).
                            const double bound = s > 0 ? std::fabs(std::fabs(x) / s - std::min(std::fabs(x) / s, (double)qmax)) * s : 0;
                            if (std::fabs(q) > qmax || std::fabs(x - y) > 0.5 * s * (1 + 1e-6) + bound + (s > 0 ? 0 : std::fabs(x)))
                                fail_msg("%s g %u: [%llu, %llu] = %.9g quantized to %.9g (scale %.9g)", label(t), g,
                                         (unsigned long long)r, (unsigned long long)c, x, y, s);
                        }
                    }
                // The library's dequantizer gives the same values, exactly.
                const gpt::Weight view{b.data(), t, rows, cols, g};
                std::vector<float> row(cols);
                for (uint64_t r = 0; r < rows; r++) {
                    reference::poison(row.data(), cols);
                    gpt::dequantize_row(view, r, row.data());
                    for (uint64_t c = 0; c < cols; c++)
                        if ((double)row[c] != deq[r * cols + c])
                            fail_msg("dequantize_row %s g %u [%llu, %llu]: %.9g, want %.9g", label(t), g, (unsigned long long)r,
                                     (unsigned long long)c, (double)row[c], deq[r * cols + c]);
                }
            }
}

// Bad groups, non-finite values and scales f16 cannot hold are refused with a message.
void test_quantizer_refuses(void **) {
    std::vector<float> w(64, 1.0f);
    std::vector<uint8_t> b(256);
    auto refused = [&](DType t, uint64_t cols, uint32_t g, gpt_status want, const char *needle) {
        try {
            gpt::quantize_matrix(w.data(), 1, cols, t, g, b.data(), "tensor 'x'");
        } catch (const gpt::Error &e) {
            if (e.status() != want || !std::strstr(e.what(), needle) || !std::strstr(e.what(), "tensor 'x'"))
                fail_msg("got %d \"%s\", want %d with \"%s\"", e.status(), e.what(), want, needle);
            return;
        }
        fail_msg("quantize_matrix(%s, cols %llu, group %u) was not refused", label(t), (unsigned long long)cols, g);
    };
    refused(DType::Q8, 64, 0, GPT_ERR_INVALID_ARG, "group size 0");
    refused(DType::Q8, 64, 48, GPT_ERR_INVALID_ARG, "group size 48");
    refused(DType::Q4, 48, 32, GPT_ERR_INVALID_ARG, "divide");
    w[5] = NAN;
    refused(DType::Q4, 64, 32, GPT_ERR_UNSUPPORTED, "finite");
    w[5] = 1e9f; // 1e9 / 127 overflows an f16 scale
    refused(DType::Q8, 64, 32, GPT_ERR_UNSUPPORTED, "f16");
}

// A matrix large enough for the quantizer's threads: the same bytes as quantizing each row
// alone (one thread), and of two bad elements in different slices the first in row-major
// order is the one named, as one thread would meet it.
void test_quantizer_threads(void **) {
    std::mt19937_64 rng(reference::sub_seed("quantizer_threads"));
    const uint64_t rows = 301, cols = 4096; // 64 rows a slice: 5 slices
    for (DType t : {DType::Q8, DType::Q4}) {
        const uint32_t g = t == DType::Q8 ? 64 : 32;
        std::vector<float> w = draw(rng, rows, cols, g);
        const std::vector<uint8_t> whole = quantize(w, t, rows, cols, g);
        const uint64_t row_bytes = t == DType::Q8 ? cols : cols / 2, scale_bytes = 2 * (cols / g);
        for (uint64_t r = 0; r < rows; r++) {
            const std::vector<uint8_t> b = quantize(std::vector<float>(w.begin() + r * cols, w.begin() + (r + 1) * cols), t, 1, cols, g);
            if (std::memcmp(b.data(), whole.data() + r * row_bytes, row_bytes) != 0 ||
                std::memcmp(b.data() + row_bytes, whole.data() + rows * row_bytes + r * scale_bytes, scale_bytes) != 0)
                fail_msg("%s: row %llu differs from the row quantized alone", label(t), (unsigned long long)r);
        }
        const uint64_t late = (250 + rng() % 50) * cols + rng() % cols, early = (70 + rng() % 50) * cols + rng() % cols;
        w[late] = NAN;
        w[early] = -INFINITY;
        std::vector<uint8_t> b(whole.size());
        try {
            gpt::quantize_matrix(w.data(), rows, cols, t, g, b.data(), "tensor 'x'");
            fail_msg("%s: a matrix holding -inf and NaN was quantized", label(t));
        } catch (const gpt::Error &e) {
            char want[96];
            std::snprintf(want, sizeof want, "element [%llu, %llu] is -inf", (unsigned long long)(early / cols),
                          (unsigned long long)(early % cols));
            if (!std::strstr(e.what(), want)) fail_msg("%s: \"%s\", want \"%s\"", label(t), e.what(), want);
        }
    }
}

// ------------------------------------------------------------------------- CPU kernels

void test_cpu_quant_kernels(void **) {
    std::mt19937_64 rng(reference::sub_seed("cpu_quant_kernels"));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const double eps = std::ldexp(1.0, -24);
    struct Shape {
        uint64_t n, k;
        uint32_t g;
    };
    // K not a multiple of 256 (96, 160, 320, 640, 1152), N odd.
    const Shape shapes[] = {{7, 96, 32}, {13, 160, 32}, {5, 320, 64}, {9, 192, 64}, {3, 640, 128}, {11, 1152, 128}, {1, 32, 32}};
    for (DType t : {DType::Q8, DType::Q4})
        for (const Shape &s : shapes) {
            const std::vector<float> wv = draw(rng, s.n, s.k, s.g);
            const std::vector<uint8_t> b = quantize(wv, t, s.n, s.k, s.g);
            const std::vector<double> wd = decode(b, t, s.n, s.k, s.g);
            const gpt::Weight w{b.data(), t, s.n, s.k, s.g};
            // Embedding rows: exact.
            std::vector<float> row(s.k);
            for (uint64_t r = 0; r < s.n; r++) {
                reference::poison(row.data(), s.k);
                gpt::cpu::embedding_row(w, r, row.data());
                for (uint64_t c = 0; c < s.k; c++)
                    if ((double)row[c] != wd[r * s.k + c])
                        fail_msg("embedding_row %s %llux%llu g %u [%llu, %llu]: %.9g, want %.9g", label(t), (unsigned long long)s.n,
                                 (unsigned long long)s.k, s.g, (unsigned long long)r, (unsigned long long)c, (double)row[c],
                                 wd[r * s.k + c]);
            }
            for (uint32_t rows = 1; rows <= 5; rows++) {
                std::vector<float> x(rows * s.k), bias(s.n), scratch(s.k);
                for (float &v : x) v = u(rng);
                for (float &v : bias) v = u(rng);
                // Outputs [o0, n) only, with and without a bias; the rest must stay poisoned.
                const uint64_t o0 = s.n > 2 ? 1 : 0;
                for (bool with_bias : {false, true}) {
                    const uint64_t stride = s.n + 2;
                    std::vector<float> y(rows * stride);
                    reference::poison(y.data(), y.size());
                    gpt::cpu::matmul_block(x.data(), rows, w, with_bias ? bias.data() : nullptr, o0, s.n, y.data(), stride,
                                           scratch.data());
                    for (uint32_t r = 0; r < rows; r++)
                        for (uint64_t o = 0; o < stride; o++) {
                            const float got = y[r * stride + o];
                            if (o < o0 || o >= s.n) {
                                if (!std::isnan(got)) fail_msg("matmul_block %s wrote output %llu outside its range", label(t), (unsigned long long)o);
                                continue;
                            }
                            double ref = with_bias ? bias[o] : 0, mag = std::fabs(ref);
                            for (uint64_t i = 0; i < s.k; i++) {
                                ref += (double)x[r * s.k + i] * wd[o * s.k + i];
                                mag += std::fabs((double)x[r * s.k + i] * wd[o * s.k + i]);
                            }
                            if (!(std::fabs(got - ref) <= (s.k + 3) * eps * mag + 1e-30))
                                fail_msg("matmul_block %s %llux%llu g %u, %u rows, row %u output %llu: %.9g, want %.9g", label(t),
                                         (unsigned long long)s.n, (unsigned long long)s.k, s.g, rows, r, (unsigned long long)o, got, ref);
                        }
                }
            }
        }
}

// ------------------------------------------------------------------------- whole models

// A fixture model (f32) rewritten with every matrix the rule quantizes as `t`, group g; the
// tensor map then holds the values decoded here. Returns how many tensors were quantized.
size_t quantize_model(fixture::Model &m, DType t, uint32_t g) {
    gpt::format::Writer w;
    m.config.to_metadata(w.metadata());
    size_t n = 0;
    for (const gpt::TensorSlot &slot : gpt::tensor_table(m.config)) {
        std::vector<float> &v = m.tensors.at(slot.name);
        if (!gpt::format::quantizable(slot.name, slot.shape, g)) {
            w.add_tensor(slot.name, DType::F32, slot.shape, v.data(), v.size() * 4);
            continue;
        }
        const uint64_t rows = slot.shape[0], cols = slot.shape[1];
        const std::vector<uint8_t> b = quantize(v, t, rows, cols, g);
        w.add_quantized(slot.name, t, slot.shape, g, [b](uint8_t *dst, uint64_t nbytes) {
            assert_int_equal(nbytes, b.size());
            std::memcpy(dst, b.data(), nbytes);
        });
        const std::vector<double> d = decode(b, t, rows, cols, g);
        for (size_t i = 0; i < v.size(); i++) v[i] = (float)d[i]; // exact: q * f16 fits a float
        n++;
    }
    m.file = w.write_memory();
    return n;
}

void check_model(fixture::Spec s, DType t, uint32_t g, size_t want_quantized, const char *what) {
    std::mt19937_64 rng(reference::sub_seed(what));
    s.seed = rng();
    s.context_length = 32;
    fixture::Model m = fixture::make(s);
    const size_t n = quantize_model(m, t, g);
    if (n != want_quantized) fail_msg("%s: %zu tensors quantized, want %zu", what, n, want_quantized);

    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    gpt_model *model = nullptr;
    if (gpt_model_load_from_memory(m.file.data(), m.file.size(), &mp, &model) != GPT_OK) fail_msg("%s: %s", what, gpt_last_error());
    gpt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(gpt_model_get_info(model, &info), GPT_OK);
    assert_int_equal(info.file_dtype, (uint32_t)t); // the embedding is quantized in every case here
    assert_int_equal(info.weight_dtype, (uint32_t)t);
    for (uint32_t threads : {1u, 2u}) {
        gpt_ctx_params cp;
        gpt_ctx_params_init(&cp);
        cp.n_threads = threads;
        gpt_ctx *ctx = nullptr;
        if (gpt_ctx_create(model, &cp, &ctx) != GPT_OK) fail_msg("%s: %s", what, gpt_last_error());
        std::uniform_int_distribution<int32_t> tok(0, (int32_t)s.vocab_size - 1);
        std::vector<int32_t> tokens(9);
        // A mixture of experts: tokens whose routing the reference does not find near-tied
        // (where f32 may choose another expert); a dense model takes the first draw.
        std::vector<double> ref;
        for (int attempt = 0; attempt < 20; attempt++) {
            for (int32_t &x : tokens) x = tok(rng);
            double gap = INFINITY;
            ref = reference::forward(m.config, m.tensors, tokens, reference::Layout(), &gap);
            if (gap >= 1e-5) break;
        }
        std::vector<float> logits(tokens.size() * s.vocab_size);
        reference::poison(logits.data(), logits.size());
        // Prefill of 5, then 4 decode steps: both matmul paths (rows > 4 and 1 row).
        if (gpt_forward(ctx, tokens.data(), 1, 5, GPT_FORWARD_ALL_LOGITS, logits.data()) != GPT_OK)
            fail_msg("%s: %s", what, gpt_ctx_last_error(ctx));
        for (size_t i = 5; i < tokens.size(); i++)
            if (gpt_forward(ctx, &tokens[i], 1, 1, 0, logits.data() + i * s.vocab_size) != GPT_OK)
                fail_msg("%s: %s", what, gpt_ctx_last_error(ctx));
        const std::string w = std::string(what) + " (" + std::to_string(threads) + " threads)";
        if (!reference::compare(logits.data(), ref.data(), tokens.size(), s.vocab_size).within(1e-4, w.c_str()))
            fail_msg("%s: logits differ from the reference on the dequantized weights", w.c_str());
        gpt_ctx_free(ctx);
    }
    gpt_model_free(model);
}

void test_llama_q8_q4(void **) {
    fixture::Spec s;
    s.arch = GPT_ARCH_LLAMA;
    // d_ff 80: ffn_down ([64, 80]) stays f32 for every group, ffn_gate_up [160, 64] is quantized.
    s.n_layers = 2, s.d_model = 64, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 80, s.vocab_size = 61;
    // Per layer qkv, out, gate_up (down kept); plus embedding and head.
    for (DType t : {DType::Q8, DType::Q4}) {
        check_model(s, t, 32, 2 * 3 + 2, t == DType::Q8 ? "llama q8 g32" : "llama q4 g32");
        check_model(s, t, 64, 2 * 3 + 2, t == DType::Q8 ? "llama q8 g64" : "llama q4 g64");
    }
    // Tied head (the quantized embedding table serves as the head too), q/k/v biases kept in
    // f32, every matrix quantized (d_ff 128).
    s.tied_head = true, s.qkv_bias = true, s.d_ff = 128;
    check_model(s, DType::Q4, 32, 1 + 2 * 4, "llama tied q4 g32");
    check_model(s, DType::Q8, 32, 1 + 2 * 4, "llama tied q8 g32");
}

void test_gpt2_q8_q4(void **) {
    fixture::Spec s;
    s.arch = GPT_ARCH_GPT2; // learned positions (a quantized table), biases, tied head
    s.n_layers = 2, s.d_model = 64, s.n_heads = 4, s.d_ff = 96, s.vocab_size = 53, s.tied_head = true;
    // tok_emb, pos_emb, per layer qkv, out, up ([96, 64]) and down ([64, 96]: 96 % 32 == 0).
    check_model(s, DType::Q8, 32, 2 + 2 * 4, "gpt2 q8 g32");
    check_model(s, DType::Q4, 32, 2 + 2 * 4, "gpt2 q4 g32");
}

// The mixtures of experts: the stacked experts (and a shared expert's matrices) quantized,
// the routers and the shared expert's gate kept f32 (format/quantize.h).
void test_moe_q8_q4(void **) {
    fixture::Spec s;
    s.n_layers = 2, s.d_model = 64, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 64, s.vocab_size = 61;
    s.n_experts = 6, s.n_experts_used = 2, s.d_ff_expert = 32;
    // Embedding, head, per layer qkv, out, experts' gate_up and down (router kept).
    for (gpt_arch a : {GPT_ARCH_MIXTRAL, GPT_ARCH_OLMOE, GPT_ARCH_QWEN3_MOE}) {
        s.arch = a;
        const std::string n = gpt::arch_to_name(a);
        check_model(s, DType::Q8, 32, 2 + 2 * 4, (n + " q8 g32").c_str());
        check_model(s, DType::Q4, 32, 2 + 2 * 4, (n + " q4 g32").c_str());
    }
    // Qwen2-MoE: a shared expert (gate_up and down quantized, its gate kept), q/k/v biases, a
    // dense second layer (gate_up, down).
    s.arch = GPT_ARCH_QWEN2_MOE, s.qkv_bias = true, s.d_ff_shared = 64, s.moe_layers = {1, 0};
    check_model(s, DType::Q4, 32, 2 + 6 + 4, "qwen2_moe q4 g32");
    // Group 64: the experts' down ([6 x 64, 32]) stays f32.
    check_model(s, DType::Q8, 64, 2 + 5 + 4, "qwen2_moe q8 g64");
}

} // namespace

int main(void) {
    reference::test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantizer_rounds_to_nearest),
        cmocka_unit_test(test_quantizer_refuses),
        cmocka_unit_test(test_quantizer_threads),
        cmocka_unit_test(test_cpu_quant_kernels),
        cmocka_unit_test(test_llama_q8_q4),
        cmocka_unit_test(test_gpt2_q8_q4),
        cmocka_unit_test(test_moe_q8_q4),
    };
    return cmocka_run_group_tests_name("quant", tests, nullptr, nullptr);
}
