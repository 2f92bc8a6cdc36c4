// token_adjust.cpp - see token_adjust.h.
#include "runtime/token_adjust.h"

#include <cmath>

namespace gpt {

void TokenAdjust::attach(void *mem, uint32_t vocab) {
    vocab_ = vocab;
    n_ = 0;
    slot_ = static_cast<int32_t *>(mem);
    tokens_ = slot_ + vocab;
    bias_ = reinterpret_cast<float *>(tokens_ + vocab);
    counts_ = reinterpret_cast<uint32_t *>(bias_ + vocab);
    deltas_ = reinterpret_cast<float *>(counts_ + vocab);
    for (uint32_t t = 0; t < vocab; t++) slot_[t] = -1;
}

void TokenAdjust::begin(float frequency, float presence, const gpt_logit_bias *bias, uint32_t n_bias) {
    for (uint32_t j = 0; j < n_; j++) slot_[tokens_[j]] = -1;
    n_ = 0;
    frequency_ = frequency;
    presence_ = presence;
    for (uint32_t i = 0; i < n_bias; i++) {
        const uint32_t j = entry(bias[i].token);
        bias_[j] += bias[i].bias; // in list order: a token listed twice gets both
        update(j);
    }
}

void TokenAdjust::count(int32_t token) {
    if (frequency_ == 0.0f && presence_ == 0.0f) return; // the list stays the biases alone
    const uint32_t j = entry(token);
    counts_[j]++;
    update(j);
}

uint32_t TokenAdjust::entry(int32_t token) {
    if (slot_[token] >= 0) return (uint32_t)slot_[token];
    const uint32_t j = n_++; // at most vocab entries: one per distinct token
    slot_[token] = (int32_t)j;
    tokens_[j] = token;
    bias_[j] = 0.0f;
    counts_[j] = 0;
    return j;
}

void TokenAdjust::update(uint32_t j) {
    // fma: one rounding, the same on every platform (a compiler may not contract it otherwise).
    const float penalty = counts_[j] > 0 ? std::fma((float)counts_[j], frequency_, presence_) : 0.0f;
    deltas_[j] = bias_[j] - penalty;
}

} // namespace gpt
