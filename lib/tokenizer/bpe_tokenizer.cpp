// bpe_tokenizer.cpp - byte-level BPE (GPT-2, Llama-3, Qwen2, Phi-4-mini, SmolLM2): pre-tokenize
// with the source's split rule, spell each word's bytes through bytes_to_unicode, merge by
// rank. With Hugging Face's ignore_merges (Llama-3) a word that is itself a token is emitted whole.
#include "tokenizer/tokenizer_impl.h"

#include "tokenizer/byte_unicode.h"
#include "tokenizer/nfc.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/utf8.h"

#include <array>

namespace gpt::detail {

namespace {

// Hugging Face's ByteLevel decoder: a token whose every character is in the byte mapping's
// image decodes to those bytes; any other token (an added token spelled in plain text)
// decodes to its own UTF-8.
std::string byte_level_piece(const std::string &token) {
    std::string out;
    const auto *s = reinterpret_cast<const unsigned char *>(token.data());
    size_t pos = 0;
    while (pos < token.size()) {
        utf8::Unit u = utf8::decode(s + pos, token.size() - pos);
        int b = u.cp == utf8::kInvalid ? -1 : codepoint_to_byte(u.cp);
        if (b < 0) return token;
        out += (char)b;
        pos += u.len;
    }
    return out;
}

class BpeTokenizer final : public TokenizerBase {
public:
    BpeTokenizer(const TokenizerData &d, const std::string &source) : TokenizerBase(d, source), pre_(d.pre), ranker_(*this) {
        ignore_merges_ = d.ignore_merges;
        nfc_ = d.normalizer == TextNormalizer::NFC;
        pieces_.resize(tokens_.size());
        for (size_t id = 0; id < tokens_.size(); ++id) pieces_[id] = byte_level_piece(tokens_[id]);
        for (int b = 0; b < 256; ++b) byte_id_[b] = lookup_text(byte_to_utf8((uint8_t)b), false);
    }

protected:
    void encode_text(std::string_view raw, bool, std::vector<int32_t> &out) const override {
        std::string normalized;
        if (nfc_ && may_change_under_nfc(raw)) normalized = nfc(raw);
        const std::string_view text = normalized.empty() ? raw : std::string_view(normalized);
        std::vector<TextSpan> words;
        pretokenize(pre_, text, words);
        std::vector<int32_t> syms;
        std::string mapped;
        for (const TextSpan &w : words) {
            if (ignore_merges_) {
                mapped.clear();
                for (size_t i = w.begin; i < w.end; ++i) mapped += byte_to_utf8((uint8_t)text[i]);
                int32_t id = lookup_text(mapped, false);
                if (id >= 0) {
                    out.push_back(id);
                    continue;
                }
            }
            syms.clear();
            for (size_t i = w.begin; i < w.end; ++i) {
                int32_t id = byte_id_[(uint8_t)text[i]];
                // A vocabulary missing a byte's character: <unk> if there is one, else the
                // byte is dropped (Hugging Face's BPE without unk_token does the same).
                if (id < 0) id = unk_id_;
                if (id >= 0) syms.push_back(id);
            }
            bpe_merge(syms, ranker_);
            out.insert(out.end(), syms.begin(), syms.end());
        }
    }

private:
    PreTokenizer pre_;
    bool ignore_merges_ = false;
    bool nfc_ = false;
    MergeRanker ranker_;
    std::array<int32_t, 256> byte_id_{};
};

} // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(const TokenizerData &data, const std::string &source) {
    return std::make_unique<BpeTokenizer>(data, source);
}

} // namespace gpt::detail
