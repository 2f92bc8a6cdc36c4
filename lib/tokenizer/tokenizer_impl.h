// tokenizer_impl.h - internal: the validated vocabulary and the behaviour both tokenizer
// families share (BOS, special-token splitting, piece tables, decoding). The families
// (bpe_tokenizer.cpp, spm_tokenizer.cpp) supply text encoding and the piece spelling.
// Everything here is built in the constructor and read-only afterwards.
#pragma once

#include "tokenizer/bpe_merge.h"
#include "tokenizer/special_matcher.h"
#include "tokenizer/tokenizer.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpt::detail {

// Short, printable rendering of a token string for error messages.
std::string quote(std::string_view s);

class TokenizerBase : public Tokenizer {
public:
    void encode(std::string_view text, bool add_bos, bool parse_special, std::vector<int32_t> &out) const override;
    std::string piece(int32_t id, bool render_special) const override;
    std::string decode(const int32_t *ids, size_t n, bool render_special, bool continues) const override;
    bool strips_leading_space() const override { return strip_leading_space_; }
    uint32_t vocab_size() const override { return (uint32_t)tokens_.size(); }
    int32_t bos_id() const override { return bos_id_; }
    int32_t eos_id() const override { return eos_id_; }
    bool default_add_bos() const override { return default_add_bos_; }
    const std::string &token_text(int32_t id) const override;
    TokenType token_type(int32_t id) const override;
    int32_t find_token(std::string_view s) const override;

protected:
    // Validates data (throws GPT_ERR_FORMAT naming source and the entry) and builds the
    // string map, the merge table and the special-token matcher. Subclasses fill pieces_.
    TokenizerBase(const TokenizerData &data, const std::string &source);

    // Encodes text that holds no special tokens (or is to be read as plain text); at_start:
    // the text begins the caller's text (SPM's "first segment" space prefix rule).
    virtual void encode_text(std::string_view text, bool at_start, std::vector<int32_t> &out) const = 0;

    // The id of s for use in encoding plain text: -1 when absent or of a type text never
    // produces (CONTROL, UNUSED, and BYTE unless bytes_in_text).
    int32_t lookup_text(std::string_view s, bool bytes_in_text) const;
    int32_t type_of(int32_t id) const { return types_.empty() ? TOKEN_NORMAL : types_[id]; }
    void check_id(int32_t id) const;

    // Ranks pairs by the merges list (lower rank first).
    class MergeRanker : public PairRanker {
    public:
        explicit MergeRanker(const TokenizerBase &t) : t_(t) {}
        bool rank(int32_t left, int32_t right, PairMerge *m) const override;

    private:
        const TokenizerBase &t_;
    };

    std::string source_;
    std::vector<std::string> tokens_;
    std::vector<int32_t> types_;
    std::vector<float> scores_;
    std::unordered_map<std::string_view, int32_t> by_string_;  // views into tokens_
    // (left id << 32 | right id) -> (rank, merged id)
    std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
    SpecialMatcher specials_;
    std::vector<std::string> pieces_;   // [vocab] bytes each token decodes to
    std::vector<bool> hidden_;          // [vocab] CONTROL/UNKNOWN: "" unless render_special
    static constexpr uint8_t kStripLeft = 1, kStripRight = 2;
    std::vector<uint8_t> strip_;        // [vocab] added tokens' lstrip/rstrip flags
    int32_t bos_id_ = -1, eos_id_ = -1, unk_id_ = -1, pad_id_ = -1;
    bool default_add_bos_ = false;
    bool strip_leading_space_ = false;
};

std::unique_ptr<Tokenizer> make_bpe_tokenizer(const TokenizerData &data, const std::string &source);
std::unique_ptr<Tokenizer> make_spm_tokenizer(const TokenizerData &data, const std::string &source);
std::unique_ptr<Tokenizer> make_char_tokenizer(const TokenizerData &data, const std::string &source);

} // namespace gpt::detail
