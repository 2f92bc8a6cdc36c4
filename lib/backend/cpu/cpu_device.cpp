// cpu_device.cpp - the CPU backend: weights read in place from the mapped file (vectors
// widened to f32 once), an executor whose arena holds the f32 KV cache and every
// activation, and a thread pool that splits each op over rows, outputs or heads.
#include "backend/backend.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"
#include "core/memory.h"
#include "sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace gpt {

namespace {

using cpu::ThreadPool;

// Byte sizes of everything an executor allocates, from the config and params alone: the
// plan that create_executor carves and that gpt_ctx_estimate_memory reports.
struct CpuPlan {
    // Bound on the KV cache's float count: keeps the byte total (two caches plus far smaller
    // buffers, times 4) far from 2^64.
    static constexpr uint64_t kMaxFloats = 1ull << 58;
    uint64_t rows, logits_rows, kv_floats, scratch_per_thread;
    uint64_t x, h, qkv, att, gu, ff, delta, logits, k_cache, v_cache, rope, score_scratch, sample_values,
        sample_index, tokens, positions, seqs;
    uint64_t total;

    CpuPlan(const ModelConfig &c, const ExecParams &p) {
        rows = std::max(p.max_step_tokens, p.max_batch);
        logits_rows = p.max_batch; // all-logits steps are projected in groups of this many rows
        const uint64_t d = c.d_model;
        x = rows * d;
        h = rows * d;
        qkv = rows * c.qkv_dim();
        att = rows * c.q_dim();
        gu = c.arch == GPT_ARCH_LLAMA ? rows * 2ull * c.d_ff : 0;
        ff = rows * c.d_ff;
        delta = rows * d;
        logits = logits_rows * (uint64_t)c.vocab_size;
        // The KV cache is the one product that can leave uint64 within the config and params
        // limits (2^10 layers x 2^12 sequences x 2^10 kv heads x 2^22 positions x 2^10 dims):
        // a wrapped size would allocate a small arena and write past it.
        bool big = false;
        kv_floats = c.n_layers;
        for (uint64_t f : {(uint64_t)p.max_batch, (uint64_t)c.n_kv_heads, (uint64_t)p.max_seq, (uint64_t)c.head_dim})
            big |= mul_overflows(kv_floats, f, &kv_floats);
        if (big || kv_floats > kMaxFloats)
            fail(GPT_ERR_OUT_OF_MEMORY,
                 "a context of %u layers x %u sequences x %u kv heads x %u positions x %u dims needs a KV cache of more "
                 "than 2^60 bytes",
                 c.n_layers, p.max_batch, c.n_kv_heads, p.max_seq, c.head_dim);
        k_cache = v_cache = kv_floats;
        rope = c.arch == GPT_ARCH_LLAMA ? 2ull * p.max_seq * (c.head_dim / 2) : 0;
        // Per thread: attention scores over max_seq keys, one widened weight row.
        scratch_per_thread = (uint64_t)p.max_seq + std::max<uint64_t>({d, c.d_ff, c.q_dim()});
        score_scratch = scratch_per_thread * p.n_threads;
        sample_values = c.vocab_size;
        sample_index = c.vocab_size; // int32
        tokens = rows;               // int32
        positions = rows;            // uint32
        seqs = rows;                 // uint32
        total = 4 * (x + h + qkv + att + gu + ff + delta + logits + k_cache + v_cache + rope + score_scratch +
                     sample_values + sample_index + tokens + positions + seqs);
    }
};

class CpuExecutor final : public Executor {
public:
    CpuExecutor(const ModelConfig &c, const ExecParams &p) : c_(c), p_(p), plan_(c, p), pool_(p.n_threads) {
        arena_ = static_cast<uint8_t *>(host_alloc(plan_.total, "CPU context (KV cache and activations)"));
        allocations_ = 1;
        uint8_t *cur = arena_;
        auto take = [&](uint64_t n) { void *q = cur; cur += 4 * n; return q; };
        x_ = (float *)take(plan_.x);
        h_ = (float *)take(plan_.h);
        qkv_ = (float *)take(plan_.qkv);
        att_ = (float *)take(plan_.att);
        gu_ = (float *)take(plan_.gu);
        ff_ = (float *)take(plan_.ff);
        delta_ = (float *)take(plan_.delta);
        logits_ = (float *)take(plan_.logits);
        k_cache_ = (float *)take(plan_.k_cache);
        v_cache_ = (float *)take(plan_.v_cache);
        rope_cos_ = (float *)take(plan_.rope / 2);
        rope_sin_ = (float *)take(plan_.rope / 2);
        scratch_ = (float *)take(plan_.score_scratch);
        sampler_.values = (float *)take(plan_.sample_values);
        sampler_.index = (int32_t *)take(plan_.sample_index);
        tokens_ = (int32_t *)take(plan_.tokens);
        positions_ = (uint32_t *)take(plan_.positions);
        seqs_ = (uint32_t *)take(plan_.seqs);
        if (c.arch == GPT_ARCH_LLAMA) cpu::rope_tables(c.rope_theta, c.head_dim, p.max_seq, rope_cos_, rope_sin_);
    }
    ~CpuExecutor() override { host_free(arena_); }

