// api_tokenizer.cpp - text <-> tokens through the model's tokenizer, with two-call sizing.
#include "api/handles.h"

#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

#include <cstring>
#include <string>
#include <vector>

using gpt::api::guarded;

struct gpt_detokenizer {
    const gpt_model *model;
    gpt::Detokenizer impl;
};

namespace {

const gpt::Tokenizer &tokenizer_of(const gpt_model *model) {
    if (!model) gpt::fail(GPT_ERR_INVALID_ARG, "model is NULL");
    const gpt::Tokenizer *t = model->impl->tokenizer();
    if (!t) gpt::fail(GPT_ERR_UNSUPPORTED, "%s carries no tokenizer (convert it with its tokenizer files)", model->impl->source().c_str());
    return *t;
}

// Delivers bytes under the sizing rule; nul: append a terminator when there is room.
void deliver(const std::string &bytes, char *buf, size_t cap, size_t *n_bytes, bool nul) {
    if (!n_bytes) gpt::fail(GPT_ERR_INVALID_ARG, "n_bytes is NULL");
    *n_bytes = bytes.size();
    if (!buf && cap == 0) return; // size query
    if (!buf) gpt::fail(GPT_ERR_INVALID_ARG, "buf is NULL but cap is %zu", cap);
    if (bytes.size() > cap)
        gpt::fail(GPT_ERR_BUFFER_TOO_SMALL, "output needs %zu bytes, the buffer holds %zu", bytes.size(), cap);
    if (!bytes.empty()) std::memcpy(buf, bytes.data(), bytes.size());
    if (nul && bytes.size() < cap) buf[bytes.size()] = '\0';
}

void check_flags(uint32_t flags, uint32_t known, const char *what) {
    if (flags & ~known) gpt::fail(GPT_ERR_INVALID_ARG, "unknown %s flags 0x%x", what, flags & ~known);
}

} // namespace

