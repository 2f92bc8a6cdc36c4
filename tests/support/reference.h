// reference.h - an independent, naive double-precision forward pass of both architectures,
// written from the math (it shares no code with lib/backend): the oracle the engine's logits
// are compared against. It runs the whole token sequence at once with causal attention and
// no KV cache, so it also checks the engine's cache handling.
//
//   GPT-2: x_t = tok_emb[tok_t] + pos_emb[t]; per layer
//            h = LayerNorm(x) (eps from the config); [q | k | v] = W_qkv h + b_qkv;
//            x += W_out attention(q, k, v) + b_out; h = LayerNorm(x);
//            x += W_down act(W_up h + b_up) + b_down, act = gelu_tanh, exact GELU or ReLU
//          logits = head . LayerNorm(x) (+ lm_head.bias), head = tok_emb when the head is tied.
//   Llama: x_t = tok_emb[tok_t]; per layer
//            h = RMSNorm(x); [q | k | v] = W_qkv h (+ b_qkv); RoPE on q and k, rotating
//            pairs (i, i + head_dim/2) (rotate-half, Hugging Face) or, with
//            Layout::interleaved_rope, pairs (2i, 2i + 1) (llama2.c, Meta), by the angle
//            t * theta^(-2i/head_dim); query head h reads kv head h / (n_heads / n_kv_heads);
//            x += W_out attention; h = RMSNorm(x); [gate | up] = W_gate_up h;
//            x += W_down (silu(gate) * up)
//          logits = head . RMSNorm(x).
//          RoPE frequencies follow the config's rope_scaling (linear, llama3, longrope with
//          its attention factor on cos and sin) and rotate the first rope_dim dimensions only.
//   Qwen3: Llama with RMSNorm(q head) * attn_q_norm, RMSNorm(k head) * attn_k_norm before RoPE.
//   Phi3:  Llama (fused tensors as stored).
//   Mixtral, Qwen2-MoE, OLMoE, Qwen3-MoE: Llama (Qwen3-MoE: Qwen3's head norms; OLMoE: an
//            RMSNorm over all of q and one over all of k before RoPE) whose FFN on a MoE layer
//            is sum over the k most probable experts (softmax of W_router h; ties to the lower
//            index) of p_e (divided by the k p's sum with norm_topk_prob) times
//            W_down_e (silu(gate_e) * up_e), plus sigmoid(w_sg . h) times the shared expert.
//   Gemma-2/3: x_t = tok_emb[tok_t] * sqrt(d_model) (rounded to the embedding's dtype); per
//            layer h = RMSNorm(x) (stored weights are 1 + w); [q | k | v] = W_qkv h; Gemma-3:
//            RMSNorm of each q and k head (attn_q_norm / attn_k_norm); RoPE with rope_theta
//            and the config's rope_scaling (Gemma-3: on full layers; its windowed ones rotate
//            with rope_theta_local, unscaled); x += RMSNorm(W_out attention) (attn_post_norm);
//            h = RMSNorm(x); x += RMSNorm(W_down (gelu_tanh(gate) * up)) (ffn_post_norm)
//          logits = cap tanh(tok_emb . RMSNorm(x) / cap) (no cap when logit_softcap is 0).
// Attention: softmax(q . k * scale) over keys 0..t, or (t - window, t] on the windowed layers
// (those window_layers flags; every layer when it is empty); scale = query_pre_attn_scalar^-1/2
// when set, else head_dim^-1/2; scores soft-capped by attn_softcap when set.
// Matrices are row-major [out][in] (the weight file's layout) unless Layout::conv1d says the
// GPT-2 block matrices are stored [in][out], as Hugging Face's Conv1D keeps them.
#pragma once

#include "fixture.h"
#include "model/config.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace reference {

using TensorMap = std::map<std::string, std::vector<float>>;

// How the tensors are laid out and how RoPE pairs dimensions; the defaults are the weight
// file's (and the engine's).
struct Layout {
    // Llama RoPE rotates pairs (2i, 2i + 1), as llama2.c and Meta's checkpoints do, instead
    // of (i, i + head_dim/2).
    bool interleaved_rope = false;
    // GPT-2's attn_qkv, attn_out, ffn_up and ffn_down weights are stored [in][out] (Hugging
    // Face's Conv1D) instead of [out][in].
    bool conv1d = false;
    // The context's max_seq the engine ran with (longrope picks short or long factors by it);
    // 0: the config's context_length (a context created with max_seq 0).
    uint32_t max_seq = 0;
    // The dtype the embedding is held in: Gemma's sqrt(d_model) factor is rounded to it.
    gpt::DType embed_dtype = gpt::DType::F32;
};

// Logits of every position, row-major [tokens.size()][vocab_size]. Tensors under the weight
// file's names (model/weights.h), values as the engine sees them.
// MoE architectures: *min_routing_gap (when given) is lowered to the smallest nonzero gap
// between a row's k-th and (k+1)-th router probability, where the engine's f32 may choose
// another expert than this double computation (a test then draws other weights).
std::vector<double> forward(const gpt::ModelConfig &c, const TensorMap &tensors, const std::vector<int32_t> &tokens,
                            const Layout &layout = Layout(), double *min_routing_gap = nullptr);
inline std::vector<double> forward(const fixture::Model &m, const std::vector<int32_t> &tokens) {
    Layout l;
    l.embed_dtype = m.dtype;
    return forward(m.config, m.tensors, tokens, l);
}

// ---- helpers shared by the test drivers

// The run's random seed: GPT_TEST_SEED when set (decimal or 0x hex), else fresh from
// std::random_device; printed once so a failure can be reproduced.
uint64_t test_seed();
// A seed for one named test, derived from the run's seed.
uint64_t sub_seed(const char *what);

// Fills with NaN, so elements a call fails to write show up in comparisons.
void poison(float *p, size_t n);

// Output vs expected over [rows][cols]: the largest per-row ||out - ref|| / ||ref||, and the
// largest |out - ref| over the largest |ref|, with the worst element for the message.
struct Diff {
    double row_rel = 0, abs_rel = 0, max_abs = 0, max_ref = 0;
    bool finite = true;
    size_t worst_row = 0, worst_col = 0;
    double worst_out = 0, worst_ref = 0;
    // Both measures <= tol, every output finite, and a reference that is not all zeros;
    // otherwise prints what and the worst element and returns false.
    bool within(double tol, const char *what) const;
};
Diff compare(const float *out, const double *ref, size_t rows, size_t cols);
Diff compare(const float *out, const float *ref, size_t rows, size_t cols);

} // namespace reference