    void begin_step(const StepInput &in) override {
        in_ = in;
        rows_ = in.batch * in.n_tokens;
        for (uint32_t b = 0; b < in.batch; b++)
            for (uint32_t t = 0; t < in.n_tokens; t++) {
                const uint32_t r = b * in.n_tokens + t;
                tokens_[r] = in.tokens[r];
                positions_[r] = in.start_pos[b] + t;
                seqs_[r] = b;
            }
    }

    void run(const std::function<void()> &ops, bool) override { ops(); }

    void embed(const Weight &tok, const Weight *pos) override {
        const uint32_t d = c_.d_model;
        pool_.run(rows_, [&](uint64_t r0, uint64_t r1, uint32_t t) {
            for (uint64_t r = r0; r < r1; r++) {
                float *x = x_ + r * d;
                cpu::widen(row_ptr(tok, tokens_[r]), tok.dtype, d, x);
                if (pos && *pos) {
                    float *tmp = thread_scratch(t) + p_.max_seq;
                    cpu::widen(row_ptr(*pos, positions_[r]), pos->dtype, d, tmp);
                    for (uint32_t i = 0; i < d; i++) x[i] += tmp[i];
                }
            }
        });
    }

    void norm(NormKind kind, const Weight &w, const Weight *b, float eps) override {
        const uint32_t d = c_.d_model;
        const float *wv = static_cast<const float *>(w.data);
        const float *bv = b && *b ? static_cast<const float *>(b->data) : nullptr;
        pool_.run(rows_, [&](uint64_t r0, uint64_t r1, uint32_t) {
            for (uint64_t r = r0; r < r1; r++) {
                if (kind == NormKind::LAYER) cpu::layer_norm(x_ + r * d, wv, bv, eps, d, h_ + r * d);
                else cpu::rms_norm(x_ + r * d, wv, eps, d, h_ + r * d);
            }
        });
    }

    void matmul(Act in, const Weight &w, const Weight *b, Act out, Activation act) override {
        const float *x = buf(in);
        // Into X means "add to the residual stream": compute into DELTA, then add.
        const bool residual = out == Act::X;
        float *y = residual ? delta_ : buf(out);
        const float *bias = b && *b ? static_cast<const float *>(b->data) : nullptr;
        const uint32_t rows = rows_;
        pool_.run(w.rows, [&](uint64_t o0, uint64_t o1, uint32_t t) {
            cpu::matmul_block(x, rows, w, bias, o0, o1, y, w.rows, thread_scratch(t) + p_.max_seq);
            for (uint32_t r = 0; r < rows; r++)
                for (uint64_t o = o0; o < o1; o++) {
                    float &v = y[r * w.rows + o];
                    if (act == Activation::GELU_TANH) v = cpu::gelu_tanh(v);
                    if (residual) x_[r * w.rows + o] += v;
                }
        });
    }

