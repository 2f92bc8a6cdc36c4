// tokenizer.h - text <-> token ids for the two tokenizer families a weight file can carry:
// byte-level BPE (GPT-2, Llama-3, Qwen2 pre-tokenization) and SentencePiece-style BPE with
// byte fallback (Llama-2, TinyLlama, llama2.c). Built once per model from TokenizerData;
// immutable and safe to share between threads.
#pragma once

#include "tokenizer/tokenizer_data.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpt {

class Tokenizer {
public:
    // Validates the data (duplicate or empty tokens, malformed merges, ids out of range)
    // and builds the lookup tables; throws GPT_ERR_FORMAT naming source and the entry.
    static std::unique_ptr<Tokenizer> create(const TokenizerData &data, const std::string &source);
    virtual ~Tokenizer() = default;

    // Appends the ids of text to out. add_bos: prepend the BOS token (when the model has
    // one). parse_special: special/added token strings in the text become their ids;
    // otherwise they are tokenized as plain text. Any bytes are accepted (invalid UTF-8
    // included) and never throw, except by a character vocabulary (kind CHAR), which throws
    // GPT_ERR_INVALID_ARG naming a character it lacks (or invalid UTF-8) and its byte offset.
    virtual void encode(std::string_view text, bool add_bos, bool parse_special, std::vector<int32_t> &out) const = 0;

    // The bytes a token stands for in running text: byte tokens give their byte, SPM's
    // "▁" gives a space, BPE's mapped characters give their bytes (a token spelled outside
    // the byte mapping, like an added "<tag>", gives its own UTF-8). Control and unknown
    // tokens give "" unless render_special. Throws GPT_ERR_INVALID_ARG for an id out of range.
    virtual std::string piece(int32_t id, bool render_special) const = 0;

    // Concatenated pieces, with the source's decoding rules: SPM with add_space_prefix drops
    // one space if the output starts with one (Hugging Face's Strip decoder; so a rendered
    // "<s>" first keeps the space after it: "<s> Hello"). Throws GPT_ERR_INVALID_ARG for an
    // id out of range. Detokenizer (detokenizer.h) gives the same bytes incrementally.
    // continues: the ids continue earlier text, so no space is dropped.
    virtual std::string decode(const int32_t *ids, size_t n, bool render_special, bool continues = false) const = 0;

    // Whether decode() drops a leading space from the first piece (SPM with add_space_prefix).
    virtual bool strips_leading_space() const = 0;

    virtual uint32_t vocab_size() const = 0;

    // The source's special ids (-1 when absent) and whether it prepends BOS by default.
    virtual int32_t bos_id() const = 0;
    virtual int32_t eos_id() const = 0;
    virtual bool default_add_bos() const = 0;
    // The stored token string and type (TOKEN_NORMAL when the data had no types); throw
    // GPT_ERR_INVALID_ARG for an id out of range.
    virtual const std::string &token_text(int32_t id) const = 0;
    virtual TokenType token_type(int32_t id) const = 0;
    // The id whose stored string is exactly s (any type but UNUSED), or -1.
    virtual int32_t find_token(std::string_view s) const = 0;
};

} // namespace gpt
