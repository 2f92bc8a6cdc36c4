// reference.cpp - the naive double-precision forward pass (see reference.h). Deliberately
// simple: plain loops over std::vector<double>, no caching, no threads.
#include "reference.h"

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

// RoPE on one head vector at position pos: pair i is (i, i + hd/2) (rotate-half, Hugging
// Face) or (2i, 2i + 1) (interleaved, llama2.c).
void rope(double *v, uint32_t hd, uint32_t pos, double theta, bool interleaved) {
    const uint32_t half = hd / 2;
    for (uint32_t i = 0; i < half; i++) {
        const double inv_freq = std::pow(theta, -2.0 * (double)i / (double)hd);
        const double a = (double)pos * inv_freq;
        double &v0 = interleaved ? v[2 * i] : v[i];
        double &v1 = interleaved ? v[2 * i + 1] : v[i + half];
        const double x0 = v0, x1 = v1;
        v0 = x0 * std::cos(a) - x1 * std::sin(a);
        v1 = x1 * std::cos(a) + x0 * std::sin(a);
    }
}

} // namespace

std::vector<double> forward(const gpt::ModelConfig &c, const TensorMap &t, const std::vector<int32_t> &tokens,
                            const Layout &layout) {
    const bool gpt2 = c.arch == GPT_ARCH_GPT2;
    const size_t T = tokens.size(), d = c.d_model, V = c.vocab_size, hd = c.head_dim;
    const size_t nh = c.n_heads, nkv = c.n_kv_heads, qd = nh * hd, kvd = nkv * hd, ff = c.d_ff;
    const double eps = c.norm_eps;

    // Embeddings.
    const auto &tok_emb = tensor(t, "tok_emb.weight");
    std::vector<Vec> x(T, Vec(d));
    for (size_t i = 0; i < T; i++) {
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= V) throw std::runtime_error("reference: token out of range");
        for (size_t j = 0; j < d; j++) x[i][j] = tok_emb[(size_t)tokens[i] * d + j];
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
            if (!gpt2) {
                const bool il = layout.interleaved_rope;
                for (size_t h_ = 0; h_ < nh; h_++) rope(q[i].data() + h_ * hd, (uint32_t)hd, (uint32_t)i, c.rope_theta, il);
                for (size_t g = 0; g < nkv; g++) rope(k[i].data() + g * hd, (uint32_t)hd, (uint32_t)i, c.rope_theta, il);
            }
        }
        const double scale = 1.0 / std::sqrt((double)hd);
        const size_t group = nh / nkv;
        for (size_t i = 0; i < T; i++) {
            Vec att(qd, 0.0);
            for (size_t h_ = 0; h_ < nh; h_++) {
                const size_t g = h_ / group;
                Vec s(i + 1);
                double mx = -INFINITY;
                for (size_t j = 0; j <= i; j++) {
                    double dot = 0;
                    for (size_t e = 0; e < hd; e++) dot += q[i][h_ * hd + e] * k[j][g * hd + e];
                    s[j] = dot * scale;
                    mx = std::max(mx, s[j]);
                }
                double sum = 0;
                for (size_t j = 0; j <= i; j++) sum += (s[j] = std::exp(s[j] - mx));
                for (size_t j = 0; j <= i; j++)
                    for (size_t e = 0; e < hd; e++) att[h_ * hd + e] += s[j] / sum * v[j][g * hd + e];
            }
            const Vec o = linear(tensor(t, p + "attn_out.weight"), gpt2 ? &tensor(t, p + "attn_out.bias") : nullptr, att, d,
                                 gpt2 && layout.conv1d);
            for (size_t j = 0; j < d; j++) x[i][j] += o[j];
        }
        // Feed-forward block.
        for (size_t i = 0; i < T; i++) {
            Vec f(ff);
            if (gpt2) {
                const Vec h = layer_norm(x[i], tensor(t, p + "ffn_norm.weight"), tensor(t, p + "ffn_norm.bias"), eps);
                const Vec up = linear(tensor(t, p + "ffn_up.weight"), &tensor(t, p + "ffn_up.bias"), h, ff, layout.conv1d);
                for (size_t j = 0; j < ff; j++) f[j] = ffn_act(c.ffn_activation, up[j]);
            } else {
                const Vec h = rms_norm(x[i], tensor(t, p + "ffn_norm.weight"), eps);
                const Vec gu = linear(tensor(t, p + "ffn_gate_up.weight"), nullptr, h, 2 * ff);
                for (size_t j = 0; j < ff; j++) f[j] = silu(gu[j]) * gu[ff + j];
            }
            const Vec down = linear(tensor(t, p + "ffn_down.weight"), gpt2 ? &tensor(t, p + "ffn_down.bias") : nullptr, f, d,
                                    gpt2 && layout.conv1d);
            for (size_t j = 0; j < d; j++) x[i][j] += down[j];
        }
    }

    const auto &head = tensor(t, c.tied_head ? "tok_emb.weight" : "lm_head.weight");
    std::vector<double> logits(T * V);
    for (size_t i = 0; i < T; i++) {
        const Vec h = gpt2 ? layer_norm(x[i], tensor(t, "out_norm.weight"), tensor(t, "out_norm.bias"), eps)
                           : rms_norm(x[i], tensor(t, "out_norm.weight"), eps);
        const Vec y = linear(head, c.head_bias ? &tensor(t, "lm_head.bias") : nullptr, h, V);
        for (size_t j = 0; j < V; j++) logits[i * V + j] = y[j];
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
