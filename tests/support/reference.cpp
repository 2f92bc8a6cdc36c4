// reference.cpp - the naive double-precision forward pass (see reference.h). Deliberately
// simple: plain loops over std::vector<double>, no caching, no threads.
#include "reference.h"

#include "dtype_values.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>

namespace reference {

namespace {

using Vec = std::vector<double>;

const std::vector<float> &tensor(const TensorMap &t, const std::string &name) {
    auto it = t.find(name);
    if (it == t.end()) throw std::runtime_error("reference: tensor '" + name + "' is missing");
    return it->second;
}

// y = W x (+ b), W row-major [rows][cols], or [cols][rows] when stored transposed.
Vec linear(const std::vector<float> &w, const std::vector<float> *b, const Vec &x, size_t rows, bool transposed = false) {
    const size_t cols = x.size();
    if (w.size() != rows * cols) throw std::runtime_error("reference: matrix size mismatch");
    Vec y(rows, 0.0);
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t k = 0; k < cols; k++) s += (double)w[transposed ? k * rows + r : r * cols + k] * x[k];
        y[r] = s + (b ? (double)(*b)[r] : 0.0);
    }
    return y;
}

// y = rows [row0, row0 + n) of W (row-major, x.size() columns) times x: one expert's slice
// of a stacked expert matrix.
Vec linear_rows(const std::vector<float> &w, size_t row0, size_t n, const Vec &x) {
    const size_t cols = x.size();
    if (w.size() < (row0 + n) * cols) throw std::runtime_error("reference: expert slice outside its matrix");
    Vec y(n, 0.0);
    for (size_t r = 0; r < n; r++)
        for (size_t k = 0; k < cols; k++) y[r] += (double)w[(row0 + r) * cols + k] * x[k];
    return y;
}

Vec layer_norm(const Vec &x, const std::vector<float> &w, const std::vector<float> &b, double eps) {
    const size_t d = x.size();
    double mean = 0;
    for (double v : x) mean += v;
    mean /= (double)d;
    double var = 0;
    for (double v : x) var += (v - mean) * (v - mean);
    var /= (double)d;
    Vec y(d);
    for (size_t i = 0; i < d; i++) y[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
    return y;
}

Vec rms_norm(const Vec &x, const std::vector<float> &w, double eps) {
    const size_t d = x.size();
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / (double)d + eps);
    Vec y(d);
    for (size_t i = 0; i < d; i++) y[i] = x[i] * inv * w[i];
    return y;
}

double gelu_tanh(double x) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }

// gpt2's feed-forward activation (model.ffn_activation).
double ffn_act(gpt::FfnActivation a, double x) {
    switch (a) {
    case gpt::FfnActivation::GELU_TANH: return gelu_tanh(x);
    case gpt::FfnActivation::GELU_ERF: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case gpt::FfnActivation::RELU: return x > 0 ? x : 0.0;
    }
    return x;
}

// The rotation frequencies of base theta over rot dimensions under scaling sc, from the
// formulas (transformers' modeling_rope_utils.py), not from the library's code: unscaled
// theta^(-2i/rot), linear (/ factor), llama3 (wavelength bands), longrope (short or long
// factors by the context).
std::vector<double> frequencies(double theta, uint32_t rot, const gpt::RopeScaling &sc, uint32_t max_seq) {
    std::vector<double> f(rot / 2);
    for (uint32_t i = 0; i < rot / 2; i++) {
        double inv = 1.0 / std::pow(theta, (2.0 * i) / rot);
        switch (sc.type) {
        case gpt::RopeScalingType::NONE: break;
        case gpt::RopeScalingType::LINEAR: inv = inv / sc.factor; break;
        case gpt::RopeScalingType::LLAMA3: {
            const double wavelen = 2 * M_PI / inv, ctx = sc.original_context;
            if (wavelen > ctx / sc.low_freq_factor) inv = inv / sc.factor;
            else if (!(wavelen < ctx / sc.high_freq_factor)) {
                const double smooth = (ctx / wavelen - sc.low_freq_factor) / (sc.high_freq_factor - sc.low_freq_factor);
                inv = (1 - smooth) * inv / sc.factor + smooth * inv;
            }
            break;
        }
        case gpt::RopeScalingType::LONGROPE:
            inv = inv / (max_seq > sc.original_context ? sc.long_factor[i] : sc.short_factor[i]);
            break;
        }
        f[i] = inv;
    }
    return f;
}

