// test_gpu.cpp - the CUDA backend against the CPU reference (suite 'gpu'; every test skips
// cleanly when no CUDA device is present). Kernels are checked one by one on fresh random
// inputs at odd shapes, with outputs poisoned (NaN) before each launch so unwritten elements
// show (the new architectures' features too: q/k norms, partial rotation, sliding windows,
// soft-capping, GeGLU, post-norms, scaled embeddings); then a synthetic model using all of
// them through the Executor interface, whole models CUDA vs CPU in every dtype, greedy
// generation, graph replay vs eager, allocation counts and out-of-memory handling; the
// mixture-of-experts kernels and op (routing, grouping, every weight dtype) against naive ones.
// Tolerances (relative L2 error): fp32 1e-5 per kernel, tf32 5e-4, fp16/bf16 1e-2.
#include "fixture.h"
#include "format_decoder.h"
#include "gpt.h"

#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "core/error.h"
#include "core/rope.h"
#include "backend/cuda/cublas_loader.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/gemm.h"
#include "core/half.h"
#include "core/quant.h"
#include "format/quantize.h"
#include "format/writer.h"
#include "model/arch.h"
#include "runtime/model.h"
#include "sampler/sampler.h"

#include "add_norm.cuh"
#include "attention.cuh"
#include "attention_short.cuh"
#include "bias_act.cuh"
#include "embed.cuh"
#include "gemv.cuh"
#include "moe.cuh"
#include "moe_grouped_gemm.cuh"
#include "moe_stream.cuh"
#include "norm_add.cuh"
#include "quant_dot.cuh"
#include "rope_append.cuh"
#include "sample.cuh"
#include "softcap.cuh"
#include "swiglu.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>
#include <unistd.h>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

using gpt::DType;

uint64_t g_seed;
std::mt19937_64 g_rng;

bool have_gpu() { return gpt_cuda_device_count() > 0; }
#define SKIP_WITHOUT_GPU()                                                                                              \
    do {                                                                                                               \
        if (!have_gpu()) {                                                                                             \
            std::printf("  no CUDA device: skipped\n");                                                                \
            skip();                                                                                                    \
        }                                                                                                              \
    } while (0)

#define CK(call)                                                                                                       \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) fail_msg("%s: %s", #call, cudaGetErrorString(e_));                                       \
    } while (0)

std::vector<float> randn(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (auto &x : v) x = d(g_rng);
    return v;
}

const char *dname(DType t) { return gpt::dtype_name(t); }
double tol_of(DType t) { return t == DType::F32 ? 1e-5 : 1e-2; }

// Rounds values to what dtype t can hold (so the CPU reference sees the device's inputs).
void round_to(std::vector<float> &v, DType t) {
    for (auto &x : v) {
        if (t == DType::F16) x = gpt::f16_to_f32(gpt::f32_to_f16(x));
        if (t == DType::BF16) x = gpt::bf16_to_f32(gpt::f32_to_bf16(x));
    }
}

// A device buffer of n elements of dtype t, filled with NaN (all-ones bits) on creation.
struct DevBuf {
    void *p = nullptr;
    size_t n = 0;
    DType t = DType::F32;
    DevBuf(size_t n_, DType t_) : n(n_), t(t_) {
        CK(cudaMalloc(&p, std::max<size_t>(bytes(), 1)));
        poison();
    }
    ~DevBuf() { cudaFree(p); }
    DevBuf(const DevBuf &) = delete;
    size_t bytes() const { return n * gpt::dtype_bytes(t); }
    void poison() { CK(cudaMemset(p, 0xff, bytes())); }
    void upload(const std::vector<float> &v) {
        std::vector<uint8_t> raw(bytes());
        for (size_t i = 0; i < n; i++) {
            if (t == DType::F32) std::memcpy(raw.data() + 4 * i, &v[i], 4);
            else {
                uint16_t h = t == DType::F16 ? gpt::f32_to_f16(v[i]) : gpt::f32_to_bf16(v[i]);
                std::memcpy(raw.data() + 2 * i, &h, 2);
            }
        }
        CK(cudaMemcpy(p, raw.data(), bytes(), cudaMemcpyHostToDevice));
    }
    void upload_raw(const void *src, size_t nbytes) { CK(cudaMemcpy(p, src, nbytes, cudaMemcpyHostToDevice)); }
    std::vector<float> download() const {
        std::vector<uint8_t> raw(bytes());
        CK(cudaMemcpy(raw.data(), p, bytes(), cudaMemcpyDeviceToHost));
        std::vector<float> v(n);
        for (size_t i = 0; i < n; i++) {
            if (t == DType::F32) std::memcpy(&v[i], raw.data() + 4 * i, 4);
            else {
                uint16_t h;
                std::memcpy(&h, raw.data() + 2 * i, 2);
                v[i] = t == DType::F16 ? gpt::f16_to_f32(h) : gpt::bf16_to_f32(h);
            }
        }
        return v;
    }
    template <typename T> T *as() { return static_cast<T *>(p); }
};

