// tokenizer_data.cpp - tokenizer.* metadata <-> TokenizerData.
#include "tokenizer/tokenizer_data.h"

#include "core/error.h"
#include "format/keys.h"

namespace gpt {

const char *tokenizer_kind_name(TokenizerKind k) {
    switch (k) {
    case TokenizerKind::NONE: return "none";
    case TokenizerKind::BPE: return "bpe";
    case TokenizerKind::SPM: return "spm";
    case TokenizerKind::CHAR: return "char";
    }
    return "?";
}

const char *pretokenizer_name(PreTokenizer p) {
    switch (p) {
    case PreTokenizer::NONE: return "none";
    case PreTokenizer::GPT2: return "gpt2";
    case PreTokenizer::LLAMA3: return "llama3";
    case PreTokenizer::QWEN2: return "qwen2";
    case PreTokenizer::O200K: return "o200k";
    case PreTokenizer::GPT2_DIGITS: return "gpt2_digits";
    }
    return "?";
}

const char *space_prefix_rule_name(SpacePrefixRule r) {
    switch (r) {
    case SpacePrefixRule::EVERY_SEGMENT: return "every_segment";
    case SpacePrefixRule::UNLESS_SPACE: return "unless_space";
    case SpacePrefixRule::FIRST_SEGMENT: return "first_segment";
    }
    return "?";
}

TokenizerData TokenizerData::from_metadata(const format::Metadata &m, uint32_t vocab_size, const std::string &source) {
    TokenizerData t;
    const char *src = source.c_str();
    std::string kind = "none";
    m.get_str(keys::kTokModel, &kind);
    if (kind == "none") return t;
    if (kind == "bpe") t.kind = TokenizerKind::BPE;
    else if (kind == "spm") t.kind = TokenizerKind::SPM;
    else if (kind == "char") t.kind = TokenizerKind::CHAR;
    else fail(GPT_ERR_UNSUPPORTED, "%s: unknown tokenizer.model '%s'", src, kind.c_str());

    std::string pre = "none";
    m.get_str(keys::kTokPre, &pre);
    if (pre == "none") t.pre = PreTokenizer::NONE;
    else if (pre == "gpt2") t.pre = PreTokenizer::GPT2;
    else if (pre == "llama3") t.pre = PreTokenizer::LLAMA3;
    else if (pre == "qwen2") t.pre = PreTokenizer::QWEN2;
    else if (pre == "o200k") t.pre = PreTokenizer::O200K;
    else if (pre == "gpt2_digits") t.pre = PreTokenizer::GPT2_DIGITS;
    else fail(GPT_ERR_UNSUPPORTED, "%s: unknown tokenizer.pre '%s'", src, pre.c_str());

    const auto *tokens = m.get_strs(keys::kTokTokens);
    if (!tokens) fail(GPT_ERR_FORMAT, "%s: tokenizer.tokens is missing", src);
    if (tokens->size() != vocab_size)
        fail(GPT_ERR_FORMAT, "%s: tokenizer.tokens has %zu entries, model.vocab_size is %u", src, tokens->size(), vocab_size);
    t.tokens = *tokens;
    if (const auto *s = m.get_f32s(keys::kTokScores)) {
        if (s->size() != vocab_size) fail(GPT_ERR_FORMAT, "%s: tokenizer.scores has %zu entries, expected %u", src, s->size(), vocab_size);
        t.scores = *s;
    }
    if (const auto *ty = m.get_i32s(keys::kTokTypes)) {
        if (ty->size() != vocab_size) fail(GPT_ERR_FORMAT, "%s: tokenizer.types has %zu entries, expected %u", src, ty->size(), vocab_size);
        t.types = *ty;
    }
    if (const auto *mg = m.get_strs(keys::kTokMerges)) t.merges = *mg;
    auto id = [&](const char *key, int32_t *out) {
        if (m.get_i32(key, out) && (*out < -1 || *out >= (int64_t)vocab_size))
            fail(GPT_ERR_FORMAT, "%s: %s is %d, outside the vocabulary", src, key, *out);
    };
    id(keys::kTokBos, &t.bos_id);
    id(keys::kTokEos, &t.eos_id);
    id(keys::kTokUnk, &t.unk_id);
    id(keys::kTokPad, &t.pad_id);
    uint32_t flag = 0;
    t.add_bos = m.get_u32(keys::kTokAddBos, &flag) && flag != 0;
    flag = 1;
    m.get_u32(keys::kTokAddSpacePrefix, &flag);
    t.add_space_prefix = flag != 0;
    std::string rule = "every_segment";
    m.get_str(keys::kTokSpacePrefixRule, &rule);
    if (rule == "every_segment") t.prefix_rule = SpacePrefixRule::EVERY_SEGMENT;
    else if (rule == "unless_space") t.prefix_rule = SpacePrefixRule::UNLESS_SPACE;
    else if (rule == "first_segment") t.prefix_rule = SpacePrefixRule::FIRST_SEGMENT;
    else fail(GPT_ERR_UNSUPPORTED, "%s: unknown %s '%s'", src, keys::kTokSpacePrefixRule, rule.c_str());
    // Files written before the key existed: Llama-3's pre-tokenizer implied it.
    flag = t.pre == PreTokenizer::LLAMA3 ? 1 : 0;
    m.get_u32(keys::kTokIgnoreMerges, &flag);
    t.ignore_merges = flag != 0;
    auto ids = [&](const char *key, std::vector<int32_t> *out) {
        const auto *v = m.get_i32s(key);
        if (!v) return;
        for (int32_t x : *v)
            if (x < 0 || x >= (int64_t)vocab_size) fail(GPT_ERR_FORMAT, "%s: %s holds %d, outside the vocabulary", src, key, x);
        *out = *v;
    };
    std::string norm = "none";
    m.get_str(keys::kTokNormalizer, &norm);
    if (norm == "none") t.normalizer = TextNormalizer::NONE;
    else if (norm == "nfc") t.normalizer = TextNormalizer::NFC;
    else fail(GPT_ERR_UNSUPPORTED, "%s: unknown %s '%s'", src, keys::kTokNormalizer, norm.c_str());
    // A character vocabulary maps each character as written; normalizing would change them.
    if (t.kind == TokenizerKind::CHAR && t.normalizer != TextNormalizer::NONE)
        fail(GPT_ERR_UNSUPPORTED, "%s: %s '%s' with a character vocabulary", src, keys::kTokNormalizer, norm.c_str());
    ids(keys::kTokLstripIds, &t.lstrip_ids);
    ids(keys::kTokRstripIds, &t.rstrip_ids);
    return t;
}

void TokenizerData::to_metadata(format::Metadata &m) const {
    using format::MetaValue;
    m.set(keys::kTokModel, MetaValue::of_str(tokenizer_kind_name(kind)));
    if (kind == TokenizerKind::NONE) return;
    m.set(keys::kTokPre, MetaValue::of_str(pretokenizer_name(pre)));
    m.set(keys::kTokTokens, MetaValue::of_strs(tokens));
    if (!scores.empty()) m.set(keys::kTokScores, MetaValue::of_f32s(scores));
    if (!types.empty()) m.set(keys::kTokTypes, MetaValue::of_i32s(types));
    if (!merges.empty()) m.set(keys::kTokMerges, MetaValue::of_strs(merges));
    m.set(keys::kTokBos, MetaValue::of_i32(bos_id));
    m.set(keys::kTokEos, MetaValue::of_i32(eos_id));
    m.set(keys::kTokUnk, MetaValue::of_i32(unk_id));
    m.set(keys::kTokPad, MetaValue::of_i32(pad_id));
    m.set(keys::kTokAddBos, MetaValue::of_u32(add_bos ? 1 : 0));
    m.set(keys::kTokAddSpacePrefix, MetaValue::of_u32(add_space_prefix ? 1 : 0));
    m.set(keys::kTokSpacePrefixRule, MetaValue::of_str(space_prefix_rule_name(prefix_rule)));
    m.set(keys::kTokIgnoreMerges, MetaValue::of_u32(ignore_merges ? 1 : 0));
    m.set(keys::kTokNormalizer, MetaValue::of_str(normalizer == TextNormalizer::NFC ? "nfc" : "none"));
    if (!lstrip_ids.empty()) m.set(keys::kTokLstripIds, MetaValue::of_i32s(lstrip_ids));
    if (!rstrip_ids.empty()) m.set(keys::kTokRstripIds, MetaValue::of_i32s(rstrip_ids));
}

} // namespace gpt
