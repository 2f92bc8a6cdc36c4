// api_context.cpp - contexts, forward and generate.
#include "api/handles.h"

#include <cstring>

using gpt::api::guarded;

static gpt_ctx_params ctx_defaults() {
    gpt_ctx_params p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.max_batch = 1;
    return p;
}

static gpt_sampling_params sampling_defaults() {
    gpt_sampling_params p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repetition_penalty = 1.0f;
    p.repetition_last_n = 64;
    return p;
}

extern "C" {

void gpt_ctx_params_init(gpt_ctx_params *params) {
    if (params) *params = ctx_defaults();
}

void gpt_sampling_params_init(gpt_sampling_params *params) {
    if (params) *params = sampling_defaults();
}

gpt_status gpt_ctx_estimate_memory(const gpt_model *model, const gpt_ctx_params *params, uint64_t *host_bytes,
                                   uint64_t *device_bytes) {
    return guarded(nullptr, [&] {
        if (!model) gpt::fail(GPT_ERR_INVALID_ARG, "model is NULL");
        const gpt_ctx_params p = gpt::api::read_params(params, ctx_defaults(), "gpt_ctx_params");
        const gpt::MemoryPlan plan = gpt::Context::estimate(*model->impl, p);
        if (host_bytes) *host_bytes = plan.host_bytes;
        if (device_bytes) *device_bytes = plan.device_bytes;
    });
}

gpt_status gpt_ctx_create(gpt_model *model, const gpt_ctx_params *params, gpt_ctx **out) {
    if (out) *out = nullptr;
    return guarded(nullptr, [&] {
        if (!model || !out) gpt::fail(GPT_ERR_INVALID_ARG, "model and out must not be NULL");
        const gpt_ctx_params p = gpt::api::read_params(params, ctx_defaults(), "gpt_ctx_params");
        auto c = std::make_unique<gpt_ctx>();
        c->impl = std::make_unique<gpt::Context>(*model->impl, p);
        if (!(p.flags & GPT_CTX_NO_WARMUP) && c->impl->warm_up_worthwhile()) c->impl->warm_up(sampling_defaults());
        *out = c.release();
    });
}

void gpt_ctx_free(gpt_ctx *ctx) {
    try {
        delete ctx;
    } catch (...) {
    }
}

void gpt_ctx_reset(gpt_ctx *ctx) {
    if (ctx) guarded(ctx, [&] { ctx->impl->reset(); });
}

uint32_t gpt_ctx_seq_len(const gpt_ctx *ctx, uint32_t seq) { return ctx ? ctx->impl->seq_len(seq) : 0; }

gpt_status gpt_ctx_truncate(gpt_ctx *ctx, uint32_t seq, uint32_t n_tokens) {
    if (!ctx) return guarded(nullptr, [] { gpt::fail(GPT_ERR_INVALID_ARG, "ctx is NULL"); });
    return guarded(ctx, [&] { ctx->impl->truncate(seq, n_tokens); });
}

const char *gpt_ctx_last_error(const gpt_ctx *ctx) { return ctx ? ctx->last_error.c_str() : ""; }

gpt_status gpt_forward(gpt_ctx *ctx, const int32_t *tokens, uint32_t batch, uint32_t n_tokens, uint32_t flags, float *logits) {
    if (!ctx) return guarded(nullptr, [] { gpt::fail(GPT_ERR_INVALID_ARG, "ctx is NULL"); });
    return guarded(ctx, [&] { ctx->impl->forward(tokens, batch, n_tokens, flags, logits); });
}

gpt_status gpt_generate(gpt_ctx *ctx, const int32_t *prompt, uint32_t n_prompt, const gpt_sampling_params *sampling,
                        gpt_token_fn on_token, void *user, int32_t *out, uint32_t cap, uint32_t *n_out) {
    if (n_out) *n_out = 0;
    if (!ctx) return guarded(nullptr, [] { gpt::fail(GPT_ERR_INVALID_ARG, "ctx is NULL"); });
    return guarded(ctx, [&] {
        const gpt_sampling_params s = gpt::api::read_params(sampling, sampling_defaults(), "gpt_sampling_params");
        uint32_t produced = 0;
        try {
            ctx->impl->generate(prompt, n_prompt, s, on_token, user, out, cap, &produced);
        } catch (...) {
            if (n_out) *n_out = produced;
            throw;
        }
        if (n_out) *n_out = produced;
    });
}

} // extern "C"
