// test_convert_gptq.cpp - `gpt convert` of GPTQ and AWQ checkpoints (tools/convert/hf_quantized.h,
// quant_import.h). Tiny Llama checkpoints are drawn (tests/support/hf_fixture) and their seven
// linears a layer replaced by random codes, zeros and f16 scales that this file packs itself,
// from the documented layouts (AutoGPTQ's qweight/qzeros words, v1's zero - 1, AutoAWQ's
// 0 2 4 6 1 3 5 7 interleave). Each conversion is checked
//   - tensor by tensor: every fused matrix read back through the library's dequantizer equals
//     (code - zero) * scale computed here in double (exactly for the exact repacks and for
//     f32; rounded once for f16; within round-to-nearest's half step for a requantized q4);
//   - model against model: its CPU logits against those of the f32 model converted from a plain
//     float checkpoint holding the same dequantized weights;
// and hostile checkpoints (shapes, dtypes, NaN scales, g_idx out of range, unsupported
// configs) are refused with the tensor or key named and nothing written.
#include "gpt.h"
#include "convert/convert.h"
#include "core/error.h"
#include "core/half.h"
#include "core/quant.h"
#include "format/reader.h"
#include "dtype_values.h"
#include "engine.h"
#include "files.h"
#include "hf_fixture.h"
#include "reference.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <sys/stat.h>
#include <vector>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

using gpt::DType;
using nlohmann::json;
namespace cv = gpt::convert;
using fixture::HfModel;
using fixture::HfSpec;
using fixture::StEntry;