// ||got - want|| / ||want||; fails (printing the worst element) above tol. NaN fails.
// sqrt(sum (got - want)^2 / sum want^2).
double relative_error(const std::vector<float> &got, const std::vector<float> &want) {
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size() && i < want.size(); i++) {
        num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        den += (double)want[i] * want[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
}

void expect_close(const char *what, const std::vector<float> &got, const std::vector<float> &want, double tol) {
    assert_int_equal(got.size(), want.size());
    double num = 0, den = 0, worst = -1;
    size_t wi = 0;
    for (size_t i = 0; i < got.size(); i++) {
        const double d = (double)got[i] - want[i];
        if (std::isnan(got[i]) || std::isnan(want[i])) {
            fail_msg("%s: NaN at %zu (got %g, want %g) - an element was not written", what, i, got[i], want[i]);
        }
        num += d * d;
        den += (double)want[i] * want[i];
        if (std::fabs(d) > worst) {
            worst = std::fabs(d);
            wi = i;
        }
    }
    const double rel = std::sqrt(num / std::max(den, 1e-30));
    // GPT_TEST_REPORT=TEXT prints the error of every check whose name contains TEXT.
    static const char *report = std::getenv("GPT_TEST_REPORT");
    if (report && std::strstr(what, report)) std::printf("  %s: relative error %.4g (tolerance %.3g)\n", what, rel, tol);
    if (!(rel <= tol))
        fail_msg("%s: relative error %.3g > %.3g; worst element %zu: got %.8g want %.8g", what, rel, tol, wi, got[wi], want[wi]);
}

// ---------------------------------------------------------------- kernels

void test_gpu_add_norm(void **) {
    SKIP_WITHOUT_GPU();
    for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (uint32_t d : {77u, 1000u, 3001u, 9000u}) // 9000: wider than the register-resident path
            for (int rms : {0, 1}) {
                const uint32_t rows = 5;
                const bool with_bias = (d + rms) % 2 == 0; // the delta's own bias (a projection's), half the cases
                auto x = randn(rows * d), delta = randn(rows * d), w = randn(d, 0.5f), b = randn(d, 0.5f), dbias = randn(d);
                round_to(delta, t);
                DevBuf dx(rows * d, DType::F32), dd(rows * d, t), dw(d, DType::F32), db(d, DType::F32), dh(rows * d, t), ddb(d, DType::F32);
                dx.upload(x);
                dd.upload(delta);
                dw.upload(w);
                db.upload(b);
                ddb.upload(dbias);
                CK(launch_add_norm(dx.as<float>(), dd.p, with_bias ? ddb.as<float>() : nullptr, dw.as<float>(), db.as<float>(), 1e-5f, rms,
                                   rows, d, dh.p, (int)t, 0));
                CK(cudaDeviceSynchronize());
                std::vector<float> hx(x), hh(rows * d);
                for (uint32_t r = 0; r < rows; r++) {
                    for (uint32_t i = 0; i < d; i++) hx[r * d + i] += delta[r * d + i] + (with_bias ? dbias[i] : 0.0f);
                    if (rms) gpt::cpu::rms_norm(&hx[r * d], w.data(), 1e-5f, d, &hh[r * d]);
                    else gpt::cpu::layer_norm(&hx[r * d], w.data(), b.data(), 1e-5f, d, &hh[r * d]);
                }
                std::string what = std::string("add_norm ") + dname(t) + " d=" + std::to_string(d) + (rms ? " rms" : " layer") + (with_bias ? " bias" : "");
                expect_close((what + " x").c_str(), dx.download(), hx, 1e-6);
                expect_close((what + " h").c_str(), dh.download(), hh, tol_of(t));
            }
}

// norm_add (a post-norm: x += norm(in) * w) against cpu::rms_norm / cpu::layer_norm, and the
// logit soft-cap after the GEMM against a double reference.
void test_gpu_norm_add_softcap(void **) {
    SKIP_WITHOUT_GPU();
    for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (uint32_t d : {77u, 1000u, 3001u, 9000u})
            for (int rms : {0, 1}) {
                const uint32_t rows = 5;
                auto x = randn(rows * d), in = randn(rows * d, 3.0f), w = randn(d, 0.5f);
                for (auto &v : in) v += 0.7f; // a mean for LayerNorm to remove
                round_to(in, t);
                DevBuf dx(rows * d, DType::F32), din(rows * d, t), dw(d, DType::F32);
                dx.upload(x);
                din.upload(in);
                dw.upload(w);
                CK(launch_norm_add(dx.as<float>(), din.p, dw.as<float>(), 1e-6f, rms, rows, d, (int)t, 0));
                CK(cudaDeviceSynchronize());
                std::vector<float> want(x), normed(d);
                for (uint32_t r = 0; r < rows; r++) {
                    if (rms) gpt::cpu::rms_norm(&in[r * d], w.data(), 1e-6f, d, normed.data());
                    else gpt::cpu::layer_norm(&in[r * d], w.data(), nullptr, 1e-6f, d, normed.data());
                    for (uint32_t i = 0; i < d; i++) want[r * d + i] += normed[i];
                }
                std::string what = std::string("norm_add ") + dname(t) + " d=" + std::to_string(d) + (rms ? " rms" : " layer");
                expect_close(what.c_str(), dx.download(), want, 1e-5);
            }
    for (float cap : {0.5f, 30.0f}) {
        const uint32_t n = 100003;
        auto y = randn(n, 20.0f);
        DevBuf dy(n, DType::F32);
        dy.upload(y);
        CK(launch_softcap(dy.as<float>(), n, cap, 0));
        CK(cudaDeviceSynchronize());
        std::vector<float> want(n);
        for (uint32_t i = 0; i < n; i++) want[i] = (float)(cap * std::tanh((double)y[i] / cap));
        expect_close(("softcap " + std::to_string(cap)).c_str(), dy.download(), want, 1e-6);
    }
}

void test_gpu_gemm_bias_gelu(void **) {
    SKIP_WITHOUT_GPU();
    cublasHandle_t h;
    assert_int_equal(gpt::cuda::cublas().create(&h), CUBLAS_STATUS_SUCCESS);
    struct Case { DType t; bool tf32; double tol; };
    for (Case c : {Case{DType::F32, false, 1e-5}, Case{DType::F32, true, 5e-4}, Case{DType::F16, false, 1e-2},
                   Case{DType::BF16, false, 1e-2}})
        for (uint32_t rows : {1u, 7u, 130u})
            for (int gelu : {0, 1, 2, 3, 4}) { // Activation codes: none, GELU tanh, GELU erf, ReLU, SiLU
                const uint32_t k = 123, n = 77;
                auto x = randn(rows * k), w = randn(n * k, 0.2f), b = randn(n, 0.5f);
                round_to(x, c.t);
                round_to(w, c.t);
                DevBuf dx(rows * k, c.t), dw(n * k, c.t), db(n, DType::F32), dy(rows * n, c.t);
                dx.upload(x);
                dw.upload(w);
                db.upload(b);
                gpt::cuda::cublas().set_math_mode(h, c.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
                gpt::Weight W;
                W.data = dw.p;
                W.dtype = c.t;
                W.rows = n;
                W.cols = k;
                gpt::cuda::gemm(h, W, dx.p, c.t, k, dy.p, c.t, rows, c.tf32);
                CK(launch_bias_act(dy.p, db.as<float>(), gelu, nullptr, rows, n, (int)c.t, 0));
                CK(cudaDeviceSynchronize());
                gpt::Weight Wh = W;
                Wh.data = w.data();
                Wh.dtype = DType::F32;
                std::vector<float> want(rows * n), scratch(k);
                gpt::cpu::matmul_block(x.data(), rows, Wh, b.data(), 0, n, want.data(), n, scratch.data());
                for (auto &v : want) v = gpt::cpu::activate((gpt::Activation)gelu, v);
                std::string what = std::string("gemm ") + dname(c.t) + (c.tf32 ? "+tf32" : "") + " rows=" + std::to_string(rows);
                expect_close(what.c_str(), dy.download(), want, c.tol);
            }
    gpt::cuda::cublas().destroy(h);
}

// The decode GEMV for 1..8 rows in every mode: 0 plain, 1 bias + GELU (tanh), 2 f32 output
// over strided rows, 3 residual accumulation, 4 SwiGLU and 5 GeGLU over paired gate/up rows,
// 6 soft-capped f32 output (Gemma-2's logits), 7 bias + GELU (erf), 8 bias + ReLU; rows split
// over 1-8 warps; without a GLU one column per warp (rows under 4 KB: modes 0, 2, 7, 8) or
// two (modes 1 and 3, with an odd column count, so the last warp's second column lies past
// the end).
void test_gpu_gemv(void **) {
    SKIP_WITHOUT_GPU();
    uint32_t splits_seen = 0;
    for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (uint32_t rows = 1; rows <= kGemvMaxRows; rows++)
            for (int mode = 0; mode < 9; mode++) {
                using gpt::Activation;
                const bool bias = mode == 1 || mode == 3 || mode >= 7, residual = mode == 3,
                           f32_out = mode == 2 || mode == 6, glu = mode == 4 || mode == 5;
                const Activation act = mode == 1 || mode == 5 ? Activation::GELU_TANH
                                       : mode == 4            ? Activation::SILU
                                       : mode == 7            ? Activation::GELU_ERF
                                       : mode == 8            ? Activation::RELU
                                                              : Activation::NONE;
                const float softcap = mode == 6 ? 1.5f : 0.0f; // scores of about +-3 here: the cap bites
                // k: several pipelined chunks (6144), a partial last chunk (1160), under one chunk (136);
                // with n = 77 columns the rows are split over 1 to 8 warps (checked below).
                const uint32_t k = mode == 3 ? 6144 : glu ? 1160 : mode == 1 ? 2048 : mode == 6 ? 528 : 136,
                               n = f32_out ? 1003 : 77;
                splits_seen |= gemv_row_splits(n, k, (int)t);
                const uint64_t ldx = f32_out ? 3 * k : k; // strided rows, as for the head
                const uint32_t wrows = glu ? 2 * n : n;
                auto x = randn(rows * ldx), w = randn((size_t)wrows * k, 0.2f), b = randn(n, 0.5f), res = randn(rows * n);
                round_to(x, t);
                round_to(w, t);
                DevBuf dx(rows * ldx, t), dw((size_t)wrows * k, t), db(n, DType::F32), dy(rows * n, f32_out ? DType::F32 : t),
                    dr(rows * n, DType::F32);
                dx.upload(x);
                dw.upload(w);
                db.upload(b);
                dr.upload(res);
                GemvArgs g{};
                g.x = dx.p;
                g.ldx = ldx;
                g.w = dw.p;
                g.bias = bias ? db.as<float>() : nullptr;
                g.y = dy.p;
                g.residual = residual ? dr.as<float>() : nullptr;
                g.rows = rows;
                g.n = n;
                g.k = k;
                g.act = (int)act;
                g.glu = glu;
                g.y_f32 = f32_out;
                g.softcap = softcap;
                g.dtype = (int)t;
                assert_true(gemv_supported(rows, k, ldx, (int)t));
                CK(launch_gemv(g, 0));
                CK(cudaDeviceSynchronize());
                std::vector<float> xr(rows * k), scratch(k);
                for (uint32_t r = 0; r < rows; r++) std::copy(&x[r * ldx], &x[r * ldx] + k, &xr[r * k]);
                gpt::Weight W;
                W.data = w.data();
                W.rows = wrows;
                W.cols = k;
                std::vector<float> full(rows * wrows), want(rows * n);
                gpt::cpu::matmul_block(xr.data(), rows, W, nullptr, 0, wrows, full.data(), wrows, scratch.data());
                for (uint32_t r = 0; r < rows; r++)
                    for (uint32_t i = 0; i < n; i++) {
                        float v = full[r * wrows + i] + (bias ? b[i] : 0.0f);
                        if (glu) { // gate and up rounded to dtype first, as the unfused path stores them
                            std::vector<float> gu = {v, full[r * wrows + n + i]};
                            round_to(gu, t);
                            v = gpt::cpu::activate(act, gu[0]) * gu[1];
                        } else {
                            v = gpt::cpu::activate(act, v);
                        }
                        if (softcap > 0) v = softcap * std::tanh(v / softcap);
                        want[r * n + i] = v + (residual ? res[r * n + i] : 0.0f);
                    }
                char what[96];
                std::snprintf(what, sizeof what, "gemv %s rows=%u mode=%d", dname(t), rows, mode);
                const double tol = t == DType::F32 ? 1e-5 : (f32_out || residual) ? 1e-3 : 1.5e-2;
                expect_close(what, residual ? dr.download() : dy.download(), want, tol);
            }
    assert_int_equal(splits_seen, 1 | 2 | 4 | 8); // every split count was exercised
}

// The GEMM path's GLU (SwiGLU and GeGLU) and the embedding (scaled, with and without learned
// positions).
void test_gpu_swiglu_embed(void **) {
    SKIP_WITHOUT_GPU();
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        const uint32_t rows = 9, f = 173;
        for (gpt::Activation act : {gpt::Activation::SILU, gpt::Activation::GELU_TANH}) {
            auto gu = randn(rows * 2 * f, 2.0f);
            round_to(gu, t);
            DevBuf dgu(rows * 2 * f, t), dff(rows * f, t);
            dgu.upload(gu);
            CK(launch_swiglu(dgu.p, dff.p, rows, f, (int)act, (int)t, 0));
            CK(cudaDeviceSynchronize());
            std::vector<float> want(rows * f);
            for (uint32_t r = 0; r < rows; r++)
                for (uint32_t i = 0; i < f; i++) {
                    const float g = gu[r * 2 * f + i];
                    want[r * f + i] = gpt::cpu::activate(act, g) * gu[r * 2 * f + f + i];
                }
            expect_close((std::string(act == gpt::Activation::GELU_TANH ? "geglu " : "swiglu ") + dname(t)).c_str(), dff.download(), want, tol_of(t));
        }

        const uint32_t vocab = 53, ctx = 31, d = 45;
        auto tok = randn(vocab * d), pos = randn(ctx * d);
        round_to(tok, t);
        round_to(pos, t);
        std::vector<int32_t> ids(rows), positions(rows);
        for (uint32_t r = 0; r < rows; r++) {
            ids[r] = (int32_t)(g_rng() % vocab);
            positions[r] = (int32_t)(g_rng() % ctx);
        }
        DevBuf dtok(vocab * d, t), dpos(ctx * d, t), dx(rows * d, DType::F32), dids(rows, DType::F32), dp(rows, DType::F32);
        dtok.upload(tok);
        dpos.upload(pos);
        dids.upload_raw(ids.data(), 4 * rows);
        dp.upload_raw(positions.data(), 4 * rows);
        // Learned positions unscaled (GPT-2), then a scaled table alone (Gemma: sqrt(d_model)).
        for (int scaled : {0, 1}) {
            const float scale = scaled ? std::sqrt((float)(g_rng() % 4000 + 1)) : 1.0f;
            dx.poison();
            CK(launch_embed(dids.as<int32_t>(), dp.as<int32_t>(), dtok.p, scaled ? nullptr : dpos.p, (int)t, rows, d, scale,
                            dx.as<float>(), 0));
            CK(cudaDeviceSynchronize());
            std::vector<float> ex(rows * d);
            for (uint32_t r = 0; r < rows; r++)
                for (uint32_t i = 0; i < d; i++)
                    ex[r * d + i] = scaled ? tok[ids[r] * d + i] * scale : tok[ids[r] * d + i] + pos[positions[r] * d + i];
            expect_close((std::string("embed ") + dname(t) + (scaled ? " scaled" : "")).c_str(), dx.download(), ex, 1e-7);
        }
    }
}

// The new architectures' attention features (defaults: plain causal attention).
struct AttnFeatures {
    uint32_t rot_dim = 0;   // 0: the whole head rotates
    bool qk_norm = false;   // RMSNorm of each q and k head (Qwen3, Gemma-3)
    bool qk_norm_whole = false; // RMSNorm of the whole q and the whole k projection (OLMoE)
    bool no_k_norm = false; // with qk_norm_whole: q only
    uint32_t window = 0;    // sliding window (Mistral, Gemma-2/3)
    float softcap = 0;      // score soft-capping (Gemma-2)
    float scale = 0;        // 0: 1 / sqrt(head_dim)
    bool short_kernel = false; // attention_short.cu (decode); without q/k norms it also rotates and caches
    bool tf32 = false;      // allow_tf32: f32 may round to TF32 in the tensor-core kernel
    bool tc = false;        // run the tensor-core kernel itself (else launch_attention's choice)
    bool split_keys = false; // ... in its mode of 16-row blocks whose warps split the keys
    bool qkv_bias = false;  // rope_append adds the QKV projection's bias first
};

// q/k norms + RoPE + cache append + attention over a cache that already holds earlier
// positions, for two sequences at different lengths, against cpu::rms_norm,
// cpu::rope_rotate_half and cpu::attend (over the window's keys).
void attention_case(DType act, DType kvt, uint32_t n_heads, uint32_t n_kv, uint32_t hd, bool rope, uint32_t n_splits,
                    uint32_t n_new, const AttnFeatures &f = {}) {
    const uint32_t max_batch = 2, max_seq = 400, qkv_dim = (n_heads + 2 * n_kv) * hd;
    // The short kernel takes up to max_keys keys a row: positions below it (one new row each).
    const uint32_t max_keys = f.short_kernel ? attention_short_max_keys(n_heads, n_kv, hd, (int)kvt) : 0;
    if (f.short_kernel && max_keys == 0) { // rows not of whole 16-byte vectors: refused
        assert_true(hd * gpt::dtype_bytes(kvt) % 16 != 0);
        AttentionArgs a{};
        a.rows = a.rows_per_seq = 1;
        a.n_heads = n_heads, a.n_kv_heads = n_kv, a.head_dim = hd, a.max_seq = max_seq;
        a.act_dtype = (int)act, a.kv_dtype = (int)kvt;
        assert_int_equal(launch_attention_short(a, AttentionShortFold{}, 16, 0), cudaErrorInvalidValue);
        return;
    }
    assert_true(!f.short_kernel || (max_keys >= 16 && n_new == 1));
    const uint32_t span = f.short_kernel ? std::min(200u, max_keys) : 200u;
    const uint32_t start[2] = {(uint32_t)(g_rng() % span), f.short_kernel ? max_keys - 1 : (uint32_t)(g_rng() % span)};
    const uint32_t rows = 2 * n_new, rot = f.rot_dim ? f.rot_dim : hd;
    const float scale = f.scale > 0 ? f.scale : 1.0f / std::sqrt((float)hd);
    auto qkv = randn(rows * qkv_dim), qkv_b = randn(qkv_dim);
    round_to(qkv, act);
    // Earlier cache contents (positions < start), already in kv dtype.
    const size_t cache_n = (size_t)max_batch * n_kv * max_seq * hd;
    auto kc = randn(cache_n), vc = randn(cache_n);
    round_to(kc, kvt);
    round_to(vc, kvt);
    std::vector<int32_t> positions(rows), seqs(rows);
    for (uint32_t b = 0; b < 2; b++)
        for (uint32_t t = 0; t < n_new; t++) {
            positions[b * n_new + t] = (int32_t)(start[b] + t);
            seqs[b * n_new + t] = (int32_t)b;
        }
    std::vector<float> cs(max_seq * rot / 2), sn(max_seq * rot / 2);
    gpt::rope_tables(gpt::rope_default(10000.0, rot), max_seq, cs.data(), sn.data());
    const uint32_t qn_n = f.qk_norm_whole ? n_heads * hd : hd, kn_n = f.qk_norm_whole ? n_kv * hd : hd;
    auto qn = randn(qn_n, 0.3f), kn = randn(kn_n, 0.3f);
    for (auto &v : qn) v += 1.0f;
    for (auto &v : kn) v += 1.0f;

    DevBuf dqkv(rows * qkv_dim, act), dk(cache_n, kvt), dv(cache_n, kvt), dout(rows * n_heads * hd, act);
    DevBuf dpos(rows, DType::F32), dseq(rows, DType::F32), dcs(cs.size(), DType::F32), dsn(sn.size(), DType::F32);
    DevBuf dpo((size_t)rows * n_heads * n_splits * hd, DType::F32), dml((size_t)rows * n_heads * n_splits * 2, DType::F32);
    DevBuf dqn(qn_n, DType::F32), dkn(kn_n, DType::F32), dqb(qkv_dim, DType::F32);
    dqkv.upload(qkv);
    dqb.upload(qkv_b);
    dk.upload(kc);
    dv.upload(vc);
    dpos.upload_raw(positions.data(), 4 * rows);
    dseq.upload_raw(seqs.data(), 4 * rows);
    dcs.upload(cs);
    dsn.upload(sn);
    dqn.upload(qn);
    dkn.upload(kn);

    RopeAppendArgs r{};
    r.qkv = dqkv.p;
    r.qkv_bias = f.qkv_bias ? dqb.as<float>() : nullptr;
    r.positions = dpos.as<int32_t>();
    r.seqs = dseq.as<int32_t>();
    r.cos = rope ? dcs.as<float>() : nullptr;
    r.sin = rope ? dsn.as<float>() : nullptr;
    r.rot_dim = rot;
    const bool normed = f.qk_norm || f.qk_norm_whole;
    r.q_norm = normed ? dqn.as<float>() : nullptr;
    r.k_norm = normed && !f.no_k_norm ? dkn.as<float>() : nullptr;
    r.norm_whole = f.qk_norm_whole ? 1 : 0;
    r.norm_eps = 1e-6f;
    r.k_cache = dk.p;
    r.v_cache = dv.p;
    r.rows = rows;
    r.n_heads = n_heads;
    r.n_kv_heads = n_kv;
    r.head_dim = hd;
    r.max_seq = max_seq;
    r.act_dtype = (int)act;
    r.kv_dtype = (int)kvt;
    const bool fold = f.short_kernel && !normed; // the short kernel rotates and caches
    if (!fold) CK(launch_rope_append(r, 0));
    AttentionArgs a{};
    a.qkv = dqkv.p;
    a.positions = r.positions;
    a.seqs = r.seqs;
    a.k_cache = dk.p;
    a.v_cache = dv.p;
    a.out = dout.p;
    a.partial_o = dpo.as<float>();
    a.partial_ml = dml.as<float>();
    a.rows = rows;
    a.rows_per_seq = n_new;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv;
    a.head_dim = hd;
    a.max_seq = max_seq;
    a.n_splits = n_splits;
    a.scale = scale;
    a.window = f.window;
    a.softcap = f.softcap;
    a.act_dtype = (int)act;
    a.kv_dtype = (int)kvt;
    a.allow_tf32 = f.tf32 ? 1 : 0;
    if (f.short_kernel) CK(launch_attention_short(a, AttentionShortFold{r.cos, r.sin, r.rot_dim, fold ? 1 : 0}, max_keys, 0));
    else if (f.tc) {
        assert_true(attention_tc_supported(a));
        CK(launch_attention_tc(a, f.split_keys, 0));
    } else CK(launch_attention(a, 0));
    CK(cudaDeviceSynchronize());

    // CPU: norm, rotate, round like the device (activation dtype, then kv dtype), append, attend.
    std::vector<float> q = qkv;
    if (f.qkv_bias) { // added, then rounded to the activation type as the projection's output
        for (uint32_t i = 0; i < rows; i++)
            for (uint32_t j = 0; j < qkv_dim; j++) q[i * qkv_dim + j] += qkv_b[j];
        round_to(q, act);
    }
    for (uint32_t i = 0; i < rows; i++) {
        float *row = &q[i * qkv_dim];
        for (uint32_t h = 0; h < n_heads + n_kv && f.qk_norm; h++)
            gpt::cpu::rms_norm(row + h * hd, h < n_heads ? qn.data() : kn.data(), 1e-6f, hd, row + h * hd);
        if (f.qk_norm_whole) {
            gpt::cpu::rms_norm(row, qn.data(), 1e-6f, n_heads * hd, row);
            if (!f.no_k_norm) gpt::cpu::rms_norm(row + n_heads * hd, kn.data(), 1e-6f, n_kv * hd, row + n_heads * hd);
        }
        if (rope)
            for (uint32_t h = 0; h < n_heads + n_kv; h++)
                gpt::cpu::rope_rotate_half(row + h * hd, rot, &cs[positions[i] * rot / 2], &sn[positions[i] * rot / 2]);
    }
    round_to(q, act);
    std::vector<float> kexp = kc, vexp = vc;
    for (uint32_t i = 0; i < rows; i++)
        for (uint32_t g = 0; g < n_kv; g++)
            for (uint32_t j = 0; j < hd; j++) {
                const size_t at = (((size_t)seqs[i] * n_kv + g) * max_seq + positions[i]) * hd + j;
                kexp[at] = q[i * qkv_dim + (n_heads + g) * hd + j];
                vexp[at] = q[i * qkv_dim + (n_heads + n_kv + g) * hd + j];
            }
    round_to(kexp, kvt);
    round_to(vexp, kvt);
    std::vector<float> want(rows * n_heads * hd), scores(max_seq);
    for (uint32_t i = 0; i < rows; i++)
        for (uint32_t h = 0; h < n_heads; h++) {
            const uint32_t g = h / (n_heads / n_kv), end = positions[i] + 1;
            const uint32_t first = f.window && end > f.window ? end - f.window : 0;
            const size_t base = (((size_t)seqs[i] * n_kv + g) * max_seq + first) * hd;
            gpt::cpu::attend(&q[i * qkv_dim + h * hd], &kexp[base], &vexp[base], end - first, hd, scale, f.softcap,
                             scores.data(), &want[(i * n_heads + h) * hd]);
        }
    char what[240];
    std::snprintf(what, sizeof what,
                  "attention act=%s kv=%s heads=%u/%u hd=%u rope=%d rot=%u qk_norm=%d/%d/%d window=%u softcap=%g splits=%u new=%u short=%u tc=%d bias=%d",
                  dname(act), dname(kvt), n_heads, n_kv, hd, rope, rot, f.qk_norm, f.qk_norm_whole, f.no_k_norm, f.window,
                  f.softcap, n_splits, n_new, max_keys, (int)f.tc + (int)(f.tc && f.split_keys), (int)f.qkv_bias);
    // f32: strict, or TF32 (a 10-bit mantissa, as the 16-bit types' 10 or 7) on tensor cores.
    const bool f32_both = act == DType::F32 && kvt == DType::F32;
    const double tol = f32_both ? (f.tc ? 5e-3 : 1e-5) : 1e-2;
    expect_close(what, dout.download(), want, tol);
    expect_close((std::string(what) + " k cache").c_str(), dk.download(), kexp, tol);
    expect_close((std::string(what) + " v cache").c_str(), dv.download(), vexp, tol);
    if (fold) return; // q was rotated in the kernel's shared memory, not in place
    // QKV as rope_append left it: q and k normed and rotated in place (the attention read q
    // there), and with a bias all three biased (the short decode kernel reads the row's k and v).
    expect_close((std::string(what) + " qkv").c_str(), dqkv.download(), q, act == DType::F32 ? 1e-6 : 1e-2);
}

// attention_rows_per_block's rule (host arithmetic: runs without a GPU), on 132 SMs (target
// 198 blocks) and on a 16-SM board: the shapes of PERFORMANCE 65's sweep get the slot counts
// that measured fastest there, grids already full keep 16 slots, the floor is 4 slots, and
// the rows never exceed a sequence's.
void test_attention_rows_per_block_rule(void **) {
    // A 256-row prompt, one sequence: char-dense-768 (8 heads) 8 rows, gpt2-124m (12) 8,
    // shakespeare-char (6) 4 (at 16 rows: 128, 192 and 96 blocks; at 8: 256, 384, 192).
    assert_int_equal(attention_rows_per_block(1, 256, 1, 8, 132), 8);
    assert_int_equal(attention_rows_per_block(1, 256, 1, 12, 132), 8);
    assert_int_equal(attention_rows_per_block(1, 256, 1, 6, 132), 4);
    // Enough blocks at 16 slots: unchanged (TinyLlama's prompt of 512, group 8: 2 rows, 1,024 blocks).
    assert_int_equal(attention_rows_per_block(8, 512, 1, 4, 132), 2);
    assert_int_equal(attention_rows_per_block(1, 256, 1, 8, 16), 16);
    // The floor: 4 slots however few the blocks; a group of 4 or more then serves one row.
    assert_int_equal(attention_rows_per_block(1, 23, 1, 2, 132), 4);
    assert_int_equal(attention_rows_per_block(4, 23, 1, 2, 132), 1);
    assert_int_equal(attention_rows_per_block(2, 23, 1, 2, 132), 2);
    // Groups of 16 or more: one row; a decode step: one row; never more rows than the sequence's.
    assert_int_equal(attention_rows_per_block(32, 256, 1, 1, 132), 1);
    assert_int_equal(attention_rows_per_block(1, 1, 8, 8, 132), 1);
    assert_int_equal(attention_rows_per_block(1, 3, 1, 64, 132), 3);
    // An unknown SM count (0): no halving.
    assert_int_equal(attention_rows_per_block(1, 256, 1, 8, 0), 16);
}

// attention_tc_mode (host arithmetic: runs without a GPU) on 132 SMs and on a 16-SM board,
// PERFORMANCE 66's prompts: char-dense-768's 256 rows (4 row tiles x 8 heads = 32 blocks of
// 64 rows), gpt2-124m's (48), nanoGPT shakespeare-char's (24), TinyLlama's 512 (256).
void test_attention_tc_rule(void **) {
    auto args = [](uint32_t rows, uint32_t heads, uint32_t seqs, DType kvt) {
        AttentionArgs a{};
        a.rows = rows * seqs, a.rows_per_seq = rows, a.n_heads = heads, a.kv_dtype = (int)kvt;
        return a;
    };
    // 16-bit caches: 64-row blocks from a third of the SMs; below, an f16 cache splits the keys
    // over the warps and a bf16 cache takes the CUDA-core kernel.
    assert_int_equal(attention_tc_mode(args(256, 8, 1, DType::F16), 132), 1);
    assert_int_equal(attention_tc_mode(args(256, 6, 1, DType::F16), 132), 1);
    assert_int_equal(attention_tc_mode(args(256, 8, 1, DType::BF16), 132), -1);
    assert_int_equal(attention_tc_mode(args(256, 12, 1, DType::F16), 132), 0);
    assert_int_equal(attention_tc_mode(args(256, 8, 2, DType::BF16), 132), 0); // two sequences
    assert_int_equal(attention_tc_mode(args(257, 8, 1, DType::F16), 132), 1);  // 5 row tiles: 40 blocks
    assert_int_equal(attention_tc_mode(args(512, 32, 1, DType::F16), 132), 0);
    assert_int_equal(attention_tc_mode(args(16, 1, 1, DType::F16), 132), 1);
    // TF32: 64-row blocks from a block an SM, else CUDA cores.
    assert_int_equal(attention_tc_mode(args(512, 32, 1, DType::F32), 132), 0);
    assert_int_equal(attention_tc_mode(args(256, 12, 1, DType::F32), 132), -1);
    assert_int_equal(attention_tc_mode(args(256, 8, 1, DType::F32), 132), -1);
    // A 16-SM board fills with these prompts; an unknown SM count takes 64-row blocks.
    assert_int_equal(attention_tc_mode(args(256, 8, 1, DType::F16), 16), 0);
    assert_int_equal(attention_tc_mode(args(256, 8, 1, DType::F32), 16), 0);
    assert_int_equal(attention_tc_mode(args(16, 1, 1, DType::F32), 16), -1);
    assert_int_equal(attention_tc_mode(args(16, 1, 1, DType::F16), 16), 1);
    assert_int_equal(attention_tc_mode(args(16, 1, 1, DType::F32), 0), 0);
}

void test_gpu_attention(void **) {
    SKIP_WITHOUT_GPU();
    // Which prompts the tensor-core kernel takes (sm_80+): a 16-bit cache with any activation
    // type, f32 only where TF32 is allowed, head_dim 64/96/128, one split, 16+ rows.
    {
        AttentionArgs e{};
        e.rows = e.rows_per_seq = 16, e.n_heads = e.n_kv_heads = 4, e.head_dim = 96, e.n_splits = 1;
        auto eligible = [&](DType act, DType kvt, int tf32) {
            e.act_dtype = (int)act, e.kv_dtype = (int)kvt, e.allow_tf32 = tf32;
            return attention_tc_supported(e);
        };
        int dev = 0, major = 0;
        CK(cudaGetDevice(&dev));
        CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
        const bool tc = major >= 8;
        assert_int_equal(eligible(DType::BF16, DType::F16, 0), tc);
        assert_int_equal(eligible(DType::F16, DType::BF16, 0), tc);
        assert_int_equal(eligible(DType::F32, DType::F32, 1), tc);
        assert_int_equal(eligible(DType::F32, DType::F16, 1), tc);
        assert_false(eligible(DType::F32, DType::F32, 0));
        assert_false(eligible(DType::F32, DType::F16, 0));
        assert_false(eligible(DType::F16, DType::F32, 0));
        e.head_dim = 80;
        assert_false(eligible(DType::F16, DType::F16, 0));
        e.head_dim = 128, e.rows = e.rows_per_seq = 15;
        assert_false(eligible(DType::F16, DType::F16, 0));
        e.rows = e.rows_per_seq = 16, e.n_splits = 2;
        assert_false(eligible(DType::F16, DType::F16, 0));
        e.n_splits = 1; // split keys: an f16 cache only
        e.act_dtype = e.kv_dtype = (int)DType::BF16;
        assert_int_equal(launch_attention_tc(e, true, 0), cudaErrorInvalidValue);
    }
    // Prompts sized for this GPU so that the kernel runs blocks of 16 and of 8 query slots
    // (smaller prompts get 4: attention_rows_per_block): two sequences of 112 rows, 7 row
    // groups each at 16 slots, over enough kv heads.
    {
        int dev = 0, sms = 0;
        CK(cudaGetDevice(&dev));
        CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
        const uint32_t target = (uint32_t)sms * 3 / 2, heads16 = (target + 13) / 14, heads8 = (target + 27) / 28;
        assert_int_equal(attention_rows_per_block(1, 112, 2, heads16, (uint32_t)sms), 16);
        assert_int_equal(attention_rows_per_block(1, 112, 2, heads8, (uint32_t)sms), 8);
        for (DType act : {DType::F32, DType::BF16}) {
            const DType kvt = act == DType::F32 ? DType::F32 : DType::F16;
            attention_case(act, kvt, heads16, heads16, 32, true, 1, 112);
            attention_case(act, kvt, heads8, heads8, 32, false, 1, 112);
        }
    }
    for (DType act : {DType::F32, DType::F16, DType::BF16})
        for (uint32_t splits : {1u, 7u, 200u}) {
            const DType kvt = act == DType::F32 ? DType::F32 : DType::F16;
            attention_case(act, kvt, 4, 4, 64, false, splits, 5);   // GPT-2-like
            attention_case(act, kvt, 8, 2, 128, true, splits, 3);   // GQA
            attention_case(act, kvt, 7, 1, 80, true, splits, 1);    // one kv head, decode
            attention_case(act, kvt, 6, 3, 8, true, splits, 17);    // tiny head_dim
            attention_case(act, kvt, 4, 2, 12, true, splits, 33);   // head_dim not a multiple of 8
            attention_case(act, kvt, 32, 1, 64, true, splits, 1);   // 32 query heads per kv head
            attention_case(act, kvt, 4, 2, 256, true, splits, 2);   // largest head_dim
        }
    // Decode (one new token per sequence) with many splits, some empty at this length, up
    // to the kernel's limit of 256.
    for (DType act : {DType::F32, DType::F16, DType::BF16}) {
        const DType kvt = act == DType::F32 ? DType::F32 : DType::F16;
        for (uint32_t splits : {32u, 100u, 256u}) {
            attention_case(act, kvt, 8, 2, 128, true, splits, 1);
            attention_case(act, kvt, 7, 1, 12, true, splits, 1);
        }
    }
    // Prefill long enough for the tensor-core kernel: partial and full 64-row tiles, over caches
    // that already hold earlier positions, for every pair of types it takes (the cache's type
    // computes; f32 with TF32 allowed) and head_dim 64, 96, 128.
    // Both modes: 64-row blocks, a warp's 16 rows over every key; 16-row blocks, a warp's
    // quarter of each key tile, merged at the end.
    const std::pair<DType, DType> tc_types[] = {{DType::F16, DType::F16},  {DType::BF16, DType::BF16}, {DType::BF16, DType::F16},
                                                {DType::F16, DType::BF16}, {DType::F32, DType::F32},   {DType::F32, DType::F16}};
    for (bool split : {false, true}) {
        AttnFeatures tf32;
        tf32.tf32 = tf32.tc = true;
        tf32.split_keys = split;
        for (const auto &[act, kvt] : tc_types) {
            if (split && kvt != DType::F16) continue; // split keys: an f16 cache only
            for (uint32_t n_new : {16u, 23u, 70u, 130u}) {
                attention_case(act, kvt, 8, 2, 128, true, 1, n_new, tf32);
                attention_case(act, kvt, 4, 4, 64, false, 1, n_new, tf32);
                attention_case(act, kvt, 8, 8, 96, false, 1, n_new, tf32); // the 768-wide character model
            }
        }
    }
    attention_case(DType::F32, DType::F16, 8, 4, 64, true, 3, 4); // f32 compute, f16 cache
    attention_case(DType::BF16, DType::BF16, 8, 4, 64, true, 3, 4);
    // Every activation type with every cache type: rope_append and attention compile one
    // kernel per type of the one and take the other as a run-time code. A short prefill (one
    // split, q/k norms) and a decode step (several splits, the combine kernel).
    // With the QKV projection's bias added by rope_append (prompts on the GEMM path): without
    // RoPE (GPT-2: q, k and v only biased), and before q/k norms and RoPE (Qwen2 has the bias).
    AttnFeatures normed, biased, normed_biased;
    normed.qk_norm = true;
    biased.qkv_bias = true;
    normed_biased.qk_norm = normed_biased.qkv_bias = true;
    for (DType act : {DType::F32, DType::F16, DType::BF16})
        for (DType kvt : {DType::F32, DType::F16, DType::BF16}) {
            attention_case(act, kvt, 8, 2, 64, true, 1, 5, normed);
            attention_case(act, kvt, 6, 3, 40, true, 7, 1);
            attention_case(act, kvt, 4, 4, 64, false, 1, 9, biased);
            attention_case(act, kvt, 8, 2, 64, true, 1, 5, normed_biased);
        }
    // A bias with the whole-projection norm (OLMoE) is refused: that norm reads QKV unbiased.
    RopeAppendArgs bad{};
    bad.qkv_bias = reinterpret_cast<const float *>(16);
    bad.norm_whole = 1;
    bad.rows = bad.n_heads = bad.n_kv_heads = 1, bad.head_dim = 64, bad.max_seq = 8;
    bad.act_dtype = bad.kv_dtype = (int)DType::F16;
    assert_int_equal(launch_rope_append(bad, 0), cudaErrorInvalidValue);
}

// The new architectures' features on every path: the CUDA-core kernel with one split
// (prefill) and many (decode), the tensor-core prefill kernel (fp16/bf16, head_dim 64/128,
// 16+ rows), head_dim 256 (Gemma) and odd ones (80, 96: Phi). Windows shorter than the
// cached sequence (positions reach ~330) and longer than it, partial rotation (1/2 and 3/4
// of the head), q/k norms with GQA, soft-capped scores with a score scale other than
// 1/sqrt(head_dim).
void test_gpu_attention_features(void **) {
    SKIP_WITHOUT_GPU();
    auto feats = [](uint32_t hd, int which) {
        AttnFeatures f;
        switch (which) {
        case 0: f.window = 7; break;                                  // shorter than any sequence here
        case 1: f.window = 1000; break;                               // longer than every sequence
        case 2: f.rot_dim = hd / 2; f.qk_norm = true; break;          // Phi-style partial rotation + Qwen3 norms
        case 3: f.rot_dim = hd * 3 / 4 / 2 * 2; f.window = 64; break; // 3/4 rotation, window of one tile
        case 4: f.softcap = 1.0f; f.scale = 0.4f; f.qk_norm = true; break; // scores reach the cap
        case 5: f.softcap = 50.0f; f.window = 33; f.qk_norm = true; f.rot_dim = hd / 2; break; // everything
        }
        return f;
    };
    for (DType act : {DType::F32, DType::F16, DType::BF16}) {
        const DType kvt = act == DType::F32 ? DType::F32 : DType::F16;
        for (int which = 0; which < 6; which++) {
            for (uint32_t splits : {1u, 7u, 200u}) {
                attention_case(act, kvt, 8, 2, 128, true, splits, 3, feats(128, which));  // GQA (Qwen3, Llama-3)
                attention_case(act, kvt, 4, 2, 256, true, splits, 2, feats(256, which));  // Gemma's head_dim
                attention_case(act, kvt, 6, 6, 80, true, splits, 1, feats(80, which));    // Phi-2-like decode
                attention_case(act, kvt, 12, 4, 96, true, splits, 5, feats(96, which));   // Phi-3-like
            }
            attention_case(act, kvt, 8, 2, 128, true, 64, 1, feats(128, which)); // decode, many splits
        }
    }
    // Tensor-core prefill (every pair of types it takes) with windows cutting through and
    // across its 64-key tiles.
    const std::pair<DType, DType> tc_types[] = {{DType::F16, DType::F16}, {DType::BF16, DType::BF16}, {DType::BF16, DType::F16}, {DType::F32, DType::F32}};
    for (const auto &[act, kvt] : tc_types)
        for (int which = 0; which < 6; which++)
            for (uint32_t n_new : {16u, 70u, 130u}) {
                AttnFeatures f128 = feats(128, which), f64 = feats(64, which), f96 = feats(96, which);
                f128.tf32 = f64.tf32 = f96.tf32 = f128.tc = f64.tc = f96.tc = true;
                f64.split_keys = f96.split_keys = kvt == DType::F16 && (which + n_new) % 2 == 0; // half the f16 cases each way
                f128.split_keys = kvt == DType::F16 && !f64.split_keys;
                attention_case(act, kvt, 8, 2, 128, true, 1, n_new, f128);
                attention_case(act, kvt, 4, 4, 64, true, 1, n_new, f64);
                attention_case(act, kvt, 12, 4, 96, true, 1, n_new, f96);
            }
}

// The short decode kernel (attention_short.cu), one new row for each of two sequences, one of
// them at the kernel's key limit: rotating and caching k and v itself (no q/k norms: GPT-2,
// Llama) and after rope_append (q/k norms), against the same CPU reference as the split kernel.
void test_gpu_attention_short(void **) {
    SKIP_WITHOUT_GPU();
    auto feats = [](int which, uint32_t hd) {
        AttnFeatures f;
        f.short_kernel = true;
        switch (which) {
        case 1: f.window = 7; break;
        case 2: f.window = 1000; f.rot_dim = hd / 2; break;
        case 3: f.qk_norm = true; break;                                    // rope_append first
        case 4: f.qk_norm_whole = true; f.no_k_norm = hd == 64; break;                  // OLMoE's norms
        case 5: f.softcap = 1.0f; f.scale = 0.4f; break;                    // scores reach the cap
        case 6: f.softcap = 50.0f; f.window = 33; f.rot_dim = hd * 3 / 4 / 2 * 2; break;
        }
        return f;
    };
    for (DType act : {DType::F32, DType::F16, DType::BF16})
        for (DType kvt : {DType::F32, DType::F16, DType::BF16})
            for (int which = 0; which < 7; which++) {
                attention_case(act, kvt, 4, 4, 64, false, 1, 1, feats(which, 64)); // GPT-2-like, no RoPE
                attention_case(act, kvt, 8, 8, 96, false, 1, 1, feats(which, 96)); // the 768-wide character model
                attention_case(act, kvt, 8, 2, 128, true, 1, 1, feats(which, 128)); // GQA with RoPE
                attention_case(act, kvt, 7, 1, 80, true, 1, 1, feats(which, 80));   // one kv head
                attention_case(act, kvt, 6, 3, 12, true, 1, 1, feats(which, 12));   // f32 only (48-byte rows); refused in 16 bits
                attention_case(act, kvt, 4, 2, 256, true, 1, 1, feats(which, 256)); // largest head_dim
            }
    for (DType act : {DType::F32, DType::F16, DType::BF16}) {
        const DType kvt = act == DType::F32 ? DType::F32 : DType::F16;
        attention_case(act, kvt, 64, 1, 32, true, 1, 1, feats(0, 32)); // the largest query group
        attention_case(act, kvt, 6, 3, 8, true, 1, 1, feats(0, 8));    // tiny head_dim (rows of one or two vectors)
        attention_case(act, kvt, 5, 5, 6, true, 1, 1, feats(0, 6));    // rows of 12 or 24 bytes: refused
        attention_case(act, kvt, 14, 2, 64, true, 1, 1, feats(0, 64)); // a group of 7 in blocks of 2 heads
        attention_case(act, kvt, 12, 2, 40, false, 1, 1, feats(0, 40)); // a group of 6 in blocks of 3 heads
    }
}

// ---------------------------------------------------------------- whole executor

// A small synthetic model that uses every feature of the new architectures, driven through
// the Executor interface with random weights, on the CPU and CUDA backends: scaled
// embedding, q/k norms, partial and full rotation with two RoPE specs, windows shorter and
// longer than the sequences, soft-capped scores, a score scale, GeGLU and SwiGLU, post-norms
// (norm_add, RMS and LayerNorm) next to a residual projection, soft-capped logits. Prefill
// (GEMM paths, every row's logits) and decode (GEMV paths, graph capture then replay) of two
// sequences at once.
struct FeatureModel {
    gpt::ModelShape shape;
    std::vector<std::vector<float>> store; // host data of every weight
    std::vector<gpt::Weight> w;            // tok, head, out_norm, then per layer kPerLayer
    static constexpr uint32_t kPerLayer = 10;
    enum { QKV, O, GATE_UP, DOWN, LN1, LN2, POST1, POST2, QN, KN };

    FeatureModel() {
        shape.n_layers = 3;
        shape.d_model = 64;
        shape.n_heads = 4;
        shape.n_kv_heads = 2;
        shape.head_dim = 64;
        shape.d_ff = 96;
        shape.vocab_size = 101;
        shape.gated_ffn = true;
        shape.ropes = {gpt::rope_default(10000.0, 32), gpt::rope_default(500000.0, 48)};
        const uint32_t d = shape.d_model;
        add(shape.vocab_size, d, 0.3f); // tok
        add(shape.vocab_size, d, 1.0f / std::sqrt((float)d)); // head
        add_norm(d);
        for (uint32_t l = 0; l < shape.n_layers; l++) {
            add(shape.qkv_dim(), d, 1.0f / std::sqrt((float)d));
            add(d, shape.q_dim(), 1.0f / std::sqrt((float)shape.q_dim()));
            add(2 * shape.d_ff, d, 1.0f / std::sqrt((float)d));
            add(d, shape.d_ff, 1.0f / std::sqrt((float)shape.d_ff));
            for (int i = 0; i < 4; i++) add_norm(d);
            add_norm(shape.head_dim);
            add_norm(shape.head_dim);
        }
    }
    void add(uint64_t rows, uint64_t cols, float scale) {
        store.push_back(randn(rows * cols, scale));
        gpt::Weight x;
        x.rows = rows;
        x.cols = cols;
        w.push_back(x);
    }
    void add_norm(uint32_t n) {
        add(n, 1, 0.2f);
        for (auto &v : store.back()) v += 1.0f;
    }
    // Weights pointing at the host data, for a device to place.
    std::vector<gpt::Weight> host_weights() const {
        std::vector<gpt::Weight> v = w;
        for (size_t i = 0; i < v.size(); i++) v[i].data = store[i].data();
        return v;
    }
    const gpt::Weight &L(const std::vector<gpt::Weight> &ws, uint32_t layer, int which) const {
        return ws[3 + layer * kPerLayer + which];
    }
    void forward(gpt::Executor &ex, const std::vector<gpt::Weight> &ws, float *host_all) const {
        using gpt::Act;
        using gpt::Activation;
        using gpt::NormKind;
        const float eps = 1e-6f;
        ex.embed(ws[0], nullptr, std::sqrt((float)shape.d_model));
        for (uint32_t l = 0; l < shape.n_layers; l++) {
            ex.norm(NormKind::RMS, L(ws, l, LN1), nullptr, eps);
            ex.matmul(Act::H, L(ws, l, QKV), nullptr, Act::QKV, Activation::NONE);
            gpt::AttentionSpec a;
            a.layer = l;
            a.qk_norm_eps = eps;
            if (l == 0) { // Gemma-2/3-like local layer: half rotation, norms, short window, cap
                a.rope = 0;
                a.q_norm = &L(ws, l, QN);
                a.k_norm = &L(ws, l, KN);
                a.window = 6;
                a.softcap = 2.0f;
            } else if (l == 1) { // 3/4 rotation, another scale, every key
                a.rope = 1;
                a.scale = 0.3f;
            } else { // no rotation, a window longer than the sequences, norms
                a.q_norm = &L(ws, l, QN);
                a.k_norm = &L(ws, l, KN);
                a.window = 100;
            }
            ex.attention(a);
            if (l == 1) { // Llama-style: projections added to the residual stream
                ex.matmul(Act::ATT, L(ws, l, O), nullptr, Act::X, Activation::NONE);
                ex.norm(NormKind::RMS, L(ws, l, LN2), nullptr, eps);
                ex.matmul_glu(Act::H, L(ws, l, GATE_UP), Act::FF, Activation::SILU);
                ex.matmul(Act::FF, L(ws, l, DOWN), nullptr, Act::X, Activation::NONE);
                continue;
            }
            const NormKind post = l == 0 ? NormKind::RMS : NormKind::LAYER;
            ex.matmul(Act::ATT, L(ws, l, O), nullptr, Act::H, Activation::NONE);
            ex.norm_add(post, Act::H, L(ws, l, POST1), eps);
            ex.norm(NormKind::RMS, L(ws, l, LN2), nullptr, eps);
            ex.matmul_glu(Act::H, L(ws, l, GATE_UP), Act::FF, Activation::GELU_TANH);
            ex.matmul(Act::FF, L(ws, l, DOWN), nullptr, Act::H, Activation::NONE);
            ex.norm_add(post, Act::H, L(ws, l, POST2), eps);
        }
        ex.norm(NormKind::RMS, ws[2], nullptr, eps);
        ex.logits(ws[1], host_all, 3.0f, nullptr);
    }
};

// Weights handed to a device directly, not from a file: nothing to check or release.
struct NoFile final : gpt::WeightSource {
    void check(size_t, uint64_t) override {}
    void check_all() override {}
    void release(size_t, uint64_t, uint64_t) override {}
    bool read_only_mapping() const override { return false; }
};

void test_gpu_executor_features(void **) {
    SKIP_WITHOUT_GPU();
    const FeatureModel m;
    struct Mode { DType t; double tol; };
    for (Mode mode : {Mode{DType::F32, 1e-4}, Mode{DType::F16, 2e-2}, Mode{DType::BF16, 5e-2}}) {
        auto cpu_dev = gpt::make_cpu_device();
        auto gpu_dev = gpt::make_cuda_device(0);
        std::vector<gpt::Weight> wc = m.host_weights(), wg = m.host_weights();
        std::vector<gpt::Weight *> pc, pg;
        for (auto &x : wc) pc.push_back(&x);
        for (auto &x : wg) pg.push_back(&x);
        NoFile nf;
        cpu_dev->place_weights(pc, gpt::Placement{DType::F32, false}, nf);
        gpu_dev->place_weights(pg, gpt::Placement{mode.t, false}, nf);
        gpt::ExecParams pcpu, pgpu;
        pcpu.max_batch = pgpu.max_batch = 2;
        pcpu.max_seq = pgpu.max_seq = 64;
        pcpu.max_step_tokens = pgpu.max_step_tokens = 64;
        cpu_dev->choose(pcpu, 0, 0, 2);
        gpu_dev->choose(pgpu, 0, 0, 0);
        auto ec = cpu_dev->create_executor(m.shape, pcpu);
        auto eg = gpu_dev->create_executor(m.shape, pgpu);
        const uint32_t V = m.shape.vocab_size;
        uint32_t len[2] = {0, 0};
        // One step on both executors; returns after comparing their logits.
        auto step = [&](uint32_t batch, uint32_t nt, bool all, const char *what) {
            std::vector<int32_t> toks(batch * nt);
            for (auto &t : toks) t = (int32_t)(g_rng() % V);
            const uint32_t rows = all ? batch * nt : batch;
            std::vector<float> a(rows * V, NAN), b(rows * V, NAN);
            auto run = [&](gpt::Executor &ex, const std::vector<gpt::Weight> &ws, float *out) {
                gpt::StepInput in;
                in.batch = batch;
                in.n_tokens = nt;
                in.tokens = toks.data();
                in.start_pos = len;
                in.all_logits = all;
                in.logits_seq_stride = nt;
                in.host_all_logits = all ? out : nullptr;
                ex.begin_step(in);
                ex.run([&] { m.forward(ex, ws, in.host_all_logits); }, true);
                if (!all) ex.read_logits(out);
            };
            run(*ec, wc, a.data());
            run(*eg, wg, b.data());
            char msg[160];
            std::snprintf(msg, sizeof msg, "feature model %s: %s (batch %u, %u tokens from %u/%u)", dname(mode.t), what, batch, nt,
                          len[0], len[1]);
            expect_close(msg, b, a, mode.tol);
            for (uint32_t i = 0; i < batch; i++) len[i] += nt;
        };
        step(2, 20, true, "prefill"); // GEMM paths, the tensor-core attention (fp16/bf16), window 6
        for (int i = 0; i < 6; i++) step(2, 1, false, "decode"); // GEMV, graph captured then replayed
        step(1, 1, false, "decode batch 1");
        step(2, 3, false, "three-token step"); // the sequences now start at different positions
        for (int i = 0; i < 3; i++) step(2, 1, false, "decode again");
        // A rotation the kernels cannot run is refused at creation, naming the numbers.
        gpt::ModelShape odd = m.shape;
        odd.ropes[1].rot_dim = 47;
        try {
            (void)gpu_dev->create_executor(odd, pgpu);
            fail_msg("an odd rot_dim was accepted");
        } catch (const gpt::Error &e) {
            assert_int_equal(e.status(), GPT_ERR_UNSUPPORTED);
            assert_non_null(std::strstr(e.what(), "rotates 47 dims"));
        }
    }
}

// Vocabularies on both sides of the one-kernel sort's limit (2,048: sample.cu), a
// character-level one and GPT-2's, so every path (the whole row ordered in shared memory: by
// rank up to 384 entries, by a radix sort above; the top_k selected first and sorted: by one
// block up to 14,335 entries, by many from 14,336 on; the radix select by mass for top_k 0 or
// above 2,048) is checked against the CPU sampler.
const uint32_t kSampleVocabs[] = {65, 384, 385, 1000, 2048, 2049, 5000, 50257};

void test_gpu_sample(void **) {
    SKIP_WITHOUT_GPU();
    for (const uint32_t V : kSampleVocabs) {
        const uint32_t B = 3;
        DevBuf dlog(B * V, DType::F32), duni(B, DType::F32), drec(B * 8, DType::F32), dn(B, DType::F32), dout(B, DType::F32);
        DevBuf ws(sample_workspace_bytes(B, V) / 4 + 1, DType::F32);
        std::vector<float> vals(V);
        std::vector<int32_t> idx(V);
        gpt::SamplerScratch scratch{vals.data(), idx.data()};
        int mismatches = 0, trials = 0;
        for (int trial = 0; trial < 60; trial++) {
            auto logits = randn(B * V, 2.0f);
            if (trial % 5 == 0) logits[17] = logits[V - 2] = 50.0f; // a tie: lowest id must win
            if (trial % 5 == 2) // 60 equal maxima per row: top_k 50 keeps their 50 lowest ids
                for (uint32_t b = 0; b < B; b++)
                    for (int j = 0; j < 60; j++) logits[b * V + (g_rng() % V)] = 20.0f;
            if (trial % 6 == 3) // values on a coarse grid, as bf16 logits: ties everywhere
                for (auto &x : logits) x = std::round(x * 2.0f) / 2.0f;
            std::vector<int32_t> recent(B * 8), n_recent(B);
            for (auto &t : recent) t = (int32_t)(g_rng() % V);
            for (auto &n : n_recent) n = (int32_t)(g_rng() % 9);
            std::vector<float> uni(B);
            for (auto &u : uni) u = (float)(g_rng() >> 40) * 0x1p-24f;
            dlog.upload(logits);
            duni.upload(uni);
            drec.upload_raw(recent.data(), 4 * recent.size());
            dn.upload_raw(n_recent.data(), 4 * B);
            gpt::SampleSpec spec;
            // Tiny temperatures (accepted values) overflowed logits / T before: only the maxima
            // may be drawn, exactly as on the CPU.
            const bool tiny = trial % 3 != 0 && trial % 7 >= 5;
            spec.temperature = trial % 3 == 0 ? 0.0f : !tiny ? 0.7f : trial % 7 == 5 ? 1e-38f : 1.4e-45f;
            spec.top_k = trial % 2 ? 0 : trial % 4 == 0 ? 50 : 3000;
            spec.top_p = trial % 4 == 1 || trial % 8 == 2 ? 0.9f : 1.0f;
            spec.min_p = trial % 4 == 2 ? 0.05f : 0.0f;
            spec.repetition_penalty = trial % 3 == 1 ? 1.3f : 1.0f;
            SampleArgs a{};
            a.logits = dlog.as<float>();
            a.batch = B;
            a.vocab = V;
            a.temperature = spec.temperature;
            a.penalty = spec.repetition_penalty;
            a.recent = drec.as<int32_t>();
            a.n_recent = dn.as<int32_t>();
            a.recent_stride = 8;
            a.top_k = spec.top_k;
            a.top_p = spec.top_p;
            a.min_p = spec.min_p;
            a.uniform = duni.as<float>();
            a.workspace = ws.p;
            a.out = dout.as<int32_t>();
            CK(launch_sample(a, 0));
            std::vector<int32_t> got(B), again(B);
            CK(cudaMemcpy(got.data(), dout.p, 4 * B, cudaMemcpyDeviceToHost));
            CK(launch_sample(a, 0)); // the same pick on every run (no order-dependent sums)
            CK(cudaMemcpy(again.data(), dout.p, 4 * B, cudaMemcpyDeviceToHost));
            assert_memory_equal(got.data(), again.data(), 4 * B);
            for (uint32_t b = 0; b < B; b++) {
                gpt::SampleRow row;
                row.uniform = uni[b];
                row.recent = &recent[b * 8];
                row.n_recent = (uint32_t)n_recent[b];
                const int32_t want = gpt::sample_row(&logits[b * V], V, spec, row, scratch);
                trials++;
                if (got[b] != want) {
                    mismatches++;
                    std::printf("  sample trial %d row %u: gpu %d cpu %d (temperature %g top_k %u top_p %g min_p %g)\n", trial, b,
                                got[b], want, spec.temperature, spec.top_k, spec.top_p, spec.min_p);
                }
                if (spec.temperature <= 0.0f || tiny) assert_int_equal(got[b], want); // greedy (and its limit) is exact
            }
        }
        // Stochastic picks may differ only where summation order moves a boundary: rare.
        assert_true(mismatches <= trials / 50);
    }
}

// The adjustment pass (frequency/presence penalties and logit bias, sampler.h step 2): the
// CUDA sampler given per-row lists of distinct tokens and deltas picks as the CPU sampler.
void test_gpu_sample_adjustments(void **) {
    SKIP_WITHOUT_GPU();
    for (const uint32_t V : kSampleVocabs) {
        const uint32_t B = 3, stride = 64;
        DevBuf dlog(B * V, DType::F32), duni(B, DType::F32), dn(B, DType::F32), dout(B, DType::F32);
        DevBuf dtok(B * stride, DType::F32), ddelta(B * stride, DType::F32), dnadj(B, DType::F32);
        DevBuf ws(sample_workspace_bytes(B, V) / 4 + 1, DType::F32);
        std::vector<float> vals(V);
        std::vector<int32_t> idx(V);
        gpt::SamplerScratch scratch{vals.data(), idx.data()};
        int mismatches = 0, trials = 0;
        for (int trial = 0; trial < 60; trial++) {
            auto logits = randn(B * V, 2.0f);
            std::vector<int32_t> tok(B * stride, -5), n_adj(B), n_recent(B, 0);
            std::vector<float> delta(B * stride, 0.0f), uni(B);
            for (uint32_t b = 0; b < B; b++) {
                std::set<int32_t> used;
                n_adj[b] = (int32_t)(g_rng() % (stride + 1));
                for (int32_t j = 0; j < n_adj[b]; j++) {
                    int32_t t;
                    do t = (int32_t)(g_rng() % (V + 2)) - 1; // -1 and V: skipped by both
                    while (!used.insert(t).second);
                    tok[b * stride + j] = t;
                    delta[b * stride + j] = g_rng() % 4 == 0 ? 60.0f : (float)((double)(g_rng() % 2000) / 100.0 - 10.0);
                }
            }
            for (auto &u : uni) u = (float)(g_rng() >> 40) * 0x1p-24f;
            dlog.upload(logits);
            duni.upload(uni);
            dn.upload_raw(n_recent.data(), 4 * B);
            dtok.upload_raw(tok.data(), 4 * tok.size());
            ddelta.upload(delta);
            dnadj.upload_raw(n_adj.data(), 4 * B);
            gpt::SampleSpec spec;
            spec.temperature = trial % 2 == 0 ? 0.0f : 0.8f;
            spec.top_k = trial % 3 == 0 ? 0 : 40;
            spec.top_p = trial % 4 == 1 ? 0.9f : 1.0f;
            SampleArgs a{};
            a.logits = dlog.as<float>();
            a.batch = B;
            a.vocab = V;
            a.temperature = spec.temperature;
            a.penalty = 1.0f;
            a.recent = nullptr;
            a.n_recent = dn.as<int32_t>();
            a.recent_stride = 0;
            a.adjust_tokens = dtok.as<int32_t>();
            a.adjust_deltas = ddelta.as<float>();
            a.n_adjust = dnadj.as<int32_t>();
            a.adjust_stride = stride;
            a.top_k = spec.top_k;
            a.top_p = spec.top_p;
            a.min_p = spec.min_p;
            a.uniform = duni.as<float>();
            a.workspace = ws.p;
            a.out = dout.as<int32_t>();
            CK(launch_sample(a, 0));
            std::vector<int32_t> got(B);
            CK(cudaMemcpy(got.data(), dout.p, 4 * B, cudaMemcpyDeviceToHost));
            for (uint32_t b = 0; b < B; b++) {
                gpt::SampleRow row;
                row.uniform = uni[b];
                row.adjust_tokens = &tok[b * stride];
                row.adjust_deltas = &delta[b * stride];
                row.n_adjust = (uint32_t)n_adj[b];
                const int32_t want = gpt::sample_row(&logits[b * V], V, spec, row, scratch);
                trials++;
                if (got[b] != want) {
                    mismatches++;
                    std::printf("  adjusted sample trial %d row %u: gpu %d cpu %d (T %g, %d adjustments)\n", trial, b, got[b], want,
                                spec.temperature, n_adj[b]);
                }
                if (spec.temperature <= 0.0f) assert_int_equal(got[b], want); // greedy is exact
            }
        }
        assert_true(mismatches <= trials / 50);
    }
}

// ---------------------------------------------------------------- whole models

struct Loaded {
    gpt_model *m = nullptr;
    gpt_ctx *c = nullptr;
    ~Loaded() {
        gpt_ctx_free(c);
        gpt_model_free(m);
    }
};

void load(Loaded &l, const fixture::Model &fx, int device, uint32_t weight_dtype, uint32_t ctx_flags, uint32_t max_batch = 1,
          uint32_t model_flags = 0) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = device;
    mp.weight_dtype = weight_dtype;
    mp.flags = model_flags;
    gpt_status st = gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &l.m);
    if (st != GPT_OK) fail_msg("load: %s", gpt_last_error());
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.flags = ctx_flags;
    cp.max_batch = max_batch;
    st = gpt_ctx_create(l.m, &cp, &l.c);
    if (st != GPT_OK) fail_msg("ctx: %s", gpt_last_error());
}

