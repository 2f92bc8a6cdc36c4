// hf_quantized.cpp - GPTQ / AWQ quantized linears: checks, dequantization, exact repacking
// (see hf_quantized.h for the layouts).
#include "convert/hf_quantized.h"

#include "convert/hf_source.h"
#include "core/error.h"
#include "core/half.h"
#include "core/quant.h"

#include <cmath>
#include <cstring>

namespace gpt::convert {

namespace {

// Position inside an AWQ word of output 8c + t (AutoAWQ packs outputs 0, 2, 4, 6, 1, 3, 5, 7).
constexpr unsigned kAwqOrder[8] = {0, 4, 1, 5, 2, 6, 3, 7};

uint32_t word(const StTensor &t, uint64_t i) {
    uint32_t w;
    std::memcpy(&w, t.data + 4 * i, 4);
    return w;
}

float scale_at(const StTensor &t, uint64_t i) {
    if (t.dtype == StDType::F32) {
        float f;
        std::memcpy(&f, t.data + 4 * i, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, t.data + 2 * i, 2);
    return t.dtype == StDType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

bool is_gptq(const QuantLinear &q) { return q.cfg.method == QuantMethod::GPTQ; }
uint32_t per_word(const QuantLinear &q) { return 32 / q.cfg.bits; }

// The codes, [N][K], each 0 .. 2^bits - 1, read in storage order.
std::vector<uint8_t> decode_codes(const QuantLinear &q) {
    const uint64_t N = q.rows, K = q.cols;
    const uint32_t bits = q.cfg.bits, mask = (1u << bits) - 1, p = per_word(q);
    std::vector<uint8_t> c(N * K);
    if (is_gptq(q)) {
        for (uint64_t kw = 0; kw < K / p; kw++)
            for (uint64_t n = 0; n < N; n++) {
                const uint32_t w = word(*q.qweight, kw * N + n);
                for (uint32_t e = 0; e < p; e++) c[n * K + kw * p + e] = (uint8_t)((w >> (e * bits)) & mask);
            }
    } else {
        for (uint64_t k = 0; k < K; k++)
            for (uint64_t cw = 0; cw < N / 8; cw++) {
                const uint32_t w = word(*q.qweight, k * (N / 8) + cw);
                for (uint32_t t = 0; t < 8; t++) c[(cw * 8 + t) * K + k] = (uint8_t)((w >> (4 * kAwqOrder[t])) & 15);
            }
    }
    return c;
}

// The zeros, [n_groups][N], v1's + 1 applied.
std::vector<int32_t> decode_zeros(const QuantLinear &q) {
    const uint64_t N = q.rows, G = q.n_groups;
    const uint32_t bits = q.cfg.bits, mask = (1u << bits) - 1, p = per_word(q);
    const int32_t plus = q.cfg.zeros_minus_one ? 1 : 0;
    std::vector<int32_t> z(G * N);
    for (uint64_t j = 0; j < G; j++)
        for (uint64_t nw = 0; nw < N / p; nw++) {
            const uint32_t w = word(*q.qzeros, j * (N / p) + nw);
            for (uint32_t e = 0; e < p; e++) {
                const uint32_t pos = is_gptq(q) ? e : kAwqOrder[e];
                z[j * N + nw * p + e] = (int32_t)((w >> (pos * bits)) & mask) + plus;
            }
        }
    return z;
}

// The group of each input column.
std::vector<uint32_t> groups_of(const QuantLinear &q) {
    std::vector<uint32_t> g(q.cols);
    for (uint64_t k = 0; k < q.cols; k++) g[k] = q.g_idx ? word(*q.g_idx, k) : (uint32_t)(k / q.group);
    return g;
}

void expect_shape(const StTensor &t, const std::vector<uint64_t> &want, const char *why) {
    if (t.shape != want)
        fail(GPT_ERR_FORMAT, "%s: tensor '%s' has shape %s, config.json and the quantization_config imply %s (%s)", t.file.c_str(),
             t.name.c_str(), t.shape_str().c_str(), shape_str(want).c_str(), why);
}

void expect_i32(const StTensor &t) {
    if (t.dtype != StDType::I32)
        fail(GPT_ERR_FORMAT, "%s: tensor '%s' has dtype %s; packed GPTQ/AWQ tensors are I32", t.file.c_str(), t.name.c_str(),
             st_dtype_name(t.dtype));
}

const StTensor &need(const SafetensorsSet &st, const std::string &name, const std::string &file) {
    const StTensor *t = st.find(name);
    if (!t) fail(GPT_ERR_FORMAT, "%s: tensor '%s' is missing (its .qweight is there)", file.c_str(), name.c_str());
    return *t;
}

} // namespace

std::vector<const StTensor *> QuantLinear::tensors() const {
    std::vector<const StTensor *> v = {qweight, qzeros, scales};
    if (g_idx) v.push_back(g_idx);
    return v;
}

std::shared_ptr<const QuantLinear> open_quant_linear(const SafetensorsSet &st, const QuantConfig &cfg, const std::string &base,
                                                     uint64_t rows, uint64_t cols) {
    auto q = std::make_shared<QuantLinear>();
    q->base = base;
    q->cfg = cfg;
    q->rows = rows;
    q->cols = cols;
    q->qweight = st.find(base + ".qweight");
    if (!q->qweight) fail(GPT_ERR_INTERNAL, "converter bug: '%s.qweight' is not there", base.c_str());
    const StTensor &qw = *q->qweight;
    q->file = qw.file;
    const char *f = qw.file.c_str(), *b = base.c_str();
    const uint64_t N = rows, K = cols, p = per_word(*q);
    q->group = cfg.group < 0 ? K : (uint64_t)cfg.group;
    if (K % q->group)
        fail(GPT_ERR_FORMAT, "%s: tensor '%s.qweight': quantization_config.group_size %lld does not divide its %llu input columns", f, b,
             (long long)cfg.group, (unsigned long long)K);
    q->n_groups = K / q->group;
    const uint64_t G = q->n_groups;
    q->qzeros = &need(st, base + ".qzeros", f);
    q->scales = &need(st, base + ".scales", f);
    expect_i32(qw);
    expect_i32(*q->qzeros);
    if (cfg.method == QuantMethod::GPTQ) {
        if (K % p || N % p)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s.qweight': GPTQ packs %llu codes a word, which must divide both %llu inputs and %llu outputs",
                 f, b, (unsigned long long)p, (unsigned long long)K, (unsigned long long)N);
        expect_shape(qw, {K / p, N}, "[in / codes a word, out]");
        expect_shape(*q->qzeros, {G, N / p}, "[groups, out / codes a word]");
    } else {
        if (N % 8)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s.qweight': AWQ packs 8 outputs a word; %llu outputs are not a multiple of 8", f, b,
                 (unsigned long long)N);
        expect_shape(qw, {K, N / 8}, "[in, out / 8]");
        expect_shape(*q->qzeros, {G, N / 8}, "[groups, out / 8]");
    }
    const StTensor &sc = *q->scales;
    if (sc.dtype != StDType::F16 && sc.dtype != StDType::BF16 && sc.dtype != StDType::F32)
        fail(GPT_ERR_FORMAT, "%s: tensor '%s' has dtype %s; scales must be F16, BF16 or F32", sc.file.c_str(), sc.name.c_str(),
             st_dtype_name(sc.dtype));
    expect_shape(sc, {G, N}, "[groups, out]");
    q->f16_scales = sc.dtype == StDType::F16;
    for (uint64_t i = 0; i < G * N; i++) {
        const float s = scale_at(sc, i);
        if (!std::isfinite(s))
            fail(GPT_ERR_FORMAT, "%s: tensor '%s' holds %g at group %llu, output %llu; scales must be finite", sc.file.c_str(),
                 sc.name.c_str(), (double)s, (unsigned long long)(i / N), (unsigned long long)(i % N));
    }
    if (cfg.method == QuantMethod::GPTQ) q->g_idx = st.find(base + ".g_idx");
    if (q->g_idx) {
        const StTensor &gi = *q->g_idx;
        expect_i32(gi);
        expect_shape(gi, {K}, "[in]");
        for (uint64_t k = 0; k < K; k++) {
            const uint32_t g = word(gi, k); // negative values wrap above G
            if (g >= G)
                fail(GPT_ERR_FORMAT, "%s: tensor '%s' gives input %llu group %d; there are %llu groups", gi.file.c_str(), gi.name.c_str(),
                     (unsigned long long)k, (int)(int32_t)g, (unsigned long long)G);
            if (g != k / q->group) q->trivial_order = false;
        }
    } else if (cfg.method == QuantMethod::GPTQ && cfg.desc_act) {
        fail(GPT_ERR_FORMAT, "%s: tensor '%s.g_idx' is missing; quantization_config.desc_act is true, so the group order is unknown", f, b);
    }
    const int32_t mid = 1 << (cfg.bits - 1);
    for (int32_t z : decode_zeros(*q))
        if (z != mid) {
            q->zeros_mid = false;
            break;
        }
    return q;
}

bool repacks_exactly(const QuantLinear &q, DType t, uint32_t group) {
    if (!q.trivial_order || !q.f16_scales || group != q.group) return false;
    if (t == DType::Q4) return q.cfg.bits == 4 && q.zeros_mid;
    if (t == DType::Q8) return q.cfg.bits == 4 || q.zeros_mid; // 4-bit: code - zero in -16..15
    return false;
}

void dequantize_linear(const QuantLinear &q, float *out) {
    const uint64_t N = q.rows, K = q.cols;
    const std::vector<uint8_t> c = decode_codes(q);
    const std::vector<int32_t> z = decode_zeros(q);
    const std::vector<uint32_t> g = groups_of(q);
    std::vector<float> s(q.n_groups * N);
    for (uint64_t i = 0; i < s.size(); i++) s[i] = scale_at(*q.scales, i);
    for (uint64_t n = 0; n < N; n++)
        for (uint64_t k = 0; k < K; k++) {
            const uint64_t j = (uint64_t)g[k] * N + n;
            out[n * K + k] = (float)((int32_t)c[n * K + k] - z[j]) * s[j];
        }
}

void repack_linear(const QuantLinear &q, DType t, uint8_t *ints, uint8_t *scales) {
    if (!repacks_exactly(q, t, (uint32_t)q.group))
        fail(GPT_ERR_INTERNAL, "converter bug: '%s' does not repack exactly into %s", q.base.c_str(), dtype_name(t));
    const uint64_t N = q.rows, K = q.cols, G = q.n_groups, R = packed_row_bytes(t, K);
    const std::vector<uint8_t> c = decode_codes(q);
    const std::vector<int32_t> z = decode_zeros(q);
    for (uint64_t n = 0; n < N; n++) {
        uint8_t *row = ints + n * R;
        if (t == DType::Q4) std::memset(row, 0, R);
        for (uint64_t k = 0; k < K; k++) {
            const int32_t v = (int32_t)c[n * K + k] - z[(k / q.group) * N + n];
            if (t == DType::Q8) row[k] = (uint8_t)(int8_t)v;
            else row[k / 2] |= (uint8_t)((v + 8) << (4 * (k % 2))); // q + 8, even k in the low nibble
        }
        for (uint64_t j = 0; j < G; j++) std::memcpy(scales + 2 * (n * G + j), q.scales->data + 2 * (j * N + n), 2);
    }
}

bool is_zero_bias_of_quantized(const SafetensorsSet &st, const std::string &name) {
    if (!ends_with(name, ".bias")) return false;
    if (!st.find(name.substr(0, name.size() - 5) + ".qweight")) return false;
    const StTensor *t = st.find(name);
    if (!t || (t->dtype != StDType::F16 && t->dtype != StDType::BF16 && t->dtype != StDType::F32)) return false;
    for (uint64_t i = 0; i < t->numel(); i++)
        if (scale_at(*t, i) != 0.0f) return false;
    return true;
}

} // namespace gpt::convert
