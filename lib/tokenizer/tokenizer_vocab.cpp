// tokenizer_vocab.cpp - TokenizerBase's constructor: validates a TokenizerData before
// anything relies on it (hostile files must fail with a message, never crash) and builds
// the lookup tables. Every rejection is GPT_ERR_FORMAT naming the source and the entry.
#include "tokenizer/tokenizer_impl.h"

#include "core/error.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace gpt::detail {

std::string quote(std::string_view s) {
    std::string out = "'";
    size_t shown = 0;
    for (char ch : s) {
        if (++shown > 48) {
            out += "...";
            break;
        }
        unsigned char c = (unsigned char)ch;
        if (c < 0x20 || c == 0x7F || c == '\'' || c == '\\') {
            char buf[8];
            snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out + "'";
}

namespace {

bool is_byte_token(const std::string &s) {
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
    return s.size() == 6 && s[0] == '<' && s[1] == '0' && s[2] == 'x' && hex(s[3]) && hex(s[4]) && s[5] == '>';
}

} // namespace

TokenizerBase::TokenizerBase(const TokenizerData &d, const std::string &source)
    : source_(source), tokens_(d.tokens), types_(d.types), scores_(d.scores) {
    const char *src = source_.c_str();
    if (tokens_.empty()) fail(GPT_ERR_FORMAT, "%s: the tokenizer has no tokens", src);
    if (tokens_.size() >= (size_t)std::numeric_limits<int32_t>::max())
        fail(GPT_ERR_FORMAT, "%s: the tokenizer has %zu tokens, too many", src, tokens_.size());
    const int32_t n = (int32_t)tokens_.size();
    hidden_.assign(tokens_.size(), false);
    if (!scores_.empty() && scores_.size() != tokens_.size())
        fail(GPT_ERR_FORMAT, "%s: tokenizer has %zu scores for %d tokens", src, scores_.size(), n);
    if (!types_.empty() && types_.size() != tokens_.size())
        fail(GPT_ERR_FORMAT, "%s: tokenizer has %zu token types for %d tokens", src, types_.size(), n);

    for (int32_t id = 0; id < n; ++id) {
        const std::string &s = tokens_[id];
        int32_t type = type_of(id);
        if (type < TOKEN_NORMAL || type > TOKEN_BYTE)
            fail(GPT_ERR_FORMAT, "%s: token %d %s has type %d, not one of 1..6", src, id, quote(s).c_str(), type);
        hidden_[id] = type == TOKEN_CONTROL || type == TOKEN_UNKNOWN;
        if (!scores_.empty() && std::isnan(scores_[id]))
            fail(GPT_ERR_FORMAT, "%s: token %d %s has a NaN score", src, id, quote(s).c_str());
        if (s.empty()) {
            if (type == TOKEN_NORMAL || type == TOKEN_BYTE || type == TOKEN_USER_DEFINED)
                fail(GPT_ERR_FORMAT, "%s: token %d is an empty string", src, id);
            continue;  // an empty control/unknown/unused token is never looked up
        }
        if (type == TOKEN_BYTE && !is_byte_token(s))
            fail(GPT_ERR_FORMAT, "%s: byte token %d is %s, not <0xNN>", src, id, quote(s).c_str());
        auto [it, inserted] = by_string_.emplace(std::string_view(s), id);
        if (!inserted) {
            // Two ids with one string make string -> id ambiguous. UNUSED entries (padding
            // slots some vocabularies repeat) never take part in lookups, so they may.
            int32_t other = it->second;
            if (type == TOKEN_UNUSED) continue;
            if (type_of(other) != TOKEN_UNUSED)
                fail(GPT_ERR_FORMAT, "%s: tokens %d and %d are both %s", src, other, id, quote(s).c_str());
            it->second = id;
        }
        if (type == TOKEN_CONTROL || type == TOKEN_USER_DEFINED) specials_.add(s, id);
    }

    auto check_special = [&](const char *what, int32_t v) {
        if (v < -1 || v >= n) fail(GPT_ERR_FORMAT, "%s: tokenizer %s id %d is outside the vocabulary of %d", src, what, v, n);
        return v;
    };
    bos_id_ = check_special("bos", d.bos_id);
    eos_id_ = check_special("eos", d.eos_id);
    unk_id_ = check_special("unk", d.unk_id);
    pad_id_ = check_special("pad", d.pad_id);
    default_add_bos_ = d.add_bos;
    strip_.assign(tokens_.size(), 0);
    auto strip_flags = [&](const char *what, const std::vector<int32_t> &ids, uint8_t flag) {
        for (int32_t id : ids) {
            if (id < 0 || id >= n) fail(GPT_ERR_FORMAT, "%s: tokenizer %s holds id %d, outside the vocabulary of %d", src, what, id, n);
            strip_[id] |= flag;
        }
    };
    strip_flags("lstrip_ids", d.lstrip_ids, kStripLeft);
    strip_flags("rstrip_ids", d.rstrip_ids, kStripRight);

    if (d.merges.size() >= (size_t)std::numeric_limits<int32_t>::max())
        fail(GPT_ERR_FORMAT, "%s: tokenizer has %zu merges, too many", src, d.merges.size());
    merges_.reserve(d.merges.size());
    std::string joined;
    for (size_t i = 0; i < d.merges.size(); ++i) {
        const std::string &m = d.merges[i];
        size_t sp = m.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == m.size() || m.find(' ', sp + 1) != std::string::npos)
            fail(GPT_ERR_FORMAT, "%s: merge %zu %s is not two tokens separated by one space", src, i, quote(m).c_str());
        std::string_view a(m.data(), sp), b(m.data() + sp + 1, m.size() - sp - 1);
        auto ia = by_string_.find(a), ib = by_string_.find(b);
        if (ia == by_string_.end())
            fail(GPT_ERR_FORMAT, "%s: merge %zu %s: %s is not in the vocabulary", src, i, quote(m).c_str(), quote(a).c_str());
        if (ib == by_string_.end())
            fail(GPT_ERR_FORMAT, "%s: merge %zu %s: %s is not in the vocabulary", src, i, quote(m).c_str(), quote(b).c_str());
        joined.assign(a);
        joined.append(b);
        auto ij = by_string_.find(joined);
        if (ij == by_string_.end())
            fail(GPT_ERR_FORMAT, "%s: merge %zu %s: the merged token %s is not in the vocabulary", src, i, quote(m).c_str(),
                 quote(joined).c_str());
        // A repeated pair takes the rank of its last occurrence, as Hugging Face's BPE
        // (which collects the list into a map) does.
        uint64_t key = ((uint64_t)(uint32_t)ia->second << 32) | (uint32_t)ib->second;
        merges_[key] = {(int32_t)i, ij->second};
    }
}

} // namespace gpt::detail
