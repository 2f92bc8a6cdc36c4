// cpu_device.cpp - the CPU backend: weights read in place from the mapped file (vectors
// widened to f32 once), an executor whose arena holds the f32 KV cache and every
// activation, and a thread pool that splits each op over rows, outputs or heads.
#include "backend/backend.h"
#include "backend/buffers.h"
#include "backend/cpu/cpu_moe.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"
#include "core/memory.h"
#include "core/rope.h"
#include "core/system_memory.h"
#include "sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace gpt {

namespace {

using cpu::ThreadPool;

// Everything an executor allocates, from the shape and params alone: the shared step
// buffers (all f32 here) plus per-thread scratch and the sampler's. create_executor carves
// exactly this; gpt_ctx_estimate_memory reports it.
// The mixture-of-experts buffers (all 0 for a dense model). A step's rows x k (row, expert)
// pairs are "slots", grouped by expert; the gate|up and down outputs of expert e's group sit
// one row further on per expert before it (slot s of expert e at row s + e), so the stacked
// weight's absolute output index lands inside the buffer (CpuExecutor::moe).
struct MoePlan {
    uint64_t probs = 0;      // [rows][E] router probabilities
    uint64_t slots = 0;      // rows x k: the expert, weight and grouped position of each pair,
                             // and each grouped position's row and expert (5 arrays)
    uint64_t groups = 0;     // E + 1 group starts, and E active expert ids (2 arrays)
    uint64_t gathered = 0;   // [slots][d] H rows grouped by expert
    uint64_t gate_up = 0;    // [slots + E][2 Fe], or the shared expert's [rows][2 Fs]
    uint64_t hidden = 0;     // [slots][Fe], or the shared expert's [rows][Fs]
    uint64_t out = 0;        // [slots + E][d]
    uint64_t shared_gate = 0; // [rows]

    MoePlan(const ModelShape &s, uint64_t rows) {
        if (!s.n_experts) return;
        const uint64_t e = s.n_experts, k = s.n_experts_used, fe = s.d_ff_expert, fs = s.d_ff_shared, d = s.d_model;
        probs = rows * e;
        slots = rows * k;
        groups = e + 1;
        gathered = slots * d;
        gate_up = std::max((slots + e) * 2 * fe, rows * 2 * fs);
        hidden = std::max(slots * fe, rows * fs);
        out = (slots + e) * d;
        shared_gate = rows;
    }
    uint64_t total() const { return probs + 5 * slots + 2 * groups + gathered + gate_up + hidden + out + shared_gate; }
};

struct CpuPlan {
    StepBuffers b;
    MoePlan moe;
    uint64_t scratch_per_thread, score_scratch, sample_values, sample_index;
    uint64_t total;

