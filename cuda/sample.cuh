// sample.cuh - token sampling on the device, so decode copies back one id per sequence
// instead of the logits. Same steps and order as the CPU sampler (lib/sampler/sampler.h):
// repetition penalty, per-token adjustments, then greedy argmax, or temperature, top-k, softmax, top-p, min-p and
// a draw with a host-supplied uniform number.
#pragma once
#include <cuda_runtime.h>
#include <cstddef>
#include <cstdint>

struct SampleArgs {
    const float *logits;     // [batch][vocab]
    uint32_t batch, vocab;
    float temperature;       // <= 0: greedy
    float penalty;           // repetition penalty, 1 = off
    const int32_t *recent;   // [batch][recent_stride] tokens to penalise
    const int32_t *n_recent; // [batch]
    uint32_t recent_stride;
    // Per-token additive adjustments (frequency/presence penalties, logit bias), after the
    // repetition penalty: values[adjust_tokens[j]] += adjust_deltas[j], distinct tokens per row.
    const int32_t *adjust_tokens; // [batch][adjust_stride]
    const float *adjust_deltas;   // [batch][adjust_stride]
    const int32_t *n_adjust;      // [batch]; NULL: no adjustments
    uint32_t adjust_stride;
    uint32_t top_k;          // 0 = all
    float top_p, min_p;
    const float *uniform;    // [batch] draws in [0, 1)
    void *workspace;         // sample_workspace_bytes(batch, vocab) bytes
    int32_t *out;            // [batch]
};

size_t sample_workspace_bytes(uint32_t batch, uint32_t vocab);
cudaError_t launch_sample(const SampleArgs &a, cudaStream_t stream);
