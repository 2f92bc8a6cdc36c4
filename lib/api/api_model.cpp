// api_model.cpp - loading, freeing and describing models.
#include "api/handles.h"

#include <cstring>

using gpt::api::guarded;

static gpt_model_params model_defaults() {
    gpt_model_params p;
    std::memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.device = GPT_DEVICE_AUTO;
    p.weight_dtype = GPT_DTYPE_AUTO;
    p.flags = 0;
    return p;
}

// Runs load(params) and hands the model out through `out`.
template <typename Load> static gpt_status load_model(gpt_model **out, const gpt_model_params *given, Load load) {
    if (out) *out = nullptr;
    return guarded(nullptr, [&] {
        if (!out) gpt::fail(GPT_ERR_INVALID_ARG, "out is NULL");
        const gpt_model_params p = gpt::api::read_params(given, model_defaults(), "gpt_model_params");
        auto m = std::make_unique<gpt_model>();
        m->impl = load(p);
        *out = m.release();
    });
}

extern "C" {

void gpt_model_params_init(gpt_model_params *params) {
    if (params) *params = model_defaults();
}

gpt_status gpt_model_load(const char *path, const gpt_model_params *params, gpt_model **out) {
    return load_model(out, params, [&](const gpt_model_params &p) { return gpt::Model::load_file(path, p); });
}

gpt_status gpt_model_load_from_memory(const void *data, size_t size, const gpt_model_params *params, gpt_model **out) {
    return load_model(out, params, [&](const gpt_model_params &p) { return gpt::Model::load_memory(data, size, p); });
}

void gpt_model_free(gpt_model *model) {
    try {
        delete model;
    } catch (...) {
    }
}

gpt_status gpt_model_get_info(const gpt_model *model, gpt_model_info *info) {
    return guarded(nullptr, [&] {
        if (!model || !info) gpt::fail(GPT_ERR_INVALID_ARG, "model and info must not be NULL");
        gpt::api::check_struct_size<gpt_model_info>(info->struct_size, "gpt_model_info");
        gpt_model_info full = model->impl->info(); // a newer caller's extra fields are left alone
        const uint32_t filled = info->struct_size < sizeof full ? info->struct_size : (uint32_t)sizeof full;
        full.struct_size = filled; // an older caller's struct is filled up to its end
        std::memcpy(info, &full, filled);
    });
}

gpt_status gpt_model_get_eos_tokens(const gpt_model *model, int32_t *tokens, uint32_t cap, uint32_t *n_tokens) {
    return guarded(nullptr, [&] {
        if (!model || !n_tokens) gpt::fail(GPT_ERR_INVALID_ARG, "model and n_tokens must not be NULL");
        const std::vector<int32_t> &ids = model->impl->eos_ids();
        *n_tokens = (uint32_t)ids.size();
        if (!tokens && cap == 0) return; // size query
        if (!tokens) gpt::fail(GPT_ERR_INVALID_ARG, "tokens is NULL but cap is %u", cap);
        if (ids.size() > cap) gpt::fail(GPT_ERR_BUFFER_TOO_SMALL, "the model has %zu end-of-sequence ids, the buffer holds %u", ids.size(), cap);
        if (!ids.empty()) std::memcpy(tokens, ids.data(), ids.size() * sizeof(int32_t));
    });
}

} // extern "C"
