// cpu_moe.h - the CPU mixture-of-experts op (Executor::moe, backend.h's MoeSpec): route each
// row, group the (row, expert) pairs by expert, run every chosen expert once over its rows
// (the stacked weights' row ranges, any dtype matmul_block reads), scatter back weighted.
#pragma once

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

#include <cstdint>

namespace gpt::cpu {

// The executor's buffers for it (CpuPlan's MoePlan sizes them). A "slot" is one (row, chosen
// expert) pair: rows x k of them, grouped by expert.
struct MoeBuffers {
    float *probs;        // [rows][E]
    uint32_t *expert;    // [slots] (row-major: row r's k choices from r * k)
    float *weight;       // [slots] the choice's weight
    uint32_t *position;  // [slots] where the pair sits in the grouped order
    uint32_t *slot_row;  // [slots] grouped order -> row
    uint32_t *slot_expert; // [slots] grouped order -> expert
    uint32_t *group_start; // [E + 1] expert e's pairs are [group_start[e], group_start[e + 1])
    uint32_t *active;      // [E + 1] the experts with pairs (also a counting-sort cursor)
    float *gathered;     // [slots][d]
    float *gate_up;      // [slots + E][2 Fe] (pair p of expert e at row p + e), or [rows][2 Fs]
    float *hidden;       // [slots][Fe], or [rows][Fs]
    float *out;          // [slots + E][d] (pair p of expert e at row p + e)
    float *shared_gate;  // [rows]
};

// Per-thread scratch for matmul_block: thread t's is base + t * stride, at least
// max(d_model, d_ff_expert, d_ff_shared) floats.
struct ThreadScratch {
    float *base;
    uint64_t stride;
    float *of(uint32_t t) const { return base + (uint64_t)t * stride; }
};

// The indices of the k largest of p[0..n) in descending order, ties to the lower index, each
// index once (a NaN is never preferred to an earlier entry, so k distinct indices come out).
void top_k(const float *p, uint32_t n, uint32_t k, uint32_t *out);

// X[r] += the MoE FFN of H[r] for rows [0, rows). delta: [rows][d] scratch (the shared expert).
void moe_forward(ThreadPool &pool, const ModelShape &s, const MoeSpec &spec, uint32_t rows, const float *h, float *x,
                 float *delta, const MoeBuffers &m, ThreadScratch ts);

} // namespace gpt::cpu