    CpuPlan(const ModelShape &s, const ExecParams &p) : b(s, p, p.max_batch), moe(s, b.rows) {
        // Per thread: attention scores over max_seq keys, one widened weight row.
        scratch_per_thread = (uint64_t)p.max_seq + std::max<uint64_t>({s.d_model, s.d_ff, s.q_dim(), s.d_ff_expert, s.d_ff_shared});
        score_scratch = scratch_per_thread * p.n_threads;
        sample_values = s.vocab_size;
        sample_index = s.vocab_size; // int32
        // Every element is 4 bytes (f32, int32, uint32); the id arrays are tokens, positions, sequences.
        total = 4 * (b.x + b.h + b.qkv + b.att + b.gu + b.ff + b.delta + b.logits + 2 * b.kv + 2 * b.rope +
                     score_scratch + sample_values + sample_index + 3 * b.ids + moe.total());
    }
};

class CpuExecutor final : public Executor {
public:
    CpuExecutor(const ModelShape &s, const ExecParams &p) : shape_(s), p_(p), plan_(s, p), pool_(p.n_threads) {
        arena_ = static_cast<uint8_t *>(host_alloc(plan_.total, "CPU context (KV cache and activations)"));
        allocations_ = 1;
        uint8_t *cur = arena_;
        auto take = [&](uint64_t n) { void *q = cur; cur += 4 * n; return q; };
        const StepBuffers &b = plan_.b;
        x_ = (float *)take(b.x);
        h_ = (float *)take(b.h);
        qkv_ = (float *)take(b.qkv);
        att_ = (float *)take(b.att);
        gu_ = (float *)take(b.gu);
        ff_ = (float *)take(b.ff);
        delta_ = (float *)take(b.delta);
        logits_ = (float *)take(b.logits);
        k_cache_ = (float *)take(b.kv);
        v_cache_ = (float *)take(b.kv);
        rope_cos_ = (float *)take(b.rope);
        rope_sin_ = (float *)take(b.rope);
        scratch_ = (float *)take(plan_.score_scratch);
        sampler_.values = (float *)take(plan_.sample_values);
        sampler_.index = (int32_t *)take(plan_.sample_index);
        tokens_ = (int32_t *)take(b.ids);
        positions_ = (uint32_t *)take(b.ids);
        seqs_ = (uint32_t *)take(b.ids);
        const MoePlan &m = plan_.moe;
        moe_.probs = (float *)take(m.probs);
        moe_.expert = (uint32_t *)take(m.slots);
        moe_.weight = (float *)take(m.slots);
        moe_.position = (uint32_t *)take(m.slots);
        moe_.slot_row = (uint32_t *)take(m.slots);
        moe_.slot_expert = (uint32_t *)take(m.slots);
        moe_.group_start = (uint32_t *)take(m.groups);
        moe_.active = (uint32_t *)take(m.groups);
        moe_.gathered = (float *)take(m.gathered);
        moe_.gate_up = (float *)take(m.gate_up);
        moe_.hidden = (float *)take(m.hidden);
        moe_.out = (float *)take(m.out);
        moe_.shared_gate = (float *)take(m.shared_gate);
        for (size_t i = 0; i < s.ropes.size(); i++)
            rope_tables(s.ropes[i], p.max_seq, rope_cos_ + b.rope_offset[i], rope_sin_ + b.rope_offset[i]);
    }
    ~CpuExecutor() override { host_free(arena_); }

    void begin_step(const StepInput &in) override {
        in_ = in;
        rows_ = in.batch * in.n_tokens;
        last_rows_only_ = false;
        for (uint32_t b = 0; b < in.batch; b++)
            for (uint32_t t = 0; t < in.n_tokens; t++) {
                const uint32_t r = b * in.n_tokens + t;
                tokens_[r] = in.tokens[r];
                positions_[r] = in.start_pos[b] + t;
                seqs_[r] = b;
            }
    }

    void run(const std::function<void()> &ops, bool) override { ops(); }

    void embed(const Weight &tok, const Weight *pos, float scale) override {
        const uint32_t d = shape_.d_model;
        pool_.run(rows_, [&](uint64_t r0, uint64_t r1, uint32_t t) {
            for (uint64_t r = r0; r < r1; r++) {
                float *x = x_ + r * d;
                cpu::embedding_row(tok, tokens_[r], x);
                if (scale != 1.0f)
                    for (uint32_t i = 0; i < d; i++) x[i] *= scale;
                if (pos && *pos) {
                    float *tmp = thread_scratch(t) + p_.max_seq;
                    cpu::embedding_row(*pos, positions_[r], tmp);
                    for (uint32_t i = 0; i < d; i++) x[i] += tmp[i];
                }
            }
        });
    }

    void norm(NormKind kind, const Weight &w, const Weight *b, float eps) override {
        const uint32_t d = shape_.d_model;
        const float *wv = static_cast<const float *>(w.data);
        const float *bv = b && *b ? static_cast<const float *>(b->data) : nullptr;
        pool_.run(rows_, [&](uint64_t r0, uint64_t r1, uint32_t) {
            for (uint64_t r = r0; r < r1; r++) {
                if (kind == NormKind::LAYER) cpu::layer_norm(x_ + r * d, wv, bv, eps, d, h_ + r * d);
                else cpu::rms_norm(x_ + r * d, wv, eps, d, h_ + r * d);
            }
        });
    }

    void norm_add(NormKind kind, Act in, const Weight &w, float eps) override {
        const uint32_t d = shape_.d_model;
        const float *src = buf(in), *wv = static_cast<const float *>(w.data);
        pool_.run(rows_, [&](uint64_t r0, uint64_t r1, uint32_t t) {
            float *tmp = thread_scratch(t) + p_.max_seq;
            for (uint64_t r = r0; r < r1; r++) {
                if (kind == NormKind::LAYER) cpu::layer_norm(src + r * d, wv, nullptr, eps, d, tmp);
                else cpu::rms_norm(src + r * d, wv, eps, d, tmp);
                for (uint32_t i = 0; i < d; i++) x_[r * d + i] += tmp[i];
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
                    v = cpu::activate(act, v);
                    if (residual) x_[r * w.rows + o] += v;
                }
        });
    }