std::vector<fixture::Spec> model_specs() {
    std::vector<fixture::Spec> v;
    fixture::Spec g;
    g.arch = GPT_ARCH_GPT2;
    g.d_model = 48;
    g.n_heads = 4;
    g.d_ff = 100;
    g.tied_head = true;
    v.push_back(g);
    // The PyTorch scripts' variants: exact GELU (nanoGPT), ReLU with a head bias (the lecture).
    g.ffn_activation = gpt::FfnActivation::GELU_ERF;
    v.push_back(g);
    g.ffn_activation = gpt::FfnActivation::RELU;
    g.tied_head = false;
    g.head_bias = true;
    v.push_back(g);
    fixture::Spec l;
    l.arch = GPT_ARCH_LLAMA;
    l.d_model = 40;
    l.n_heads = 4;
    l.n_kv_heads = 2;
    l.head_dim = 16;
    l.d_ff = 72;
    v.push_back(l);
    l.n_heads = 6;
    l.n_kv_heads = 1;
    l.head_dim = 8;
    l.qkv_bias = true;
    l.tied_head = true;
    v.push_back(l);
    // Windows shorter than the 23-token prefill (issue #18): Mistral-style on every layer,
    // Gemma-2 (soft-caps, post-norms, GeGLU, query scale, even layers windowed) and Gemma-3
    // (q/k norms, local RoPE base, linear scaling on the global layer).
    fixture::Spec m = l;
    m.qkv_bias = false, m.tied_head = false, m.n_layers = 2, m.sliding_window = 7; // every layer (no per-layer list)
    v.push_back(m);
    fixture::Spec g2;
    g2.arch = GPT_ARCH_GEMMA2;
    g2.n_layers = 3, g2.d_model = 40, g2.n_heads = 4, g2.n_kv_heads = 2, g2.head_dim = 16, g2.d_ff = 56;
    g2.sliding_window = 6, g2.window_layers = {1, 0, 1}, g2.attn_softcap = 2.0f, g2.logit_softcap = 3.0f;
    g2.query_pre_attn_scalar = 24.0f, g2.norm_eps = 1e-6f;
    v.push_back(g2);
    fixture::Spec g3 = g2;
    g3.arch = GPT_ARCH_GEMMA3;
    g3.n_layers = 4, g3.n_heads = 3, g3.n_kv_heads = 1, g3.head_dim = 12, g3.sliding_window = 5, g3.window_layers = {1, 1, 0, 1};
    g3.attn_softcap = 0, g3.logit_softcap = 0, g3.query_pre_attn_scalar = 12.0f, g3.rope_theta = 1000000.0f;
    g3.rope_theta_local = 10000.0f, g3.rope_scaling.type = gpt::RopeScalingType::LINEAR, g3.rope_scaling.factor = 8.0f;
    v.push_back(g3);
    // Qwen3 (q/k norms per head, q width 96 != d_model 40, biases) and Phi-3 (3/4 of each head
    // rotated, longrope with the long factors: the context's 64 positions pass its original 16).
    fixture::Spec q3 = l;
    q3.arch = GPT_ARCH_QWEN3;
    q3.n_heads = 6, q3.n_kv_heads = 2, q3.head_dim = 16, q3.qkv_bias = true, q3.tied_head = true, q3.rope_theta = 1000000.0f;
    v.push_back(q3);
    fixture::Spec p3;
    p3.arch = GPT_ARCH_PHI3;
    p3.n_layers = 2, p3.d_model = 48, p3.n_heads = 6, p3.n_kv_heads = 2, p3.head_dim = 16, p3.d_ff = 40, p3.rope_dim = 12;
    gpt::RopeScaling &r = p3.rope_scaling;
    r.type = gpt::RopeScalingType::LONGROPE;
    r.original_context = 16;
    r.attention_factor = (float)std::sqrt(1 + std::log(4.0) / std::log(16.0));
    for (uint32_t i = 0; i < p3.rope_dim / 2; i++) {
        r.short_factor.push_back(1.0f + 0.05f * (float)i);
        r.long_factor.push_back(1.5f + 1.7f * (float)i);
    }
    v.push_back(p3);
    for (auto &s : v) s.seed = g_rng();
    return v;
}

