// api_chat.cpp - gpt_chat_apply_template: the model's chat template (kept in the weight file
// by the converter) rendered over a caller's conversation by lib/chat, with two-call sizing.
#include "api/handles.h"

#include "chat/chat_template.h"
#include "chat/text.h"

#include <cstring>
#include <ctime>
#include <string>
#include <vector>

using gpt::api::guarded;

namespace {

// The text of a special token, or nullptr when the model has none (the template then sees
// it undefined, as transformers leaves out a special token the tokenizer lacks).
const std::string *token_text(const gpt::Model &m, int32_t id) {
    const std::vector<std::string> &tokens = m.tokenizer_data().tokens;
    if (!m.tokenizer() || id < 0 || (size_t)id >= tokens.size()) return nullptr;
    return &tokens[(size_t)id];
}

} // namespace

extern "C" {

gpt_status gpt_chat_apply_template(const gpt_model *model, const gpt_chat_message *messages, size_t n_messages,
                                   uint32_t flags, char *buf, size_t cap, size_t *n_bytes) {
    return guarded(nullptr, [&] {
        if (!model) gpt::fail(GPT_ERR_INVALID_ARG, "model is NULL");
        if (!n_bytes) gpt::fail(GPT_ERR_INVALID_ARG, "n_bytes is NULL");
        *n_bytes = 0;
        if (!messages && n_messages) gpt::fail(GPT_ERR_INVALID_ARG, "messages is NULL but n_messages is %zu", n_messages);
        if (flags & ~GPT_CHAT_ADD_GENERATION_PROMPT)
            gpt::fail(GPT_ERR_INVALID_ARG, "unknown gpt_chat_apply_template flags 0x%x", flags & ~GPT_CHAT_ADD_GENERATION_PROMPT);
        if (!buf && cap) gpt::fail(GPT_ERR_INVALID_ARG, "buf is NULL but cap is %zu", cap);
        const gpt::Model &m = *model->impl;
        std::vector<gpt::chat::Message> conv;
        conv.reserve(n_messages);
        for (size_t k = 0; k < n_messages; k++) {
            const gpt_chat_message &msg = messages[k];
            if (!msg.role) gpt::fail(GPT_ERR_INVALID_ARG, "messages[%zu].role is NULL", k);
            if (!msg.content) gpt::fail(GPT_ERR_INVALID_ARG, "messages[%zu].content is NULL", k);
            gpt::chat::Message c{std::string_view(msg.role), std::string_view(msg.content)};
            if (!gpt::chat::valid_utf8(c.role)) gpt::fail(GPT_ERR_INVALID_ARG, "messages[%zu].role is not valid UTF-8", k);
            if (!gpt::chat::valid_utf8(c.content)) gpt::fail(GPT_ERR_INVALID_ARG, "messages[%zu].content is not valid UTF-8", k);
            conv.push_back(c);
        }
        if (m.chat_template().empty())
            gpt::fail(GPT_ERR_UNSUPPORTED, "%s carries no chat template (convert it from a checkpoint whose tokenizer_config.json, "
                                           "chat_template.jinja or chat_template.json has one)", m.source().c_str());
        gpt::chat::TemplateInputs in;
        in.add_generation_prompt = (flags & GPT_CHAT_ADD_GENERATION_PROMPT) != 0;
        in.bos_token = token_text(m, m.tokenizer_data().bos_id);
        in.eos_token = token_text(m, m.tokenizer_data().eos_id);
        in.unk_token = token_text(m, m.tokenizer_data().unk_id);
        in.pad_token = token_text(m, m.tokenizer_data().pad_id);
        in.now = std::time(nullptr);
        std::string text;
        try {
            text = gpt::chat::apply_template(m.chat_template(), conv, in);
        } catch (const gpt::Error &e) {
            throw gpt::Error(e.status(), m.source() + ": " + e.what());
        }
        // Sizing as gpt_tokenize: the count always, NULL/0 a size query, a NUL when there is room.
        *n_bytes = text.size();
        if (!buf) return;
        if (text.size() > cap)
            gpt::fail(GPT_ERR_BUFFER_TOO_SMALL, "the rendered conversation needs %zu bytes, the buffer holds %zu", text.size(), cap);
        if (!text.empty()) std::memcpy(buf, text.data(), text.size());
        if (text.size() < cap) buf[text.size()] = '\0';
    });
}

} // extern "C"
