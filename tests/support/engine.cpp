// engine.cpp - see engine.h.
#include "engine.h"

#include "gpt.h"

#include <cmath>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>
}

namespace engine {

std::vector<float> cpu_logits(const std::string &path, const std::vector<int32_t> &toks, uint32_t vocab) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    gpt_model *m = nullptr;
    if (gpt_model_load(path.c_str(), &mp, &m) != GPT_OK) fail_msg("load %s: %s", path.c_str(), gpt_last_error());
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = (uint32_t)toks.size();
    cp.n_threads = 2;
    gpt_ctx *c = nullptr;
    if (gpt_ctx_create(m, &cp, &c) != GPT_OK) fail_msg("ctx: %s", gpt_last_error());
    std::vector<float> logits(toks.size() * vocab, NAN);
    if (gpt_forward(c, toks.data(), 1, (uint32_t)toks.size(), GPT_FORWARD_ALL_LOGITS, logits.data()) != GPT_OK)
        fail_msg("forward: %s", gpt_ctx_last_error(c));
    gpt_ctx_free(c);
    gpt_model_free(m);
    return logits;
}

} // namespace engine