void test_gpu_model_logits(void **) {
    SKIP_WITHOUT_GPU();
    struct Mode { uint32_t file, weights, flags; double tol; };
    const Mode modes[] = {{1, GPT_DTYPE_F32, 0, 1e-4},          {1, GPT_DTYPE_F32, GPT_CTX_ALLOW_TF32, 5e-3},
                          {1, GPT_DTYPE_F16, 0, 2e-2},          {1, GPT_DTYPE_BF16, 0, 5e-2},
                          {2, GPT_DTYPE_AUTO, 0, 2e-2},         {3, GPT_DTYPE_AUTO, 0, 5e-2}};
    for (fixture::Spec s : model_specs())
        for (const Mode &mode : modes) {
            s.dtype = (gpt::DType)mode.file;
            auto fx = fixture::make(s);
            Loaded cpu, gpu;
            load(cpu, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0);
            load(gpu, fx, 0, mode.weights, mode.flags);
            const uint32_t V = fx.config.vocab_size, T = 23;
            std::vector<int32_t> toks(T + 6);
            for (auto &t : toks) t = (int32_t)(g_rng() % V);
            std::vector<float> a(T * V, NAN), b(T * V, NAN);
            assert_int_equal(gpt_forward(cpu.c, toks.data(), 1, T, GPT_FORWARD_ALL_LOGITS, a.data()), GPT_OK);
            if (gpt_forward(gpu.c, toks.data(), 1, T, GPT_FORWARD_ALL_LOGITS, b.data()) != GPT_OK)
                fail_msg("gpu forward: %s", gpt_ctx_last_error(gpu.c));
            char what[128];
            std::snprintf(what, sizeof what, "%s file=%s weights=%s flags=%u prefill", gpt_arch_name(s.arch),
                          gpt_dtype_name(mode.file), gpt_dtype_name(mode.weights), mode.flags);
            expect_close(what, b, a, mode.tol);
            // The same prompt asking for the last row's logits only: the last layer then runs
            // on that row alone after its attention (keep_last_rows). It rewrites the same
            // cache entries, so the decode steps below continue from either. One row's error
            // is noisier than 23 rows': the bar is the mode's tolerance or twice the error of
            // that row in the all-rows run, whichever is larger (a wrong row is off by ~1).
            gpt_ctx_reset(gpu.c);
            std::vector<float> last(V, NAN), want_last(a.end() - V, a.end());
            if (gpt_forward(gpu.c, toks.data(), 1, T, 0, last.data()) != GPT_OK) fail_msg("gpu forward: %s", gpt_ctx_last_error(gpu.c));
            const double row_error = relative_error(std::vector<float>(b.end() - V, b.end()), want_last);
            expect_close((std::string(what) + " last row only").c_str(), last, want_last, std::max(mode.tol, 2 * row_error));
            if (mode.file == 1 && mode.weights == GPT_DTYPE_F32 && !mode.flags) {
                // Four sequences of one step (rows 22, 45, 68, 91 kept), then a decode step of
                // four rows (cuBLAS, not the GEMV: QKV's bias is added before the short kernel
                // that rotates and caches), against the CPU's.
                constexpr uint32_t B = 4;
                Loaded cpu2, gpu2;
                load(cpu2, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0, B);
                load(gpu2, fx, 0, mode.weights, mode.flags, B);
                std::vector<int32_t> four(B * T), next(B);
                for (auto &t : four) t = (int32_t)(g_rng() % V);
                for (auto &t : next) t = (int32_t)(g_rng() % V);
                std::vector<float> c2(B * V, NAN), g2(B * V, NAN);
                assert_int_equal(gpt_forward(cpu2.c, four.data(), B, T, 0, c2.data()), GPT_OK);
                if (gpt_forward(gpu2.c, four.data(), B, T, 0, g2.data()) != GPT_OK) fail_msg("gpu forward: %s", gpt_ctx_last_error(gpu2.c));
                expect_close((std::string(what) + " batch 4 last rows").c_str(), g2, c2, mode.tol);
                std::fill(g2.begin(), g2.end(), NAN);
                assert_int_equal(gpt_forward(cpu2.c, next.data(), B, 1, 0, c2.data()), GPT_OK);
                if (gpt_forward(gpu2.c, next.data(), B, 1, 0, g2.data()) != GPT_OK) fail_msg("gpu forward: %s", gpt_ctx_last_error(gpu2.c));
                expect_close((std::string(what) + " batch 4 decode").c_str(), g2, c2, mode.tol);
            }
            // Decode steps (graph path on the GPU) continue identically.
            for (uint32_t i = 0; i < 6; i++) {
                std::vector<float> la(V, NAN), lb(V, NAN);
                assert_int_equal(gpt_forward(cpu.c, &toks[T + i], 1, 1, 0, la.data()), GPT_OK);
                assert_int_equal(gpt_forward(gpu.c, &toks[T + i], 1, 1, 0, lb.data()), GPT_OK);
                expect_close((std::string(what) + " decode").c_str(), lb, la, mode.tol);
            }
        }
}

// Decode steps from below the short attention kernel's key limit to past it (the step's
// graph changes from the short kernel, which rotates and caches k and v itself, to the split
// kernel and its combine step, which read what it cached), against the CPU at every step:
// f32, and f16 with the f16 cache.
void test_gpu_decode_across_short_attention(void **) {
    SKIP_WITHOUT_GPU();
    uint32_t tested = 0;
    for (fixture::Spec s : model_specs()) {
        for (gpt::DType t : {gpt::DType::F32, gpt::DType::F16}) {
            s.dtype = t;
            s.context_length = 320;
            const uint32_t hd = s.head_dim ? s.head_dim : s.d_model / s.n_heads;
            const uint32_t kv_heads = s.arch == GPT_ARCH_GPT2 ? s.n_heads : s.n_kv_heads;
            const uint32_t limit = attention_short_max_keys(s.n_heads, kv_heads, hd, (int)t);
            if (limit == 0) continue; // rows not of whole 16-byte vectors (gpt2's f16 fixture): the split kernel only
            assert_true(limit >= 16 && limit + 4 <= s.context_length);
            tested++;
            auto fx = fixture::make(s);
            Loaded cpu, gpu, split;
            load(cpu, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0);
            load(gpu, fx, 0, GPT_DTYPE_AUTO, 0);
            setenv("GPT_ATTN_SHORT", "0", 1); // read when the context is created
            load(split, fx, 0, GPT_DTYPE_AUTO, 0);
            unsetenv("GPT_ATTN_SHORT");
            const uint32_t V = fx.config.vocab_size, T = limit - 5; // decode positions limit - 5 .. limit + 2
            std::vector<int32_t> toks(T + 8);
            for (auto &x : toks) x = (int32_t)(g_rng() % V);
            std::vector<float> a(V, NAN), b(V, NAN), c(V, NAN);
            assert_int_equal(gpt_forward(cpu.c, toks.data(), 1, T, 0, a.data()), GPT_OK);
            assert_int_equal(gpt_forward(gpu.c, toks.data(), 1, T, 0, b.data()), GPT_OK);
            assert_int_equal(gpt_forward(split.c, toks.data(), 1, T, 0, c.data()), GPT_OK);
            const double tol = t == gpt::DType::F32 ? 1e-4 : 2e-2;
            bool paths_differ = false; // the short kernel's sums are not the split kernel's: proof it ran
            for (uint32_t i = 0; i < 8; i++) {
                std::fill(b.begin(), b.end(), NAN);
                assert_int_equal(gpt_forward(cpu.c, &toks[T + i], 1, 1, 0, a.data()), GPT_OK);
                assert_int_equal(gpt_forward(gpu.c, &toks[T + i], 1, 1, 0, b.data()), GPT_OK);
                assert_int_equal(gpt_forward(split.c, &toks[T + i], 1, 1, 0, c.data()), GPT_OK);
                char what[128];
                std::snprintf(what, sizeof what, "%s %s decode at position %u (short kernel up to %u keys)", gpt_arch_name(s.arch),
                              gpt::dtype_name(t), T + i, limit);
                expect_close(what, b, a, tol);
                expect_close((std::string(what) + ", split kernel").c_str(), c, a, tol);
                if (T + i < limit) paths_differ = paths_differ || b != c;
            }
            if (t == gpt::DType::F32 && !paths_differ)
                fail_msg("%s: the short and split kernels gave the same bits below %u keys: was the short one used?", gpt_arch_name(s.arch), limit);
        }
    }
    assert_true(tested >= 8);
}

// Greedy generation: identical on CPU and CUDA fp32, unless the CPU's top two logits are
// within 1e-5 where they part (a tie no backend can be held to).
void test_gpu_greedy_matches_cpu(void **) {
    SKIP_WITHOUT_GPU();
    for (fixture::Spec s : model_specs()) {
        s.context_length = 128;
        auto fx = fixture::make(s);
        Loaded cpu, gpu;
        load(cpu, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0);
        load(gpu, fx, 0, GPT_DTYPE_F32, 0);
        int32_t prompt[3] = {1, 2, 3};
        gpt_sampling_params sp;
        gpt_sampling_params_init(&sp);
        sp.temperature = 0;
        sp.flags = GPT_SAMPLING_IGNORE_EOS;
        int32_t a[64], b[64];
        uint32_t na = 0, nb = 0;
        assert_int_equal(gpt_generate(cpu.c, prompt, 3, &sp, nullptr, nullptr, a, 64, &na), GPT_OK);
        assert_int_equal(gpt_generate(gpu.c, prompt, 3, &sp, nullptr, nullptr, b, 64, &nb), GPT_OK);
        assert_int_equal(na, 64);
        assert_int_equal(nb, 64);
        for (uint32_t i = 0; i < 64; i++) {
            if (a[i] == b[i]) continue;
            // Recompute the CPU logits at the divergence and measure the gap.
            Loaded ref;
            load(ref, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0);
            std::vector<int32_t> seq(prompt, prompt + 3);
            seq.insert(seq.end(), a, a + i);
            std::vector<float> lg(fx.config.vocab_size);
            assert_int_equal(gpt_forward(ref.c, seq.data(), 1, (uint32_t)seq.size(), 0, lg.data()), GPT_OK);
            const float gap = std::fabs(lg[a[i]] - lg[b[i]]);
            std::printf("  %s: greedy diverges at token %u (cpu %d, gpu %d), logit gap %g\n", gpt_arch_name(s.arch), i, a[i], b[i], gap);
            assert_true(gap < 1e-5f * std::max(1.0f, std::fabs(lg[a[i]])));
            break;
        }
    }
}

// Greedy generation with frequency/presence penalties and a logit bias: identical on CPU and
// CUDA fp32, unless the CPU's adjusted top two logits are within 1e-5 where they part.
void test_gpu_penalties_match_cpu(void **) {
    SKIP_WITHOUT_GPU();
    for (fixture::Spec s : model_specs()) {
        s.context_length = 128;
        auto fx = fixture::make(s);
        Loaded cpu, gpu;
        load(cpu, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0);
        load(gpu, fx, 0, GPT_DTYPE_F32, 0);
        const uint32_t V = fx.config.vocab_size;
        int32_t prompt[3] = {1, 2, 3};
        gpt_logit_bias bias[3] = {{(int32_t)(g_rng() % V), 2.0f}, {(int32_t)(g_rng() % V), -50.0f}, {7, 0.5f}};
        gpt_sampling_params sp;
        gpt_sampling_params_init(&sp);
        sp.temperature = 0;
        sp.flags = GPT_SAMPLING_IGNORE_EOS;
        sp.frequency_penalty = 0.4f;
        sp.presence_penalty = 0.3f;
        sp.logit_bias = bias;
        sp.n_logit_bias = 3;
        int32_t a[48], b[48];
        uint32_t na = 0, nb = 0;
        assert_int_equal(gpt_generate(cpu.c, prompt, 3, &sp, nullptr, nullptr, a, 48, &na), GPT_OK);
        assert_int_equal(gpt_generate(gpu.c, prompt, 3, &sp, nullptr, nullptr, b, 48, &nb), GPT_OK);
        assert_int_equal(na, 48);
        assert_int_equal(nb, 48);
        for (uint32_t i = 0; i < 48; i++) {
            if (a[i] == b[i]) continue;
            Loaded ref;
            load(ref, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0);
            std::vector<int32_t> seq(prompt, prompt + 3);
            seq.insert(seq.end(), a, a + i);
            std::vector<float> lg(V);
            assert_int_equal(gpt_forward(ref.c, seq.data(), 1, (uint32_t)seq.size(), 0, lg.data()), GPT_OK);
            for (const auto &e : bias) lg[e.token] += e.bias; // approximately the adjustment, for the gap
            std::map<int32_t, int> count;
            for (uint32_t j = 0; j < i; j++) count[a[j]]++;
            for (const auto &e : count) lg[e.first] -= e.second * sp.frequency_penalty + sp.presence_penalty;
            const float gap = std::fabs(lg[a[i]] - lg[b[i]]);
            std::printf("  %s: penalised greedy diverges at token %u (cpu %d, gpu %d), gap %g\n", gpt_arch_name(s.arch), i, a[i],
                        b[i], gap);
            assert_true(gap < 1e-4f * std::max(1.0f, std::fabs(lg[a[i]])));
            break;
        }
    }
}

// ---------------------------------------------------------------- quantized weights

// Weights quantized by the library's quantizer (tested against the spec in test_quant), so
// the reference is "dequantize in double (dequantize_row is exact), then a naive matmul".
struct QuantMatrix {
    std::vector<uint8_t> bytes;
    std::vector<float> values; // dequantized, [rows][cols]
    gpt::Weight view;
    QuantMatrix(DType t, uint64_t rows, uint64_t cols, uint32_t g, float scale) {
        const std::vector<float> w = randn(rows * cols, scale);
        uint64_t n = 0;
        assert_true(gpt::tensor_bytes(t, rows * cols, cols, g, &n));
        bytes.resize(n);
        gpt::quantize_matrix(w.data(), rows, cols, t, g, bytes.data(), "test");
        view = gpt::Weight{bytes.data(), t, rows, cols, g};
        values.resize(rows * cols);
        for (uint64_t r = 0; r < rows; r++) gpt::dequantize_row(view, r, values.data() + r * cols);
    }
};

// The kernels' dequantization arithmetic (quant_dot.cuh, compiled for the host here: IEEE
// float FMA and multiply, as on the GPU) for every finite f16 scale, every q4 value at each of
// the 8 nibble positions and every q8 value at each of the 4 byte positions, the other fields
// random: exactly q * scale. Runs without a GPU.
void test_quant_dequant_exact_host(void **) {
    uint64_t checked = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7C00) == 0x7C00) continue; // Inf / NaN: refused at load
        const float s = gpt::f16_to_f32((uint16_t)h);
        for (bool q4 : {true, false}) {
            const gpt_cuda::QuantScale k = gpt_cuda::quant_scale(s, q4);
            const int values = q4 ? 16 : 256, fields = q4 ? 8 : 4, bits = q4 ? 4 : 8;
            for (int e = 0; e < fields; e++)
                for (int v = 0; v < values; v += (h % 7 == 0 ? 1 : 5)) { // every value for 1 scale in 7
                    const uint32_t mask = (uint32_t)(values - 1) << (bits * e);
                    const uint32_t w = ((uint32_t)g_rng() & ~mask) | (uint32_t)v << (bits * e);
                    float out[8];
                    if (q4) gpt_cuda::q4_word(w, k, out);
                    else gpt_cuda::q8_word(w, k, out);
                    const int q = q4 ? v - 8 : (int)(int8_t)v;
                    const float want = (float)((double)q * s); // exact: 8 bits times 11
                    if (!(out[e] == want || (out[e] == 0 && want == 0)))
                        fail_msg("%s element %d of word %08x, scale %g (f16 %04x): %.9g, want %.9g", q4 ? "q4" : "q8", e, w, s, h,
                                 out[e], want);
                    checked++;
                }
        }
    }
    assert_true(checked > 1000000);
}

// Every launch of the quantized GEMV a case is checked with: launch_gemv (the default
// variant), each QuantGemvVariant's own plan, and plans no heuristic picks on small matrices -
// the tiled kernel at every thread count, the streaming one at every thread count with 1 or 3
// blocks (so blocks walk many groups of sets, and a thread's loads run ahead across sets)
// where x fits its shared memory, the int8 one likewise where it applies (one row), and the
// tensor-core kernel at every thread count where the device runs it.
struct QuantLaunch {
    std::string name;
    bool plain; // launch_gemv
    QuantGemvPlan plan;
    bool i8; // runs stream-i8 (x rounded to int8: checked against its own reference)
};
std::vector<QuantLaunch> quant_launches(const GemvArgs &a) {
    QuantGemvPlan chosen{};
    CK(quant_gemv_plan(a, QGEMV_AUTO, &chosen));
    std::vector<QuantLaunch> out = {{"launch_gemv", true, {}, chosen.kernel == 3}};
    for (int v = 0; v < QGEMV_VARIANTS; v++) {
        QuantGemvPlan p{};
        CK(quant_gemv_plan(a, v, &p));
        out.push_back({std::string("variant ") + quant_gemv_variant_name(v), false, p, p.kernel == 3});
    }
    const uint32_t sets = (a.n + (a.glu ? 1 : 3)) / (a.glu ? 2 : 4);
    const bool xs_fits = a.rows == 2 && (uint64_t)a.rows * a.k * 4 <= (48u << 10); // the stream-xs kernel's reach
    const bool i8_fits = a.rows == 1 && gpt_cuda::i8_staged_bytes(a.k) <= (48u << 10);
    for (uint32_t log_tk = 5; log_tk <= 8; log_tk++) {
        const uint32_t groups = (sets + (256u >> log_tk) - 1) / (256u >> log_tk);
        out.push_back({"tiled tk " + std::to_string(1u << log_tk), false, {0, log_tk, groups, 0, 0}, false});
        for (uint32_t blocks : {1u, 3u}) {
            if (xs_fits) // the stream kernel stages x in shared memory
                out.push_back({"stream-xs tk " + std::to_string(1u << log_tk) + " blocks " + std::to_string(blocks), false,
                               {1, log_tk, blocks, 1, 0}, false});
            if (i8_fits) {
                out.push_back({"stream-i8 tk " + std::to_string(1u << log_tk) + " blocks " + std::to_string(blocks), false,
                               {3, log_tk, blocks, 1, 1}, true});
                // clusters that stage x together, more blocks than rounds included (k <= 2,048: one round)
                for (uint32_t cluster : {2u, 4u, 8u})
                    if (quant_gemv_clusters_supported())
                        out.push_back({"stream-i8 tk " + std::to_string(1u << log_tk) + " blocks " + std::to_string(blocks) +
                                           " cluster " + std::to_string(cluster),
                                       false, {3, log_tk, blocks, 1, cluster}, true});
            }
        }
        if (quant_gemv_mma_supported()) { // the tensor-core kernel: 1-8 warps a tile of 16 weight rows
            const uint32_t tiles = (a.n + (a.glu ? 7 : 15)) / (a.glu ? 8 : 16);
            out.push_back({"mma tk " + std::to_string(1u << log_tk), false,
                           {2, log_tk, (tiles + (256u >> log_tk) - 1) / (256u >> log_tk), 0, 0}, false});
        }
    }
    return out;
}
cudaError_t run_quant_launch(const GemvArgs &a, const QuantLaunch &l) {
    return l.plain ? launch_gemv(a, 0) : launch_gemv_quant_plan(a, l.plan, 0);
}

// stream-i8's x (one row of k values), as the kernel stages it in f32: per block of 32, t = x *
// 127 / (largest magnitude m), hi = round(t), lo = round((t - hi) * 254); back in double as
// (254 hi + lo) times the block's f32 scale m / (127 * 254 * 16), times 16.
std::vector<double> staged_i8(const float *x, uint32_t k) {
    std::vector<double> out(k);
    for (uint32_t b0 = 0; b0 < k; b0 += 32) {
        float m = 0;
        for (uint32_t c = b0; c < b0 + 32; c++) m = std::max(m, std::fabs(x[c]));
        const float inv = m > 0 ? 127.0f / m : 0.0f, scale = m / 516128.0f;
        for (uint32_t c = b0; c < b0 + 32; c++) {
            const float t = x[c] * inv, hi = std::nearbyint(t), lo = std::nearbyint((t - hi) * 254.0f);
            out[c] = (254.0 * hi + lo) * 16.0 * (double)scale;
        }
    }
    return out;
}

// The quantized GEMV's epilogue in the reference, from an output's sums (gate and up with a
// GLU): + bias; SwiGLU over gate and up rounded to f16 (as the unfused path stores them), or
// GELU (tanh); then the soft-cap when softcap > 0.
float quant_epilogue_ref(double gate, double up, float bias, bool glu, bool gelu, float softcap) {
    float v = (float)gate + bias;
    if (glu) {
        std::vector<float> gu = {v, (float)up};
        round_to(gu, DType::F16);
        v = gpt::cpu::silu(gu[0]) * gu[1];
    } else if (gelu) {
        v = gpt::cpu::gelu_tanh(v);
    }
    return softcap > 0 ? softcap * std::tanh(v / softcap) : v;
}

// One quantized GEMV case against the double reference (dequantize_row is exact, then a naive
// matmul in double): mode 0 plain, 1 bias + GELU, 2 residual add, 3 strided x and f32 output
// with soft-cap, 4 SwiGLU over gate and up rows. Each launch (quant_launches) starts from
// poisoned outputs (NaN) with 32 poisoned elements past the end, which must stay so (as must
// y in residual mode, where only the residual is written).
void check_quant_gemv(DType q, uint32_t g, uint32_t k, uint32_t n, uint32_t rows, int mode) {
    const bool bias = mode == 1, gelu = mode == 1, residual = mode == 2, f32_out = mode == 3, glu = mode == 4;
    const float softcap = mode == 3 ? 1.5f : 0.0f;
    const uint64_t ldx = f32_out ? 3 * k : k;
    const uint32_t wrows = glu ? 2 * n : n, tail = 32;
    QuantMatrix w(q, wrows, k, g, 0.05f);
    auto x = randn(rows * ldx), b = randn(n, 0.5f), res = randn(rows * n);
    round_to(x, DType::F16);
    DevBuf dx(rows * ldx, DType::F16), dw(w.bytes.size(), DType::F32), db(n, DType::F32),
        dy(rows * n + tail, f32_out ? DType::F32 : DType::F16), dr(rows * n, DType::F32);
    dx.upload(x);
    dw.upload_raw(w.bytes.data(), w.bytes.size());
    db.upload(b);
    GemvArgs a{};
    a.x = dx.p;
    a.ldx = ldx;
    a.w = dw.p;
    a.bias = bias ? db.as<float>() : nullptr;
    a.y = dy.p;
    a.residual = residual ? dr.as<float>() : nullptr;
    a.rows = rows;
    a.n = n;
    a.k = k;
    a.act = (int)(glu ? gpt::Activation::SILU : gelu ? gpt::Activation::GELU_TANH : gpt::Activation::NONE);
    a.glu = glu;
    a.y_f32 = f32_out;
    a.softcap = softcap;
    a.dtype = (int)DType::F16;
    a.wq = (int)q;
    a.group = g;
    assert_true(gemv_supported(rows, k, ldx, (int)DType::F16, (int)q));
    const std::vector<double> x_i8 = staged_i8(x.data(), k);
    std::vector<float> want(rows * n), want_i8(rows * n);
    for (bool i8 : {false, true})
        for (uint32_t r = 0; r < (i8 ? 1 : rows); r++)
            for (uint32_t i = 0; i < n; i++) {
                auto dot = [&](uint64_t wr) {
                    double sum = 0;
                    for (uint32_t c = 0; c < k; c++) sum += (i8 ? x_i8[c] : (double)x[r * ldx + c]) * w.values[wr * k + c];
                    return sum;
                };
                const float v = quant_epilogue_ref(dot(i), glu ? dot(n + i) : 0.0, bias ? b[i] : 0.0f, glu, gelu, softcap);
                (i8 ? want_i8 : want)[r * n + i] = v + (residual ? res[r * n + i] : 0.0f);
            }
    for (const QuantLaunch &l : quant_launches(a)) {
        dy.poison();
        dr.upload(res);
        CK(run_quant_launch(a, l));
        CK(cudaDeviceSynchronize());
        char what[192];
        std::snprintf(what, sizeof what, "quant gemv %s g%u k=%u n=%u rows=%u mode=%d, %s", dname(q), g, k, n, rows, mode, l.name.c_str());
        const std::vector<float> y = dy.download();
        for (size_t i = residual ? 0 : rows * n; i < y.size(); i++)
            if (!std::isnan(y[i])) fail_msg("%s: y[%zu] written (%g), outside the output", what, i, y[i]);
        // fp32 accumulation of exact products: f32 outputs within float rounding, f16 ones within
        // an f16 rounding (plus the GLU's rounded gate and up). stream-i8 so against its own x,
        // and also against the exact x (its x carries ~2^-16 of each block's largest value).
        const std::vector<float> got = residual ? dr.download() : std::vector<float>(y.begin(), y.begin() + rows * n);
        expect_close(what, got, l.i8 ? want_i8 : want, (f32_out || residual) ? 1e-5 : 2e-3);
        if (l.i8) expect_close(what, got, want, (f32_out || residual) ? 1e-4 : 2e-3);
    }
}