namespace {

// ------------------------------------------------------------------ the independent packer

struct QSpec {
    std::string method = "gptq"; // gptq | awq
    uint32_t bits = 4;
    int64_t group = 128;         // -1: the whole row
    bool sym = true;
    bool v1 = true;              // gptq checkpoint_format "gptq" (qzeros hold zero - 1) or "gptq_v2"
    bool act_order = false;      // desc_act with a g_idx that scatters the groups along K
    bool g_idx = true;           // gptq: write g_idx (trivial unless act_order)
};

// One quantized linear, drawn: W[n][k] = (codes[n][k] - zeros[g][n]) * scales[g][n], g = gidx[k].
struct Linear {
    uint64_t N = 0, K = 0, G = 0;
    std::vector<uint32_t> codes;   // [N][K]
    std::vector<uint32_t> zeros;   // [G][N], the true zero (v1 stores it minus one)
    std::vector<uint16_t> scales;  // [G][N], f16 bits
    std::vector<uint32_t> gidx;    // [K]
    double w(uint64_t n, uint64_t k) const {
        const uint64_t j = (uint64_t)gidx[k] * N + n;
        return ((double)codes[n * K + k] - (double)zeros[j]) * (double)gpt::f16_to_f32(scales[j]);
    }
};

Linear draw_linear(std::mt19937_64 &rng, uint64_t N, uint64_t K, const QSpec &q) {
    Linear l;
    l.N = N, l.K = K;
    const uint64_t g = q.group < 0 ? K : (uint64_t)q.group;
    l.G = K / g;
    const uint32_t levels = 1u << q.bits, mid = levels / 2;
    for (uint64_t i = 0; i < N * K; i++) l.codes.push_back((uint32_t)(rng() % levels));
    // v1 stores zero - 1, so a v1 zero is at least 1.
    const uint32_t zlo = q.method == "gptq" && q.v1 ? 1 : 0;
    std::uniform_real_distribution<float> s(q.bits == 4 ? 0.008f : 0.0005f, q.bits == 4 ? 0.025f : 0.0015f);
    for (uint64_t i = 0; i < l.G * N; i++) {
        l.zeros.push_back(q.sym ? mid : zlo + (uint32_t)(rng() % (levels - zlo)));
        l.scales.push_back(gpt::f32_to_f16(s(rng)));
    }
    for (uint64_t k = 0; k < K; k++) l.gidx.push_back((uint32_t)(k / g));
    if (q.act_order) std::shuffle(l.gidx.begin(), l.gidx.end(), rng); // each group keeps g inputs, scattered
    return l;
}

StEntry i32_entry(const std::string &name, std::vector<uint64_t> shape, const std::vector<uint32_t> &words) {
    StEntry e{name, "I32", std::move(shape), {}};
    e.bytes.resize(words.size() * 4);
    std::memcpy(e.bytes.data(), words.data(), e.bytes.size());
    return e;
}

// AutoAWQ packs outputs 8c + kAwqPack[i] into nibble i of a word.
constexpr unsigned kAwqPack[8] = {0, 2, 4, 6, 1, 3, 5, 7};

std::vector<StEntry> pack_linear(const std::string &base, const Linear &l, const QSpec &q) {
    const uint64_t N = l.N, K = l.K, G = l.G;
    std::vector<StEntry> out;
    StEntry sc{base + ".scales", "F16", {G, N}, {}};
    sc.bytes.resize(G * N * 2);
    std::memcpy(sc.bytes.data(), l.scales.data(), sc.bytes.size());
    if (q.method == "gptq") {
        const uint32_t p = 32 / q.bits;
        std::vector<uint32_t> qw((K / p) * N, 0), qz(G * (N / p), 0);
        for (uint64_t n = 0; n < N; n++)
            for (uint64_t k = 0; k < K; k++) qw[(k / p) * N + n] |= l.codes[n * K + k] << (q.bits * (k % p));
        for (uint64_t j = 0; j < G; j++)
            for (uint64_t n = 0; n < N; n++) qz[j * (N / p) + n / p] |= (l.zeros[j * N + n] - (q.v1 ? 1 : 0)) << (q.bits * (n % p));
        out.push_back(i32_entry(base + ".qweight", {K / p, N}, qw));
        out.push_back(i32_entry(base + ".qzeros", {G, N / p}, qz));
        if (q.g_idx || q.act_order) out.push_back(i32_entry(base + ".g_idx", {K}, l.gidx));
    } else {
        std::vector<uint32_t> qw(K * (N / 8), 0), qz(G * (N / 8), 0);
        for (uint64_t c = 0; c < N / 8; c++)
            for (unsigned i = 0; i < 8; i++) {
                const uint64_t n = 8 * c + kAwqPack[i];
                for (uint64_t k = 0; k < K; k++) qw[k * (N / 8) + c] |= l.codes[n * K + k] << (4 * i);
                for (uint64_t j = 0; j < G; j++) qz[j * (N / 8) + c] |= l.zeros[j * N + n] << (4 * i);
            }
        out.push_back(i32_entry(base + ".qweight", {K, N / 8}, qw));
        out.push_back(i32_entry(base + ".qzeros", {G, N / 8}, qz));
    }
    out.push_back(sc);
    return out;
}

json quant_config(const QSpec &q) {
    if (q.method == "awq") return {{"quant_method", "awq"}, {"bits", 4}, {"group_size", q.group}, {"zero_point", true}, {"version", "gemm"}};
    return {{"quant_method", "gptq"}, {"bits", q.bits}, {"group_size", q.group}, {"sym", q.sym}, {"desc_act", q.act_order},
            {"checkpoint_format", q.v1 ? "gptq" : "gptq_v2"}};
}

// A drawn Llama whose linears are quantized.
struct QModel {
    HfModel m;                             // the float model (its linears' .weight unused)
    QSpec q;
    std::map<std::string, Linear> linears; // by HF base name
    std::vector<StEntry> entries;          // the quantized checkpoint
    json config;                           // config.json with quantization_config
};

const char *kLinears[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                          "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};

QModel make_quantized(const HfSpec &spec, const QSpec &q, uint64_t seed) {
    QModel qm{fixture::make_hf(spec), q, {}, {}, {}};
    std::mt19937_64 rng(seed);
    std::vector<std::string> weights;
    for (uint32_t i = 0; i < spec.layers; i++)
        for (const char *l : kLinears) {
            const std::string base = "model.layers." + std::to_string(i) + "." + l;
            const std::vector<uint64_t> &shape = qm.m.shapes.at(base + ".weight");
            qm.linears[base] = draw_linear(rng, shape[0], shape[1], q);
            weights.push_back(base + ".weight");
        }
    for (const StEntry &e : qm.m.entries())
        if (std::find(weights.begin(), weights.end(), e.name) == weights.end()) qm.entries.push_back(e);
    for (const auto &[base, l] : qm.linears)
        for (StEntry &e : pack_linear(base, l, q)) qm.entries.push_back(std::move(e));
    qm.config = json::parse(qm.m.config);
    qm.config["quantization_config"] = quant_config(q);
    return qm;
}

// ------------------------------------------------------------------ running

struct Scratch {
    std::string root, src, ref, out;
    Scratch() : root(files::make_temp_dir("gpt-gptq-test-")), src(root + "/src"), ref(root + "/ref"), out(root + "/out") {
        mkdir(src.c_str(), 0755);
        mkdir(ref.c_str(), 0755);
        mkdir(out.c_str(), 0755);
    }
    ~Scratch() { files::remove_tree(root); }
};

struct Run {
    gpt_status status = GPT_OK;
    std::string message;
    std::vector<std::string> warnings;
    cv::ConvertResult result;
};

Run convert(const std::string &src, const std::string &out, uint32_t dtype, uint32_t group = 0) {
    Run r;
    cv::ConvertOptions o;
    o.src = src;
    o.out = out;
    o.dtype = dtype;
    o.group = group;
    o.force = true;
    o.verify_threads = 2;
    o.on_warning = [&](const std::string &w) { r.warnings.push_back(w); };
    try {
        r.result = cv::convert_model(o);
    } catch (const gpt::Error &e) {
        r.status = e.status();
        r.message = e.what();
    }
    return r;
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

// A matrix of the output file widened to f32 by the library's dequantizer.
std::vector<float> read_matrix(const gpt::format::WeightFile &f, const std::string &name, DType *dtype, uint32_t *group) {
    const gpt::format::TensorEntry *t = f.find(name);
    if (!t || t->ndim != 2) fail_msg("tensor '%s' missing or not a matrix", name.c_str());
    gpt::Weight w;
    w.data = f.data(*t);
    w.dtype = t->dtype;
    w.rows = t->dims[0];
    w.cols = t->dims[1];
    w.group = t->group;
    *dtype = t->dtype;
    *group = t->group;
    std::vector<float> out(w.rows * w.cols);
    for (uint64_t r = 0; r < w.rows; r++) gpt::weight_row_f32(w, r, &out[r * w.cols]);
    return out;
}

// Each fused tensor of our file as the stacked linears it is made of.
std::map<std::string, std::vector<std::string>> fused_tensors(uint32_t layers) {
    std::map<std::string, std::vector<std::string>> f;
    for (uint32_t i = 0; i < layers; i++) {
        const std::string h = "model.layers." + std::to_string(i) + ".", o = "blk." + std::to_string(i) + ".";
        f[o + "attn_qkv.weight"] = {h + "self_attn.q_proj", h + "self_attn.k_proj", h + "self_attn.v_proj"};
        f[o + "attn_out.weight"] = {h + "self_attn.o_proj"};
        f[o + "ffn_gate_up.weight"] = {h + "mlp.gate_proj", h + "mlp.up_proj"};
        f[o + "ffn_down.weight"] = {h + "mlp.down_proj"};
    }
    return f;
}

enum class Expect { EXACT, F16_ROUNDED, REQUANTIZED };

// The output's linears against (code - zero) * scale in double. REQUANTIZED: within half a
// step of round to nearest at `group` (scale max|w| / 7 of the group, rounded to f16).
void check_linears(const QModel &qm, const std::string &path, DType want_dtype, uint32_t want_group, Expect how, const char *what) {
    gpt::format::ReadOptions ro;
    auto f = gpt::format::WeightFile::open(path, ro); // checks every crc32
    for (const auto &[name, parts] : fused_tensors(qm.m.spec.layers)) {
        DType dt;
        uint32_t group;
        const std::vector<float> got = read_matrix(*f, name, &dt, &group);
        if (dt != want_dtype) fail_msg("%s: '%s' is %s, expected %s", what, name.c_str(), gpt::dtype_name(dt), gpt::dtype_name(want_dtype));
        if (gpt::is_quantized(dt) && group != want_group) fail_msg("%s: '%s' has group %u, expected %u", what, name.c_str(), group, want_group);
        uint64_t r0 = 0;
        for (const std::string &base : parts) {
            const Linear &l = qm.linears.at(base);
            for (uint64_t n = 0; n < l.N; n++)
                for (uint64_t k0 = 0; k0 < l.K; k0 += want_group ? want_group : l.K) {
                    const uint64_t k1 = std::min<uint64_t>(l.K, k0 + (want_group ? want_group : l.K));
                    double amax = 0;
                    for (uint64_t k = k0; k < k1; k++) amax = std::max(amax, std::fabs(l.w(n, k)));
                    for (uint64_t k = k0; k < k1; k++) {
                        const double want = l.w(n, k), g = got[(r0 + n) * l.K + k];
                        bool ok;
                        if (how == Expect::EXACT) ok = g == want;
                        else if (how == Expect::F16_ROUNDED) ok = g == (double)gpt::f16_to_f32(gpt::f32_to_f16((float)want));
                        else ok = std::fabs(g - want) <= amax / 7 * (0.5 + 1.0 / 512) + 1e-7;
                        if (!ok)
                            fail_msg("%s: '%s' (%s) row %llu col %llu is %.9g, the source's (code - zero) * scale is %.9g", what, name.c_str(),
                                     base.c_str(), (unsigned long long)n, (unsigned long long)k, g, want);
                    }
                }
            r0 += l.N;
        }
    }
}

// The f32 model of the same weights: the quantized linears dequantized here, the embedding and
// head as the converted file holds them (q4/q8 there too), everything else as drawn.
std::string write_reference(const Scratch &sc, const QModel &qm, const std::string &converted) {
    gpt::format::ReadOptions ro;
    auto f = gpt::format::WeightFile::open(converted, ro);
    std::vector<StEntry> es;
    auto as_f32 = [](const std::string &name, std::vector<uint64_t> shape, const std::vector<float> &v) {
        return StEntry{name, "F32", std::move(shape), fixture::encode(v, DType::F32)};
    };
    for (const StEntry &e : qm.entries) {
        if (contains(e.name, ".qweight") || contains(e.name, ".qzeros") || contains(e.name, ".scales") || contains(e.name, ".g_idx")) continue;
        const char *ours = e.name == "model.embed_tokens.weight" ? "tok_emb.weight" : e.name == "lm_head.weight" ? "lm_head.weight" : nullptr;
        if (ours) {
            DType dt;
            uint32_t group;
            es.push_back(as_f32(e.name, e.shape, read_matrix(*f, ours, &dt, &group)));
        } else {
            es.push_back(e);
        }
    }
    for (const auto &[base, l] : qm.linears) {
        std::vector<float> v(l.N * l.K);
        for (uint64_t n = 0; n < l.N; n++)
            for (uint64_t k = 0; k < l.K; k++) v[n * l.K + k] = (float)l.w(n, k);
        es.push_back(as_f32(base + ".weight", {l.N, l.K}, v));
    }
    fixture::write_hf_dir(sc.ref, qm.m.config, es, 1);
    const std::string out = sc.root + "/reference.gpt";
    const Run r = convert(sc.ref, out, GPT_DTYPE_F32);
    if (r.status != GPT_OK) fail_msg("reference conversion: %s", r.message.c_str());
    return out;
}

void expect_logits_close(const std::vector<float> &got, const std::vector<float> &ref, double tol, const char *what) {
    double max_diff = 0, max_ref = 0;
    for (size_t i = 0; i < got.size(); i++) {
        if (!std::isfinite(got[i])) fail_msg("%s: logit %zu is %g", what, i, (double)got[i]);
        max_diff = std::max(max_diff, std::fabs((double)got[i] - ref[i]));
        max_ref = std::max(max_ref, std::fabs((double)ref[i]));
    }
    assert_true(max_ref > 0.1);
    std::printf("# %s: logits max |diff| / max |ref| = %.3g\n", what, max_diff / max_ref);
    if (max_diff / max_ref > tol) fail_msg("%s: logits differ from the f32 model's: %.3g > %g", what, max_diff / max_ref, tol);
}

struct Case {
    uint32_t dtype;      // requested (GPT_DTYPE_AUTO: the default)
    DType want;          // what the linears must be written as
    uint32_t group;      // expected group of a quantized output (0: float)
    Expect how;
    double logit_tol;    // against the f32 model of the same weights (0: not compared)
    const char *warning; // a fragment one warning must hold (nullptr: none required)
};

void check_import(const HfSpec &spec, const QSpec &q, std::initializer_list<Case> cases, const char *label) {
    Scratch sc;
    const QModel qm = make_quantized(spec, q, reference::sub_seed(label));
    fixture::write_hf_dir(sc.src, qm.config.dump(), qm.entries, 1);
    std::mt19937_64 rng(reference::sub_seed(label) + 1);
    std::vector<int32_t> toks;
    for (int i = 0; i < 6; i++) toks.push_back((int32_t)(rng() % spec.vocab));
    for (const Case &c : cases) {
        char what[200];
        std::snprintf(what, sizeof what, "%s, --dtype %s", label, c.dtype == GPT_DTYPE_AUTO ? "default" : gpt::dtype_name((DType)c.dtype));
        const std::string path = sc.out + "/model.gpt";
        const Run r = convert(sc.src, path, c.dtype);
        if (r.status != GPT_OK) fail_msg("%s: %s", what, r.message.c_str());
        for (const std::string &w : r.warnings) std::printf("# %s: warning: %s\n", what, w.c_str());
        if (c.warning && std::none_of(r.warnings.begin(), r.warnings.end(), [&](const std::string &w) { return contains(w, c.warning); }))
            fail_msg("%s: no warning says \"%s\"", what, c.warning);
        check_linears(qm, path, c.want, c.group, c.how, what);
        // An exact case must have been the repack (codes and scales copied), not a requantization.
        const size_t fused = 4 * spec.layers;
        if (gpt::is_quantized(c.want) && c.how == Expect::EXACT && (r.result.n_repacked != fused || r.result.n_requantized))
            fail_msg("%s: %zu tensors repacked, %zu requantized; expected %zu and 0", what, r.result.n_repacked, r.result.n_requantized, fused);
        if (!gpt::is_quantized(c.want) && r.result.n_dequantized != fused)
            fail_msg("%s: %zu tensors dequantized, expected %zu", what, r.result.n_dequantized, fused);
        if (c.how == Expect::REQUANTIZED && r.result.n_requantized != fused)
            fail_msg("%s: %zu tensors requantized, expected %zu", what, r.result.n_requantized, fused);
        if (c.logit_tol > 0) {
            const std::string ref = write_reference(sc, qm, path);
            expect_logits_close(engine::cpu_logits(path, toks, spec.vocab), engine::cpu_logits(ref, toks, spec.vocab), c.logit_tol, what);
        }
    }
}

HfSpec llama(uint32_t d, uint32_t heads, uint32_t kv, uint32_t ff) {
    HfSpec s;
    s.type = "llama";
    s.d = d, s.heads = heads, s.kv = kv, s.ff = ff, s.layers = 2, s.vocab = 61, s.ctx = 16;
    s.dtype = DType::F16;
    return s;
}

constexpr uint32_t AUTO = GPT_DTYPE_AUTO;

// ------------------------------------------------------------------ the exact imports

void test_gptq_v1_sym4_group128(void **) {
    QSpec q; // gptq v1, 4-bit, symmetric, group 128, trivial g_idx written
    check_import(llama(128, 4, 2, 384), q,
                 {{AUTO, DType::Q4, 128, Expect::EXACT, 1e-4, nullptr},
                  {GPT_DTYPE_Q8, DType::Q8, 128, Expect::EXACT, 1e-4, nullptr},
                  {GPT_DTYPE_F32, DType::F32, 0, Expect::EXACT, 1e-4, nullptr}},
                 "gptq v1 sym 4-bit group 128");
}

void test_gptq_v2_sym4_group32_odd(void **) {
    QSpec q;
    q.v1 = false, q.group = 32, q.g_idx = false;
    check_import(llama(96, 3, 1, 160), q, {{AUTO, DType::Q4, 32, Expect::EXACT, 1e-4, nullptr}}, "gptq v2 sym 4-bit group 32, d 96, ff 160");
}

void test_gptq_asym4(void **) {
    QSpec q;
    q.sym = false, q.group = 32;
    check_import(llama(96, 3, 1, 160), q,
                 {{AUTO, DType::Q8, 32, Expect::EXACT, 1e-4, nullptr},
                  {GPT_DTYPE_Q4, DType::Q4, 32, Expect::REQUANTIZED, 0, "requantized to q4 group 32"},
                  {GPT_DTYPE_F16, DType::F16, 0, Expect::F16_ROUNDED, 0, nullptr}},
                 "gptq v1 asym 4-bit group 32");
}

void test_gptq_sym8_group64(void **) {
    QSpec q;
    q.bits = 8, q.group = 64, q.v1 = false;
    check_import(llama(128, 4, 2, 192), q, {{AUTO, DType::Q8, 64, Expect::EXACT, 1e-4, nullptr}}, "gptq v2 sym 8-bit group 64");
}

void test_gptq_act_order(void **) {
    QSpec q;
    q.act_order = true, q.group = 32;
    check_import(llama(96, 3, 1, 160), q,
                 {{AUTO, DType::F16, 0, Expect::F16_ROUNDED, 0, "act-order"},
                  {GPT_DTYPE_F32, DType::F32, 0, Expect::EXACT, 1e-4, "act-order"}},
                 "gptq v1 sym 4-bit group 32, desc_act");
}

void test_awq(void **) {
    QSpec q;
    q.method = "awq", q.sym = false, q.group = 32;
    check_import(llama(96, 3, 1, 160), q,
                 {{AUTO, DType::Q8, 32, Expect::EXACT, 1e-4, nullptr}, {GPT_DTYPE_F32, DType::F32, 0, Expect::EXACT, 0, nullptr}},
                 "awq gemm 4-bit group 32");
    q.group = 128;
    check_import(llama(128, 4, 2, 256), q, {{AUTO, DType::Q8, 128, Expect::EXACT, 1e-4, nullptr}}, "awq gemm 4-bit group 128");
}

void test_whole_row_group(void **) {
    QSpec q;
    q.group = -1; // K is 128 for most linears, 384 for down_proj: no one group to write
    check_import(llama(128, 4, 2, 384), q, {{GPT_DTYPE_F32, DType::F32, 0, Expect::EXACT, 1e-4, nullptr}}, "gptq group -1 (whole row)");
    Scratch sc;
    const QModel qm = make_quantized(llama(128, 4, 2, 384), q, 7);
    fixture::write_hf_dir(sc.src, qm.config.dump(), qm.entries, 1);
    const Run r = convert(sc.src, sc.out + "/m.gpt", AUTO);
    if (r.status != GPT_ERR_UNSUPPORTED || !contains(r.message, "group_size -1") || !contains(r.message, "--dtype f16"))
        fail_msg("group -1 by default: %s", r.message.c_str());
}

// ------------------------------------------------------------------ hostile checkpoints

StEntry &entry(std::vector<StEntry> &es, const std::string &name) {
    for (StEntry &e : es)
        if (e.name == name) return e;
    fail_msg("no entry %s", name.c_str());
    std::abort();
}

void test_hostile(void **) {
    QSpec q;
    q.group = 32;
    const QModel base = make_quantized(llama(96, 3, 1, 160), q, 11);
    const std::string L = "model.layers.1.self_attn.k_proj", D = "model.layers.0.mlp.down_proj";
    struct Lie {
        const char *what;
        std::function<void(std::vector<StEntry> &, json &)> mutate;
        std::vector<std::string> named; // fragments the message must hold
    };
    const std::vector<Lie> lies = {
        {"qweight shape", [&](auto &es, auto &) { entry(es, L + ".qweight").shape = {4, 96}; }, {L + ".qweight", "[4, 96]", "[12, 32]"}},
        {"qweight dtype", [&](auto &es, auto &) { entry(es, L + ".qweight").dtype = "F32"; }, {L + ".qweight", "F32", "I32"}},
        {"qzeros shape", [&](auto &es, auto &) { entry(es, L + ".qzeros").shape = {4, 3}; entry(es, L + ".qzeros").bytes.resize(48); },
         {L + ".qzeros", "[4, 3]"}},
        {"scales shape", [&](auto &es, auto &) { entry(es, D + ".scales").shape = {96, 5}; }, {D + ".scales", "[96, 5]", "[5, 96]"}},
        {"scales dtype", [&](auto &es, auto &) { entry(es, D + ".scales").dtype = "I16"; }, {D + ".scales", "I16"}},
        {"NaN scale", [&](auto &es, auto &) { uint16_t nan = 0x7e00; std::memcpy(entry(es, D + ".scales").bytes.data() + 6, &nan, 2); },
         {D + ".scales", "nan", "finite"}},
        {"Inf scale", [&](auto &es, auto &) { uint16_t inf = 0x7c00; std::memcpy(entry(es, L + ".scales").bytes.data(), &inf, 2); },
         {L + ".scales", "inf"}},
        {"g_idx out of range", [&](auto &es, auto &) { uint32_t g = 3; std::memcpy(entry(es, L + ".g_idx").bytes.data() + 4 * 5, &g, 4); },
         {L + ".g_idx", "input 5", "3 groups"}},
        {"g_idx negative", [&](auto &es, auto &) { int32_t g = -1; std::memcpy(entry(es, L + ".g_idx").bytes.data(), &g, 4); },
         {L + ".g_idx", "group -1"}},
        {"missing qzeros", [&](auto &es, auto &) { es.erase(std::find_if(es.begin(), es.end(), [&](const StEntry &e) { return e.name == L + ".qzeros"; })); },
         {L + ".qzeros", "missing"}},
        {"group not dividing K", [&](auto &, auto &c) { c["quantization_config"]["group_size"] = 64; }, {"group_size 64", "96 input columns"}},
        {"bits 3", [&](auto &, auto &c) { c["quantization_config"]["bits"] = 3; }, {"config.json", "quantization_config.bits", "3"}},
        {"bitsandbytes", [&](auto &, auto &c) { c["quantization_config"]["quant_method"] = "bitsandbytes"; },
         {"config.json", "quant_method", "bitsandbytes"}},
        {"marlin", [&](auto &, auto &c) { c["quantization_config"]["checkpoint_format"] = "marlin"; }, {"checkpoint_format", "marlin"}},
        {"awq gemv", [&](auto &, auto &c) { c["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 32}, {"version", "gemv"}}; },
         {"quantization_config.version", "gemv"}},
        {"awq zero_point false", [&](auto &, auto &c) {
             c["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 32}, {"zero_point", false}}; },
         {"zero_point"}},
        {"no quantization_config", [&](auto &, auto &c) { c.erase("quantization_config"); },
         {"model.layers.0.self_attn.q_proj.qweight", "no quantization_config"}},
        {"group_size 0", [&](auto &, auto &c) { c["quantization_config"]["group_size"] = 0; }, {"quantization_config.group_size", "0"}},
        {"desc_act without g_idx", [&](auto &es, auto &c) {
             c["quantization_config"]["desc_act"] = true;
             es.erase(std::find_if(es.begin(), es.end(), [&](const StEntry &e) { return e.name == L + ".g_idx"; })); },
         {L + ".g_idx", "desc_act"}},
    };
    for (const Lie &lie : lies) {
        Scratch sc;
        std::vector<StEntry> es = base.entries;
        json cfg = base.config;
        lie.mutate(es, cfg);
        fixture::write_hf_dir(sc.src, cfg.dump(), es, 1);
        const Run r = convert(sc.src, sc.out + "/m.gpt", AUTO);
        if (r.status == GPT_OK) fail_msg("%s: converted", lie.what);
        for (const std::string &n : lie.named)
            if (!contains(r.message, n)) fail_msg("%s: message \"%s\" does not name \"%s\"", lie.what, r.message.c_str(), n.c_str());
        if (!files::list_dir(sc.out).empty()) fail_msg("%s: left a file behind", lie.what);
        std::printf("# %s: %s\n", lie.what, r.message.c_str());
    }
}

// GPTQ exporters write all-zero biases for linears that have none: dropped; a bias that is not
// zero is a weight this architecture lacks and is refused.
void test_zero_bias(void **) {
    QSpec q;
    q.group = 32;
    const QModel base = make_quantized(llama(96, 3, 1, 160), q, 13);
    const std::string b = "model.layers.0.self_attn.o_proj.bias";
    for (float v : {0.0f, 0.5f}) {
        Scratch sc;
        std::vector<StEntry> es = base.entries;
        es.push_back(StEntry{b, "F16", {96}, fixture::encode(std::vector<float>(96, v), DType::F16)});
        fixture::write_hf_dir(sc.src, base.config.dump(), es, 1);
        const Run r = convert(sc.src, sc.out + "/m.gpt", AUTO);
        if (v == 0.0f && r.status != GPT_OK) fail_msg("zero bias: %s", r.message.c_str());
        if (v != 0.0f && (r.status != GPT_ERR_FORMAT || !contains(r.message, b))) fail_msg("non-zero bias: %s", r.message.c_str());
    }
}

} // namespace

int main() {
    std::printf("# seed %llu (GPT_TEST_SEED)\n", (unsigned long long)reference::test_seed());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gptq_v1_sym4_group128), cmocka_unit_test(test_gptq_v2_sym4_group32_odd),
        cmocka_unit_test(test_gptq_asym4),            cmocka_unit_test(test_gptq_sym8_group64),
        cmocka_unit_test(test_gptq_act_order),        cmocka_unit_test(test_awq),
        cmocka_unit_test(test_whole_row_group),       cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_zero_bias),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
