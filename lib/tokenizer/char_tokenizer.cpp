// char_tokenizer.cpp - character-level vocabularies (nanoGPT's shakespeare_char, minGPT's
// chargpt, the "Let's build GPT" lecture): every token is one Unicode character, text is
// encoded one character at a time, and a character outside the vocabulary is an error
// naming it and its byte offset (the scripts' stoi lookup would raise KeyError there).
#include "tokenizer/tokenizer_impl.h"

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace gpt::detail {

namespace {

class CharTokenizer final : public TokenizerBase {
public:
    CharTokenizer(const TokenizerData &d, const std::string &source) : TokenizerBase(d, source) {
        pieces_.resize(tokens_.size());
        for (size_t id = 0; id < tokens_.size(); ++id) {
            const std::string &s = tokens_[id];
            // Placeholders that pad the vocabulary to the model's size decode to nothing.
            if (type_of((int32_t)id) == TOKEN_UNUSED) continue;
            const utf8::Unit u = s.empty() ? utf8::Unit{utf8::kInvalid, 1}
                                           : utf8::decode(reinterpret_cast<const unsigned char *>(s.data()), s.size());
            if (u.cp == utf8::kInvalid || u.len != s.size())
                fail(GPT_ERR_FORMAT, "%s: character token %zu is %s, not a single character", source.c_str(), id, quote(s).c_str());
            pieces_[id] = s;
        }
    }

protected:
    void encode_text(std::string_view text, bool, std::vector<int32_t> &out) const override {
        const auto *p = reinterpret_cast<const unsigned char *>(text.data());
        for (size_t pos = 0; pos < text.size();) {
            const utf8::Unit u = utf8::decode(p + pos, text.size() - pos);
            if (u.cp == utf8::kInvalid)
                fail(GPT_ERR_INVALID_ARG, "byte %zu of the text (0x%02x) is not valid UTF-8; this model's vocabulary is characters",
                     pos, p[pos]);
            const int32_t id = lookup_text(text.substr(pos, u.len), false);
            if (id < 0)
                fail(GPT_ERR_INVALID_ARG, "the character %s (U+%04X) at byte %zu of the text is not in this model's vocabulary of %zu characters",
                     quote(text.substr(pos, u.len)).c_str(), u.cp, pos, tokens_.size());
            out.push_back(id);
            pos += u.len;
        }
    }
};

} // namespace

std::unique_ptr<Tokenizer> make_char_tokenizer(const TokenizerData &data, const std::string &source) {
    return std::make_unique<CharTokenizer>(data, source);
}

} // namespace gpt::detail