// One-hot rows of x pick single weights: y[r][i] == w[i][c_r] exactly (f32 output), so the
// dequantization (every nibble or byte position, every group's scale) is checked bit for bit.
void check_quant_gemv_exact(DType q, uint32_t g, uint32_t k, uint32_t n, uint32_t rows) {
    QuantMatrix w(q, n, k, g, 0.3f);
    std::vector<uint32_t> pick(rows);
    std::vector<float> x(rows * k, 0.0f);
    for (uint32_t r = 0; r < rows; r++) {
        pick[r] = std::uniform_int_distribution<uint32_t>(0, k - 1)(g_rng);
        x[r * k + pick[r]] = 1.0f;
    }
    DevBuf dx(rows * k, DType::F16), dw(w.bytes.size(), DType::F32), dy(rows * n, DType::F32);
    dx.upload(x);
    dw.upload_raw(w.bytes.data(), w.bytes.size());
    GemvArgs a{};
    a.x = dx.p;
    a.ldx = k;
    a.w = dw.p;
    a.y = dy.p;
    a.rows = rows;
    a.n = n;
    a.k = k;
    a.y_f32 = 1;
    a.dtype = (int)DType::F16;
    a.wq = (int)q;
    a.group = g;
    for (const QuantLaunch &l : quant_launches(a)) {
        if (l.i8) continue; // x rounded to int8: not exact (check_quant_gemv checks it)
        dy.poison();
        CK(run_quant_launch(a, l));
        CK(cudaDeviceSynchronize());
        const std::vector<float> got = dy.download();
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t i = 0; i < n; i++) {
                const float want = w.values[(uint64_t)i * k + pick[r]];
                if (!(got[r * n + i] == want))
                    fail_msg("quant gemv exact %s g%u k=%u row %u column %u (weight column %u), %s: %.9g, want %.9g", dname(q), g,
                             k, r, i, pick[r], l.name.c_str(), got[r * n + i], want);
            }
    }
}

// An RMSNorm folded into a one-row quantized GEMV (gemv_folds_norm): x is an f32 residual
// row (fresh, not rounded), the GEMV must give act(rsqrt(mean(x^2) + eps) * (x * w) . W + b)
// and write the normed row to norm_out (f16) once, nothing past it. Modes as check_quant_gemv
// (0 plain, 1 bias + GELU, 3 f32 output with soft-cap, 4 SwiGLU; 2, the residual add, is
// refused: x is that residual). Every stream-i8 launch is checked against its own staging
// (x * w in f32, int8 pairs) at the plain check's limits and against exact math; every other
// launch must refuse the norm.
void check_quant_gemv_norm(DType q, uint32_t g, uint32_t k, uint32_t n, int mode) {
    const bool bias = mode == 1, gelu = mode == 1, f32_out = mode == 3, glu = mode == 4;
    const float softcap = mode == 3 ? 1.5f : 0.0f, eps = 1e-5f;
    const uint32_t wrows = glu ? 2 * n : n, tail = 32;
    QuantMatrix w(q, wrows, k, g, 0.05f);
    auto x = randn(k, 3.0f), nw = randn(k, 0.4f), b = randn(n, 0.5f);
    for (auto &v : nw) v += 1.0f;
    DevBuf dx(k, DType::F32), dnw(k, DType::F32), dw(w.bytes.size(), DType::F32), db(n, DType::F32),
        dy(n + tail, f32_out ? DType::F32 : DType::F16), dh(k + tail, DType::F16), dres(n, DType::F32);
    dx.upload(x);
    dnw.upload(nw);
    dw.upload_raw(w.bytes.data(), w.bytes.size());
    db.upload(b);
    GemvArgs a{};
    a.x = dx.p;
    a.ldx = k;
    a.w = dw.p;
    a.bias = bias ? db.as<float>() : nullptr;
    a.y = dy.p;
    a.rows = 1;
    a.n = n;
    a.k = k;
    a.act = (int)(glu ? gpt::Activation::SILU : gelu ? gpt::Activation::GELU_TANH : gpt::Activation::NONE);
    a.glu = glu;
    a.y_f32 = f32_out;
    a.softcap = softcap;
    a.dtype = (int)DType::F16;
    a.wq = (int)q;
    a.group = g;
    a.norm_w = dnw.as<float>();
    a.norm_eps = eps;
    a.norm_out = dh.p;
    QuantGemvPlan chosen{};
    CK(quant_gemv_plan(a, QGEMV_AUTO, &chosen));
    assert_int_equal(gemv_folds_norm(a), chosen.kernel == 3);
    {
        GemvArgs with_residual = a; // x is the residual the output would be added to: never folded
        with_residual.residual = dres.as<float>();
        assert_false(gemv_folds_norm(with_residual));
        assert_int_equal(launch_gemv(with_residual, 0), cudaErrorInvalidValue);
    }
    double squares = 0;
    for (float v : x) squares += (double)v * v;
    const double r = 1.0 / std::sqrt(squares / k + eps);
    std::vector<float> staged(k), normed(k);
    for (uint32_t c = 0; c < k; c++) {
        staged[c] = x[c] * nw[c]; // as the kernel stages it
        normed[c] = (float)(x[c] * r * nw[c]);
    }
    const std::vector<double> x_i8 = staged_i8(staged.data(), k);
    std::vector<float> want(n), want_i8(n), want_h = normed;
    round_to(want_h, DType::F16);
    for (bool i8 : {false, true})
        for (uint32_t i = 0; i < n; i++) {
            auto dot = [&](uint64_t wr) {
                double sum = 0;
                for (uint32_t c = 0; c < k; c++) sum += (i8 ? x_i8[c] * r : (double)x[c] * r * nw[c]) * w.values[wr * k + c];
                return sum;
            };
            (i8 ? want_i8 : want)[i] = quant_epilogue_ref(dot(i), glu ? dot(n + i) : 0.0, bias ? b[i] : 0.0f, glu, gelu, softcap);
        }
    uint32_t checked = 0;
    for (const QuantLaunch &l : quant_launches(a)) {
        dy.poison();
        dh.poison();
        char what[192];
        std::snprintf(what, sizeof what, "quant gemv + norm %s g%u k=%u n=%u mode=%d, %s", dname(q), g, k, n, mode, l.name.c_str());
        const cudaError_t e = run_quant_launch(a, l);
        if (!l.i8) {
            if (e != cudaErrorInvalidValue) fail_msg("%s: ran (%s) where the norm cannot fold", what, cudaGetErrorString(e));
            continue;
        }
        CK(e);
        CK(cudaDeviceSynchronize());
        const std::vector<float> y = dy.download(), h = dh.download();
        for (size_t i = n; i < y.size(); i++)
            if (!std::isnan(y[i])) fail_msg("%s: y[%zu] written (%g), outside the output", what, i, y[i]);
        for (size_t i = k; i < h.size(); i++)
            if (!std::isnan(h[i])) fail_msg("%s: norm_out[%zu] written (%g), past the row", what, i, h[i]);
        // The normed row: one f16 rounding of x * r * w (r summed in another order: 1e-6).
        expect_close(what, std::vector<float>(h.begin(), h.begin() + k), want_h, 1e-3);
        const std::vector<float> got(y.begin(), y.begin() + n);
        expect_close(what, got, want_i8, f32_out ? 1e-5 : 2e-3);
        expect_close(what, got, want, f32_out ? 1e-4 : 2e-3);
        checked++;
    }
    assert_true(checked >= 8); // stream-i8 at every thread count with 1 and 3 blocks, at least
}

// The quantized GEMV, every variant and forced plan (quant_launches) (rows 1 to
// kGemvQuantMaxRows, the five epilogue modes, k an odd multiple of the group: 160 + 64 j for
// groups 32 and 64, so not a multiple of 256; widths that give 1 to 8 warps a column set and
// several load rounds per thread; a long k; n odd, so the last column set is partly past n); the f16 dequantization slices (bit-exact: q * scale rounded once); the
// quantized embedding (exact in f32, with positions).
void test_gpu_quant_kernels(void **) {
    SKIP_WITHOUT_GPU();
    assert_false(gemv_supported(kGemvQuantMaxRows + 1, 256, 256, (int)DType::F16, (int)DType::Q4));
    for (DType q : {DType::Q8, DType::Q4})
        for (uint32_t g : {32u, 64u, 128u}) {
            const uint32_t k = g == 32 ? 160 : g == 64 ? 1344 : 2176, n = 77;
            for (uint32_t rows = 1; rows <= kGemvQuantMaxRows; rows++) {
                for (int mode = 0; mode < 5; mode++) check_quant_gemv(q, g, k, n, rows, mode);
                check_quant_gemv_exact(q, g, k, 29, rows);
            }
            // Long rows (131 groups: 256 threads a set; two rounds of loads per thread for
            // q8 g64 / g128 and q4 g128) and a wide matrix (many blocks), rows 1 and the most.
            for (uint32_t rows : {1u, kGemvQuantMaxRows}) {
                check_quant_gemv(q, g, g * 131, 9, rows, rows == 1 ? 4 : 2);
                check_quant_gemv_exact(q, g, g * 131, 5, rows);
                check_quant_gemv(q, g, g * 3, 3001, rows, rows == 1 ? 2 : 4);
            }
            // Long K as the 7B down projection's (K = 8,576, over 48 KB of x for staging at 4
            // rows, 4.5-8.4 K bytes a row), n odd, every row count, plain and GLU.
            for (uint32_t rows = 1; rows <= kGemvQuantMaxRows; rows++) check_quant_gemv(q, g, 8576, 37, rows, rows % 2 ? 2 : 4);
            check_quant_gemv_exact(q, g, 8576, 7, 3);
            // An RMSNorm folded in (one row): every epilogue but the residual add, at a short
            // k, a long one (two staging rounds a block) and a wide matrix (many blocks share
            // norm_out's writes).
            for (int mode : {0, 1, 3, 4}) check_quant_gemv_norm(q, g, k, 77, mode);
            check_quant_gemv_norm(q, g, 8576, 37, 4);
            check_quant_gemv_norm(q, g, g * 3, 3001, 0);
        }
    for (DType q : {DType::Q8, DType::Q4})
        for (uint32_t g : {32u, 64u, 128u}) {
            const uint32_t k = g == 32 ? 160 : g == 64 ? 1344 : 2176;
            // Dequantization of rows [3, 3 + 40) of a [61][k] matrix: exact f16 values.
            QuantMatrix w(q, 61, k, g, 0.3f);
            DevBuf dw(w.bytes.size(), DType::F32), out(40 * k, DType::F16);
            dw.upload_raw(w.bytes.data(), w.bytes.size());
            CK(launch_dequant_f16(dw.p, (int)q, g, 61, 3, 40, k, out.p, 0));
            CK(cudaDeviceSynchronize());
            const std::vector<float> got = out.download();
            for (size_t i = 0; i < got.size(); i++) {
                const float want = gpt::f16_to_f32(gpt::f32_to_f16(w.values[3 * k + i]));
                if (!(got[i] == want)) fail_msg("dequant %s g%u element %zu: %g, want %g", dname(q), g, i, got[i], want);
            }
            // Embedding: 5 rows of a [61][k] token table (scaled) plus a [9][k] position table.
            QuantMatrix pos(q, 9, k, g, 0.3f);
            const int32_t toks[5] = {0, 60, 7, 7, 31}, poss[5] = {0, 8, 1, 2, 3};
            DevBuf dt(5, DType::F32), dp(5, DType::F32), dpos(pos.bytes.size(), DType::F32), dx(5 * k, DType::F32);
            dt.upload_raw(toks, sizeof toks);
            dp.upload_raw(poss, sizeof poss);
            dpos.upload_raw(pos.bytes.data(), pos.bytes.size());
            CK(launch_embed_quant(dt.as<int32_t>(), dp.as<int32_t>(), dw.p, 61, dpos.p, 9, (int)q, g, 5, k, 0.5f, dx.as<float>(), 0));
            CK(cudaDeviceSynchronize());
            const std::vector<float> emb = dx.download();
            for (uint32_t r = 0; r < 5; r++)
                for (uint32_t c = 0; c < k; c++) {
                    const float want = w.values[(uint64_t)toks[r] * k + c] * 0.5f + pos.values[(uint64_t)poss[r] * k + c];
                    if (!(std::fabs(emb[r * k + c] - want) <= 1e-6f * std::fabs(want)))
                        fail_msg("embed %s g%u [%u][%u]: %g, want %g", dname(q), g, r, c, emb[r * k + c], want);
                }
        }
}

// A fixture model with every matrix the rule quantizes as q (group g), the rest f32.
fixture::Model quantized_fixture(fixture::Spec s, DType q, uint32_t g) {
    fixture::Model fx = fixture::make(s);
    gpt::format::Writer w;
    fx.config.to_metadata(w.metadata());
    for (const gpt::TensorSlot &slot : gpt::tensor_table(fx.config)) {
        const std::vector<float> &v = fx.tensors.at(slot.name);
        if (!gpt::format::quantizable(slot.name, slot.shape, g)) {
            w.add_tensor(slot.name, DType::F32, slot.shape, v.data(), v.size() * 4);
            continue;
        }
        uint64_t n = 0;
        assert_true(gpt::tensor_bytes(q, v.size(), slot.shape[1], g, &n));
        auto b = std::make_shared<std::vector<uint8_t>>(n);
        gpt::quantize_matrix(v.data(), slot.shape[0], slot.shape[1], q, g, b->data(), slot.name);
        w.add_quantized(slot.name, q, slot.shape, g, [b](uint8_t *dst, uint64_t k) { std::memcpy(dst, b->data(), k); });
    }
    fx.file = w.write_memory();
    return fx;
}

// Quantized models on the GPU (packed weights, f16 compute) against the CPU on the same file:
// prefill (cuBLAS over dequantized slices), decode (the quantized GEMV, graphs), batches of 2,
// 5 and 8, no
// allocation while generating, weights smaller than f16's.
// Quantized prefill through many dequantized slices (GPT_CUDA_DEQUANT_MAX_ELEMENTS shrinks the
// buffer to a row or two), each slice's GEMM writing its own columns of the output. Each prefill
// runs three times (eagerly, captured into a graph, replayed), every time against the CPU.
void test_gpu_quant_prefill_slices(void **) {
    SKIP_WITHOUT_GPU();
    setenv("GPT_CUDA_DEQUANT_MAX_ELEMENTS", "1", 1); // read when a context is created
    fixture::Spec l;
    l.arch = GPT_ARCH_LLAMA;
    l.d_model = 96, l.n_heads = 4, l.n_kv_heads = 2, l.head_dim = 24, l.d_ff = 160, l.vocab_size = 173;
    fixture::Spec gp;
    gp.arch = GPT_ARCH_GPT2;
    gp.d_model = 64, gp.n_heads = 4, gp.d_ff = 256, gp.vocab_size = 131, gp.tied_head = true;
    for (const auto &[s0, q] : {std::make_pair(l, DType::Q4), std::make_pair(gp, DType::Q8)}) {
        fixture::Spec s = s0;
        s.seed = g_rng();
        s.context_length = 64;
        const fixture::Model fx = quantized_fixture(s, q, 32);
        Loaded cpu, gpu;
        load(cpu, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0);
        load(gpu, fx, 0, GPT_DTYPE_AUTO, GPT_CTX_NO_WARMUP);
        const uint32_t V = fx.config.vocab_size, T = 37;
        std::vector<int32_t> toks(T);
        for (auto &t : toks) t = (int32_t)(g_rng() % V);
        std::vector<float> a(T * V, NAN);
        assert_int_equal(gpt_forward(cpu.c, toks.data(), 1, T, GPT_FORWARD_ALL_LOGITS, a.data()), GPT_OK);
        for (int run = 0; run < 3; run++) {
            gpt_ctx_reset(gpu.c);
            std::vector<float> b(T * V, NAN);
            if (gpt_forward(gpu.c, toks.data(), 1, T, GPT_FORWARD_ALL_LOGITS, b.data()) != GPT_OK)
                fail_msg("gpu forward: %s", gpt_ctx_last_error(gpu.c));
            char what[96];
            std::snprintf(what, sizeof what, "%s %s sliced prefill, run %d", gpt_arch_name(s.arch), dname(q), run);
            expect_close(what, b, a, 2e-2);
        }
    }
    unsetenv("GPT_CUDA_DEQUANT_MAX_ELEMENTS");
}

void test_gpu_quant_model(void **) {
    SKIP_WITHOUT_GPU();
    fixture::Spec l;
    l.arch = GPT_ARCH_LLAMA;
    l.d_model = 64, l.n_heads = 4, l.n_kv_heads = 2, l.head_dim = 16, l.d_ff = 96, l.vocab_size = 71;
    fixture::Spec gp;
    gp.arch = GPT_ARCH_GPT2; // quantized position table, biases, tied head
    gp.d_model = 64, gp.n_heads = 4, gp.d_ff = 128, gp.vocab_size = 61, gp.tied_head = true;
    for (fixture::Spec s : {l, gp})
        for (DType q : {DType::Q8, DType::Q4})
            for (uint32_t g : {32u, 64u}) {
                s.seed = g_rng();
                s.context_length = 64;
                const fixture::Model fx = quantized_fixture(s, q, g);
                Loaded cpu, gpu;
                load(cpu, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0);
                load(gpu, fx, 0, GPT_DTYPE_AUTO, 0, 8);
                gpt_model_info info;
                std::memset(&info, 0, sizeof info);
                info.struct_size = sizeof info;
                assert_int_equal(gpt_model_get_info(gpu.m, &info), GPT_OK);
                assert_int_equal(info.weight_dtype, (uint32_t)q);
                const uint32_t V = fx.config.vocab_size, T = 23;
                std::vector<int32_t> toks(T + 6);
                for (auto &t : toks) t = (int32_t)(g_rng() % V);
                std::vector<float> a(T * V, NAN), b(T * V, NAN);
                assert_int_equal(gpt_forward(cpu.c, toks.data(), 1, T, GPT_FORWARD_ALL_LOGITS, a.data()), GPT_OK);
                if (gpt_forward(gpu.c, toks.data(), 1, T, GPT_FORWARD_ALL_LOGITS, b.data()) != GPT_OK)
                    fail_msg("gpu forward: %s", gpt_ctx_last_error(gpu.c));
                char what[128];
                std::snprintf(what, sizeof what, "%s %s g%u prefill", gpt_arch_name(s.arch), dname(q), g);
                expect_close(what, b, a, 2e-2);
                const uint64_t n0 = gpt::cuda::allocation_count();
                for (uint32_t i = 0; i < 6; i++) {
                    std::vector<float> la(V, NAN), lb(V, NAN);
                    assert_int_equal(gpt_forward(cpu.c, &toks[T + i], 1, 1, 0, la.data()), GPT_OK);
                    assert_int_equal(gpt_forward(gpu.c, &toks[T + i], 1, 1, 0, lb.data()), GPT_OK);
                    expect_close((std::string(what) + " decode").c_str(), lb, la, 2e-2);
                }
                // Batches of 2, 5 and 8: a B x 2 prefill (the GEMV for 4 rows, cuBLAS for 10 and
                // 16), then one decode step of B rows (the quantized GEMV's rows 2, 5 and 8), each
                // sequence against its own CPU run.
                for (uint32_t B : {2u, 5u, 8u}) {
                    gpt_ctx_reset(gpu.c);
                    std::vector<int32_t> two(2 * B), next(B);
                    for (uint32_t i = 0; i < 2 * B; i++) two[i] = toks[i % toks.size()];
                    for (uint32_t i = 0; i < B; i++) next[i] = toks[(2 * B + i) % toks.size()];
                    std::vector<float> lb(B * V, NAN);
                    if (gpt_forward(gpu.c, two.data(), B, 2, 0, lb.data()) != GPT_OK)
                        fail_msg("gpu forward batch %u: %s", B, gpt_ctx_last_error(gpu.c));
                    std::fill(lb.begin(), lb.end(), NAN);
                    assert_int_equal(gpt_forward(gpu.c, next.data(), B, 1, 0, lb.data()), GPT_OK);
                    for (uint32_t seq = 0; seq < B; seq++) {
                        gpt_ctx_reset(cpu.c);
                        const std::vector<int32_t> mine = {two[2 * seq], two[2 * seq + 1], next[seq]};
                        std::vector<float> la(V, NAN);
                        assert_int_equal(gpt_forward(cpu.c, mine.data(), 1, 3, 0, la.data()), GPT_OK);
                        expect_close((std::string(what) + " batch " + std::to_string(B)).c_str(),
                                     std::vector<float>(lb.begin() + seq * V, lb.begin() + (seq + 1) * V), la, 2e-2);
                    }
                }
                assert_int_equal(gpt::cuda::allocation_count(), n0);
            }
}

// ---------------------------------------------------------------- mixture of experts

// Top-k routing against a naive double softmax and selection, on logits drawn from a few
// integers so that ties are common (the lower expert first), both normalisations, outputs
// poisoned.
void test_gpu_moe_topk(void **) {
    SKIP_WITHOUT_GPU();
    const uint32_t rows = 37;
    // E up to 300: the rank count's threads per expert (8 at E 4, 4 at 8 and 64, 1 from 129)
    // and several passes of the block over the experts; k 64, the most CUDA takes.
    for (uint32_t E : {4u, 8u, 64u, 160u, 300u})
        for (uint32_t k : {1u, 2u, 8u, 64u}) {
            if (k > E) continue;
            for (int norm = 0; norm < 2; norm++) {
                std::vector<float> logits(rows * E);
                for (auto &v : logits) v = (float)(g_rng() % 5) * 0.5f;
                DevBuf dl(rows * E, DType::F32), dw(rows * k, DType::F32), di(rows * k, DType::F32);
                dl.upload(logits);
                CK(launch_moe_topk(dl.as<float>(), rows, E, k, norm, di.as<int32_t>(), dw.as<float>(), nullptr));
                CK(cudaDeviceSynchronize());
                std::vector<int32_t> ids(rows * k);
                CK(cudaMemcpy(ids.data(), di.p, 4 * ids.size(), cudaMemcpyDeviceToHost));
                const std::vector<float> w = dw.download();
                std::vector<float> want_w(rows * k);
                for (uint32_t r = 0; r < rows; r++) {
                    const float *l = &logits[r * E];
                    double m = -1e300, z = 0;
                    for (uint32_t e = 0; e < E; e++) m = std::max(m, (double)l[e]);
                    for (uint32_t e = 0; e < E; e++) z += std::exp(l[e] - m);
                    std::vector<uint32_t> order(E);
                    for (uint32_t e = 0; e < E; e++) order[e] = e;
                    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return l[a] > l[b]; });
                    double sum = 0;
                    for (uint32_t s = 0; s < k; s++) sum += std::exp(l[order[s]] - m) / z;
                    for (uint32_t s = 0; s < k; s++) {
                        if (ids[r * k + s] != (int32_t)order[s])
                            fail_msg("E %u k %u row %u slot %u: expert %d, want %u", E, k, r, s, ids[r * k + s], order[s]);
                        const double p = std::exp(l[order[s]] - m) / z;
                        want_w[r * k + s] = (float)(norm ? p / sum : p);
                    }
                }
                expect_close("moe top-k weights", w, want_w, 1e-6);
            }
        }
    // Logits that make the probabilities NaN (a NaN, all -inf, an +inf, an +inf beside a NaN,
    // 70 experts: three lanes' worth): still k distinct, valid experts a row.
    const uint32_t E = 70, k = 8, bad_rows = 4;
    std::vector<float> logits(bad_rows * E);
    for (auto &v : logits) v = (float)(g_rng() % 5) * 0.5f;
    logits[0 * E + 17] = NAN;
    for (uint32_t e = 0; e < E; e++) logits[1 * E + e] = -INFINITY;
    logits[2 * E + 40] = INFINITY;
    logits[3 * E + 3] = INFINITY;
    logits[3 * E + 66] = NAN;
    DevBuf dl(bad_rows * E, DType::F32), dw(bad_rows * k, DType::F32), di(bad_rows * k, DType::F32);
    dl.upload(logits);
    CK(launch_moe_topk(dl.as<float>(), bad_rows, E, k, 1, di.as<int32_t>(), dw.as<float>(), nullptr));
    CK(cudaDeviceSynchronize());
    std::vector<int32_t> ids(bad_rows * k);
    CK(cudaMemcpy(ids.data(), di.p, 4 * ids.size(), cudaMemcpyDeviceToHost));
    for (uint32_t r = 0; r < bad_rows; r++) {
        std::set<int32_t> seen;
        for (uint32_t s = 0; s < k; s++) {
            const int32_t e = ids[r * k + s];
            if (e < 0 || e >= (int32_t)E || !seen.insert(e).second) fail_msg("NaN row %u slot %u: expert %d", r, s, e);
        }
    }
}

