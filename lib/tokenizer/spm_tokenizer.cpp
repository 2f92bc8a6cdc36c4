// spm_tokenizer.cpp - SentencePiece-style BPE with byte fallback (Llama-2, TinyLlama,
// llama2.c, Phi-3, Mistral, Gemma): spaces become "▁" (one prepended with add_space_prefix,
// where the source's prefix rule puts one), each character is a
// token or falls back to its <0xNN> byte tokens (else <unk>, consecutive ones fused), then
// the whole segment merges by rank when the data has merges, else by the merged token's
// score (llama2.c / SentencePiece: highest score first, leftmost on ties).
#include "tokenizer/tokenizer_impl.h"

#include "core/error.h"
#include "tokenizer/nfc.h"
#include "tokenizer/utf8.h"

#include <array>
#include <cstdio>

namespace gpt::detail {

namespace {

const char kSpace[] = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK "▁"

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// Hugging Face's decoder chain Replace("▁", " ") + ByteFallback: "<0xNN>" is byte NN, any
// other token has its "▁" replaced by spaces.
std::string spm_piece(const std::string &token) {
    if (token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>') {
        int hi = hex_value(token[3]), lo = hex_value(token[4]);
        if (hi >= 0 && lo >= 0) return std::string(1, (char)(hi * 16 + lo));
    }
    std::string out;
    size_t pos = 0;
    while (pos < token.size()) {
        if (token.compare(pos, 3, kSpace) == 0) {
            out += ' ';
            pos += 3;
        } else {
            out += token[pos++];
        }
    }
    return out;
}

class SpmTokenizer final : public TokenizerBase {
public:
    SpmTokenizer(const TokenizerData &d, const std::string &source)
        : TokenizerBase(d, source), add_space_prefix_(d.add_space_prefix), prefix_rule_(d.prefix_rule), merge_ranker_(*this),
          score_ranker_(*this) {
        if (merges_.empty() && scores_.empty())
            fail(GPT_ERR_FORMAT, "%s: SentencePiece-style tokenizer has neither merges nor scores to merge by", source_.c_str());
        by_rank_ = !merges_.empty();
        nfc_ = d.normalizer == TextNormalizer::NFC;
        strip_leading_space_ = add_space_prefix_;
        pieces_.resize(tokens_.size());
        for (size_t id = 0; id < tokens_.size(); ++id) pieces_[id] = spm_piece(tokens_[id]);
        have_all_bytes_ = true;
        for (int b = 0; b < 256; ++b) {
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", b);
            auto it = by_string_.find(name);
            byte_id_[b] = it == by_string_.end() ? -1 : it->second;
            if (byte_id_[b] < 0) have_all_bytes_ = false;
        }
    }

protected:
    void encode_text(std::string_view raw, bool at_start, std::vector<int32_t> &out) const override {
        if (raw.empty()) return;
        std::string normalized;
        if (nfc_ && may_change_under_nfc(raw)) normalized = nfc(raw);
        const std::string_view text = normalized.empty() ? raw : std::string_view(normalized);
        std::string norm;
        norm.reserve(text.size() + 8);
        if (wants_prefix(text, at_start)) norm += kSpace;
        for (char c : text) {
            if (c == ' ') norm += kSpace;
            else norm += c;
        }
        std::vector<int32_t> syms;
        syms.reserve(norm.size());
        const auto *s = reinterpret_cast<const unsigned char *>(norm.data());
        bool last_unk = false;
        size_t pos = 0;
        while (pos < norm.size()) {
            utf8::Unit u = utf8::decode(s + pos, norm.size() - pos);
            int32_t id = u.cp == utf8::kInvalid ? -1 : lookup_text(std::string_view(norm.data() + pos, u.len), false);
            if (id >= 0) {
                syms.push_back(id);
                last_unk = false;
            } else if (bytes_cover(s + pos, u.len)) {
                for (uint32_t k = 0; k < u.len; ++k) syms.push_back(byte_id_[s[pos + k]]);
                last_unk = false;
            } else if (unk_id_ >= 0) {
                if (!last_unk) syms.push_back(unk_id_);  // fuse_unk, as Llama's tokenizer.json
                last_unk = true;
            }  // no <unk> either: the character is dropped (Hugging Face does the same)
            pos += u.len;
        }
        if (by_rank_) bpe_merge(syms, merge_ranker_);
        else bpe_merge(syms, score_ranker_);
        out.insert(out.end(), syms.begin(), syms.end());
    }

private:
    // Hugging Face's Prepend normalizer prefixes every non-empty segment; Metaspace only one
    // that does not already start with "▁" (a space, or a literal U+2581), and with
    // prepend_scheme "first" only the segment at the start of the text.
    bool wants_prefix(std::string_view text, bool at_start) const {
        if (!add_space_prefix_) return false;
        if (prefix_rule_ == SpacePrefixRule::EVERY_SEGMENT) return true;
        if (text[0] == ' ' || text.compare(0, 3, kSpace) == 0) return false;
        return prefix_rule_ == SpacePrefixRule::UNLESS_SPACE || at_start;
    }

    bool bytes_cover(const unsigned char *s, uint32_t len) const {
        if (have_all_bytes_) return true;
        for (uint32_t k = 0; k < len; ++k)
            if (byte_id_[s[k]] < 0) return false;
        return true;
    }

    // llama2.c's rule: a pair merges when its concatenation is a token; best score first.
    class ScoreRanker : public PairRanker {
    public:
        explicit ScoreRanker(const SpmTokenizer &t) : t_(t) {}
        bool rank(int32_t left, int32_t right, PairMerge *m) const override {
            std::string joined = t_.tokens_[left];
            joined += t_.tokens_[right];
            int32_t id = t_.lookup_text(joined, false);
            if (id < 0) return false;
            m->priority = -(double)t_.scores_[id];
            m->merged = id;
            return true;
        }

    private:
        const SpmTokenizer &t_;
    };

    bool add_space_prefix_;
    SpacePrefixRule prefix_rule_;
    bool by_rank_ = false;
    bool nfc_ = false;
    bool have_all_bytes_ = false;
    MergeRanker merge_ranker_;
    ScoreRanker score_ranker_;
    std::array<int32_t, 256> byte_id_{};
};

} // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(const TokenizerData &data, const std::string &source) {
    return std::make_unique<SpmTokenizer>(data, source);
}

} // namespace gpt::detail