// RoPE on one head vector at position pos, over its first 2 * freqs.size() dimensions:
// pair i is (i, i + rot/2) (rotate-half, Hugging Face) or (2i, 2i + 1) (interleaved,
// llama2.c); both parts scaled by mscale (longrope's attention factor).
void rope(double *v, const std::vector<double> &freqs, uint32_t pos, double mscale, bool interleaved) {
    const size_t half = freqs.size();
    for (size_t i = 0; i < half; i++) {
        const double a = (double)pos * freqs[i];
        double &v0 = interleaved ? v[2 * i] : v[i];
        double &v1 = interleaved ? v[2 * i + 1] : v[i + half];
        const double x0 = v0, x1 = v1;
        v0 = (x0 * std::cos(a) - x1 * std::sin(a)) * mscale;
        v1 = (x1 * std::cos(a) + x0 * std::sin(a)) * mscale;
    }
}

// RMSNorm of one head (Qwen3's q_norm / k_norm).
void head_rms_norm(double *v, size_t hd, const std::vector<float> &w, double eps) {
    const Vec x(v, v + hd);
    const Vec y = rms_norm(x, w, eps);
    for (size_t i = 0; i < hd; i++) v[i] = y[i];
}

// One attention layer's output for every position: q/k norms (qwen3, gemma3), RoPE with the
// given frequencies (none for gpt2) and cos/sin factor, scores scaled and soft-capped,
// softmax over keys (i - window, i] (all of 0..i for window 0).
struct AttentionParams {
    const std::vector<double> *freqs = nullptr;
    double mscale = 1, scale = 0, softcap = 0;
    uint32_t window = 0;
    const std::vector<float> *q_norm = nullptr, *k_norm = nullptr;
    double qk_eps = 0;
    bool interleaved = false;
};

std::vector<Vec> attend_all(std::vector<Vec> &q, std::vector<Vec> &k, const std::vector<Vec> &v, size_t nh, size_t nkv,
                            size_t hd, const AttentionParams &a) {
    const size_t T = q.size(), qd = nh * hd;
    for (size_t i = 0; i < T; i++) {
        for (size_t h = 0; h < nh; h++) {
            if (a.q_norm) head_rms_norm(q[i].data() + h * hd, hd, *a.q_norm, a.qk_eps);
            if (a.freqs) rope(q[i].data() + h * hd, *a.freqs, (uint32_t)i, a.mscale, a.interleaved);
        }
        for (size_t g = 0; g < nkv; g++) {
            if (a.k_norm) head_rms_norm(k[i].data() + g * hd, hd, *a.k_norm, a.qk_eps);
            if (a.freqs) rope(k[i].data() + g * hd, *a.freqs, (uint32_t)i, a.mscale, a.interleaved);
        }
    }
    const size_t group = nh / nkv;
    std::vector<Vec> out(T, Vec(qd, 0.0));
    for (size_t i = 0; i < T; i++) {
        const size_t first = a.window && i + 1 > a.window ? i + 1 - a.window : 0;
        for (size_t h = 0; h < nh; h++) {
            const size_t g = h / group;
            Vec s(i + 1);
            double mx = -INFINITY;
            for (size_t j = first; j <= i; j++) {
                double dot = 0;
                for (size_t e = 0; e < hd; e++) dot += q[i][h * hd + e] * k[j][g * hd + e];
                s[j] = dot * a.scale;
                if (a.softcap > 0) s[j] = a.softcap * std::tanh(s[j] / a.softcap);
                mx = std::max(mx, s[j]);
            }
            double sum = 0;
            for (size_t j = first; j <= i; j++) sum += (s[j] = std::exp(s[j] - mx));
            for (size_t j = first; j <= i; j++)
                for (size_t e = 0; e < hd; e++) out[i][h * hd + e] += s[j] / sum * v[j][g * hd + e];
        }
    }
    return out;
}

double silu_d(double x) { return x / (1.0 + std::exp(-x)); }

// One SwiGLU expert: down(silu(gate h) * up h), gate|up rows [gu0, gu0 + 2 f) of gu, down
// rows [down0, down0 + d) of dn.
Vec swiglu_expert(const std::vector<float> &gu, size_t gu0, const std::vector<float> &dn, size_t down0, size_t f,
                  const Vec &h) {
    const Vec g = linear_rows(gu, gu0, 2 * f, h);
    Vec a(f);
    for (size_t j = 0; j < f; j++) a[j] = silu_d(g[j]) * g[f + j];
    return linear_rows(dn, down0, h.size(), a);
}

