// sampler.cpp - the reference sampler (CPU backend and oracle for the CUDA sampler).
#include "sampler/sampler.h"

#include <algorithm>
#include <cmath>

namespace gpt {

namespace {

// Larger value first; equal values by smaller id, so ordering never depends on the sort.
struct ByValueThenId {
    const float *v;
    bool operator()(int32_t a, int32_t b) const { return v[a] > v[b] || (v[a] == v[b] && a < b); }
};

} // namespace

int32_t sample_row(const float *logits, uint32_t vocab, const SampleSpec &spec, const SampleRow &row,
                   SamplerScratch &scratch) {
    // The logits are copied only when they are changed (penalty, temperature): plain greedy
    // reads them in place (the copy was 1-2% of a small model's step).
    const bool penalise = spec.repetition_penalty != 1.0f, greedy = spec.temperature <= 0.0f;
    const bool adjust = row.n_adjust > 0;
    float *v = scratch.values;
    const float *scores = logits;
    if (penalise || adjust || !greedy) {
        for (uint32_t i = 0; i < vocab; i++) v[i] = logits[i];
        scores = v;
    }

    if (penalise) {
        for (uint32_t j = 0; j < row.n_recent; j++) {
            const int32_t t = row.recent[j];
            if (t < 0 || (uint32_t)t >= vocab) continue;
            bool seen = false; // penalise each token once, however often it recurs
            for (uint32_t i = 0; i < j && !seen; i++) seen = row.recent[i] == t;
            if (!seen) v[t] = v[t] > 0 ? v[t] / spec.repetition_penalty : v[t] * spec.repetition_penalty;
        }
    }

    for (uint32_t j = 0; j < row.n_adjust; j++) {
        const int32_t t = row.adjust_tokens[j];
        if (t >= 0 && (uint32_t)t < vocab) v[t] += row.adjust_deltas[j];
    }

    if (greedy) {
        uint32_t best = 0;
        for (uint32_t i = 1; i < vocab; i++)
            if (scores[i] > scores[best]) best = i;
        return (int32_t)best;
    }

    // Ordered by value then id before the temperature: dividing by a positive number keeps
    // the order, and scaled values could overflow or round into ties.
    int32_t *idx = scratch.index;
    for (uint32_t i = 0; i < vocab; i++) idx[i] = (int32_t)i;
    const uint32_t k = (spec.top_k > 0 && spec.top_k < vocab) ? spec.top_k : vocab;
    std::partial_sort(idx, idx + k, idx + vocab, ByValueThenId{v});

    // Softmax over the kept k, in place: v[idx[i]] becomes exp((v - max) / T), a weight in
    // [0, 1] for every temperature > 0 (multiplying by 1/T first overflows for T near 1e-38).
    const float mx = v[idx[0]];
    double sum = 0;
    for (uint32_t i = 0; i < k; i++) {
        v[idx[i]] = std::exp((v[idx[i]] - mx) / spec.temperature);
        sum += v[idx[i]];
    }
    uint32_t n = k;
    if (spec.top_p < 1.0f) {
        double cum = 0;
        for (uint32_t i = 0; i < k; i++) {
            cum += v[idx[i]] / sum;
            if (cum >= spec.top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (spec.min_p > 0.0f) {
        const float floor = spec.min_p * v[idx[0]]; // probabilities are proportional to v
        uint32_t m = 1;
        while (m < n && v[idx[m]] >= floor) m++;
        n = m;
    }
    double total = 0;
    for (uint32_t i = 0; i < n; i++) total += v[idx[i]];
    const double target = (double)row.uniform * total;
    double cum = 0;
    for (uint32_t i = 0; i < n; i++) {
        cum += v[idx[i]];
        if (cum > target) return idx[i];
    }
    return idx[n - 1];
}

} // namespace gpt