    void attention(const AttentionSpec &s) override {
        const uint32_t hd = shape_.head_dim, nh = shape_.n_heads, nkv = shape_.n_kv_heads, group = nh / nkv;
        const uint32_t qkv_dim = shape_.qkv_dim();
        const RopeSpec *rope = s.rope >= 0 ? &shape_.ropes.at((size_t)s.rope) : nullptr;
        const float *qn = s.q_norm ? static_cast<const float *>(s.q_norm->data) : nullptr;
        const float *kn = s.k_norm ? static_cast<const float *>(s.k_norm->data) : nullptr;
        // 1. q/k norms and RoPE on q and k, then append k and v to the cache (rows never
        // share a slot).
        pool_.run(rows_, [&](uint64_t r0, uint64_t r1, uint32_t) {
            for (uint64_t r = r0; r < r1; r++) {
                float *row = qkv_ + r * qkv_dim;
                const uint32_t pos = positions_[r];
                if (s.qk_norm_whole) { // one norm over the whole q, one over the whole k (OLMoE)
                    if (qn) cpu::rms_norm(row, qn, s.qk_norm_eps, nh * hd, row);
                    if (kn) cpu::rms_norm(row + nh * hd, kn, s.qk_norm_eps, nkv * hd, row + nh * hd);
                } else {
                    for (uint32_t h = 0; h < nh + nkv; h++) {
                        const float *nw = h < nh ? qn : kn;
                        if (nw) cpu::rms_norm(row + h * hd, nw, s.qk_norm_eps, hd, row + h * hd);
                    }
                }
                if (rope) {
                    const uint64_t at = plan_.b.rope_offset[(size_t)s.rope] + (uint64_t)pos * rope->half();
                    for (uint32_t h = 0; h < nh + nkv; h++)
                        cpu::rope_rotate_half(row + h * hd, rope->rot_dim, rope_cos_ + at, rope_sin_ + at);
                }
                for (uint32_t g = 0; g < nkv; g++) {
                    std::memcpy(k_at(s.layer, seqs_[r], g, pos), row + (nh + g) * hd, hd * sizeof(float));
                    std::memcpy(v_at(s.layer, seqs_[r], g, pos), row + (nh + nkv + g) * hd, hd * sizeof(float));
                }
            }
        });
        // Every row's k and v are cached now; nothing may read the other rows again.
        if (last_rows_suffice(in_, shape_, s.layer)) keep_last_rows();
        // 2. Each (row, head) attends to its sequence's keys [0, pos], or the last `window`.
        const float scale = s.scale > 0 ? s.scale : 1.0f / std::sqrt((float)hd);
        pool_.run((uint64_t)rows_ * nh, [&](uint64_t i0, uint64_t i1, uint32_t t) {
            float *scores = thread_scratch(t);
            for (uint64_t i = i0; i < i1; i++) {
                const uint64_t r = i / nh;
                const uint32_t h = (uint32_t)(i % nh), g = h / group;
                const uint32_t seq = seqs_[r], end = positions_[r] + 1;
                const uint32_t first = s.window && end > s.window ? end - s.window : 0;
                cpu::attend(qkv_ + r * qkv_dim + h * hd, k_at(s.layer, seq, g, first), v_at(s.layer, seq, g, first),
                            end - first, hd, scale, s.softcap, scores, att_ + r * shape_.q_dim() + h * hd);
            }
        });
    }

    void matmul_glu(Act in, const Weight &w, Act out, Activation act) override {
        const float *x = buf(in);
        float *y = buf(out);
        const uint32_t rows = rows_;
        const uint64_t f = w.rows / 2;
        pool_.run(w.rows, [&](uint64_t o0, uint64_t o1, uint32_t t) {
            cpu::matmul_block(x, rows, w, nullptr, o0, o1, gu_, w.rows, thread_scratch(t) + p_.max_seq);
        });
        pool_.run(rows, [&](uint64_t r0, uint64_t r1, uint32_t) {
            for (uint64_t r = r0; r < r1; r++)
                for (uint64_t i = 0; i < f; i++) {
                    const float g = gu_[r * 2 * f + i];
                    y[r * f + i] = cpu::activate(act, g) * gu_[r * 2 * f + f + i];
                }
        });
    }