// The mixture-of-experts FFN of one row (its H): softmax router, the k most probable experts
// (ties to the lower index), weights renormalised with norm_topk_prob, plus the sigmoid-gated
// shared expert. *min_gap: the smallest nonzero gap between the k-th and the (k+1)-th
// probability seen, where float rounding could choose differently.
Vec moe_ffn(const gpt::ModelConfig &c, const TensorMap &t, const std::string &p, const Vec &h, double *min_gap) {
    const size_t d = c.d_model, E = c.n_experts, k = c.n_experts_used, fe = c.d_ff_expert, fs = c.d_ff_shared;
    Vec prob = linear(tensor(t, p + "ffn_router.weight"), nullptr, h, E);
    const double mx = *std::max_element(prob.begin(), prob.end());
    double sum = 0;
    for (double &v : prob) sum += (v = std::exp(v - mx));
    for (double &v : prob) v /= sum;
    std::vector<size_t> order(E);
    for (size_t e = 0; e < E; e++) order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return prob[a] > prob[b]; });
    if (k < E && min_gap) {
        const double gap = prob[order[k - 1]] - prob[order[k]];
        if (gap > 0) *min_gap = std::min(*min_gap, gap);
    }
    double chosen = 0;
    for (size_t j = 0; j < k; j++) chosen += prob[order[j]];
    Vec out(d, 0.0);
    const auto &gu = tensor(t, p + "ffn_experts_gate_up.weight"), &dn = tensor(t, p + "ffn_experts_down.weight");
    for (size_t j = 0; j < k; j++) {
        const size_t e = order[j];
        const double w = c.norm_topk_prob ? prob[e] / chosen : prob[e];
        const Vec y = swiglu_expert(gu, e * 2 * fe, dn, e * d, fe, h);
        for (size_t i = 0; i < d; i++) out[i] += w * y[i];
    }
    if (fs) {
        const Vec y = swiglu_expert(tensor(t, p + "ffn_shared_gate_up.weight"), 0, tensor(t, p + "ffn_shared_down.weight"), 0, fs, h);
        const double g = 1.0 / (1.0 + std::exp(-linear(tensor(t, p + "ffn_shared_gate.weight"), nullptr, h, 1)[0]));
        for (size_t i = 0; i < d; i++) out[i] += g * y[i];
    }
    return out;
}

} // namespace

