// sampler.h - turns one row of logits into a token: repetition penalty, per-token
// adjustments (frequency/presence penalties and logit bias), temperature, top-k, top-p, min-p, then a draw with a given uniform number. Deterministic: the same
// logits, settings and uniform give the same token. The CUDA sampler follows the same steps.
#pragma once

#include <cstdint>

namespace gpt {

// Sampling settings (already validated by the caller).
struct SampleSpec {
    float temperature = 0;      // <= 0: greedy
    uint32_t top_k = 0;
    float top_p = 1;
    float min_p = 0;
    float repetition_penalty = 1;
};

// One sequence's sampling inputs for one step.
struct SampleRow {
    float uniform = 0;               // the random draw in [0, 1) that picks the token
    const int32_t *recent = nullptr; // tokens the repetition penalty applies to
    uint32_t n_recent = 0;
    // Per-token additive adjustments (frequency/presence penalties and logit bias, combined
    // by the caller: runtime/token_adjust.h): logit[adjust_tokens[j]] += adjust_deltas[j].
    // Distinct tokens; ids outside the vocabulary are skipped.
    const int32_t *adjust_tokens = nullptr;
    const float *adjust_deltas = nullptr;
    uint32_t n_adjust = 0;
};

struct SamplerScratch {
    float *values = nullptr;  // [vocab]
    int32_t *index = nullptr; // [vocab]
};

// Steps, in order:
//  1. repetition penalty on each distinct recent token: logit > 0 ? logit / p : logit * p
//  2. logit[t] += delta for each adjustment (t, delta) of the row
//  3. temperature <= 0: return the argmax (lowest id among equal maxima)
//  4. keep the top_k largest (all when 0), ordered by value then id
//  5. softmax of logit / temperature over the kept tokens, as exp((logit - max) / temperature)
//     (well defined for every temperature > 0: a tiny one leaves the maxima, a huge one all)
//  6. top_p: keep the shortest prefix whose probability reaches top_p (at least one)
//  7. min_p: keep tokens with probability >= min_p * the largest
//  8. pick the first kept token whose cumulative probability exceeds uniform * total
int32_t sample_row(const float *logits, uint32_t vocab, const SampleSpec &spec, const SampleRow &row,
                   SamplerScratch &scratch);

} // namespace gpt
