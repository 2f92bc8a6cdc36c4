// tokenizer.cpp - Tokenizer::create (picks the family) and the behaviour both families
// share: BOS, splitting text at special tokens, pieces and decoding. Only gpt::Error
// escapes; encode never throws for any input bytes, except with a character vocabulary
// (a character outside it is GPT_ERR_INVALID_ARG).
#include "tokenizer/tokenizer_impl.h"

#include "core/error.h"
#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"

#include <algorithm>

namespace gpt {

std::unique_ptr<Tokenizer> Tokenizer::create(const TokenizerData &data, const std::string &source) {
    switch (data.kind) {
    case TokenizerKind::BPE:
        if (data.pre == PreTokenizer::NONE)
            fail(GPT_ERR_UNSUPPORTED, "%s: byte-level BPE with pre-tokenizer '%s' is not supported (gpt2, llama3, qwen2, o200k, "
                                      "gpt2_digits are)", source.c_str(), pretokenizer_name(data.pre));
        return detail::make_bpe_tokenizer(data, source);
    case TokenizerKind::SPM:
        return detail::make_spm_tokenizer(data, source);
    case TokenizerKind::CHAR:
        return detail::make_char_tokenizer(data, source);
    case TokenizerKind::NONE:
        break;
    }
    fail(GPT_ERR_FORMAT, "%s: the file carries no tokenizer", source.c_str());
}

namespace detail {

void TokenizerBase::check_id(int32_t id) const {
    if (id < 0 || (size_t)id >= tokens_.size())
        fail(GPT_ERR_INVALID_ARG, "token id %d is outside the vocabulary (%zu tokens)", id, tokens_.size());
}

const std::string &TokenizerBase::token_text(int32_t id) const {
    check_id(id);
    return tokens_[id];
}

TokenType TokenizerBase::token_type(int32_t id) const {
    check_id(id);
    return (TokenType)type_of(id);
}

int32_t TokenizerBase::find_token(std::string_view s) const {
    auto it = by_string_.find(s);
    return it == by_string_.end() ? -1 : it->second;
}

int32_t TokenizerBase::lookup_text(std::string_view s, bool bytes_in_text) const {
    auto it = by_string_.find(s);
    if (it == by_string_.end()) return -1;
    int32_t type = type_of(it->second);
    if (type == TOKEN_CONTROL || type == TOKEN_UNUSED || (type == TOKEN_BYTE && !bytes_in_text)) return -1;
    return it->second;
}

bool TokenizerBase::MergeRanker::rank(int32_t left, int32_t right, PairMerge *m) const {
    auto it = t_.merges_.find(((uint64_t)(uint32_t)left << 32) | (uint32_t)right);
    if (it == t_.merges_.end()) return false;
    m->priority = it->second.first;
    m->merged = it->second.second;
    return true;
}

namespace {

bool is_space_at(std::string_view text, size_t pos, size_t *len) {
    utf8::Unit u = utf8::decode(reinterpret_cast<const unsigned char *>(text.data()) + pos, text.size() - pos);
    *len = u.len;
    return u.cp != utf8::kInvalid && unicode::char_class(u.cp) == unicode::CC_SPACE;
}

// The end of the whitespace run starting at pos.
size_t skip_space_forward(std::string_view text, size_t pos) {
    size_t len;
    while (pos < text.size() && is_space_at(text, pos, &len)) pos += len;
    return pos;
}

// The start of the whitespace run ending at pos, not before floor.
size_t skip_space_backward(std::string_view text, size_t floor, size_t pos) {
    while (pos > floor) {
        size_t start = pos - 1;  // back to the lead byte of the previous character
        while (start > floor && pos - start < 4 && ((unsigned char)text[start] & 0xC0) == 0x80) --start;
        size_t len;
        if (!is_space_at(text, start, &len) || start + len != pos) break;
        pos = start;
    }
    return pos;
}

} // namespace

void TokenizerBase::encode(std::string_view text, bool add_bos, bool parse_special, std::vector<int32_t> &out) const {
    if (add_bos && bos_id_ >= 0) out.push_back(bos_id_);
    if (!parse_special || specials_.empty()) {
        encode_text(text, true, out);
        return;
    }
    // Leftmost-longest special matches; the text between them is encoded on its own (so
    // SPM's space prefix goes before each segment, as Hugging Face and llama.cpp do). As in
    // Hugging Face's AddedVocabulary, an lstrip/rstrip token's match widens over the
    // whitespace beside it (never back into an earlier match), and the scan goes on from
    // the end of the token itself.
    size_t start = 0, pos = 0;
    while (pos < text.size()) {
        int32_t id = -1;
        size_t len = specials_.match(text, pos, &id);
        if (len == 0) {
            ++pos;
            continue;
        }
        size_t begin = pos, end = pos + len;
        if (strip_[id] & kStripLeft) begin = skip_space_backward(text, start, begin);
        if (strip_[id] & kStripRight) end = skip_space_forward(text, end);
        if (begin > start) encode_text(text.substr(start, begin - start), start == 0, out);
        out.push_back(id);
        pos += len;
        start = std::max(start, end);
    }
    if (start < text.size()) encode_text(text.substr(start), start == 0, out);
}

std::string TokenizerBase::piece(int32_t id, bool render_special) const {
    check_id(id);
    if (hidden_[id] && !render_special) return std::string();
    return pieces_[id];
}

std::string TokenizerBase::decode(const int32_t *ids, size_t n, bool render_special, bool continues) const {
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        check_id(ids[i]);
        if (hidden_[ids[i]] && !render_special) continue;
        out += pieces_[ids[i]];
    }
    // The one space add_space_prefix put before the first word (Hugging Face's
    // Strip(" ", 1, 0) decoder on the joined text).
    if (strip_leading_space_ && !continues && !out.empty() && out[0] == ' ') out.erase(0, 1);
    return out;
}

} // namespace detail
} // namespace gpt
