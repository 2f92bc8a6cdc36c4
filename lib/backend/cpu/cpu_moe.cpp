// cpu_moe.cpp - the CPU mixture-of-experts op (cpu_moe.h).
#include "backend/cpu/cpu_moe.h"

#include "backend/cpu/cpu_ops.h"
#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gpt::cpu {

namespace {

// p[0..n) = softmax(p) in f32, as transformers routes (softmax in float32).
void softmax(float *p, uint32_t n) {
    float mx = p[0];
    for (uint32_t i = 1; i < n; i++) mx = std::max(mx, p[i]);
    float sum = 0;
    for (uint32_t i = 0; i < n; i++) sum += p[i] = std::exp(p[i] - mx);
    for (uint32_t i = 0; i < n; i++) p[i] /= sum;
}

// Runs matmul_block over the output range [o0, o1) of a flat index space in which expert
// active[a] owns [a * width, (a + 1) * width) and its rows of w start at expert * width: each
// expert's group of rows (in, cols each) goes to y (stride width) at the grouped layout's
// rows, pair p of expert e at row p + e.
void expert_range(const MoeBuffers &m, const Weight &w, uint64_t width, const float *in, uint64_t cols, float *y,
                  uint64_t o0, uint64_t o1, float *scratch) {
    for (uint64_t i = o0; i < o1;) {
        const uint32_t e = m.active[i / width];
        const uint64_t lo = i % width, hi = std::min(width, lo + (o1 - i));
        const uint32_t start = m.group_start[e], count = m.group_start[e + 1] - start;
        matmul_block(in + (uint64_t)start * cols, count, w, nullptr, e * width + lo, e * width + hi, y + (uint64_t)start * width,
                     width, scratch);
        i += hi - lo;
    }
}

// delta[r] = the shared expert of H[r], shared_gate[r] = its gate (1 without one).
void shared_expert(ThreadPool &pool, const ModelShape &s, const MoeSpec &spec, uint32_t rows, const float *h, float *delta,
                   const MoeBuffers &m, ThreadScratch ts) {
    const uint32_t d = s.d_model;
    const uint64_t fs = spec.shared_gate_up->rows / 2;
    pool.run(2 * fs, [&](uint64_t o0, uint64_t o1, uint32_t t) {
        matmul_block(h, rows, *spec.shared_gate_up, nullptr, o0, o1, m.gate_up, 2 * fs, ts.of(t));
    });
    pool.run(rows, [&](uint64_t r0, uint64_t r1, uint32_t t) {
        for (uint64_t r = r0; r < r1; r++)
            for (uint64_t i = 0; i < fs; i++)
                m.hidden[r * fs + i] = activate(spec.act, m.gate_up[r * 2 * fs + i]) * m.gate_up[r * 2 * fs + fs + i];
        if (spec.shared_gate) {
            matmul_block(h + r0 * d, (uint32_t)(r1 - r0), *spec.shared_gate, nullptr, 0, 1, m.shared_gate + r0, 1, ts.of(t));
            for (uint64_t r = r0; r < r1; r++) m.shared_gate[r] = 1.0f / (1.0f + std::exp(-m.shared_gate[r]));
        } else {
            for (uint64_t r = r0; r < r1; r++) m.shared_gate[r] = 1.0f;
        }
    });
    pool.run(d, [&](uint64_t o0, uint64_t o1, uint32_t t) {
        matmul_block(m.hidden, rows, *spec.shared_down, nullptr, o0, o1, delta, d, ts.of(t));
    });
}

} // namespace

void top_k(const float *p, uint32_t n, uint32_t k, uint32_t *out) {
    for (uint32_t j = 0; j < k; j++) {
        int64_t best = -1;
        for (uint32_t e = 0; e < n; e++) {
            if (std::find(out, out + j, e) != out + j) continue;
            if (best < 0 || p[e] > p[best]) best = e; // strict: a tie keeps the lower index
        }
        out[j] = (uint32_t)best;
    }
}

