// moe.cuh - the mixture-of-experts FFN's kernels: router logits, top-k routing, the expert
// GEMVs of a decode step (the chosen experts' ids read from device memory, so a captured
// graph stays valid whatever the router picks), and for prefill the grouping of (row, slot)
// pairs by expert, the gather of their inputs and the weighted scatter back.
//
// Weights are [rows][k] in the activation dtype, or quantized (Q8 / Q4, dtype.cuh) with f16
// activations: `wq` 0 or the code, `group` columns per scale, `total_rows` the whole stacked
// matrix's rows (the scale plane follows all of its integer rows).
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

inline constexpr uint32_t kMoeMaxTopK = 64;       // experts a row may use (n_experts_used)
inline constexpr uint32_t kMoeDecodeMaxRows = 8;  // rows the expert GEMVs take; more: grouped GEMMs

// logits[r][e] = x[r] . w[e] in f32, x: [rows][k] (ldx = k) in act_dtype, w: [n][k].
cudaError_t launch_moe_router(const void *x, const void *w, int wq, uint32_t group, uint32_t rows, uint32_t n,
                              uint32_t k, int act_dtype, float *logits, cudaStream_t stream);

// The RMSNorm before the router folded into it (a decode step's few rows): h[r] =
// act_dtype(x[r] * rsqrt(mean(x[r]^2) + eps) * norm_w), written to h for the experts, and
// logits[r][e] = h[r] . w[e] as launch_moe_router computes them. x f32 [rows][k], norm_w f32
// [k], w [n][k] in act_dtype (not quantized). Each warp sums its row's squares itself, so a
// decode layer has one kernel less. moe_norm_router_supported says whether it takes a shape.
bool moe_norm_router_supported(uint32_t rows, uint32_t k, int act_dtype, const void *x, const void *norm_w, const void *h,
                               const void *w);
cudaError_t launch_moe_norm_router(const float *x, const float *norm_w, float eps, void *h, const void *w, uint32_t rows,
                                   uint32_t n, uint32_t k, int act_dtype, float *logits, cudaStream_t stream);

// Per row: p = softmax(logits[r]) in f32, the k largest p (ties: the lower expert first; NaN
// after every number) into ids[r][k] (always k distinct, valid expert indices, even for NaN
// logits) and their p into weights[r][k], divided by their sum when norm. k <= kMoeMaxTopK,
// k <= n_experts <= kMoeMaxExpertsCuda.
// The most experts top-k and the grouping take (a row's probabilities, or the experts' counts,
// live in shared memory); configurations stop at 256 (model/config.h).
inline constexpr uint32_t kMoeMaxExpertsCuda = 8192;
cudaError_t launch_moe_topk(const float *logits, uint32_t rows, uint32_t n_experts, uint32_t k, int norm, int32_t *ids,
                            float *weights, cudaStream_t stream);

struct MoeExpertArgs {
    const void *x;         // gate_up: [rows][d] (H); down: [rows * top_k][ff] (the GLU outputs)
    const void *w;         // gate_up: [n_experts * 2 ff][d]; down: [n_experts * d][ff]
    int wq;                // 0 or Q8 / Q4
    uint32_t group;        // wq: columns per scale
    const int32_t *ids;    // [rows][top_k]
    const float *weights;  // [rows][top_k] (down only)
    void *glu_out;         // gate_up's output: [rows * top_k][ff] in act_dtype
    float *residual;       // down's output: residual[r][d] += sum_s weights[r][s] * expert_s(...)
    uint32_t rows, n_experts, top_k, d, ff;
    int act;               // the gate's activation code (ACT_SILU or ACT_GELU_TANH)
    int act_dtype;
};
// glu_out[r * top_k + s][j] = act(x[r] . gate_e[j]) * (x[r] . up_e[j]), e = ids[r][s].
// rows * top_k <= kMoeDecodeMaxRows * kMoeMaxTopK (a decode step's pairs).
cudaError_t launch_moe_gate_up(const MoeExpertArgs &a, cudaStream_t stream);
// residual[r][i] += sum over s (in slot order) of weights[r][s] * (x[r * top_k + s] . down_e[i]).
// It reads ids and weights before waiting for the previous kernel (programmatic dependent
// launch): they must be complete when that kernel passes its own wait, as when it is
// launch_moe_gate_up after launch_moe_topk (x and residual are read after the wait).
cudaError_t launch_moe_down(const MoeExpertArgs &a, cudaStream_t stream);

// Stable grouping of the n = rows * top_k pairs by expert: offsets[e] .. offsets[e + 1] are
// expert e's positions in the grouped order, perm[q] the pair at position q (ascending within
// an expert), inv[p] the position of pair p. One block: n and n_experts are small
// (n_experts <= kMoeMaxExpertsCuda).
cudaError_t launch_moe_group(const int32_t *ids, uint32_t n, uint32_t n_experts, int32_t *offsets, int32_t *perm,
                             int32_t *inv, cudaStream_t stream);
// out[q] = x[perm[q] / top_k] for q < n: the grouped rows' inputs, [n][d] in act_dtype.
cudaError_t launch_moe_gather(const void *x, const int32_t *perm, uint32_t n, uint32_t top_k, uint32_t d, int act_dtype,
                              void *out, cudaStream_t stream);
// residual[r][i] += sum over s of weights[r][s] * down[inv[r * top_k + s]][i]; down: f32 [n][d].
cudaError_t launch_moe_combine(const float *down, const float *weights, const int32_t *inv, uint32_t rows, uint32_t top_k,
                               uint32_t d, float *residual, cudaStream_t stream);
// residual[r][i] += g_r * y[r][i], g_r = sigmoid(gate[r]) or 1 without gate; y f32 [rows][d].
cudaError_t launch_moe_shared_add(const float *y, const float *gate, uint32_t rows, uint32_t d, float *residual,
                                  cudaStream_t stream);