std::vector<double> forward(const gpt::ModelConfig &c, const TensorMap &t, const std::vector<int32_t> &tokens,
                            const Layout &layout, double *min_routing_gap) {
    const bool gpt2 = c.arch == GPT_ARCH_GPT2;
    const bool gemma = c.arch == GPT_ARCH_GEMMA2 || c.arch == GPT_ARCH_GEMMA3, gemma3 = c.arch == GPT_ARCH_GEMMA3;
    const size_t T = tokens.size(), d = c.d_model, V = c.vocab_size, hd = c.head_dim;
    const size_t nh = c.n_heads, nkv = c.n_kv_heads, qd = nh * hd, kvd = nkv * hd, ff = c.d_ff;
    const double eps = c.norm_eps;
    const bool qk_norm = c.arch == GPT_ARCH_QWEN3 || c.arch == GPT_ARCH_QWEN3_MOE || gemma3;
    const bool qk_norm_whole = c.arch == GPT_ARCH_OLMOE;
    const uint32_t max_seq = layout.max_seq ? layout.max_seq : c.context_length;
    const uint32_t rot = c.rope_dim ? c.rope_dim : c.head_dim;
    // The scaled main RoPE; Gemma-3's windowed (local) layers rotate with their own base, unscaled.
    const std::vector<double> freqs = gpt2 ? std::vector<double>() : frequencies(c.rope_theta, rot, c.rope_scaling, max_seq);
    const std::vector<double> local_freqs = gemma3 ? frequencies(c.rope_theta_local, rot, gpt::RopeScaling(), max_seq) : freqs;
    const double mscale = c.rope_scaling.type == gpt::RopeScalingType::LONGROPE ? c.rope_scaling.attention_factor : 1.0;

    // Embeddings (Gemma: times sqrt(d_model) as the embedding's dtype holds it).
    const auto &tok_emb = tensor(t, "tok_emb.weight");
    const double emb_scale = c.embed_scale ? (double)fixture::round_to(std::sqrt((float)d), layout.embed_dtype) : 1.0;
    std::vector<Vec> x(T, Vec(d));
    for (size_t i = 0; i < T; i++) {
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= V) throw std::runtime_error("reference: token out of range");
        for (size_t j = 0; j < d; j++) x[i][j] = tok_emb[(size_t)tokens[i] * d + j] * emb_scale;
        if (gpt2) {
            const auto &pos = tensor(t, "pos_emb.weight");
            for (size_t j = 0; j < d; j++) x[i][j] += pos[i * d + j];
        }
    }

    for (uint32_t l = 0; l < c.n_layers; l++) {
        const std::string p = "blk." + std::to_string(l) + ".";
        // Attention block.
        std::vector<Vec> q(T), k(T), v(T);
        for (size_t i = 0; i < T; i++) {
            const Vec h = gpt2 ? layer_norm(x[i], tensor(t, p + "attn_norm.weight"), tensor(t, p + "attn_norm.bias"), eps)
                               : rms_norm(x[i], tensor(t, p + "attn_norm.weight"), eps);
            const bool bias = gpt2 || c.qkv_bias;
            const Vec qkv = linear(tensor(t, p + "attn_qkv.weight"), bias ? &tensor(t, p + "attn_qkv.bias") : nullptr, h,
                                   qd + 2 * kvd, gpt2 && layout.conv1d);
            q[i].assign(qkv.begin(), qkv.begin() + qd);
            k[i].assign(qkv.begin() + qd, qkv.begin() + qd + kvd);
            v[i].assign(qkv.begin() + qd + kvd, qkv.end());
            if (qk_norm_whole) { // OLMoE: one RMSNorm over all of q, one over all of k
                q[i] = rms_norm(q[i], tensor(t, p + "attn_q_norm.weight"), eps);
                k[i] = rms_norm(k[i], tensor(t, p + "attn_k_norm.weight"), eps);
            }
        }
        AttentionParams ap;
        ap.interleaved = layout.interleaved_rope;
        // Windowed layers: those window_layers flags, every layer when it is empty.
        const bool windowed = c.sliding_window && (c.window_layers.empty() || c.window_layers.at(l));
        ap.window = windowed ? c.sliding_window : 0;
        if (!gpt2) ap.freqs = gemma3 && windowed ? &local_freqs : &freqs;
        ap.mscale = mscale;
        ap.scale = 1.0 / std::sqrt(c.query_pre_attn_scalar > 0 ? (double)c.query_pre_attn_scalar : (double)hd);
        ap.softcap = c.attn_softcap;
        if (qk_norm) {
            ap.q_norm = &tensor(t, p + "attn_q_norm.weight");
            ap.k_norm = &tensor(t, p + "attn_k_norm.weight");
            ap.qk_eps = eps;
        }
        const std::vector<Vec> att = attend_all(q, k, v, nh, nkv, hd, ap);
        for (size_t i = 0; i < T; i++) {
            Vec o = linear(tensor(t, p + "attn_out.weight"), gpt2 ? &tensor(t, p + "attn_out.bias") : nullptr, att[i], d,
                           gpt2 && layout.conv1d);
            if (gemma) o = rms_norm(o, tensor(t, p + "attn_post_norm.weight"), eps);
            for (size_t j = 0; j < d; j++) x[i][j] += o[j];
        }
        // Feed-forward block.
        for (size_t i = 0; i < T; i++) {
            if (c.moe_layer(l)) {
                const Vec h = rms_norm(x[i], tensor(t, p + "ffn_norm.weight"), eps);
                const Vec y = moe_ffn(c, t, p, h, min_routing_gap);
                for (size_t j = 0; j < d; j++) x[i][j] += y[j];
                continue;
            }
            Vec f(ff);
            if (gpt2) {
                const Vec h = layer_norm(x[i], tensor(t, p + "ffn_norm.weight"), tensor(t, p + "ffn_norm.bias"), eps);
                const Vec up = linear(tensor(t, p + "ffn_up.weight"), &tensor(t, p + "ffn_up.bias"), h, ff, layout.conv1d);
                for (size_t j = 0; j < ff; j++) f[j] = ffn_act(c.ffn_activation, up[j]);
            } else {
                const Vec h = rms_norm(x[i], tensor(t, p + "ffn_norm.weight"), eps);
                const Vec gu = linear(tensor(t, p + "ffn_gate_up.weight"), nullptr, h, 2 * ff);
                for (size_t j = 0; j < ff; j++) f[j] = (gemma ? gelu_tanh(gu[j]) : silu(gu[j])) * gu[ff + j];
            }
            Vec down = linear(tensor(t, p + "ffn_down.weight"), gpt2 ? &tensor(t, p + "ffn_down.bias") : nullptr, f, d,
                              gpt2 && layout.conv1d);
            if (gemma) down = rms_norm(down, tensor(t, p + "ffn_post_norm.weight"), eps);
            for (size_t j = 0; j < d; j++) x[i][j] += down[j];
        }
    }

    const auto &head = tensor(t, c.tied_head ? "tok_emb.weight" : "lm_head.weight");
    std::vector<double> logits(T * V);
    for (size_t i = 0; i < T; i++) {
        const Vec h = gpt2 ? layer_norm(x[i], tensor(t, "out_norm.weight"), tensor(t, "out_norm.bias"), eps)
                           : rms_norm(x[i], tensor(t, "out_norm.weight"), eps);
        const Vec y = linear(head, c.head_bias ? &tensor(t, "lm_head.bias") : nullptr, h, V);
        const double cap = c.logit_softcap;
        for (size_t j = 0; j < V; j++) logits[i * V + j] = cap > 0 ? cap * std::tanh(y[j] / cap) : y[j];
    }
    return logits;
}