    void attention(const AttentionSpec &s) override {
        const uint32_t hd = c_.head_dim, nh = c_.n_heads, nkv = c_.n_kv_heads, group = nh / nkv;
        const uint32_t qkv_dim = c_.qkv_dim();
        // 1. RoPE on q and k, then append k and v to the cache (rows never share a slot).
        pool_.run(rows_, [&](uint64_t r0, uint64_t r1, uint32_t) {
            for (uint64_t r = r0; r < r1; r++) {
                float *row = qkv_ + r * qkv_dim;
                const uint32_t pos = positions_[r];
                if (s.rope) {
                    const float *cs = rope_cos_ + (uint64_t)pos * (hd / 2), *sn = rope_sin_ + (uint64_t)pos * (hd / 2);
                    for (uint32_t h = 0; h < nh + nkv; h++) cpu::rope_rotate_half(row + h * hd, hd, cs, sn);
                }
                for (uint32_t g = 0; g < nkv; g++) {
                    std::memcpy(k_at(s.layer, seqs_[r], g, pos), row + (nh + g) * hd, hd * sizeof(float));
                    std::memcpy(v_at(s.layer, seqs_[r], g, pos), row + (nh + nkv + g) * hd, hd * sizeof(float));
                }
            }
        });
        // 2. Each (row, head) attends to its sequence's keys [0, pos].
        const float scale = 1.0f / std::sqrt((float)hd);
        pool_.run((uint64_t)rows_ * nh, [&](uint64_t i0, uint64_t i1, uint32_t t) {
            float *scores = thread_scratch(t);
            for (uint64_t i = i0; i < i1; i++) {
                const uint64_t r = i / nh;
                const uint32_t h = (uint32_t)(i % nh), g = h / group;
                const uint32_t seq = seqs_[r], n_keys = positions_[r] + 1;
                cpu::attend(qkv_ + r * qkv_dim + h * hd, k_at(s.layer, seq, g, 0), v_at(s.layer, seq, g, 0), n_keys, hd,
                            scale, scores, att_ + r * c_.q_dim() + h * hd);
            }
        });
    }

    void matmul_swiglu(Act in, const Weight &w, Act out) override {
        const float *x = buf(in);
        float *y = buf(out);
        const uint32_t rows = rows_;
        const uint64_t f = w.rows / 2;
        pool_.run(w.rows, [&](uint64_t o0, uint64_t o1, uint32_t t) {
            cpu::matmul_block(x, rows, w, nullptr, o0, o1, gu_, w.rows, thread_scratch(t) + p_.max_seq);
        });
        pool_.run(rows, [&](uint64_t r0, uint64_t r1, uint32_t) {
            for (uint64_t r = r0; r < r1; r++)
                for (uint64_t i = 0; i < f; i++) y[r * f + i] = cpu::silu(gu_[r * 2 * f + i]) * gu_[r * 2 * f + f + i];
        });
    }

    void logits(const Weight &head, float *host_all) override {
        const uint32_t d = c_.d_model, v = c_.vocab_size;
        if (in_.all_logits && host_all) {
            // Every row, straight into the caller's buffer: sequence b's rows start at
            // host_all + b * logits_seq_stride rows.
            pool_.run(v, [&](uint64_t o0, uint64_t o1, uint32_t t) {
                for (uint32_t b = 0; b < in_.batch; b++)
                    cpu::matmul_block(h_ + (uint64_t)b * in_.n_tokens * d, in_.n_tokens, head, nullptr, o0, o1,
                                      host_all + (uint64_t)b * in_.logits_seq_stride * v, v,
                                      thread_scratch(t) + p_.max_seq);
            });
            have_last_ = false;
            return;
        }
        // Each sequence's last row, gathered into the first rows of X (no longer needed).
        for (uint32_t b = 0; b < in_.batch; b++)
            std::memmove(x_ + (uint64_t)b * d, h_ + (uint64_t)(b * in_.n_tokens + in_.n_tokens - 1) * d, d * sizeof(float));
        const uint32_t n = in_.batch;
        pool_.run(v, [&](uint64_t o0, uint64_t o1, uint32_t t) {
            cpu::matmul_block(x_, n, head, nullptr, o0, o1, logits_, v, thread_scratch(t) + p_.max_seq);
        });
        have_last_ = true;
    }

    void read_logits(float *host) override {
        if (!have_last_) fail(GPT_ERR_INTERNAL, "read_logits without last-row logits");
        std::memcpy(host, logits_, (uint64_t)in_.batch * c_.vocab_size * sizeof(float));
    }