// The router with its RMSNorm folded in, against a double norm and dot products: H element
// by element within one rounding of the dtype (the scale's f32 sum may differ from a double
// one by an ulp), the logits against double dot products of the H it wrote and the rounded
// router weights; H and the logits poisoned first. Shapes: the widest row it takes (256
// vectors a lane group), a row of 37 vectors (the second vector on five lanes), fewer experts
// than a lane's vectors (several warps write H), more experts than vectors, 1-8 rows. A row
// one vector wider is not supported; two runs give the same bits.
void test_gpu_moe_norm_router(void **) {
    SKIP_WITHOUT_GPU();
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
        const uint32_t N = t == DType::F32 ? 4 : 8; // elements of a 16-byte vector
        struct Case { uint32_t vecs, n, rows; };
        for (Case c : {Case{256, 64, 1}, Case{37, 3, 5}, Case{256, 4, 8}, Case{8, 70, 2}, Case{100, 8, 3}}) {
            const uint32_t k = c.vecs * N;
            std::vector<float> x = randn((size_t)c.rows * k, 1.5f), g = randn(k, 0.2f), w = randn((size_t)c.n * k, 0.05f);
            for (auto &v : g) v += 1.0f;
            round_to(w, t);
            DevBuf dx(x.size(), DType::F32), dg(k, DType::F32), dw(w.size(), t), dh((size_t)c.rows * k, t), dl((size_t)c.rows * c.n, DType::F32);
            dx.upload(x);
            dg.upload(g);
            dw.upload(w);
            assert_true(moe_norm_router_supported(c.rows, k, (int)t, dx.p, dg.p, dh.p, dw.p));
            assert_false(moe_norm_router_supported(c.rows, 257 * N, (int)t, dx.p, dg.p, dh.p, dw.p));
            std::vector<float> runs[2][2];
            for (int run = 0; run < 2; run++) {
                dh.poison();
                dl.poison();
                CK(launch_moe_norm_router(dx.as<float>(), dg.as<float>(), 1e-5f, dh.p, dw.p, c.rows, c.n, k, (int)t, dl.as<float>(), nullptr));
                CK(cudaDeviceSynchronize());
                runs[run][0] = dh.download();
                runs[run][1] = dl.download();
            }
            char what[128];
            std::snprintf(what, sizeof what, "norm+router %s k %u n %u rows %u", dname(t), k, c.n, c.rows);
            for (int i = 0; i < 2; i++)
                if (std::memcmp(runs[0][i].data(), runs[1][i].data(), 4 * runs[0][i].size()) != 0) fail_msg("%s: two runs differ", what);
            const std::vector<float> &h = runs[0][0], &logits = runs[0][1];
            const double ulp = t == DType::F32 ? 1e-6 : t == DType::F16 ? 1.0 / 1024 : 1.0 / 128;
            std::vector<float> want_l((size_t)c.rows * c.n);
            for (uint32_t r = 0; r < c.rows; r++) {
                double ss = 0;
                for (uint32_t i = 0; i < k; i++) ss += (double)x[(size_t)r * k + i] * x[(size_t)r * k + i];
                const double inv = 1 / std::sqrt(ss / k + 1e-5);
                for (uint32_t i = 0; i < k; i++) {
                    const double want = x[(size_t)r * k + i] * inv * g[i], got = h[(size_t)r * k + i];
                    if (!(std::fabs(got - want) <= ulp * std::fabs(want) + (t == DType::F16 ? 6e-8 : 1e-30))) // f16: subnormal spacing
                        fail_msg("%s: h[%u][%u] %.8g, want %.8g", what, r, i, got, want);
                }
                for (uint32_t e = 0; e < c.n; e++) {
                    double s = 0;
                    for (uint32_t i = 0; i < k; i++) s += (double)h[(size_t)r * k + i] * w[(size_t)e * k + i];
                    want_l[(size_t)r * c.n + e] = (float)s;
                }
            }
            expect_close(what, logits, want_l, 1e-5);
        }
    }
}

// The decode expert kernels alone (gate_up, then down into the residual) against naive double
// dot products over the same rounded inputs, on random routings (k distinct experts a row, as
// top-k gives): odd d (element-wise loads; down's last column pair half used; at one row and
// eight), ff not a multiple of four (down's element-wise loads in every dtype), top-k above
// eight (down's warps take several slots), eight rows sharing four experts (one expert row
// serving every row), one row of 64 experts. One-row cases in f16/bf16 whose d is 97-256
// 16-byte vectors take moe_stream.cu's gate_up (on sm_90): OLMoE's and Qwen3-MoE's widths (8
// and 6 vectors a lane), d of 125 and 97 vectors (lanes past the row's end); the rest
// moe.cu's. Two runs give the same bits.
void test_gpu_moe_experts(void **) {
    SKIP_WITHOUT_GPU();
    struct Case { uint32_t d, ff, E, k, rows; gpt::Activation act; };
    const Case cases[] = {{64, 48, 8, 2, 1, gpt::Activation::SILU},      {72, 40, 16, 12, 3, gpt::Activation::SILU},
                          {37, 24, 4, 4, 8, gpt::Activation::GELU_TANH}, {256, 64, 64, 8, 1, gpt::Activation::SILU},
                          {128, 64, 4, 1, 5, gpt::Activation::SILU},     {2048, 1024, 10, 8, 4, gpt::Activation::SILU},
                          {37, 30, 6, 2, 1, gpt::Activation::SILU},      {2048, 1024, 10, 8, 1, gpt::Activation::SILU},
                          {1000, 1000, 6, 3, 1, gpt::Activation::GELU_TANH}, {1536, 768, 12, 8, 1, gpt::Activation::SILU},
                          {776, 2048, 5, 2, 1, gpt::Activation::SILU}};
    for (DType t : {DType::F32, DType::F16, DType::BF16})
        for (const Case &c : cases) {
            const uint32_t pairs = c.rows * c.k;
            std::vector<float> x = randn((size_t)c.rows * c.d), gu = randn((size_t)c.E * 2 * c.ff * c.d, 1.0f / std::sqrt((float)c.d)),
                               dn = randn((size_t)c.E * c.d * c.ff, 1.0f / std::sqrt((float)c.ff)), res0 = randn((size_t)c.rows * c.d);
            round_to(x, t);
            round_to(gu, t);
            round_to(dn, t);
            std::vector<int32_t> ids(pairs);
            std::vector<float> weights(pairs);
            for (uint32_t r = 0; r < c.rows; r++) {
                std::vector<int32_t> perm(c.E);
                for (uint32_t e = 0; e < c.E; e++) perm[e] = (int32_t)e;
                std::shuffle(perm.begin(), perm.end(), g_rng);
                for (uint32_t s = 0; s < c.k; s++) {
                    ids[r * c.k + s] = perm[s];
                    weights[r * c.k + s] = 0.1f + (float)(g_rng() % 100) / 100.0f;
                }
            }
            DevBuf dx(x.size(), t), dgu(gu.size(), t), ddn(dn.size(), t), dglu((size_t)pairs * c.ff, t), dres(res0.size(), DType::F32),
                dids(pairs, DType::F32), dw(pairs, DType::F32);
            dx.upload(x);
            dgu.upload(gu);
            ddn.upload(dn);
            dids.upload_raw(ids.data(), 4 * pairs);
            dw.upload(weights);
            MoeExpertArgs a{};
            a.rows = c.rows;
            a.n_experts = c.E;
            a.top_k = c.k;
            a.d = c.d;
            a.ff = c.ff;
            a.act = (int)c.act;
            a.act_dtype = (int)t;
            a.ids = dids.as<int32_t>();
            MoeExpertArgs g = a, d = a;
            g.x = dx.p;
            g.w = dgu.p;
            g.glu_out = dglu.p;
            d.x = dglu.p;
            d.w = ddn.p;
            d.weights = dw.as<float>();
            d.residual = dres.as<float>();
            // The streamed kernels take exactly the shapes the comment above gives them, so a
            // silent fallback fails here.
            if (moe_stream_available()) {
                const bool want = c.rows == 1 && t != DType::F32 && c.d % 8 == 0 && c.d / 8 > 96 && c.d / 8 <= 256;
                if (moe_stream_gate_up_supported(g) != want)
                    fail_msg("%s d %u rows %u: streamed gate_up %s", dname(t), c.d, c.rows, want ? "not taken" : "taken");
            }
            std::vector<float> glu_runs[2], res_runs[2];
            for (int run = 0; run < 2; run++) {
                dglu.poison();
                dres.upload(res0);
                CK(launch_moe_gate_up(g, nullptr));
                CK(launch_moe_down(d, nullptr));
                CK(cudaDeviceSynchronize());
                glu_runs[run] = dglu.download();
                res_runs[run] = dres.download();
            }
            char what[160];
            std::snprintf(what, sizeof what, "moe experts %s d %u ff %u E %u k %u rows %u", dname(t), c.d, c.ff, c.E, c.k, c.rows);
            for (int i = 0; i < 2; i++) {
                const std::vector<float> &got = i ? res_runs[1] : glu_runs[1], &first = i ? res_runs[0] : glu_runs[0];
                if (std::memcmp(got.data(), first.data(), 4 * got.size()) != 0) fail_msg("%s: two runs differ", what);
            }
            auto rnd = [&](double v) {
                std::vector<float> one{(float)v};
                round_to(one, t);
                return one[0];
            };
            // gate_up: act(gate) * up, each rounded to t as the kernel stores them.
            std::vector<float> want_glu((size_t)pairs * c.ff);
            for (uint32_t p = 0; p < pairs; p++)
                for (uint32_t j = 0; j < c.ff; j++) {
                    const uint64_t e = (uint64_t)ids[p], grow = e * 2 * c.ff + j, urow = grow + c.ff;
                    double gs = 0, us = 0;
                    for (uint32_t i = 0; i < c.d; i++) {
                        gs += (double)x[(p / c.k) * c.d + i] * gu[grow * c.d + i];
                        us += (double)x[(p / c.k) * c.d + i] * gu[urow * c.d + i];
                    }
                    want_glu[(size_t)p * c.ff + j] = rnd(gpt::cpu::activate(c.act, rnd(gs)) * rnd(us));
                }
            expect_close((std::string(what) + " gate_up").c_str(), glu_runs[0], want_glu, tol_of(t));
            // down over the kernel's own GLU outputs, so only its sums are judged.
            std::vector<float> want_delta(res0.size()), got_delta(res0.size());
            for (uint32_t r = 0; r < c.rows; r++)
                for (uint32_t i = 0; i < c.d; i++) {
                    double acc = 0;
                    for (uint32_t s = 0; s < c.k; s++) {
                        const uint32_t p = r * c.k + s;
                        const uint64_t row = (uint64_t)ids[p] * c.d + i;
                        double v = 0;
                        for (uint32_t j = 0; j < c.ff; j++) v += (double)glu_runs[0][(size_t)p * c.ff + j] * dn[row * c.ff + j];
                        acc += weights[p] * v;
                    }
                    want_delta[r * c.d + i] = (float)acc;
                    got_delta[r * c.d + i] = res_runs[0][r * c.d + i] - res0[r * c.d + i];
                }
            expect_close((std::string(what) + " down").c_str(), got_delta, want_delta, 1e-5);
        }
}

// The grouping of (row, slot) pairs by expert against a naive stable sort by expert,
// outputs poisoned; experts left unused leave empty groups.
void test_gpu_moe_group(void **) {
    SKIP_WITHOUT_GPU();
    for (uint32_t E : {1u, 4u, 64u, 300u})
        for (uint32_t n : {1u, 31u, 33u, 296u, 4800u}) {
            std::vector<int32_t> ids(n);
            for (auto &e : ids) e = (int32_t)(g_rng() % std::min(E, 7u)) * (E >= 7 ? (int32_t)(E / 7) : 1);
            DevBuf di(n, DType::F32), doff(E + 1, DType::F32), dperm(n, DType::F32), dinv(n, DType::F32);
            di.upload_raw(ids.data(), 4 * n);
            CK(launch_moe_group(di.as<int32_t>(), n, E, doff.as<int32_t>(), dperm.as<int32_t>(), dinv.as<int32_t>(), nullptr));
            CK(cudaDeviceSynchronize());
            std::vector<int32_t> off(E + 1), perm(n), inv(n);
            CK(cudaMemcpy(off.data(), doff.p, 4 * off.size(), cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(perm.data(), dperm.p, 4 * n, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(inv.data(), dinv.p, 4 * n, cudaMemcpyDeviceToHost));
            std::vector<int32_t> want_perm(n);
            for (uint32_t p = 0; p < n; p++) want_perm[p] = (int32_t)p;
            std::stable_sort(want_perm.begin(), want_perm.end(), [&](int32_t a, int32_t b) { return ids[a] < ids[b]; });
            int32_t at = 0;
            for (uint32_t e = 0; e <= E; e++) {
                if (off[e] != at) fail_msg("E %u n %u: offsets[%u] = %d, want %d", E, n, e, off[e], at);
                if (e < E) at += (int32_t)std::count(ids.begin(), ids.end(), (int32_t)e);
            }
            for (uint32_t q = 0; q < n; q++) {
                if (perm[q] != want_perm[q]) fail_msg("E %u n %u: perm[%u] = %d, want %d", E, n, q, perm[q], want_perm[q]);
                if (inv[want_perm[q]] != (int32_t)q) fail_msg("E %u n %u: inv[%d] = %d, want %u", E, n, want_perm[q], inv[want_perm[q]], q);
            }
        }
}

// The grouped expert GEMM (a MoE prefill's gate|up and down) against a naive double one over
// the same rounded inputs: random group sizes with empty experts, one expert holding every
// row, a single row, ragged edges (rows, n and k not multiples of the 64 x 128 x 32 tile),
// output in the operand dtype and in f32; y poisoned, rows past offsets[E] must stay
// poisoned. Tolerances (relative L2): f32 output 1e-4 (exact products, f32 sums), f16
// output 1e-3 and bf16 5e-3 (the output's own rounding, 2^-11 and 2^-8 relative at most).
// Two runs give the same bits. Unsupported k and misaligned operands are refused.
void test_gpu_moe_grouped_gemm(void **) {
    SKIP_WITHOUT_GPU();
    if (!moe_grouped_gemm_supported((int)DType::F16, 8)) {
        std::printf("  kernels built for an arch below sm_80: skipped\n");
        skip();
    }
    enum Groups { RANDOM, ONE_EXPERT, SHORT }; // SHORT: random, the last rows in no group
    struct Case { uint32_t pairs, E, n, k; Groups g; };
    const Case cases[] = {{300, 8, 200, 72, RANDOM},     {130, 5, 128, 64, ONE_EXPERT}, {700, 64, 136, 40, RANDOM},
                          {1, 3, 8, 8, RANDOM},          {512, 16, 256, 256, RANDOM},   {257, 7, 72, 1032, SHORT},
                          {64, 1, 130, 32, ONE_EXPERT}};
    for (DType t : {DType::F16, DType::BF16})
        for (const Case &c : cases)
            for (int y_f32 : {0, 1}) {
                // Group sizes: random with about a third of the experts empty, or all in one.
                std::vector<uint32_t> count(c.E, 0);
                const uint32_t grouped = c.g == SHORT ? c.pairs - c.pairs / 5 : c.pairs;
                if (c.g == ONE_EXPERT) count[c.E / 2] = grouped;
                else {
                    std::vector<uint32_t> used;
                    for (uint32_t e = 0; e < c.E; e++)
                        if (c.E < 3 || g_rng() % 3) used.push_back(e);
                    if (used.empty()) used.push_back(0);
                    for (uint32_t q = 0; q < grouped; q++) count[used[g_rng() % used.size()]]++;
                }
                std::vector<int32_t> off(c.E + 1, 0);
                for (uint32_t e = 0; e < c.E; e++) off[e + 1] = off[e] + (int32_t)count[e];
                std::vector<float> x = randn((size_t)c.pairs * c.k), w = randn((size_t)c.E * c.n * c.k, 1.0f / std::sqrt((float)c.k));
                round_to(x, t);
                round_to(w, t);
                const DType yt = y_f32 ? DType::F32 : t;
                DevBuf dx(x.size(), t), dw(w.size(), t), doff(c.E + 1, DType::F32), dy((size_t)c.pairs * c.n, yt);
                dx.upload(x);
                dw.upload(w);
                doff.upload_raw(off.data(), 4 * off.size());
                MoeGroupedGemmArgs a{};
                a.x = dx.p;
                a.w = dw.p;
                a.offsets = doff.as<int32_t>();
                a.y = dy.p;
                a.pairs = c.pairs;
                a.n_experts = c.E;
                a.n = c.n;
                a.k = c.k;
                a.dtype = (int)t;
                a.y_f32 = y_f32;
                std::vector<float> runs[2];
                for (int run = 0; run < 2; run++) {
                    dy.poison();
                    CK(launch_moe_grouped_gemm(a, nullptr));
                    CK(cudaDeviceSynchronize());
                    runs[run] = dy.download();
                }
                char what[160];
                std::snprintf(what, sizeof what, "grouped gemm %s -> %s: pairs %u E %u n %u k %u groups %d", dname(t), dname(yt), c.pairs,
                              c.E, c.n, c.k, (int)c.g);
                if (std::memcmp(runs[0].data(), runs[1].data(), 4 * runs[0].size()) != 0) fail_msg("%s: two runs differ", what);
                std::vector<float> want((size_t)grouped * c.n), got(runs[0].begin(), runs[0].begin() + (size_t)grouped * c.n);
                for (uint32_t e = 0; e < c.E; e++)
                    for (int32_t q = off[e]; q < off[e + 1]; q++)
                        for (uint32_t j = 0; j < c.n; j++) {
                            double acc = 0;
                            const float *xr = &x[(size_t)q * c.k], *wr = &w[((size_t)e * c.n + j) * c.k];
                            for (uint32_t i = 0; i < c.k; i++) acc += (double)xr[i] * wr[i];
                            want[(size_t)q * c.n + j] = (float)acc;
                        }
                const double tol = y_f32 ? 1e-4 : t == DType::F16 ? 1e-3 : 5e-3;
                expect_close(what, got, want, tol);
                for (size_t i = (size_t)grouped * c.n; i < runs[0].size(); i++)
                    if (!std::isnan(runs[0][i])) fail_msg("%s: row %zu, in no group, was written", what, i / c.n);
            }
    // Refused: k not a multiple of 8, a misaligned x, f32 operands.
    DevBuf dx(64 * 16, DType::F16), dw(64 * 16, DType::F16), doff(2, DType::F32), dy(64 * 16, DType::F32);
    MoeGroupedGemmArgs a{};
    a.x = dx.p;
    a.w = dw.p;
    a.offsets = doff.as<int32_t>();
    a.y = dy.p;
    a.pairs = 4;
    a.n_experts = 1;
    a.n = 8;
    a.k = 12;
    a.dtype = (int)DType::F16;
    assert_int_equal(launch_moe_grouped_gemm(a, nullptr), cudaErrorInvalidValue);
    a.k = 16;
    a.x = static_cast<uint8_t *>(dx.p) + 8;
    assert_int_equal(launch_moe_grouped_gemm(a, nullptr), cudaErrorInvalidValue);
    a.x = dx.p;
    a.dtype = (int)DType::F32;
    assert_int_equal(launch_moe_grouped_gemm(a, nullptr), cudaErrorInvalidValue);
    cudaGetLastError();
}

// The whole-projection q/k RMSNorm (OLMoE), done inside rope_append: every warp of a
// projection sums all of its squares, so each head must get the one scale of the CPU's norm
// over the whole q (or k). Shapes where the projections are 16-byte vectors (the fast sum)
// and where they are not (3 x 10 q values: k starts mid-vector), prefill and decode, and a
// model whose k has no norm; the k cache and q are compared too (attention_case).
void test_gpu_qk_norm_whole(void **) {
    SKIP_WITHOUT_GPU();
    AttnFeatures whole;
    whole.qk_norm_whole = true;
    AttnFeatures q_only = whole;
    q_only.no_k_norm = true;
    for (DType act : {DType::F32, DType::F16, DType::BF16}) {
        const DType kvt = act == DType::F32 ? DType::F32 : DType::F16;
        attention_case(act, kvt, 16, 16, 128, true, 1, 5, whole); // OLMoE's head layout, prefill
        attention_case(act, kvt, 16, 16, 128, true, 7, 1, whole); // decode
        attention_case(act, kvt, 3, 1, 10, true, 1, 4, whole);    // sums of scalars
        attention_case(act, kvt, 8, 2, 64, true, 3, 1, q_only);
    }
}

// One MoE FFN through the Executor: embed, RMSNorm, moe, RMSNorm, logits, against a naive
// double model of the same steps (activations rounded where the device stores them). Tokens
// whose routing is nearly tied in the reference are left out (a rounding could flip them:
// ties have their own test above).
struct MoeCase {
    DType t;        // weight dtype (Q8/Q4: the experts quantized, compute f16)
    uint32_t E, k;
    bool norm, shared, gelu;
    uint32_t fe = 0; // the experts' width; 0: 64 quantized, else 36
};

struct MoeModel {
    MoeCase c;
    gpt::ModelShape shape;
    uint32_t d = 64, V = 96, fe = 0, fs = 0;
    DType compute = DType::F32;
    enum { TOK, HEAD, N1, N2, ROUTER, GU, DOWN, SGU, SDOWN, SGATE, COUNT };
    std::vector<std::vector<float>> values;             // what the reference uses (rounded or dequantized)
    std::vector<std::vector<uint8_t>> quant;            // quantized bytes where quantized
    std::vector<gpt::Weight> w;                         // host weights to place

    explicit MoeModel(const MoeCase &c_) : c(c_) {
        const bool q = gpt::is_quantized(c.t);
        compute = q ? DType::F16 : c.t;
        // 36: the unaligned (element-wise) dot-product path in f16/bf16 (and, not a multiple
        // of 8, the per-expert GEMMs in prefill); 72 takes the grouped GEMM.
        fe = c.fe ? c.fe : q ? 64 : 36;
        fs = c.shared ? (q ? 64 : 40) : 0;
        shape.n_layers = 1;
        shape.d_model = d;
        shape.n_heads = 2;
        shape.n_kv_heads = 1;
        shape.head_dim = 32;
        shape.d_ff = 0;
        shape.vocab_size = V;
        shape.n_experts = c.E;
        shape.n_experts_used = c.k;
        shape.d_ff_expert = fe;
        shape.d_ff_shared = fs;
        values.resize(COUNT);
        quant.resize(COUNT);
        w.resize(COUNT);
        const float sd = 1.0f / std::sqrt((float)d);
        add(TOK, V, d, 1.0f, false);
        add(HEAD, V, d, sd, false);
        add_norm(N1);
        add_norm(N2);
        add(ROUTER, c.E, d, 2.0f * sd, false); // logits of std ~2: well-separated experts
        add(GU, (uint64_t)c.E * 2 * fe, d, sd, q);
        add(DOWN, (uint64_t)c.E * d, fe, 1.0f / std::sqrt((float)fe), q);
        if (c.shared) {
            add(SGU, 2ull * fs, d, sd, q);
            add(SDOWN, d, fs, 1.0f / std::sqrt((float)fs), q);
            add(SGATE, 1, d, sd, false);
        }
    }
    void add(int i, uint64_t rows, uint64_t cols, float scale, bool quantize) {
        if (quantize) {
            QuantMatrix m(c.t, rows, cols, 32, scale);
            quant[i] = m.bytes;
            values[i] = m.values;
            w[i] = gpt::Weight{nullptr, c.t, rows, cols, 32};
            return;
        }
        values[i] = randn(rows * cols, scale);
        w[i] = gpt::Weight{nullptr, DType::F32, rows, cols, 0};
    }
    void add_norm(int i) {
        values[i] = randn(d, 0.2f);
        for (auto &v : values[i]) v += 1.0f;
        w[i] = gpt::Weight{nullptr, DType::F32, d, 1, 0};
    }
    // Host weights for a device to place (float data as drawn; the device rounds it).
    std::vector<gpt::Weight> host_weights() {
        std::vector<gpt::Weight> v = w;
        for (int i = 0; i < COUNT; i++) v[i].data = quant[i].empty() ? (const void *)values[i].data() : quant[i].data();
        return v;
    }
    // After host_weights: the float matrices as the device holds them.
    void round_floats() {
        for (int i : {TOK, HEAD, ROUTER, GU, DOWN, SGU, SDOWN, SGATE})
            if (quant[i].empty()) round_to(values[i], compute);
    }
    void forward(gpt::Executor &ex, const std::vector<gpt::Weight> &ws, float *host_all) const {
        gpt::MoeSpec m;
        m.router = &ws[ROUTER];
        m.gate_up = &ws[GU];
        m.down = &ws[DOWN];
        m.act = c.gelu ? gpt::Activation::GELU_TANH : gpt::Activation::SILU;
        m.norm_topk = c.norm;
        if (c.shared) {
            m.shared_gate_up = &ws[SGU];
            m.shared_down = &ws[SDOWN];
            m.shared_gate = &ws[SGATE];
        }
        ex.embed(ws[TOK], nullptr, 1.0f);
        if (c.gelu) { // the norm as its own op; else the MoE op norms (CUDA decode: in the router)
            ex.norm(gpt::NormKind::RMS, ws[N1], nullptr, 1e-6f);
        } else {
            m.norm = &ws[N1];
            m.norm_eps = 1e-6f;
        }
        ex.moe(m);
        ex.norm(gpt::NormKind::RMS, ws[N2], nullptr, 1e-6f);
        ex.logits(ws[HEAD], host_all, 0.0f, nullptr);
    }

    double rnd(double v) const {
        std::vector<float> x{(float)v};
        round_to(x, compute);
        return x[0];
    }
    double act(double v) const {
        if (!c.gelu) return v / (1 + std::exp(-v));
        return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    }
    std::vector<double> rms(const std::vector<double> &x, int norm) const {
        double ss = 0;
        for (double v : x) ss += v * v;
        const double inv = 1 / std::sqrt(ss / d + 1e-6);
        std::vector<double> h(d);
        for (uint32_t i = 0; i < d; i++) h[i] = rnd(x[i] * inv * values[norm][i]);
        return h;
    }
    double dot(const std::vector<double> &x, int m, uint64_t row, uint32_t n) const {
        double s = 0;
        for (uint32_t i = 0; i < n; i++) s += x[i] * values[m][row * n + i];
        return s;
    }
    // The routing of a token: experts in rank order and their router logits.
    std::vector<uint32_t> route(const std::vector<double> &h, std::vector<double> &logit) const {
        logit.resize(c.E);
        for (uint32_t e = 0; e < c.E; e++) logit[e] = dot(h, ROUTER, e, d);
        std::vector<uint32_t> order(c.E);
        for (uint32_t e = 0; e < c.E; e++) order[e] = e;
        std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return logit[a] > logit[b]; });
        return order;
    }
    std::vector<double> embed_norm(int32_t tok) const {
        std::vector<double> x(d);
        for (uint32_t i = 0; i < d; i++) x[i] = values[TOK][(uint64_t)tok * d + i];
        return x;
    }
    // Whether the token's k-th and (k+1)-th router logits are at least `margin` apart.
    bool clear_routing(int32_t tok, double margin) const {
        std::vector<double> logit;
        const std::vector<uint32_t> order = route(rms(embed_norm(tok), N1), logit);
        return c.k == c.E || logit[order[c.k - 1]] - logit[order[c.k]] >= margin;
    }
    std::vector<float> reference(int32_t tok) const {
        std::vector<double> x = embed_norm(tok);
        const std::vector<double> h = rms(x, N1);
        std::vector<double> logit;
        const std::vector<uint32_t> order = route(h, logit);
        double m = logit[order[0]], z = 0, top = 0;
        for (uint32_t e = 0; e < c.E; e++) z += std::exp(logit[e] - m);
        for (uint32_t s = 0; s < c.k; s++) top += std::exp(logit[order[s]] - m) / z;
        std::vector<double> delta(d, 0.0);
        // One GLU expert: rows [gu0, gu0 + 2 f) of matrix gu, rows [dn0, dn0 + d) of dn.
        auto expert = [&](int gu, uint64_t gu0, int dn, uint64_t dn0, uint32_t f, double weight) {
            std::vector<double> ff(f);
            for (uint32_t j = 0; j < f; j++)
                ff[j] = rnd(act(rnd(dot(h, gu, gu0 + j, d))) * rnd(dot(h, gu, gu0 + f + j, d)));
            for (uint32_t i = 0; i < d; i++) delta[i] += weight * dot(ff, dn, dn0 + i, f);
        };
        for (uint32_t s = 0; s < c.k; s++) {
            const uint32_t e = order[s];
            const double p = std::exp(logit[e] - m) / z;
            expert(GU, (uint64_t)e * 2 * fe, DOWN, (uint64_t)e * d, fe, c.norm ? p / top : p);
        }
        if (c.shared) expert(SGU, 0, SDOWN, 0, fs, 1 / (1 + std::exp(-dot(h, SGATE, 0, d))));
        for (uint32_t i = 0; i < d; i++) x[i] += delta[i];
        const std::vector<double> h2 = rms(x, N2);
        std::vector<float> out(V);
        for (uint32_t v = 0; v < V; v++) out[v] = (float)dot(h2, HEAD, v, d);
        return out;
    }
};