void moe_forward(ThreadPool &pool, const ModelShape &s, const MoeSpec &spec, uint32_t rows, const float *h, float *x,
                 float *delta, const MoeBuffers &m, ThreadScratch ts) {
    const uint32_t n_exp = s.n_experts, k = s.n_experts_used, d = s.d_model;
    const uint64_t fe = s.d_ff_expert, slots = (uint64_t)rows * k;
    if (!spec.router || !spec.gate_up || !spec.down || !n_exp)
        fail(GPT_ERR_INTERNAL, "moe: a model without experts, or a spec without its router or experts");
    // The shared expert first: it uses the gate_up and hidden buffers the routed experts reuse.
    const bool shared = spec.shared_gate_up && spec.shared_down;
    if (shared) shared_expert(pool, s, spec, rows, h, delta, m, ts);

    // 1. Route: softmax over all experts, the top k, their weights (renormalised if asked).
    pool.run(rows, [&](uint64_t r0, uint64_t r1, uint32_t t) {
        matmul_block(h + r0 * d, (uint32_t)(r1 - r0), *spec.router, nullptr, 0, n_exp, m.probs + r0 * n_exp, n_exp, ts.of(t));
        for (uint64_t r = r0; r < r1; r++) {
            float *p = m.probs + r * n_exp;
            softmax(p, n_exp);
            uint32_t *chosen = m.expert + r * k;
            top_k(p, n_exp, k, chosen);
            float sum = 0;
            for (uint32_t j = 0; j < k; j++) sum += m.weight[r * k + j] = p[chosen[j]];
            if (spec.norm_topk)
                for (uint32_t j = 0; j < k; j++) m.weight[r * k + j] /= sum;
        }
    });

    // 2. Group the pairs by expert (a counting sort; rows x k is small beside the matmuls).
    std::fill(m.group_start, m.group_start + n_exp + 1, 0u);
    for (uint64_t i = 0; i < slots; i++) m.group_start[m.expert[i] + 1]++;
    for (uint32_t e = 0; e < n_exp; e++) m.group_start[e + 1] += m.group_start[e];
    uint32_t *cursor = m.active;
    std::copy(m.group_start, m.group_start + n_exp, cursor);
    for (uint64_t i = 0; i < slots; i++) {
        const uint32_t e = m.expert[i], pos = cursor[e]++;
        m.position[i] = pos;
        m.slot_row[pos] = (uint32_t)(i / k);
        m.slot_expert[pos] = e;
    }
    uint32_t n_active = 0;
    for (uint32_t e = 0; e < n_exp; e++)
        if (m.group_start[e + 1] > m.group_start[e]) m.active[n_active++] = e;
    pool.run(slots, [&](uint64_t p0, uint64_t p1, uint32_t) {
        for (uint64_t p = p0; p < p1; p++) std::memcpy(m.gathered + p * d, h + (uint64_t)m.slot_row[p] * d, d * sizeof(float));
    });

    // 3. Each chosen expert once over its rows: gate|up, the activation, down.
    const uint64_t gu_width = 2 * fe;
    pool.run(n_active * gu_width, [&](uint64_t o0, uint64_t o1, uint32_t t) {
        expert_range(m, *spec.gate_up, gu_width, m.gathered, d, m.gate_up, o0, o1, ts.of(t));
    });
    pool.run(slots, [&](uint64_t p0, uint64_t p1, uint32_t) {
        for (uint64_t p = p0; p < p1; p++) {
            const float *gu = m.gate_up + (p + m.slot_expert[p]) * gu_width;
            for (uint64_t i = 0; i < fe; i++) m.hidden[p * fe + i] = activate(spec.act, gu[i]) * gu[fe + i];
        }
    });
    pool.run((uint64_t)n_active * d, [&](uint64_t o0, uint64_t o1, uint32_t t) {
        expert_range(m, *spec.down, d, m.hidden, fe, m.out, o0, o1, ts.of(t));
    });

    // 4. X += the weighted experts (+ the gated shared expert).
    pool.run(rows, [&](uint64_t r0, uint64_t r1, uint32_t) {
        for (uint64_t r = r0; r < r1; r++) {
            float *xr = x + r * d;
            if (shared)
                for (uint32_t i = 0; i < d; i++) xr[i] += m.shared_gate[r] * delta[r * d + i];
            for (uint32_t j = 0; j < k; j++) {
                const uint64_t slot = r * k + j;
                const float w = m.weight[slot];
                const float *o = m.out + (m.position[slot] + m.expert[slot]) * (uint64_t)d;
                for (uint32_t i = 0; i < d; i++) xr[i] += w * o[i];
            }
        }
    });
}

} // namespace gpt::cpu
