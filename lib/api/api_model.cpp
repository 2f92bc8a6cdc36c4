// api_model.cpp - loading, freeing and describing models.
#include "api/handles.h"

#include <algorithm>
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
        if (info->struct_size < sizeof(uint32_t))
            gpt::fail(GPT_ERR_INVALID_ARG, "gpt_model_info.struct_size is %u: set it to sizeof(gpt_model_info)", info->struct_size);
        gpt_model_info full = model->impl->info();
        full.struct_size = std::min<uint32_t>(info->struct_size, sizeof full);
        std::memcpy(info, &full, full.struct_size);
    });
}

} // extern "C"