void moe_case(const MoeCase &c) {
    MoeModel m(c);
    std::vector<gpt::Weight> wg = m.host_weights();
    std::vector<gpt::Weight *> pg;
    for (auto &x : wg) pg.push_back(&x);
    auto dev = gpt::make_cuda_device(0);
    NoFile nf;
    dev->place_weights(pg, gpt::Placement{c.t, false}, nf);
    m.round_floats();
    gpt::ExecParams p;
    p.max_batch = 8;
    p.max_seq = 64;
    p.max_step_tokens = 300;
    dev->choose(p, 0, 0, 0);
    assert_int_equal((int)p.compute, (int)m.compute);
    auto ex = dev->create_executor(m.shape, p);
    const uint64_t allocations = gpt::cuda::allocation_count();
    // Tokens with a clear routing (bf16's rounding of H moves logits by up to ~1e-2).
    const double margin = m.compute == DType::BF16 ? 0.1 : 0.05;
    std::vector<int32_t> good;
    for (int32_t t = 0; t < (int32_t)m.V; t++)
        if (m.clear_routing(t, margin)) good.push_back(t);
    if (good.size() < 8) fail_msg("only %zu of %u tokens route clearly", good.size(), m.V);
    const double tol = c.t == DType::F32 ? 1e-4 : c.t == DType::BF16 ? 5e-2 : 2e-2;
    uint32_t start[8] = {0};
    // Decode shapes (batch rows of one token: the expert GEMVs, captured then replayed) and
    // prefill shapes (one sequence: grouped GEMMs; f16/bf16 with fe a multiple of 8 in one
    // launch a projection, captured the second time and replayed the third); each run three
    // times with other tokens.
    struct Shape { uint32_t batch, n_tokens; };
    for (Shape s : {Shape{1, 1}, Shape{3, 1}, Shape{8, 1}, Shape{1, 37}, Shape{1, 300}})
        for (int rep = 0; rep < 3; rep++) {
            const uint32_t rows = s.batch * s.n_tokens;
            std::vector<int32_t> toks(rows);
            for (auto &t : toks) t = good[g_rng() % good.size()];
            std::vector<float> got(rows * m.V, NAN), want;
            gpt::StepInput in;
            in.batch = s.batch;
            in.n_tokens = s.n_tokens;
            in.tokens = toks.data();
            in.start_pos = start;
            in.all_logits = s.n_tokens > 1;
            in.logits_seq_stride = s.n_tokens;
            in.host_all_logits = in.all_logits ? got.data() : nullptr;
            ex->begin_step(in);
            ex->run([&] { m.forward(*ex, wg, in.host_all_logits); }, true);
            if (!in.all_logits) ex->read_logits(got.data());
            for (int32_t t : toks) {
                const std::vector<float> r = m.reference(t);
                want.insert(want.end(), r.begin(), r.end());
            }
            char msg[200];
            std::snprintf(msg, sizeof msg, "moe %s E %u k %u norm %d shared %d %s: %u x %u rows, run %d", dname(c.t), c.E, c.k, c.norm,
                          c.shared, c.gelu ? "GeGLU" : "SwiGLU", s.batch, s.n_tokens, rep);
            expect_close(msg, got, want, tol);
        }
    assert_int_equal(gpt::cuda::allocation_count(), allocations); // every buffer was planned at creation
}

void test_gpu_moe(void **) {
    SKIP_WITHOUT_GPU();
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8, DType::Q4})
        for (MoeCase c : {MoeCase{t, 4, 1, true, false, false}, MoeCase{t, 8, 2, false, true, false},
                          MoeCase{t, 8, 2, true, true, true}, MoeCase{t, 64, 8, false, false, false},
                          MoeCase{t, 64, 8, true, true, false}, MoeCase{t, 64, 8, true, true, false, 72},
                          MoeCase{t, 8, 2, false, false, true, 72}}) {
            if (c.fe && gpt::is_quantized(t)) continue; // quantized experts need widths in multiples of 32
            c.t = t;
            moe_case(c);
        }
    // A top-k the CUDA routing cannot take is refused at creation, naming the numbers.
    MoeModel m(MoeCase{DType::F32, 8, 2, true, false, false});
    std::vector<gpt::Weight> wg = m.host_weights();
    std::vector<gpt::Weight *> pg;
    for (auto &x : wg) pg.push_back(&x);
    auto dev = gpt::make_cuda_device(0);
    NoFile nf;
    dev->place_weights(pg, gpt::Placement{DType::F32, false}, nf);
    gpt::ExecParams p;
    p.max_seq = 16;
    dev->choose(p, 0, 0, 0);
    for (uint32_t k : {0u, 9u}) {
        gpt::ModelShape bad = m.shape;
        bad.n_experts_used = k;
        try {
            (void)dev->create_executor(bad, p);
            fail_msg("top-%u of 8 experts was accepted", k);
        } catch (const gpt::Error &e) {
            assert_int_equal(e.status(), GPT_ERR_UNSUPPORTED);
            char want[32];
            std::snprintf(want, sizeof want, "%u of 8 experts", k);
            assert_non_null(std::strstr(e.what(), want));
        }
    }
}

void test_gpu_graph_replay_equals_eager(void **) {
    SKIP_WITHOUT_GPU();
    for (fixture::Spec s : model_specs()) {
        s.dtype = gpt::DType::F16;
        auto fx = fixture::make(s);
        Loaded graph, eager;
        load(graph, fx, 0, GPT_DTYPE_AUTO, 0, 2);
        load(eager, fx, 0, GPT_DTYPE_AUTO, GPT_CTX_NO_GRAPHS, 2);
        const uint32_t V = fx.config.vocab_size;
        for (uint32_t batch : {1u, 2u}) {
            gpt_ctx_reset(graph.c);
            gpt_ctx_reset(eager.c);
            std::vector<int32_t> toks(batch * 5);
            for (auto &t : toks) t = (int32_t)(g_rng() % V);
            // Repeated prefill with all logits: the third run of a shape replays its recording
            // (captured on the second), the head running afterwards into the caller's buffer.
            for (int rep = 0; rep < 3; rep++) {
                gpt_ctx_reset(graph.c);
                gpt_ctx_reset(eager.c);
                std::vector<float> fa(batch * 5 * V, NAN), fb(batch * 5 * V, NAN);
                assert_int_equal(gpt_forward(graph.c, toks.data(), batch, 5, GPT_FORWARD_ALL_LOGITS, fa.data()), GPT_OK);
                assert_int_equal(gpt_forward(eager.c, toks.data(), batch, 5, GPT_FORWARD_ALL_LOGITS, fb.data()), GPT_OK);
                for (size_t i = 0; i < fa.size(); i++)
                    if (!(fa[i] == fb[i])) fail_msg("prefill rep %d: graph vs eager differ at %zu: %g vs %g", rep, i, fa[i], fb[i]);
            }
            gpt_ctx_reset(graph.c);
            gpt_ctx_reset(eager.c);
            std::vector<float> a(batch * V), b(batch * V);
            assert_int_equal(gpt_forward(graph.c, toks.data(), batch, 5, 0, a.data()), GPT_OK);
            assert_int_equal(gpt_forward(eager.c, toks.data(), batch, 5, 0, b.data()), GPT_OK);
            for (int step = 0; step < 12; step++) {
                std::vector<int32_t> next(batch);
                for (auto &t : next) t = (int32_t)(g_rng() % V);
                std::fill(a.begin(), a.end(), NAN);
                assert_int_equal(gpt_forward(graph.c, next.data(), batch, 1, 0, a.data()), GPT_OK);
                assert_int_equal(gpt_forward(eager.c, next.data(), batch, 1, 0, b.data()), GPT_OK);
                for (size_t i = 0; i < a.size(); i++)
                    if (!(a[i] == b[i])) fail_msg("graph vs eager differ at step %d element %zu: %g vs %g", step, i, a[i], b[i]);
            }
        }
    }
}

// Prompt steps whose logits come from the last rows only (keep_last_rows), replayed many
// times from a graph and run eagerly (RELIABILITY, "Bugs found": the last-rows kernel moved
// the positions and sequence ids the attention kernels read before their PDL wait, so some
// steps attended to the wrong keys, in graphs and eagerly). The failing case's shape: a small
// GPT-2 in f32 (minGPT's layout: untied head, tanh GELU) whose 8-token window is re-encoded
// from position 0 every step, as --context-shift does at a full context; here 64 sequences a
// step, so the move took long enough for the race to show every time (3 of 3 runs of the
// unfixed code failed on an H200). Each sequence's logits against the same step's all-logits
// run (no rows move there; f32, within 1e-4 of the row's largest logit), and the graph's
// against the eager context's bit for bit.
void test_gpu_prompt_graph_replays(void **) {
    SKIP_WITHOUT_GPU();
    fixture::Spec g;
    g.arch = GPT_ARCH_GPT2;
    g.d_model = 16, g.n_heads = 2, g.head_dim = 8, g.d_ff = 64, g.n_layers = 2, g.vocab_size = 21, g.context_length = 8;
    g.tied_head = false;
    auto fx = fixture::make(g);
    const uint32_t B = 64, T = 8, V = g.vocab_size;
    Loaded graph, eager;
    load(graph, fx, 0, GPT_DTYPE_AUTO, 0, B);
    load(eager, fx, 0, GPT_DTYPE_AUTO, GPT_CTX_NO_GRAPHS, B);
    std::vector<float> a(B * V), b(B * V), all(B * T * V);
    for (int step = 0; step < 20; step++) {
        std::vector<int32_t> toks(B * T);
        for (auto &t : toks) t = (int32_t)(g_rng() % V);
        gpt_ctx_reset(graph.c);
        gpt_ctx_reset(eager.c);
        std::fill(a.begin(), a.end(), NAN);
        std::fill(b.begin(), b.end(), NAN);
        std::fill(all.begin(), all.end(), NAN);
        assert_int_equal(gpt_forward(graph.c, toks.data(), B, T, 0, a.data()), GPT_OK);
        assert_int_equal(gpt_forward(eager.c, toks.data(), B, T, 0, b.data()), GPT_OK);
        gpt_ctx_reset(eager.c);
        assert_int_equal(gpt_forward(eager.c, toks.data(), B, T, GPT_FORWARD_ALL_LOGITS, all.data()), GPT_OK);
        for (uint32_t s = 0; s < B; s++) {
            const float *ref = all.data() + ((uint64_t)s * T + T - 1) * V;
            float scale = 1.0f;
            for (uint32_t i = 0; i < V; i++) scale = std::max(scale, std::fabs(ref[i]));
            for (uint32_t i = 0; i < V; i++) {
                const float x = a[s * V + i], y = b[s * V + i];
                if (!(std::fabs(y - ref[i]) <= 1e-4f * scale))
                    fail_msg("step %d sequence %u logit %u: eager %.9g, all-logits run %.9g", step, s, i, y, ref[i]);
                if (!(x == y)) fail_msg("step %d (replay %d) sequence %u logit %u: graph %.9g, eager %.9g", step, step - 1, s, i, x, y);
            }
        }
    }
}

void test_gpu_no_allocation_in_generate(void **) {
    SKIP_WITHOUT_GPU();
    fixture::Spec s = model_specs()[1];
    s.dtype = gpt::DType::F16;
    auto fx = fixture::make(s);
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = 0;
    gpt_model *m = nullptr;
    assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_OK);
    uint64_t est_host = 0, est_dev = 0;
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    assert_int_equal(gpt_ctx_estimate_memory(m, &cp, &est_host, &est_dev), GPT_OK);
    size_t free0, free1, total;
    CK(cudaMemGetInfo(&free0, &total));
    const uint64_t n0 = gpt::cuda::allocation_count();
    gpt_ctx *c = nullptr;
    assert_int_equal(gpt_ctx_create(m, &cp, &c), GPT_OK);
    CK(cudaMemGetInfo(&free1, &total));
    // One device and one pinned allocation; the device one is what the estimate said.
    assert_int_equal(gpt::cuda::allocation_count() - n0, 2);
    std::printf("  estimate: %llu device bytes, %llu host; free memory dropped by %zu (incl. cuBLAS handle)\n",
                (unsigned long long)est_dev, (unsigned long long)est_host, free0 - free1);
    assert_true(free0 - free1 >= est_dev);
    const uint64_t n1 = gpt::cuda::allocation_count();
    int32_t prompt[4] = {1, 2, 3, 4}, out[40];
    uint32_t n_out = 0;
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    sp.flags = GPT_SAMPLING_IGNORE_EOS;
    assert_int_equal(gpt_generate(c, prompt, 4, &sp, nullptr, nullptr, out, 40, &n_out), GPT_OK);
    sp.temperature = 0;
    assert_int_equal(gpt_generate(c, out + 39, 1, &sp, nullptr, nullptr, out, 10, &n_out), GPT_OK);
    // The adjustment lists (penalties, bias) travel in buffers the plan sized.
    gpt_logit_bias bias[2] = {{3, 1.5f}, {5, -2.0f}};
    sp.frequency_penalty = 0.5f;
    sp.presence_penalty = 0.25f;
    sp.logit_bias = bias;
    sp.n_logit_bias = 2;
    gpt_ctx_reset(c);
    assert_int_equal(gpt_generate(c, prompt, 4, &sp, nullptr, nullptr, out, 40, &n_out), GPT_OK);
    assert_int_equal(gpt::cuda::allocation_count(), n1);
    gpt_ctx_free(c);
    gpt_model_free(m);
}

void test_gpu_out_of_memory_at_creation(void **) {
    SKIP_WITHOUT_GPU();
    fixture::Spec s = model_specs()[1];
    s.context_length = 1u << 22;
    auto fx = fixture::make(s);
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = 0;
    gpt_model *m = nullptr;
    assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_OK);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_batch = 4096; // 4096 x 4M positions x 2 kv heads x 16 dims: far beyond any GPU
    cp.max_seq = 1u << 22;
    const uint64_t n0 = gpt::cuda::allocation_count();
    gpt_ctx *c = nullptr;
    const gpt_status st = gpt_ctx_create(m, &cp, &c);
    assert_int_equal(st, GPT_ERR_OUT_OF_MEMORY);
    assert_null(c);
    std::printf("  message: %s\n", gpt_last_error());
    // Refused up front with the numbers (host memory for the token history, or the GPU's).
    assert_non_null(std::strstr(gpt_last_error(), "max_seq 4194304 x max_batch 4096 needs"));
    assert_true(std::strstr(gpt_last_error(), "free on cuda:0") || std::strstr(gpt_last_error(), "MiB are available"));
    assert_int_equal(gpt::cuda::allocation_count(), n0); // nothing kept
    // The process and the model stay usable.
    cp.max_batch = 1;
    cp.max_seq = 64;
    assert_int_equal(gpt_ctx_create(m, &cp, &c), GPT_OK);
    int32_t t = 5;
    std::vector<float> lg(fx.config.vocab_size);
    assert_int_equal(gpt_forward(c, &t, 1, 1, 0, lg.data()), GPT_OK);
    gpt_ctx_free(c);
    gpt_model_free(m);
}

// Hostile files on the GPU load path: a damaged tensor (checksum), a NaN weight with every crc
// fixed up, a file cut short, a missing tensor and a wrong shape give the status the CPU path
// gives, with the message naming the tensor, and leave no device allocation behind; the GPU
// then still loads and runs the good file.
void test_gpu_hostile_loads(void **) {
    SKIP_WITHOUT_GPU();
    namespace fd = format_decoder;
    fixture::Spec s = model_specs()[1];
    const auto fx = fixture::make(s);
    const fd::Bytes good = fx.file;
    const fd::Header h = fd::header_of(good);
    const auto table = fd::table_entries(good);
    const fd::TensorPos &q = fd::table_entry(table, "blk.0.attn_qkv.weight");
    struct Case {
        const char *what;
        fd::Bytes file;
        gpt_status want;
        const char *needle;
    };
    std::vector<Case> cases;
    fd::Bytes b = good;
    b[h.data_off + q.rel + 5] ^= 0x40;
    cases.push_back({"flipped weight bit", b, GPT_ERR_CHECKSUM, "blk.0.attn_qkv.weight"});
    b = good;
    fd::put32(b, h.data_off + q.rel + 8, 0x7fc00000u); // f32 NaN
    fd::fix_all_crcs(b);
    cases.push_back({"NaN weight", b, GPT_ERR_FORMAT, "blk.0.attn_qkv.weight"});
    b = good;
    b.resize(h.data_off + q.rel + 3);
    fd::put64(b, fd::H_FILE_SIZE, b.size());
    fd::fix_crcs(b);
    cases.push_back({"cut short", b, GPT_ERR_FORMAT, ""});
    b = good;
    fd::put64(b, q.dims_at, q.dims[0] + 1); // a wrong shape for the config (bytes then disagree too)
    fd::fix_crcs(b);
    cases.push_back({"wrong shape", b, GPT_ERR_FORMAT, "blk.0.attn_qkv.weight"});
    size_t free0 = 0, free1 = 0, total = 0;
    CK(cudaMemGetInfo(&free0, &total));
    // A damaged tensor is found when the load reaches it, after the weights' allocation:
    // the allocation must be gone again.
    const int64_t n0 = gpt::cuda::live_allocations();
    for (const Case &c : cases) {
        // The CPU, device weights (checked piece by piece before each upload) and host weights
        // (registered, then checked: the registration must be undone).
        for (auto [device, flags] : {std::pair<int, uint32_t>{GPT_DEVICE_CPU, 0}, {0, GPT_MODEL_DEVICE_WEIGHTS}, {0, GPT_MODEL_HOST_WEIGHTS}}) {
            gpt_model_params mp;
            gpt_model_params_init(&mp);
            mp.device = device;
            mp.flags = flags;
            gpt_model *m = reinterpret_cast<gpt_model *>(0x1);
            const gpt_status st = gpt_model_load_from_memory(c.file.data(), c.file.size(), &mp, &m);
            if (st != c.want || m || !std::strstr(gpt_last_error(), c.needle))
                fail_msg("%s on device %d, flags 0x%x: %s (%s), expected %s naming '%s'", c.what, device, flags, gpt_status_str(st),
                         gpt_last_error(), gpt_status_str(c.want), c.needle);
        }
    }
    assert_int_equal(gpt::cuda::live_allocations(), n0); // no weights left on the device
    CK(cudaMemGetInfo(&free1, &total));
    if (free1 + (64u << 20) < free0) fail_msg("device memory dropped by %zu bytes over the failed loads", free0 - free1);
    Loaded l;
    load(l, fx, 0, GPT_DTYPE_AUTO, 0);
    int32_t t = 3;
    std::vector<float> lg(fx.config.vocab_size);
    assert_int_equal(gpt_forward(l.c, &t, 1, 1, 0, lg.data()), GPT_OK);
}