    void sample(const SampleSpec &spec, const SampleRow *rows, int32_t *out) override {
        if (!have_last_) fail(GPT_ERR_INTERNAL, "sample without last-row logits");
        for (uint32_t b = 0; b < in_.batch; b++)
            out[b] = sample_row(logits_ + (uint64_t)b * c_.vocab_size, c_.vocab_size, spec, rows[b], sampler_);
    }

    void set_seq_len(uint32_t, uint32_t) override {} // positions come with each step
    uint64_t allocation_count() const override { return allocations_; }

private:
    float *buf(Act a) {
        switch (a) {
        case Act::X: return x_;
        case Act::H: return h_;
        case Act::QKV: return qkv_;
        case Act::ATT: return att_;
        case Act::FF: return ff_;
        }
        return nullptr;
    }
    const void *row_ptr(const Weight &w, uint64_t row) const {
        return static_cast<const uint8_t *>(w.data) + row * w.cols * dtype_bytes(w.dtype);
    }
    float *thread_scratch(uint32_t t) { return scratch_ + (uint64_t)t * plan_.scratch_per_thread; }
    // Cache layout: [layer][seq][kv_head][max_seq][head_dim].
    float *k_at(uint32_t layer, uint32_t seq, uint32_t g, uint32_t pos) { return k_cache_ + kv_index(layer, seq, g, pos); }
    float *v_at(uint32_t layer, uint32_t seq, uint32_t g, uint32_t pos) { return v_cache_ + kv_index(layer, seq, g, pos); }
    uint64_t kv_index(uint32_t layer, uint32_t seq, uint32_t g, uint32_t pos) const {
        return ((((uint64_t)layer * p_.max_batch + seq) * c_.n_kv_heads + g) * p_.max_seq + pos) * c_.head_dim;
    }

    const ModelConfig c_;
    const ExecParams p_;
    const CpuPlan plan_;
    ThreadPool pool_;
    uint8_t *arena_ = nullptr;
    uint64_t allocations_ = 0;
    float *x_, *h_, *qkv_, *att_, *gu_, *ff_, *delta_, *logits_, *k_cache_, *v_cache_, *rope_cos_, *rope_sin_, *scratch_;
    int32_t *tokens_;
    uint32_t *positions_, *seqs_;
    SamplerScratch sampler_;
    StepInput in_{};
    uint32_t rows_ = 0;
    bool have_last_ = false;
};

class CpuDevice final : public Device {
public:
    const char *name() const override { return "cpu"; }
    int32_t ordinal() const override { return GPT_DEVICE_CPU; }
    bool keeps_host_weights() const override { return true; }
    uint64_t weight_bytes() const override { return 0; }

    void place_weights(const ModelConfig &c, const ModelWeights &in, DType, ModelWeights *out) override {
        // Matrices stay in the file; vectors (norms, biases) are widened to f32 once.
        *out = in;
        uint64_t n = 0;
        for_each_vector(*out, [&](Weight &w) { n += w.rows; });
        vectors_.assign(n, 0.0f);
        uint64_t off = 0;
        for_each_vector(*out, [&](Weight &w) {
            cpu::widen(w.data, w.dtype, w.rows, vectors_.data() + off);
            w.data = vectors_.data() + off;
            w.dtype = DType::F32;
            off += w.rows;
        });
        (void)c;
    }

    MemoryPlan plan(const ModelConfig &c, const ExecParams &p) const override {
        MemoryPlan m;
        m.host_bytes = CpuPlan(c, p).total;
        return m;
    }

    std::unique_ptr<Executor> create_executor(const ModelConfig &c, const ModelWeights &, const ExecParams &p) const override {
        return std::make_unique<CpuExecutor>(c, p);
    }

private:
    template <typename F> static void for_each_vector(ModelWeights &w, F f) {
        auto visit = [&](Weight &x) { if (x && x.cols == 1) f(x); };
        visit(w.out_norm_w);
        visit(w.out_norm_b);
        for (auto &l : w.layers) {
            for (Weight *x : {&l.attn_norm_w, &l.attn_norm_b, &l.attn_qkv_b, &l.attn_out_b, &l.ffn_norm_w, &l.ffn_norm_b,
                              &l.ffn_up_b, &l.ffn_down_b})
                visit(*x);
        }
    }
    std::vector<float> vectors_;
};

} // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

} // namespace gpt