extern "C" {

gpt_status gpt_tokenize(const gpt_model *model, const char *text, size_t text_len, uint32_t flags, int32_t *tokens,
                        uint32_t cap, uint32_t *n_tokens) {
    return guarded(nullptr, [&] {
        const gpt::Tokenizer &t = tokenizer_of(model);
        if (!n_tokens) gpt::fail(GPT_ERR_INVALID_ARG, "n_tokens is NULL");
        if (!text && text_len) gpt::fail(GPT_ERR_INVALID_ARG, "text is NULL but text_len is %zu", text_len);
        check_flags(flags, GPT_TOKENIZE_ADD_BOS | GPT_TOKENIZE_NO_BOS | GPT_TOKENIZE_PARSE_SPECIAL, "gpt_tokenize");
        if ((flags & GPT_TOKENIZE_ADD_BOS) && (flags & GPT_TOKENIZE_NO_BOS))
            gpt::fail(GPT_ERR_INVALID_ARG, "GPT_TOKENIZE_ADD_BOS and GPT_TOKENIZE_NO_BOS together");
        const bool bos = (flags & GPT_TOKENIZE_ADD_BOS) || (!(flags & GPT_TOKENIZE_NO_BOS) && t.default_add_bos());
        std::vector<int32_t> ids;
        t.encode(std::string_view(text ? text : "", text_len), bos, (flags & GPT_TOKENIZE_PARSE_SPECIAL) != 0, ids);
        if (ids.size() > UINT32_MAX) gpt::fail(GPT_ERR_INVALID_ARG, "text gives more than 2^32 tokens");
        *n_tokens = (uint32_t)ids.size();
        if (!tokens && cap == 0) return;
        if (!tokens) gpt::fail(GPT_ERR_INVALID_ARG, "tokens is NULL but cap is %u", cap);
        if (ids.size() > cap) gpt::fail(GPT_ERR_BUFFER_TOO_SMALL, "text gives %zu tokens, the buffer holds %u", ids.size(), cap);
        if (!ids.empty()) std::memcpy(tokens, ids.data(), ids.size() * sizeof(int32_t)); // empty: data() may be NULL
    });
}

gpt_status gpt_detokenize(const gpt_model *model, const int32_t *tokens, uint32_t n_tokens, uint32_t flags, char *buf,
                          size_t cap, size_t *n_bytes) {
    return guarded(nullptr, [&] {
        const gpt::Tokenizer &t = tokenizer_of(model);
        if (!tokens && n_tokens) gpt::fail(GPT_ERR_INVALID_ARG, "tokens is NULL but n_tokens is %u", n_tokens);
        check_flags(flags, GPT_DETOKENIZE_RENDER_SPECIAL | GPT_DETOKENIZE_CONTINUE, "gpt_detokenize");
        deliver(t.decode(tokens, n_tokens, (flags & GPT_DETOKENIZE_RENDER_SPECIAL) != 0, (flags & GPT_DETOKENIZE_CONTINUE) != 0),
                buf, cap, n_bytes, true);
    });
}

gpt_status gpt_token_to_piece(const gpt_model *model, int32_t token, uint32_t flags, char *buf, size_t cap,
                              size_t *n_bytes) {
    return guarded(nullptr, [&] {
        const gpt::Tokenizer &t = tokenizer_of(model);
        check_flags(flags, GPT_DETOKENIZE_RENDER_SPECIAL, "gpt_token_to_piece");
        deliver(t.piece(token, (flags & GPT_DETOKENIZE_RENDER_SPECIAL) != 0), buf, cap, n_bytes, true);
    });
}

gpt_status gpt_detokenizer_create(const gpt_model *model, uint32_t flags, gpt_detokenizer **out) {
    if (out) *out = nullptr;
    return guarded(nullptr, [&] {
        if (!out) gpt::fail(GPT_ERR_INVALID_ARG, "out is NULL");
        const gpt::Tokenizer &t = tokenizer_of(model);
        check_flags(flags, GPT_DETOKENIZE_RENDER_SPECIAL | GPT_DETOKENIZE_CONTINUE, "gpt_detokenizer_create");
        *out = new gpt_detokenizer{model, gpt::Detokenizer(t, (flags & GPT_DETOKENIZE_RENDER_SPECIAL) != 0,
                                                           (flags & GPT_DETOKENIZE_CONTINUE) != 0)};
    });
}

void gpt_detokenizer_free(gpt_detokenizer *d) {
    try {
        delete d;
    } catch (...) {
    }
}

gpt_status gpt_detokenizer_push(gpt_detokenizer *d, int32_t token, char *buf, size_t cap, size_t *n_bytes) {
    return guarded(nullptr, [&] {
        if (!d) gpt::fail(GPT_ERR_INVALID_ARG, "detokenizer is NULL");
        // The token is consumed only when its bytes are delivered: a buffer too small, a size
        // query (NULL, 0) or an allocation failure part way leaves the stream as it was.
        gpt::Detokenizer::State before = d->impl.state();
        try {
            const std::string bytes = d->impl.push(token);
            deliver(bytes, buf, cap, n_bytes, false);
        } catch (...) {
            d->impl.restore(std::move(before));
            throw;
        }
        if (!buf && cap == 0) d->impl.restore(std::move(before));
    });
}

gpt_status gpt_detokenizer_flush(gpt_detokenizer *d, char *buf, size_t cap, size_t *n_bytes) {
    return guarded(nullptr, [&] {
        if (!d) gpt::fail(GPT_ERR_INVALID_ARG, "detokenizer is NULL");
        gpt::Detokenizer::State before = d->impl.state();
        try {
            const std::string bytes = d->impl.flush();
            deliver(bytes, buf, cap, n_bytes, false);
        } catch (...) {
            d->impl.restore(std::move(before));
            throw;
        }
        if (!buf && cap == 0) d->impl.restore(std::move(before)); // a size query keeps the held bytes
    });
}

} // extern "C"