    void moe(const MoeSpec &spec) override {
        if (spec.norm) norm(NormKind::RMS, *spec.norm, nullptr, spec.norm_eps);
        cpu::moe_forward(pool_, shape_, spec, rows_, h_, x_, delta_, moe_, {scratch_ + p_.max_seq, plan_.scratch_per_thread});
    }

    void logits(const Weight &head, float *host_all, float softcap, const Weight *bias_w) override {
        const uint32_t d = shape_.d_model, v = shape_.vocab_size;
        const float *bias = bias_w && *bias_w ? static_cast<const float *>(bias_w->data) : nullptr;
        if (in_.all_logits && host_all) {
            // Every row, straight into the caller's buffer: sequence b's rows start at
            // host_all + b * logits_seq_stride rows.
            pool_.run(v, [&](uint64_t o0, uint64_t o1, uint32_t t) {
                for (uint32_t b = 0; b < in_.batch; b++) {
                    float *y = host_all + (uint64_t)b * in_.logits_seq_stride * v;
                    cpu::matmul_block(h_ + (uint64_t)b * in_.n_tokens * d, in_.n_tokens, head, bias, o0, o1, y, v,
                                      thread_scratch(t) + p_.max_seq);
                    soft_cap(y, in_.n_tokens, v, o0, o1, softcap);
                }
            });
            have_last_ = false;
            return;
        }
        // Each sequence's last row, gathered into the first rows of X (no longer needed).
        const uint32_t per_seq = last_rows_only_ ? 1 : in_.n_tokens;
        for (uint32_t b = 0; b < in_.batch; b++)
            std::memmove(x_ + (uint64_t)b * d, h_ + (uint64_t)(b * per_seq + per_seq - 1) * d, d * sizeof(float));
        const uint32_t n = in_.batch;
        pool_.run(v, [&](uint64_t o0, uint64_t o1, uint32_t t) {
            cpu::matmul_block(x_, n, head, bias, o0, o1, logits_, v, thread_scratch(t) + p_.max_seq);
            soft_cap(logits_, n, v, o0, o1, softcap);
        });
        have_last_ = true;
    }

    // Moves each sequence's last row of X, H, QKV, the positions and the sequence ids to rows
    // 0..batch-1 (in order: a row is written only after every row before it, and the rows
    // still to read lie past it); the step's later ops run on those rows only.
    void keep_last_rows() {
        const uint32_t n = in_.n_tokens, d = shape_.d_model, qkv_dim = shape_.qkv_dim();
        for (uint32_t b = 0; b < in_.batch; b++) {
            const uint64_t from = (uint64_t)b * n + n - 1;
            std::memmove(x_ + (uint64_t)b * d, x_ + from * d, d * sizeof(float));
            std::memmove(h_ + (uint64_t)b * d, h_ + from * d, d * sizeof(float));
            std::memmove(qkv_ + (uint64_t)b * qkv_dim, qkv_ + from * qkv_dim, qkv_dim * sizeof(float));
            positions_[b] = positions_[from];
            seqs_[b] = seqs_[from];
        }
        rows_ = in_.batch;
        last_rows_only_ = true;
    }

    void read_logits(float *host) override {
        if (!have_last_) fail(GPT_ERR_INTERNAL, "read_logits without last-row logits");
        std::memcpy(host, logits_, (uint64_t)in_.batch * shape_.vocab_size * sizeof(float));
    }

    void sample(const SampleSpec &spec, const SampleRow *rows, int32_t *out) override {
        if (!have_last_) fail(GPT_ERR_INTERNAL, "sample without last-row logits");
        for (uint32_t b = 0; b < in_.batch; b++)
            out[b] = sample_row(logits_ + (uint64_t)b * shape_.vocab_size, shape_.vocab_size, spec, rows[b], sampler_);
    }