// gpt_ctx_create's warm-up (GPT_CTX_NO_WARMUP): the context starts empty, and what it computes
// is what a context without the warm-up computes, bit for bit - logits of a prefill and of
// decode steps, and a sampled generation with a seed; a context too short for it still works.
void test_gpu_ctx_warmup(void **) {
    SKIP_WITHOUT_GPU();
    for (fixture::Spec s : model_specs()) {
        if (s.arch != GPT_ARCH_LLAMA && s.arch != GPT_ARCH_GPT2) continue;
        s.seed = g_rng();
        const fixture::Model fx = fixture::make(s);
        Loaded warm, cold;
        load(warm, fx, 0, GPT_DTYPE_AUTO, 0);
        load(cold, fx, 0, GPT_DTYPE_AUTO, GPT_CTX_NO_WARMUP);
        assert_int_equal(gpt_ctx_seq_len(warm.c, 0), 0);
        const uint32_t V = fx.config.vocab_size, T = 23;
        std::vector<int32_t> toks(T + 4);
        for (auto &t : toks) t = (int32_t)(g_rng() % V);
        std::vector<float> a(V, NAN), b(V, NAN);
        assert_int_equal(gpt_forward(warm.c, toks.data(), 1, T, 0, a.data()), GPT_OK);
        assert_int_equal(gpt_forward(cold.c, toks.data(), 1, T, 0, b.data()), GPT_OK);
        assert_memory_equal(a.data(), b.data(), V * sizeof(float));
        for (uint32_t i = 0; i < 4; i++) {
            assert_int_equal(gpt_forward(warm.c, &toks[T + i], 1, 1, 0, a.data()), GPT_OK);
            assert_int_equal(gpt_forward(cold.c, &toks[T + i], 1, 1, 0, b.data()), GPT_OK);
            assert_memory_equal(a.data(), b.data(), V * sizeof(float));
        }
        gpt_ctx_reset(warm.c);
        gpt_ctx_reset(cold.c);
        gpt_sampling_params sp;
        gpt_sampling_params_init(&sp);
        sp.seed = g_rng();
        sp.flags = GPT_SAMPLING_IGNORE_EOS;
        int32_t x[20], y[20];
        uint32_t nx = 0, ny = 0;
        assert_int_equal(gpt_generate(warm.c, toks.data(), 5, &sp, nullptr, nullptr, x, 20, &nx), GPT_OK);
        assert_int_equal(gpt_generate(cold.c, toks.data(), 5, &sp, nullptr, nullptr, y, 20, &ny), GPT_OK);
        assert_int_equal(nx, ny);
        assert_memory_equal(x, y, nx * sizeof(int32_t));
    }
    // max_seq 3 (the shortest with a warm-up) and 2 (none): created empty, usable.
    fixture::Spec s;
    s.seed = g_rng();
    const fixture::Model fx = fixture::make(s);
    for (uint32_t max_seq : {2u, 3u}) {
        gpt_model_params mp;
        gpt_model_params_init(&mp);
        mp.device = 0;
        gpt_model *m = nullptr;
        assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_OK);
        gpt_ctx_params cp;
        gpt_ctx_params_init(&cp);
        cp.max_seq = max_seq;
        gpt_ctx *c = nullptr;
        if (gpt_ctx_create(m, &cp, &c) != GPT_OK) fail_msg("max_seq %u: %s", max_seq, gpt_last_error());
        assert_int_equal(gpt_ctx_seq_len(c, 0), 0);
        int32_t t[2] = {1, 2};
        std::vector<float> lg(fx.config.vocab_size, NAN);
        assert_int_equal(gpt_forward(c, t, 1, 2, 0, lg.data()), GPT_OK);
        for (float v : lg) assert_true(std::isfinite(v));
        gpt_ctx_free(c);
        gpt_model_free(m);
    }
}

// ------------------------------------------------------------------ host weights (issue 22)

gpt_model_info info_of(gpt_model *m) {
    gpt_model_info i;
    std::memset(&i, 0, sizeof i);
    i.struct_size = sizeof i;
    assert_int_equal(gpt_model_get_info(m, &i), GPT_OK);
    return i;
}

// Prefill logits and 6 decode steps of `got` against `want` (fresh contexts).
void expect_same_run(const char *what, Loaded &got, Loaded &want, uint32_t V, double tol) {
    const uint32_t T = 23;
    std::vector<int32_t> toks(T + 6);
    for (auto &t : toks) t = (int32_t)(g_rng() % V);
    std::vector<float> a(T * V, NAN), b(T * V, NAN);
    if (gpt_forward(want.c, toks.data(), 1, T, GPT_FORWARD_ALL_LOGITS, a.data()) != GPT_OK)
        fail_msg("%s: reference forward: %s", what, gpt_ctx_last_error(want.c));
    if (gpt_forward(got.c, toks.data(), 1, T, GPT_FORWARD_ALL_LOGITS, b.data()) != GPT_OK)
        fail_msg("%s: forward: %s", what, gpt_ctx_last_error(got.c));
    expect_close((std::string(what) + " prefill").c_str(), b, a, tol);
    for (uint32_t i = 0; i < 6; i++) {
        std::vector<float> la(V, NAN), lb(V, NAN);
        assert_int_equal(gpt_forward(want.c, &toks[T + i], 1, 1, 0, la.data()), GPT_OK);
        assert_int_equal(gpt_forward(got.c, &toks[T + i], 1, 1, 0, lb.data()), GPT_OK);
        expect_close((std::string(what) + " decode").c_str(), lb, la, tol);
    }
}

// Host weights (GPT_MODEL_HOST_WEIGHTS) against device weights and the CPU, for every
// architecture in f32, f16 and bf16 files and for q8 and q4 files: the same logits (the
// tolerances of test_gpu_model_logits), the model says it reads host memory, holds the file
// in host memory and only the vectors in device memory.
void test_gpu_host_weights_match_device(void **) {
    SKIP_WITHOUT_GPU();
    std::vector<std::pair<fixture::Model, double>> models;
    for (fixture::Spec s : model_specs())
        for (DType d : {DType::F32, DType::F16, DType::BF16}) {
            s.dtype = d;
            s.seed = g_rng();
            models.push_back({fixture::make(s), d == DType::F32 ? 1e-4 : d == DType::F16 ? 2e-2 : 5e-2});
        }
    for (fixture::Spec s : model_specs())
        for (DType q : {DType::Q8, DType::Q4}) {
            s.seed = g_rng();
            // Group 32 divides every matrix's columns (d_model, d_ff, n_heads * head_dim): none
            // stays float, which the host-weights mode would convert into device memory.
            s.d_model = 64, s.d_ff = 128, s.head_dim = 32;
            models.push_back({quantized_fixture(s, q, 32), 2e-2});
        }
    // The mixture-of-experts architectures (tests/test_moe.cpp's shapes) in every dtype. Against
    // the CPU only in f32: in f16 a near-tied router may pick another expert on the GPU than on
    // the CPU; host and device weights run the same kernels, so they are compared in all.
    const size_t dense = models.size();
    for (gpt_arch a : {GPT_ARCH_MIXTRAL, GPT_ARCH_QWEN2_MOE, GPT_ARCH_OLMOE, GPT_ARCH_QWEN3_MOE})
        for (DType d : {DType::F32, DType::F16, DType::BF16, DType::Q8, DType::Q4}) {
            fixture::Spec s;
            s.arch = a;
            s.vocab_size = 61;
            s.n_layers = 2, s.d_model = 64, s.n_heads = 4, s.n_kv_heads = 2, s.head_dim = 16, s.d_ff = 64;
            s.n_experts = 6, s.n_experts_used = a == GPT_ARCH_QWEN3_MOE ? 1 : 2, s.d_ff_expert = 32;
            s.norm_topk_prob = a != GPT_ARCH_OLMOE;
            if (a == GPT_ARCH_QWEN2_MOE) s.d_ff_shared = 32, s.qkv_bias = true, s.moe_layers = {1, 0};
            s.seed = g_rng();
            const bool quant = d == DType::Q8 || d == DType::Q4;
            s.dtype = quant ? DType::F32 : d;
            models.push_back({quant ? quantized_fixture(s, d, 32) : fixture::make(s), d == DType::F32 ? 1e-4 : d == DType::BF16 ? 5e-2 : 2e-2});
        }
    for (size_t i = 0; i < models.size(); i++) {
        const fixture::Model &fx = models[i].first;
        const double tol = models[i].second;
        const bool moe = i >= dense;
        Loaded cpu, dev, host;
        load(dev, fx, 0, GPT_DTYPE_AUTO, 0, 1, GPT_MODEL_DEVICE_WEIGHTS);
        load(host, fx, 0, GPT_DTYPE_AUTO, 0, 1, GPT_MODEL_HOST_WEIGHTS);
        const gpt_model_info hi = info_of(host.m), di = info_of(dev.m);
        char what[128];
        std::snprintf(what, sizeof what, "%s %s host weights", gpt_arch_name(fx.config.arch), gpt_dtype_name(hi.file_dtype));
        if (!(hi.flags & GPT_MODEL_INFO_HOST_WEIGHTS)) fail_msg("%s: the weights went to device memory", what);
        assert_false(di.flags & GPT_MODEL_INFO_HOST_WEIGHTS);
        assert_int_equal(hi.weight_dtype, di.weight_dtype);
        assert_int_equal(hi.host_bytes, fx.file.size());
        assert_int_equal(di.host_bytes, 0);
        std::printf("  %s: device bytes %llu (device weights: %llu)\n", what, (unsigned long long)hi.device_bytes,
                    (unsigned long long)di.device_bytes);
        assert_true(hi.device_bytes * 4 < di.device_bytes);
        if (!moe || hi.file_dtype == GPT_DTYPE_F32) {
            load(cpu, fx, GPT_DEVICE_CPU, GPT_DTYPE_AUTO, 0);
            expect_same_run((std::string(what) + " vs cpu").c_str(), host, cpu, fx.config.vocab_size, tol);
            gpt_ctx_reset(host.c);
        }
        expect_same_run((std::string(what) + " vs device weights").c_str(), host, dev, fx.config.vocab_size, tol);
    }
}

// No weight-size device allocation in host-weights mode, as the driver sees it: a 75 MiB
// model from a mapped file (registered read-only), from a read buffer (GPT_MODEL_NO_MMAP) and
// from the caller's buffer, against device weights, which take at least the file's size.
void test_gpu_host_weights_device_memory(void **) {
    SKIP_WITHOUT_GPU();
    fixture::Spec s;
    s.n_layers = 2, s.d_model = 1024, s.n_heads = 8, s.n_kv_heads = 8, s.head_dim = 128, s.d_ff = 2048, s.vocab_size = 4096;
    s.seed = g_rng();
    const fixture::Model fx = fixture::make(s);
    const std::string path = fixture::write_temp(fx.file);
    // A 64-byte aligned copy: the model borrows it (a misaligned buffer would be copied).
    std::unique_ptr<uint8_t, decltype(&std::free)> aligned(
        static_cast<uint8_t *>(std::aligned_alloc(64, (fx.file.size() + 63) / 64 * 64)), &std::free);
    assert_non_null(aligned.get());
    std::memcpy(aligned.get(), fx.file.data(), fx.file.size());
    struct Case {
        const char *what;
        uint32_t flags;
        bool from_path;
    };
    for (const Case &c : {Case{"device weights", GPT_MODEL_DEVICE_WEIGHTS, true},
                          Case{"host weights, mapped file", GPT_MODEL_HOST_WEIGHTS, true},
                          Case{"host weights, read file", GPT_MODEL_HOST_WEIGHTS | GPT_MODEL_NO_MMAP, true},
                          Case{"host weights, caller's buffer", GPT_MODEL_HOST_WEIGHTS, false}}) {
        gpt_model_params mp;
        gpt_model_params_init(&mp);
        mp.device = 0;
        mp.flags = c.flags;
        size_t free0 = 0, free1 = 0, total = 0;
        CK(cudaDeviceSynchronize());
        CK(cudaMemGetInfo(&free0, &total));
        gpt_model *m = nullptr;
        const gpt_status st = c.from_path ? gpt_model_load(path.c_str(), &mp, &m)
                                          : gpt_model_load_from_memory(aligned.get(), fx.file.size(), &mp, &m);
        if (st != GPT_OK) fail_msg("%s: %s", c.what, gpt_last_error());
        CK(cudaMemGetInfo(&free1, &total));
        const gpt_model_info i = info_of(m);
        const bool host = c.flags & GPT_MODEL_HOST_WEIGHTS;
        const double used = (double)(free0 - std::min(free0, free1));
        std::printf("  %s: the driver's free memory dropped by %.1f MiB, model device_bytes %.1f MiB, host_bytes %.1f MiB (file %.1f MiB)\n",
                    c.what, used / (1 << 20), (double)i.device_bytes / (1 << 20), (double)i.host_bytes / (1 << 20),
                    (double)fx.file.size() / (1 << 20));
        if (host) {
            if (!(i.flags & GPT_MODEL_INFO_HOST_WEIGHTS)) {
                // Say why (the driver's answer), through the library's internals.
                auto internal = c.from_path ? gpt::Model::load_file(path.c_str(), mp)
                                            : gpt::Model::load_memory(aligned.get(), fx.file.size(), mp);
                fail_msg("%s: copied to device memory: %s", c.what, internal->device().host_weights_refusal().c_str());
            }
            assert_true(i.device_bytes < (1u << 20));
            assert_true(used < 16.0 * (1 << 20));
        } else {
            assert_true(i.device_bytes >= fx.file.size() - (1u << 20));
            assert_true(used >= (double)fx.file.size() * 0.9);
        }
        // It runs: one forward.
        gpt_ctx_params cp;
        gpt_ctx_params_init(&cp);
        cp.max_seq = 16;
        gpt_ctx *ctx = nullptr;
        assert_int_equal(gpt_ctx_create(m, &cp, &ctx), GPT_OK);
        int32_t t[2] = {1, 2};
        std::vector<float> lg(s.vocab_size, NAN);
        assert_int_equal(gpt_forward(ctx, t, 1, 2, 0, lg.data()), GPT_OK);
        for (float v : lg) assert_true(std::isfinite(v));
        gpt_ctx_free(ctx);
        gpt_model_free(m);
    }
    unlink(path.c_str());
}

// A 64-token greedy run: the same tokens with host and device weights (f32), unless the
// device run's top two logits are within 1e-5 where they part (a tie no backend can be held to).
void test_gpu_host_weights_greedy(void **) {
    SKIP_WITHOUT_GPU();
    for (fixture::Spec s : model_specs()) {
        s.context_length = 128;
        s.seed = g_rng();
        auto fx = fixture::make(s);
        Loaded dev, host;
        load(dev, fx, 0, GPT_DTYPE_AUTO, 0, 1, GPT_MODEL_DEVICE_WEIGHTS);
        load(host, fx, 0, GPT_DTYPE_AUTO, 0, 1, GPT_MODEL_HOST_WEIGHTS);
        int32_t prompt[3] = {1, 2, 3};
        gpt_sampling_params sp;
        gpt_sampling_params_init(&sp);
        sp.temperature = 0;
        sp.flags = GPT_SAMPLING_IGNORE_EOS;
        int32_t a[64], b[64];
        uint32_t na = 0, nb = 0;
        assert_int_equal(gpt_generate(dev.c, prompt, 3, &sp, nullptr, nullptr, a, 64, &na), GPT_OK);
        assert_int_equal(gpt_generate(host.c, prompt, 3, &sp, nullptr, nullptr, b, 64, &nb), GPT_OK);
        assert_int_equal(na, 64);
        assert_int_equal(nb, 64);
        for (uint32_t i = 0; i < 64; i++) {
            if (a[i] == b[i]) continue;
            gpt_ctx_reset(dev.c);
            std::vector<int32_t> seq(prompt, prompt + 3);
            seq.insert(seq.end(), a, a + i);
            std::vector<float> lg(fx.config.vocab_size);
            assert_int_equal(gpt_forward(dev.c, seq.data(), 1, (uint32_t)seq.size(), 0, lg.data()), GPT_OK);
            const float gap = std::fabs(lg[a[i]] - lg[b[i]]);
            std::printf("  %s: greedy diverges at token %u (device %d, host %d), logit gap %g\n", gpt_arch_name(s.arch), i, a[i],
                        b[i], gap);
            assert_true(gap < 1e-5f * std::max(1.0f, std::fabs(lg[a[i]])));
            break;
        }
    }
}

// Host weights read the file as it is: a conversion is refused, naming the way out; both
// placement flags at once are an invalid argument.
// Registration refused: a caller's buffer the application registered itself
// (cudaErrorHostMemoryAlreadyRegistered). Without pageable memory access the weights are
// copied to device memory as without the flag, the model says so (no INFO_HOST_WEIGHTS,
// device_bytes of the weights, the device's reason), and the logits are device mode's; with
// pageable access (HMM) the GPU reads the buffer through the plain pointer instead.
void test_gpu_host_weights_fallback(void **) {
    SKIP_WITHOUT_GPU();
    fixture::Spec s = model_specs()[1];
    s.seed = g_rng();
    const fixture::Model fx = fixture::make(s);
    const size_t padded = (fx.file.size() + 4095) / 4096 * 4096;
    std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t *>(std::aligned_alloc(4096, padded)), &std::free);
    assert_non_null(buf.get());
    std::memcpy(buf.get(), fx.file.data(), fx.file.size());
    CK(cudaHostRegister(buf.get(), padded, cudaHostRegisterDefault));
    int pageable = 0;
    CK(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0));
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = 0;
    mp.flags = GPT_MODEL_HOST_WEIGHTS;
    {
        auto m = gpt::Model::load_memory(buf.get(), fx.file.size(), mp);
        const gpt_model_info i = m->info();
        std::printf("  host weights over a registered buffer: %s, device bytes %llu; reason: '%s'\n",
                    (i.flags & GPT_MODEL_INFO_HOST_WEIGHTS) ? "read in place" : "copied",
                    (unsigned long long)i.device_bytes, m->device().host_weights_refusal().c_str());
        if (pageable) {
            assert_true(i.flags & GPT_MODEL_INFO_HOST_WEIGHTS);
        } else {
            assert_false(i.flags & GPT_MODEL_INFO_HOST_WEIGHTS);
            assert_true(i.device_bytes >= fx.file.size() / 2);
            assert_int_equal(i.host_bytes, 0);
            assert_non_null(std::strstr(m->device().host_weights_refusal().c_str(), "cudaHostRegister"));
        }
    }
    // Through the API, against device weights.
    Loaded dev;
    load(dev, fx, 0, GPT_DTYPE_AUTO, 0, 1, GPT_MODEL_DEVICE_WEIGHTS);
    Loaded host;
    assert_int_equal(gpt_model_load_from_memory(buf.get(), fx.file.size(), &mp, &host.m), GPT_OK);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    assert_int_equal(gpt_ctx_create(host.m, &cp, &host.c), GPT_OK);
    expect_same_run("registered buffer", host, dev, fx.config.vocab_size, 1e-4);
    gpt_ctx_free(host.c);
    gpt_model_free(host.m);
    host.c = nullptr;
    host.m = nullptr;
    CK(cudaHostUnregister(buf.get()));
}

void test_gpu_host_weights_refusals(void **) {
    SKIP_WITHOUT_GPU();
    fixture::Spec s = model_specs()[1];
    const auto fx = fixture::make(s); // f32
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = 0;
    mp.flags = GPT_MODEL_HOST_WEIGHTS;
    mp.weight_dtype = GPT_DTYPE_F16;
    gpt_model *m = reinterpret_cast<gpt_model *>(0x1);
    assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_ERR_UNSUPPORTED);
    assert_null(m);
    assert_non_null(std::strstr(gpt_last_error(), "GPT_MODEL_DEVICE_WEIGHTS"));
    mp.weight_dtype = GPT_DTYPE_AUTO;
    mp.flags = GPT_MODEL_HOST_WEIGHTS | GPT_MODEL_DEVICE_WEIGHTS;
    assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_ERR_INVALID_ARG);
    // The same f16 conversion with device weights loads.
    mp.flags = GPT_MODEL_DEVICE_WEIGHTS;
    mp.weight_dtype = GPT_DTYPE_F16;
    assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_OK);
    gpt_model_free(m);
}

void test_gpu_device_selection(void **) {
    // Runs with and without a GPU: an explicit missing device fails clearly.
    fixture::Spec s = model_specs()[0];
    auto fx = fixture::make(s);
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = gpt_cuda_device_count(); // one past the last
    gpt_model *m = nullptr;
    assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_ERR_UNSUPPORTED);
    assert_null(m);
    assert_non_null(std::strstr(gpt_last_error(), "CUDA device"));
    mp.device = GPT_DEVICE_AUTO;
    assert_int_equal(gpt_model_load_from_memory(fx.file.data(), fx.file.size(), &mp, &m), GPT_OK);
    gpt_model_info info;
    info.struct_size = sizeof info;
    assert_int_equal(gpt_model_get_info(m, &info), GPT_OK);
    assert_int_equal(info.device, have_gpu() ? 0 : GPT_DEVICE_CPU);
    gpt_model_free(m);
}

} // namespace

int main(void) {
    const char *env = std::getenv("GPT_TEST_SEED");
    g_seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    g_rng.seed(g_seed);
    std::printf("test_gpu: seed %llu (set GPT_TEST_SEED to repeat); %d CUDA device(s)\n", (unsigned long long)g_seed,
                gpt_cuda_device_count());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_add_norm),
        cmocka_unit_test(test_gpu_norm_add_softcap),
        cmocka_unit_test(test_gpu_gemm_bias_gelu),
        cmocka_unit_test(test_gpu_gemv),
        cmocka_unit_test(test_gpu_swiglu_embed),
        cmocka_unit_test(test_attention_rows_per_block_rule),
        cmocka_unit_test(test_attention_tc_rule),
        cmocka_unit_test(test_gpu_attention),
        cmocka_unit_test(test_gpu_attention_features),
        cmocka_unit_test(test_gpu_attention_short),
        cmocka_unit_test(test_gpu_decode_across_short_attention),
        cmocka_unit_test(test_gpu_executor_features),
        cmocka_unit_test(test_gpu_sample),
        cmocka_unit_test(test_gpu_sample_adjustments),
        cmocka_unit_test(test_gpu_model_logits),
        cmocka_unit_test(test_gpu_greedy_matches_cpu),
        cmocka_unit_test(test_gpu_penalties_match_cpu),
        cmocka_unit_test(test_quant_dequant_exact_host),
        cmocka_unit_test(test_gpu_quant_kernels),
        cmocka_unit_test(test_gpu_quant_model),
        cmocka_unit_test(test_gpu_quant_prefill_slices),
        cmocka_unit_test(test_gpu_moe_topk),
        cmocka_unit_test(test_gpu_moe_norm_router),
        cmocka_unit_test(test_gpu_moe_group),
        cmocka_unit_test(test_gpu_moe_experts),
        cmocka_unit_test(test_gpu_moe_grouped_gemm),
        cmocka_unit_test(test_gpu_qk_norm_whole),
        cmocka_unit_test(test_gpu_moe),
        cmocka_unit_test(test_gpu_graph_replay_equals_eager),
        cmocka_unit_test(test_gpu_prompt_graph_replays),
        cmocka_unit_test(test_gpu_no_allocation_in_generate),
        cmocka_unit_test(test_gpu_out_of_memory_at_creation),
        cmocka_unit_test(test_gpu_hostile_loads),
        cmocka_unit_test(test_gpu_ctx_warmup),
        cmocka_unit_test(test_gpu_host_weights_match_device),
        cmocka_unit_test(test_gpu_host_weights_device_memory),
        cmocka_unit_test(test_gpu_host_weights_greedy),
        cmocka_unit_test(test_gpu_host_weights_fallback),
        cmocka_unit_test(test_gpu_host_weights_refusals),
        cmocka_unit_test(test_gpu_device_selection),
    };
    // GPT_TEST_FILTER="test_gpu_attention" runs a subset (compute-sanitizer runs use it).
    if (const char *filter = std::getenv("GPT_TEST_FILTER")) cmocka_set_test_filter(filter);
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
