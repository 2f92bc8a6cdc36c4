// api_chat.cpp - gpt_chat_apply_template: the model's chat template rendered over a
// conversation. (Placeholder until the template renderer lands: every model is refused.)
#include "api/handles.h"

using gpt::api::guarded;

extern "C" {

gpt_status gpt_chat_apply_template(const gpt_model *model, const gpt_chat_message *messages, size_t n_messages,
                                   uint32_t flags, char *buf, size_t cap, size_t *n_bytes) {
    (void)messages, (void)n_messages, (void)flags, (void)buf, (void)cap;
    return guarded(nullptr, [&] {
        if (!model) gpt::fail(GPT_ERR_INVALID_ARG, "model is NULL");
        if (!n_bytes) gpt::fail(GPT_ERR_INVALID_ARG, "n_bytes is NULL");
        *n_bytes = 0;
        gpt::fail(GPT_ERR_UNSUPPORTED, "%s: chat templates are not supported by this build", model->impl->source().c_str());
    });
}

} // extern "C"