uint64_t test_seed() {
    static const uint64_t seed = [] {
        uint64_t s;
        const char *env = std::getenv("GPT_TEST_SEED");
        if (env && *env) {
            s = std::strtoull(env, nullptr, 0);
        } else {
            std::random_device rd;
            s = (uint64_t)rd() << 32 ^ rd();
        }
        std::printf("# test seed %" PRIu64 " (GPT_TEST_SEED=%" PRIu64 " reproduces this run)\n", s, s);
        std::fflush(stdout);
        return s;
    }();
    return seed;
}

uint64_t sub_seed(const char *what) {
    uint64_t h = 1469598103934665603ull; // FNV-1a of the name, mixed with the run's seed
    for (const char *p = what; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    uint64_t z = test_seed() ^ h;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void poison(float *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = std::nanf("");
}

Diff compare(const float *out, const double *ref, size_t rows, size_t cols) {
    Diff d;
    double max_ref = 0, max_err = 0;
    for (size_t r = 0; r < rows; r++) {
        double num = 0, den = 0;
        for (size_t c = 0; c < cols; c++) {
            const double o = out[r * cols + c], e = ref[r * cols + c];
            if (!std::isfinite(o)) {
                if (d.finite) {
                    d.worst_row = r;
                    d.worst_col = c;
                    d.worst_out = o;
                    d.worst_ref = e;
                }
                d.finite = false;
                continue;
            }
            const double err = std::fabs(o - e);
            num += err * err;
            den += e * e;
            max_ref = std::max(max_ref, std::fabs(e));
            if (err > max_err) {
                max_err = err;
                if (d.finite) {
                    d.worst_row = r;
                    d.worst_col = c;
                    d.worst_out = o;
                    d.worst_ref = e;
                }
            }
        }
        const double rel = den > 0 ? std::sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
        d.row_rel = std::max(d.row_rel, rel);
    }
    d.max_abs = max_err;
    d.abs_rel = max_ref > 0 ? max_err / max_ref : (max_err > 0 ? INFINITY : 0.0);
    d.max_ref = max_ref;
    return d;
}

Diff compare(const float *out, const float *ref, size_t rows, size_t cols) {
    std::vector<double> r(ref, ref + rows * cols);
    return compare(out, r.data(), rows, cols);
}

bool Diff::within(double tol, const char *what) const {
    const bool ok = finite && row_rel <= tol && abs_rel <= tol && max_ref > 0;
    if (!ok)
        std::printf("FAIL %s: %s; max row relative error %.3g, max abs error / max |ref| %.3g (tolerance %.3g); "
                    "worst element [row %zu][col %zu]: got %.9g, expected %.9g (max |ref| %.6g)\n",
                    what, finite ? (max_ref > 0 ? "out of tolerance" : "reference is all zeros") : "non-finite output",
                    row_rel, abs_rel, tol, worst_row, worst_col, worst_out, worst_ref, max_ref);
    return ok;
}

} // namespace reference