    void set_seq_len(uint32_t, uint32_t) override {} // positions come with each step
    uint64_t allocation_count() const override { return allocations_; }

private:
    // y[r][o] = softcap * tanh(y[r][o] / softcap) for o in [o0, o1); nothing for softcap 0.
    static void soft_cap(float *y, uint32_t rows, uint32_t stride, uint64_t o0, uint64_t o1, float softcap) {
        if (softcap <= 0) return;
        for (uint32_t r = 0; r < rows; r++)
            for (uint64_t o = o0; o < o1; o++) y[(uint64_t)r * stride + o] = softcap * std::tanh(y[(uint64_t)r * stride + o] / softcap);
    }
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
    float *thread_scratch(uint32_t t) { return scratch_ + (uint64_t)t * plan_.scratch_per_thread; }
    // Cache layout: [layer][seq][kv_head][max_seq][head_dim].
    float *k_at(uint32_t layer, uint32_t seq, uint32_t g, uint32_t pos) { return k_cache_ + kv_index(layer, seq, g, pos); }
    float *v_at(uint32_t layer, uint32_t seq, uint32_t g, uint32_t pos) { return v_cache_ + kv_index(layer, seq, g, pos); }
    uint64_t kv_index(uint32_t layer, uint32_t seq, uint32_t g, uint32_t pos) const {
        return ((((uint64_t)layer * p_.max_batch + seq) * shape_.n_kv_heads + g) * p_.max_seq + pos) * shape_.head_dim;
    }

    const ModelShape shape_;
    const ExecParams p_;
    const CpuPlan plan_;
    ThreadPool pool_;
    uint8_t *arena_ = nullptr;
    uint64_t allocations_ = 0;
    float *x_, *h_, *qkv_, *att_, *gu_, *ff_, *delta_, *logits_, *k_cache_, *v_cache_, *rope_cos_, *rope_sin_, *scratch_;
    int32_t *tokens_;
    uint32_t *positions_, *seqs_;
    cpu::MoeBuffers moe_{};
    SamplerScratch sampler_;
    StepInput in_{};
    uint32_t rows_ = 0;
    bool last_rows_only_ = false; // keep_last_rows ran: rows_ is the batch, one row a sequence
    bool have_last_ = false;
};

class CpuDevice final : public Device {
public:
    const char *name() const override { return "cpu"; }
    int32_t ordinal() const override { return GPT_DEVICE_CPU; }
    bool integrated() const override { return false; }
    bool keeps_host_weights() const override { return true; }
    uint64_t weight_bytes() const override { return 0; }

    // Matrices stay where they are (the file) in their own dtype, so every weight is checked
    // first (the whole file stays resident anyway); vectors (norms, biases) are widened to f32
    // once. Placement::host_weights changes nothing here.
    DType place_weights(const std::vector<Weight *> &weights, const Placement &, WeightSource &src) override {
        src.check_all();
        uint64_t n = 0;
        for (const Weight *w : weights)
            if (w->is_vector()) n += w->rows;
        vectors_.assign(n, 0.0f);
        uint64_t off = 0;
        DType held = DType::F32;
        bool first = true;
        for (Weight *w : weights) {
            if (!w->is_vector()) {
                if (first) held = w->dtype;
                first = false;
                continue;
            }
            cpu::widen(w->data, w->dtype, w->rows, vectors_.data() + off);
            w->data = vectors_.data() + off;
            w->dtype = DType::F32;
            off += w->rows;
        }
        return held;
    }

    // Computes and caches in f32 whatever was asked.
    void choose(ExecParams &p, uint32_t, uint32_t, uint32_t n_threads) const override {
        p.compute = DType::F32;
        p.kv = DType::F32;
        p.n_threads = n_threads ? std::min<uint32_t>(n_threads, 256) : cpu::hardware_threads();
    }

    MemoryPlan plan(const ModelShape &s, const ExecParams &p) const override {
        MemoryPlan m;
        m.host_bytes = CpuPlan(s, p).total;
        return m;
    }

    MemoryPlan available_memory() const override {
        MemoryPlan m;
        m.host_bytes = host_available_bytes();
        return m;
    }

    std::unique_ptr<Executor> create_executor(const ModelShape &s, const ExecParams &p) const override {
        return std::make_unique<CpuExecutor>(s, p);
    }

private:
    std::vector<float> vectors_;
};

} // namespace

std::unique_ptr<Device> make_cpu_device() { return std::make_unique<CpuDevice>(); }

} // namespace gpt
