// tokenizer_import.cpp - Hugging Face tokenizer.json (+ tokenizer_config.json) and GPT-2's
// vocab.json + merges.txt -> TokenizerData. Only what the engine reproduces exactly is
// accepted; anything else is GPT_ERR_UNSUPPORTED naming the file and the component.
#include "tokenizer_import.h"

#include "convert/fs_util.h"

#include "core/error.h"
#include "tokenizer/nfc.h"

#include <nlohmann/json.hpp>

#include <climits>
#include <map>
#include <string_view>
#include <unordered_map>

namespace gpt {

using nlohmann::json;

namespace {

const char kSpm[] = "\xE2\x96\x81";  // "▁"

// The split patterns, verbatim as Hugging Face stores them.
const char kGpt2Pattern[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char kLlama3Pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char kQwen2Pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const char kO200kPattern[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

json parse_json_file(const std::string &path) {
    std::string text = convert::read_text_file(path);
    try {
        return json::parse(text);
    } catch (const json::exception &e) {
        fail(GPT_ERR_FORMAT, "%s: not valid JSON: %s", path.c_str(), e.what());
    }
}

// obj[key] when obj is an object holding a non-null key, else nullptr.
const json *get(const json &obj, const char *key) {
    if (!obj.is_object()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    return &*it;
}

std::string get_str(const json &obj, const char *key, const std::string &dflt = "") {
    const json *v = get(obj, key);
    return v && v->is_string() ? v->get<std::string>() : dflt;
}

bool get_bool(const json &obj, const char *key, bool dflt) {
    const json *v = get(obj, key);
    return v && v->is_boolean() ? v->get<bool>() : dflt;
}

void note(ImportNotes *notes, const std::string &text) {
    if (notes) notes->push_back(text);
}

// A token named in tokenizer_config.json: a string or {"content": "..."}.
std::string config_token(const json &cfg, const char *key) {
    const json *v = get(cfg, key);
    if (!v) return "";
    if (v->is_string()) return v->get<std::string>();
    if (v->is_object()) return get_str(*v, "content");
    return "";
}

// Token string -> the lowest id spelling it, built once the token table is final: a lookup
// per name read from the files (post-processors, config entries) must not scan the
// vocabulary, or a file with many of them costs quadratic time. Holds views into t.tokens,
// which must not change while it is in use.
class TokenIndex {
public:
    explicit TokenIndex(const TokenizerData &t) {
        by_string_.reserve(t.tokens.size());
        for (size_t i = 0; i < t.tokens.size(); ++i) by_string_.emplace(t.tokens[i], (int32_t)i); // the first id wins
    }
    int32_t find(const std::string &s) const {
        if (s.empty()) return -1;
        auto it = by_string_.find(s);
        return it == by_string_.end() ? -1 : it->second;
    }

private:
    std::unordered_map<std::string_view, int32_t> by_string_;
};

// A token id as written in the JSON, which must already be an integer: it must lie in
// [0, INT32_MAX), else GPT_ERR_FORMAT naming the file, the token and the value as written
// (read as 32 bits, 2^32 + 5 would silently become 5; as 64, 2^64 - 1 would become -1).
int32_t token_id(const std::string &path, const json &v, const std::string &token) {
    if (v.is_number_unsigned()) {
        if (v.get<uint64_t>() < (uint64_t)INT32_MAX) return (int32_t)v.get<uint64_t>();
    } else if (v.is_number_integer()) {
        const int64_t i = v.get<int64_t>();
        if (i >= 0 && i < INT32_MAX) return (int32_t)i;
    }
    fail(GPT_ERR_FORMAT, "%s: token '%s' has id %s, out of range (ids run from 0 to %d)", path.c_str(), token.c_str(),
         v.dump().c_str(), INT32_MAX - 1);
}

// id -> string table from (string, id) entries; every id in [0, n) exactly once.
void place_tokens(const std::string &path, const std::vector<std::pair<std::string, int64_t>> &entries, TokenizerData &t) {
    int64_t max_id = -1;
    for (const auto &e : entries) {
        if (e.second < 0 || e.second >= (int64_t)INT32_MAX)
            fail(GPT_ERR_FORMAT, "%s: token '%s' has id %lld, out of range", path.c_str(), e.first.c_str(), (long long)e.second);
        max_id = std::max(max_id, e.second);
    }
    // More ids than entries means a gap; say so before allocating a hostile size.
    if (max_id + 1 > (int64_t)entries.size())
        fail(GPT_ERR_FORMAT, "%s: token ids go up to %lld but there are only %zu tokens", path.c_str(), (long long)max_id,
             entries.size());
    t.tokens.assign((size_t)(max_id + 1), std::string());
    std::vector<bool> seen((size_t)(max_id + 1), false);
    for (const auto &e : entries) {
        size_t id = (size_t)e.second;
        if (seen[id] && t.tokens[id] != e.first)
            fail(GPT_ERR_FORMAT, "%s: id %zu is both '%s' and '%s'", path.c_str(), id, t.tokens[id].c_str(), e.first.c_str());
        seen[id] = true;
        t.tokens[id] = e.first;
    }
    for (size_t id = 0; id < seen.size(); ++id)
        if (!seen[id]) fail(GPT_ERR_FORMAT, "%s: no token has id %zu", path.c_str(), id);
}

void read_vocab(const std::string &path, const json &vocab, std::vector<std::pair<std::string, int64_t>> &entries) {
    if (!vocab.is_object()) fail(GPT_ERR_FORMAT, "%s: the vocabulary is not a JSON object of token -> id", path.c_str());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) {
        if (!it.value().is_number_integer())
            fail(GPT_ERR_FORMAT, "%s: vocabulary entry '%s' is not an integer id", path.c_str(), it.key().c_str());
        entries.emplace_back(it.key(), token_id(path, it.value(), it.key()));
    }
}

// Flattens a Sequence component ("normalizers" / "pretokenizers" / "processors" /
// "decoders") into its parts.
void flatten(const json *c, const char *list_key, std::vector<const json *> &out) {
    // Depth first, in order, with an explicit stack: a hostile file's Sequence nested a
    // hundred thousand deep must not overflow the call stack.
    std::vector<const json *> todo;
    if (c) todo.push_back(c);
    while (!todo.empty()) {
        const json *x = todo.back();
        todo.pop_back();
        if (get_str(*x, "type") == "Sequence") {
            if (const json *parts = get(*x, list_key))
                if (parts->is_array())
                    for (auto it = parts->rbegin(); it != parts->rend(); ++it) todo.push_back(&*it);
            continue;
        }
        out.push_back(x);
    }
}

PreTokenizer pattern_kind(const std::string &path, const std::string &pattern, ImportNotes *notes) {
    if (pattern == kGpt2Pattern) return PreTokenizer::GPT2;
    if (pattern == kLlama3Pattern) return PreTokenizer::LLAMA3;
    if (pattern == kQwen2Pattern) return PreTokenizer::QWEN2;
    if (pattern == kO200kPattern) return PreTokenizer::O200K;
    // The same with the contractions spelled in ASCII classes instead of (?i:...): equal
    // except that the original also matches U+017F LONG S as 's'.
    const std::string ascii_contractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
    const std::string ci = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
    if (pattern.compare(0, ascii_contractions.size(), ascii_contractions) == 0) {
        std::string p = ci + pattern.substr(ascii_contractions.size());
        if (p == kLlama3Pattern || p == kQwen2Pattern) {
            note(notes, path + ": split pattern spells contractions as ASCII classes; encoded as (?i:...), which differs only for U+017F");
            return p == kLlama3Pattern ? PreTokenizer::LLAMA3 : PreTokenizer::QWEN2;
        }
    }
    fail(GPT_ERR_UNSUPPORTED, "%s: unsupported pre-tokenizer split pattern '%s' (supported: the GPT-2, Llama-3, Qwen2 and o200k patterns)",
         path.c_str(), pattern.c_str());
}

// Byte-level: ByteLevel(use_regex=true) alone (GPT-2), Split(pattern) + ByteLevel(use_regex=false),
// or Digits(individual_digits=true) + ByteLevel(use_regex=true) (SmolLM2).
bool detect_byte_level(const std::string &path, const json &root, PreTokenizer *pre, ImportNotes *notes) {
    std::vector<const json *> parts;
    flatten(get(root, "pre_tokenizer"), "pretokenizers", parts);
    const json *byte_level = nullptr;
    const json *split = nullptr;
    const json *digits = nullptr;
    for (const json *p : parts) {
        std::string type = get_str(*p, "type");
        if (type == "ByteLevel") byte_level = p;
        else if (type == "Split" && !split) split = p;
        else if (type == "Digits" && !digits) digits = p;
    }
    if (!byte_level) {
        const json *dec = get(root, "decoder");
        if (dec && get_str(*dec, "type") == "ByteLevel")
            fail(GPT_ERR_UNSUPPORTED, "%s: ByteLevel decoder without a ByteLevel pre-tokenizer is not supported", path.c_str());
        return false;
    }
    if (get_bool(*byte_level, "add_prefix_space", false))
        fail(GPT_ERR_UNSUPPORTED, "%s: ByteLevel add_prefix_space=true is not supported", path.c_str());
    bool use_regex = get_bool(*byte_level, "use_regex", true);
    size_t n_split = 0;
    for (const json *p : parts) {
        std::string type = get_str(*p, "type");
        if (type == "Split") ++n_split;
        else if (type != "ByteLevel" && type != "Digits")
            fail(GPT_ERR_UNSUPPORTED, "%s: pre-tokenizer component '%s' is not supported with byte-level BPE", path.c_str(), type.c_str());
    }
    if (digits) {
        // Digits(individual_digits=false) would keep runs whole, which no engine split does.
        if (parts.size() != 2 || parts[0] != digits || parts[1] != byte_level || !use_regex ||
            !get_bool(*digits, "individual_digits", false))
            fail(GPT_ERR_UNSUPPORTED, "%s: a Digits pre-tokenizer is supported only as Digits(individual_digits=true) followed by "
                                      "ByteLevel(use_regex=true), as SmolLM2 has it", path.c_str());
        *pre = PreTokenizer::GPT2_DIGITS;
        return true;
    }
    if (n_split == 0) {
        if (!use_regex) fail(GPT_ERR_UNSUPPORTED, "%s: ByteLevel pre-tokenizer without any split regex is not supported", path.c_str());
        *pre = PreTokenizer::GPT2;
        return true;
    }
    if (n_split > 1 || use_regex)
        fail(GPT_ERR_UNSUPPORTED, "%s: a Split pre-tokenizer combined with %s is not supported", path.c_str(),
             use_regex ? "ByteLevel's own regex" : "another Split");
    if (parts.front() != split)
        fail(GPT_ERR_UNSUPPORTED, "%s: the Split pre-tokenizer must come before ByteLevel", path.c_str());
    const json *pat = get(*split, "pattern");
    std::string regex = pat ? get_str(*pat, "Regex") : "";
    if (regex.empty()) fail(GPT_ERR_UNSUPPORTED, "%s: Split pre-tokenizer without a Regex pattern is not supported", path.c_str());
    if (get_str(*split, "behavior", "Isolated") != "Isolated" || get_bool(*split, "invert", false))
        fail(GPT_ERR_UNSUPPORTED, "%s: Split pre-tokenizer must have behavior Isolated and invert false", path.c_str());
    *pre = pattern_kind(path, regex, notes);
    return true;
}

// The decoder must undo what the engine's decode() undoes: "▁" -> space and <0xNN> -> byte
// (Replace + ByteFallback + Fuse), and drop the one prefixed space exactly when one is
// prepended (Strip(" ", 1, 0)). A Metaspace decoder drops every "▁" of the first token
// instead, which differs only when that token holds more than one.
void check_spm_decoder(const std::string &path, const json &root, bool prepend, ImportNotes *notes) {
    const json *dec = get(root, "decoder");
    if (!dec) return;
    std::vector<const json *> parts;
    flatten(dec, "decoders", parts);
    bool strip = false, metaspace = false;
    for (const json *d : parts) {
        std::string type = get_str(*d, "type");
        if (type == "Strip") {
            const json *start = get(*d, "start"), *stop = get(*d, "stop");
            if (get_str(*d, "content") != " " || !start || !start->is_number_integer() || start->get<int64_t>() != 1 ||
                (stop && (!stop->is_number_integer() || stop->get<int64_t>() != 0)))
                fail(GPT_ERR_UNSUPPORTED, "%s: decoder Strip other than Strip(\" \", 1, 0) is not supported", path.c_str());
            strip = true;
        } else if (type == "Metaspace") {
            metaspace = true;
            if (get_str(*d, "prepend_scheme", get_bool(*d, "add_prefix_space", true) ? "always" : "never") != "never") strip = true;
        } else if (type == "Replace") {
            const json *pat = get(*d, "pattern");
            if (!pat || get_str(*pat, "String") != kSpm || get_str(*d, "content") != " ")
                fail(GPT_ERR_UNSUPPORTED, "%s: decoder Replace other than U+2581 -> space is not supported", path.c_str());
        } else if (type != "ByteFallback" && type != "Fuse") {
            fail(GPT_ERR_UNSUPPORTED, "%s: decoder component '%s' is not supported with SentencePiece-style BPE", path.c_str(), type.c_str());
        }
    }
    if (strip != prepend)
        fail(GPT_ERR_UNSUPPORTED, "%s: the decoder %s a leading space but the encoder %s one; not supported", path.c_str(),
             strip ? "strips" : "keeps", prepend ? "prepends" : "prepends no");
    if (metaspace)
        note(notes, path + ": Metaspace decoder drops every U+2581 of the first token; the engine drops one leading space");
}

// SentencePiece-style: spaces replaced by "▁" (normalizer Replace or Metaspace), one
// prepended (Prepend normalizer or Metaspace's prepend_scheme, which decides the rule).
bool detect_spm(const std::string &path, const json &root, bool *add_space_prefix, SpacePrefixRule *rule, bool *nfc, ImportNotes *notes) {
    bool replace = false, prepend = false;
    std::vector<const json *> norms;
    flatten(get(root, "normalizer"), "normalizers", norms);
    for (const json *n : norms) {
        std::string type = get_str(*n, "type");
        const json *pat = get(*n, "pattern");
        if (type == "Prepend" && get_str(*n, "prepend") == kSpm) {
            prepend = true;
        } else if (type == "Replace" && pat && get_str(*pat, "String") == " " && get_str(*n, "content") == kSpm) {
            replace = true;
        } else if (type == "NFC") {
            *nfc = true;
        } else {
            fail(GPT_ERR_UNSUPPORTED, "%s: normalizer component '%s' is not supported", path.c_str(), type.c_str());
        }
    }
    std::vector<const json *> pres;
    flatten(get(root, "pre_tokenizer"), "pretokenizers", pres);
    *rule = SpacePrefixRule::EVERY_SEGMENT;
    for (const json *p : pres) {
        std::string type = get_str(*p, "type");
        // Gemma's Split(" "): the normalizer has already replaced every space, so it never
        // matches and splits nothing.
        const json *pat = get(*p, "pattern");
        if (type == "Split" && replace && pat && get_str(*pat, "String") == " " && !get_bool(*p, "invert", false)) continue;
        if (type != "Metaspace")
            fail(GPT_ERR_UNSUPPORTED, "%s: pre-tokenizer component '%s' is not supported with SentencePiece-style BPE", path.c_str(),
                 type.c_str());
        if (get_str(*p, "replacement", kSpm) != kSpm)
            fail(GPT_ERR_UNSUPPORTED, "%s: Metaspace replacement other than U+2581 is not supported", path.c_str());
        // Before tokenizers 0.15 Metaspace had no "split" and always split.
        if (get_bool(*p, "split", true))
            fail(GPT_ERR_UNSUPPORTED, "%s: Metaspace with split=true (words split at each space) is not supported", path.c_str());
        replace = true;
        std::string scheme = get_str(*p, "prepend_scheme", get_bool(*p, "add_prefix_space", true) ? "always" : "never");
        if (scheme == "first" || scheme == "always") {
            if (prepend)
                fail(GPT_ERR_UNSUPPORTED, "%s: both a Prepend normalizer and a prepending Metaspace pre-tokenizer", path.c_str());
            prepend = true;
            *rule = scheme == "first" ? SpacePrefixRule::FIRST_SEGMENT : SpacePrefixRule::UNLESS_SPACE;
        } else if (scheme != "never") {
            fail(GPT_ERR_UNSUPPORTED, "%s: Metaspace prepend_scheme '%s' is not supported", path.c_str(), scheme.c_str());
        }
    }
    if (!replace) return false;
    *add_space_prefix = prepend;
    check_spm_decoder(path, root, prepend, notes);
    return true;
}

// add_bos and the BOS token from a TemplateProcessing post-processor whose single-sequence
// template starts with a special token.
void read_post_processor(const std::string &path, const json &root, TokenizerData &t, const TokenIndex &index, ImportNotes *notes) {
    std::vector<const json *> procs;
    flatten(get(root, "post_processor"), "processors", procs);
    for (const json *p : procs) {
        if (get_str(*p, "type") != "TemplateProcessing") continue;
        const json *single = get(*p, "single");
        if (!single || !single->is_array() || single->empty()) continue;
        auto special_id = [&](const json &item) -> std::pair<bool, std::string> {
            const json *st = get(item, "SpecialToken");
            return st ? std::make_pair(true, get_str(*st, "id")) : std::make_pair(false, std::string());
        };
        auto first = special_id(single->front());
        if (first.first) {
            int32_t id = -1;
            const json *specials = get(*p, "special_tokens");
            const json *entry = specials ? get(*specials, first.second.c_str()) : nullptr;
            const json *ids = entry ? get(*entry, "ids") : nullptr;
            if (ids && ids->is_array() && ids->size() == 1 && (*ids)[0].is_number_integer())
                id = token_id(path, (*ids)[0], first.second);
            if (id < 0) id = index.find(first.second);
            if (id < 0 || id >= (int32_t)t.tokens.size())
                fail(GPT_ERR_FORMAT, "%s: post_processor template starts with unknown token '%s'", path.c_str(), first.second.c_str());
            t.add_bos = true;
            t.bos_id = id;
        }
        if (single->size() > 1 && special_id(single->back()).first)
            note(notes, path + ": the post_processor appends '" + special_id(single->back()).second +
                            "' after the text; the engine adds only BOS");
    }
}

void apply_config(const std::string &config_path, TokenizerData &t, const TokenIndex &index, ImportNotes *notes) {
    json cfg = parse_json_file(config_path);
    if (!cfg.is_object()) fail(GPT_ERR_FORMAT, "%s: not a JSON object", config_path.c_str());
    auto set = [&](const char *key, int32_t *id) {
        std::string s = config_token(cfg, key);
        if (s.empty()) return;
        int32_t found = index.find(s);
        if (found < 0) fail(GPT_ERR_FORMAT, "%s: %s '%s' is not in the vocabulary", config_path.c_str(), key, s.c_str());
        *id = found;
    };
    set("bos_token", &t.bos_id);
    set("eos_token", &t.eos_id);
    set("unk_token", &t.unk_id);
    set("pad_token", &t.pad_id);
    if (const json *v = get(cfg, "add_bos_token"))
        if (v->is_boolean()) t.add_bos = v->get<bool>();
    if (get_bool(cfg, "add_eos_token", false))
        note(notes, config_path + ": add_eos_token is true; the engine does not append EOS");
    if (t.add_bos && t.bos_id < 0) fail(GPT_ERR_FORMAT, "%s: add_bos_token is true but there is no bos_token", config_path.c_str());
}

bool is_byte_token(const std::string &s) {
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
    return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && hex(s[3]) && hex(s[4]) && s[5] == '>';
}

} // namespace

TokenizerData import_hf_tokenizer(const std::string &path, const std::string &config_path, ImportNotes *notes) {
    json root = parse_json_file(path);
    const char *p = path.c_str();
    try {
        if (!root.is_object()) fail(GPT_ERR_FORMAT, "%s: not a JSON object", p);
        const json *model = get(root, "model");
        if (!model || !model->is_object()) fail(GPT_ERR_FORMAT, "%s: has no \"model\" object", p);
        std::string mtype = get_str(*model, "type", "BPE");
        if (mtype != "BPE") fail(GPT_ERR_UNSUPPORTED, "%s: tokenizer model type '%s' is not supported (BPE is)", p, mtype.c_str());
        if (!get_str(*model, "continuing_subword_prefix").empty() || !get_str(*model, "end_of_word_suffix").empty())
            fail(GPT_ERR_UNSUPPORTED, "%s: BPE with continuing_subword_prefix / end_of_word_suffix is not supported", p);
        if (const json *d = get(*model, "dropout"))
            if (d->is_number() && d->get<double>() > 0) note(notes, path + ": BPE dropout is ignored (deterministic encoding)");

        TokenizerData t;
        std::vector<std::pair<std::string, int64_t>> entries;
        const json *vocab = get(*model, "vocab");
        if (!vocab) fail(GPT_ERR_FORMAT, "%s: model has no vocab", p);
        read_vocab(path, *vocab, entries);

        std::map<int64_t, bool> added;  // id -> special
        std::vector<std::string> normalized_added;  // contents of added tokens matched in normalized text
        if (const json *at = get(root, "added_tokens")) {
            if (!at->is_array()) fail(GPT_ERR_FORMAT, "%s: added_tokens is not an array", p);
            for (size_t i = 0; i < at->size(); ++i) {
                const json &a = (*at)[i];
                const json *id = get(a, "id");
                const json *content = get(a, "content");
                if (!id || !id->is_number_integer() || !content || !content->is_string())
                    fail(GPT_ERR_FORMAT, "%s: added_tokens[%zu] needs an integer id and a string content", p, i);
                const std::string text = content->get<std::string>();
                const int32_t at_id = token_id(path, *id, text);
                entries.emplace_back(text, at_id);
                added[at_id] = get_bool(a, "special", false);
                // Hugging Face matches added tokens before the model runs; these flags change
                // where: lstrip/rstrip widen a match over the whitespace beside it, single_word
                // allows it only between word boundaries.
                if (get_bool(a, "single_word", false))
                    fail(GPT_ERR_UNSUPPORTED, "%s: added token '%s' has single_word=true, which is not supported", p, text.c_str());
                if (get_bool(a, "lstrip", false)) t.lstrip_ids.push_back(at_id);
                if (get_bool(a, "rstrip", false)) t.rstrip_ids.push_back(at_id);
                if (get_bool(a, "normalized", !get_bool(a, "special", false))) normalized_added.push_back(text);
            }
        }
        // A token both in the vocab and in added_tokens (GPT-2's <|endoftext|>) appears
        // twice with the same id: drop the repeat before placing.
        std::map<int64_t, std::string> by_id;
        std::vector<std::pair<std::string, int64_t>> unique;
        for (size_t i = 0; i < entries.size(); ++i) {
            auto it = by_id.find(entries[i].second);
            if (it != by_id.end() && it->second == entries[i].first) continue;
            by_id[entries[i].second] = entries[i].first;
            unique.push_back(entries[i]);
        }
        place_tokens(path, unique, t);

        const json *merges = get(*model, "merges");
        if (merges) {
            if (!merges->is_array()) fail(GPT_ERR_FORMAT, "%s: model.merges is not an array", p);
            t.merges.reserve(merges->size());
            for (size_t i = 0; i < merges->size(); ++i) {
                const json &m = (*merges)[i];
                if (m.is_string()) {
                    t.merges.push_back(m.get<std::string>());
                } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
                    std::string a = m[0].get<std::string>(), b = m[1].get<std::string>();
                    if (a.find(' ') != std::string::npos || b.find(' ') != std::string::npos)
                        fail(GPT_ERR_UNSUPPORTED, "%s: merge %zu joins tokens containing a space ('%s', '%s'), which the weight file cannot store",
                             p, i, a.c_str(), b.c_str());
                    t.merges.push_back(a + " " + b);
                } else {
                    fail(GPT_ERR_FORMAT, "%s: merge %zu is neither \"a b\" nor [\"a\", \"b\"]", p, i);
                }
            }
        }

        bool byte_fallback = get_bool(*model, "byte_fallback", false);
        PreTokenizer pre = PreTokenizer::NONE;
        bool add_space_prefix = false;
        SpacePrefixRule prefix_rule = SpacePrefixRule::EVERY_SEGMENT;
        if (detect_byte_level(path, root, &pre, notes)) {
            t.kind = TokenizerKind::BPE;
            t.pre = pre;
            t.add_space_prefix = false;
            if (get(root, "normalizer")) {
                std::vector<const json *> norms;
                flatten(get(root, "normalizer"), "normalizers", norms);
                for (const json *n : norms) {
                    if (get_str(*n, "type") != "NFC")
                        fail(GPT_ERR_UNSUPPORTED, "%s: normalizer '%s' is not supported with byte-level BPE", p, get_str(*n, "type").c_str());
                    t.normalizer = TextNormalizer::NFC;
                }
            }
            t.ignore_merges = get_bool(*model, "ignore_merges", false);
            if (byte_fallback) fail(GPT_ERR_UNSUPPORTED, "%s: byte-level BPE with byte_fallback is not supported", p);
        } else if (bool nfc = false; detect_spm(path, root, &add_space_prefix, &prefix_rule, &nfc, notes)) {
            if (nfc) t.normalizer = TextNormalizer::NFC;
            t.kind = TokenizerKind::SPM;
            t.pre = PreTokenizer::NONE;
            t.add_space_prefix = add_space_prefix;
            t.prefix_rule = prefix_rule;
            if (!byte_fallback) {
                for (const std::string &s : t.tokens)
                    if (is_byte_token(s)) {
                        note(notes, path + ": byte_fallback is false but the vocabulary has <0xNN> tokens; the engine falls back to them");
                        break;
                    }
            }
        } else {
            fail(GPT_ERR_UNSUPPORTED, "%s: neither a byte-level BPE (ByteLevel pre-tokenizer) nor a SentencePiece-style BPE "
                                      "(spaces replaced by U+2581) tokenizer", p);
        }

        // The engine matches added tokens in the raw text. That is the same as matching in the
        // normalized text unless the normalizer rewrites the token: SPM's "▁" for a space, or
        // NFC. (Left over: under NFC, a combining mark right after a normalized token that
        // composes with its last character, like ">" + U+0338, hides it from Hugging Face.)
        for (const std::string &text : normalized_added) {
            if (t.kind == TokenizerKind::SPM && (text.find(' ') != std::string::npos || text.find(kSpm) != std::string::npos))
                fail(GPT_ERR_UNSUPPORTED, "%s: added token '%s' has normalized=true and holds a space or U+2581; matching it "
                                          "in normalized text is not supported", p, text.c_str());
            if (t.normalizer == TextNormalizer::NFC && nfc(text) != text)
                fail(GPT_ERR_UNSUPPORTED, "%s: added token '%s' has normalized=true and is not in NFC; matching it in "
                                          "normalized text is not supported", p, text.c_str());
        }
        t.types.assign(t.tokens.size(), TOKEN_NORMAL);
        for (size_t id = 0; id < t.tokens.size(); ++id)
            if (t.kind == TokenizerKind::SPM && is_byte_token(t.tokens[id])) t.types[id] = TOKEN_BYTE;
        for (const auto &a : added) t.types[(size_t)a.first] = a.second ? TOKEN_CONTROL : TOKEN_USER_DEFINED;

        const TokenIndex index(t); // t.tokens is final from here on
        std::string unk = get_str(*model, "unk_token");
        if (!unk.empty()) {
            t.unk_id = index.find(unk);
            if (t.unk_id < 0) fail(GPT_ERR_FORMAT, "%s: model.unk_token '%s' is not in the vocabulary", p, unk.c_str());
            if (t.types[t.unk_id] == TOKEN_NORMAL) t.types[t.unk_id] = TOKEN_UNKNOWN;
        }
        read_post_processor(path, root, t, index, notes);
        // Without a config: the conventional names. GPT-2 uses <|endoftext|> for both.
        if (t.eos_id < 0) {
            for (const char *name : {"</s>", "<|end_of_text|>", "<|endoftext|>"})
                if ((t.eos_id = index.find(name)) >= 0) break;
        }
        if (t.bos_id < 0) {
            for (const char *name : {"<s>", "<|begin_of_text|>"})
                if ((t.bos_id = index.find(name)) >= 0) break;
            if (t.bos_id < 0 && t.pre == PreTokenizer::GPT2) t.bos_id = index.find("<|endoftext|>");
        }
        if (!config_path.empty()) apply_config(config_path, t, index, notes);
        return t;
    } catch (const json::exception &e) {
        fail(GPT_ERR_FORMAT, "%s: unexpected JSON structure: %s", p, e.what());
    }
}

TokenizerData import_gpt2_vocab(const std::string &vocab_json, const std::string &merges_txt) {
    json vocab = parse_json_file(vocab_json);
    TokenizerData t;
    t.kind = TokenizerKind::BPE;
    t.pre = PreTokenizer::GPT2;
    t.add_space_prefix = false;
    std::vector<std::pair<std::string, int64_t>> entries;
    try {
        read_vocab(vocab_json, vocab, entries);
    } catch (const json::exception &e) {
        fail(GPT_ERR_FORMAT, "%s: unexpected JSON structure: %s", vocab_json.c_str(), e.what());
    }
    place_tokens(vocab_json, entries, t);

    std::string text = convert::read_text_file(merges_txt);
    size_t pos = 0, line_no = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line.rfind("#version", 0) == 0) continue;
        size_t sp = line.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() || line.find(' ', sp + 1) != std::string::npos)
            fail(GPT_ERR_FORMAT, "%s:%zu: '%s' is not two tokens separated by one space", merges_txt.c_str(), line_no, line.c_str());
        t.merges.push_back(line);
    }
    t.types.assign(t.tokens.size(), TOKEN_NORMAL);
    int32_t eot = TokenIndex(t).find("<|endoftext|>");
    if (eot >= 0) {
        t.types[eot] = TOKEN_CONTROL;
        t.bos_id = t.eos_id = eot;
    }
    return t;
}

} // namespace gpt
