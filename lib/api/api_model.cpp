// api_model.cpp - loading, freeing and describing models.
#include "api/handles.h"

#include "format/reader.h"
#include "model/weights.h"

#include <algorithm>
#include <cstring>
#include <thread>

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

static gpt_status load_common(gpt_model **out, const gpt_model_params *given,
                              std::unique_ptr<gpt::format::WeightFile> (*open)(const gpt_model_params &, const void *, size_t, const char *),
                              const void *data, size_t size, const char *path) {
    if (out) *out = nullptr;
    return guarded(nullptr, [&] {
        if (!out) gpt::fail(GPT_ERR_INVALID_ARG, "out is NULL");
        const gpt_model_params p = gpt::api::read_params(given, model_defaults(), "gpt_model_params");
        const uint32_t known = GPT_MODEL_SKIP_CHECKSUMS | GPT_MODEL_NO_MMAP | GPT_MODEL_COPY_BUFFER;
        if (p.flags & ~known) gpt::fail(GPT_ERR_INVALID_ARG, "unknown gpt_model_params.flags 0x%x", p.flags & ~known);
        // Creating the CUDA context takes a good part of a second: let it happen on another
        // thread while this one reads and checks the file.
        std::thread warm;
        if (p.device != GPT_DEVICE_CPU) {
            try {
                warm = std::thread([device = p.device] { gpt::cuda_warm_up(device); });
            } catch (...) { // no thread: the context is simply created later
            }
        }
        struct Join {
            std::thread &t;
            ~Join() {
                if (t.joinable()) t.join();
            }
        } join{warm};
        auto file = open(p, data, size, path);
        if (warm.joinable()) warm.join();
        auto m = std::make_unique<gpt_model>();
        m->impl = gpt::Model::load(std::move(file), p);
        *out = m.release();
    });
}

extern "C" {

void gpt_model_params_init(gpt_model_params *params) {
    if (params) *params = model_defaults();
}

gpt_status gpt_model_load(const char *path, const gpt_model_params *params, gpt_model **out) {
    return load_common(out, params, [](const gpt_model_params &p, const void *, size_t, const char *path_) {
        if (!path_) gpt::fail(GPT_ERR_INVALID_ARG, "path is NULL");
        gpt::format::ReadOptions o;
        o.verify_checksums = !(p.flags & GPT_MODEL_SKIP_CHECKSUMS);
        o.check_finite = o.verify_checksums; // NaN/Inf weights: GPT_ERR_FORMAT, in the crc pass
        o.use_mmap = !(p.flags & GPT_MODEL_NO_MMAP);
        return gpt::format::WeightFile::open(path_, o);
    }, nullptr, 0, path);
}

gpt_status gpt_model_load_from_memory(const void *data, size_t size, const gpt_model_params *params, gpt_model **out) {
    return load_common(out, params, [](const gpt_model_params &p, const void *d, size_t n, const char *) {
        gpt::format::ReadOptions o;
        o.verify_checksums = !(p.flags & GPT_MODEL_SKIP_CHECKSUMS);
        o.check_finite = o.verify_checksums;
        return gpt::format::WeightFile::from_memory(d, n, (p.flags & GPT_MODEL_COPY_BUFFER) != 0, o);
    }, data, size, nullptr);
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
        const gpt::Model &m = *model->impl;
        const gpt::ModelConfig &c = m.config();
        gpt_model_info full;
        std::memset(&full, 0, sizeof full);
        full.struct_size = std::min<uint32_t>(info->struct_size, sizeof full);
        full.arch = c.arch;
        full.n_layers = c.n_layers;
        full.d_model = c.d_model;
        full.n_heads = c.n_heads;
        full.n_kv_heads = c.n_kv_heads;
        full.head_dim = c.head_dim;
        full.d_ff = c.d_ff;
        full.vocab_size = c.vocab_size;
        full.context_length = c.context_length;
        full.file_dtype = (uint32_t)m.file_dtype();
        full.weight_dtype = (uint32_t)m.weight_dtype();
        full.device = m.device().ordinal();
        full.bos_token = c.bos_id;
        full.eos_token = c.eos_id;
        full.flags = (c.tied_head ? GPT_MODEL_INFO_TIED_HEAD : 0) | (c.qkv_bias ? GPT_MODEL_INFO_QKV_BIAS : 0) |
                     (m.tokenizer() ? GPT_MODEL_INFO_HAS_TOKENIZER : 0);
        full.norm_eps = c.norm_eps;
        full.rope_theta = c.rope_theta;
        full.n_params = gpt::parameter_count(c);
        full.host_bytes = m.host_bytes();
        full.device_bytes = m.device_bytes();
        std::snprintf(full.name, sizeof full.name, "%s", c.name.c_str());
        std::memcpy(info, &full, full.struct_size);
    });
}

} // extern "C"
