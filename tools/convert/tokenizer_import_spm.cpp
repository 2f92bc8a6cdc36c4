// tokenizer_import_spm.cpp - SentencePiece-family files -> TokenizerData: llama2.c's
// tokenizer.bin and SentencePiece's tokenizer.model (a protobuf ModelProto, read by the
// minimal wire-format reader below: only the fields the engine needs, others skipped).
// Both become kind SPM merging by score (these files carry no merge list).
#include "tokenizer_import.h"

#include "convert/fs_util.h"

#include "core/error.h"

#include <cmath>
#include <cstring>

namespace gpt {

namespace {

const char kSpm[] = "\xE2\x96\x81";  // "▁"

bool is_byte_token(const std::string &s) {
    auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
    return s.size() == 6 && s.compare(0, 3, "<0x") == 0 && hex(s[3]) && hex(s[4]) && s[5] == '>';
}

// ---- protobuf wire format (proto2), bounds-checked: every read names the file on failure.
class ProtoReader {
public:
    ProtoReader(const std::string &path, const uint8_t *p, size_t n) : path_(path), p_(p), end_(p + n) {}
    bool done() const { return p_ >= end_; }

    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p_ >= end_) fail(GPT_ERR_FORMAT, "%s: truncated protobuf varint", path_.c_str());
            uint8_t b = *p_++;
            v |= (uint64_t)(b & 0x7F) << shift;
            if (!(b & 0x80)) return v;
        }
        fail(GPT_ERR_FORMAT, "%s: protobuf varint longer than 10 bytes", path_.c_str());
    }
    // A field key: number and wire type.
    void key(uint32_t *field, uint32_t *wire) {
        uint64_t k = varint();
        *field = (uint32_t)(k >> 3);
        *wire = (uint32_t)(k & 7);
    }
    ProtoReader bytes() {
        uint64_t n = varint();
        if (n > (uint64_t)(end_ - p_)) fail(GPT_ERR_FORMAT, "%s: protobuf field of %llu bytes runs past the end", path_.c_str(), (unsigned long long)n);
        ProtoReader sub(path_, p_, (size_t)n);
        p_ += n;
        return sub;
    }
    std::string string() {
        ProtoReader b = bytes();
        return std::string(reinterpret_cast<const char *>(b.p_), (size_t)(b.end_ - b.p_));
    }
    float fixed32_float() {
        if (end_ - p_ < 4) fail(GPT_ERR_FORMAT, "%s: truncated protobuf fixed32", path_.c_str());
        float f;
        memcpy(&f, p_, 4);
        p_ += 4;
        return f;
    }
    void skip(uint32_t wire) {
        switch (wire) {
        case 0: varint(); return;
        case 1:
            if (end_ - p_ < 8) fail(GPT_ERR_FORMAT, "%s: truncated protobuf fixed64", path_.c_str());
            p_ += 8;
            return;
        case 2: bytes(); return;
        case 5:
            if (end_ - p_ < 4) fail(GPT_ERR_FORMAT, "%s: truncated protobuf fixed32", path_.c_str());
            p_ += 4;
            return;
        default: fail(GPT_ERR_FORMAT, "%s: unsupported protobuf wire type %u (not a SentencePiece model?)", path_.c_str(), wire);
        }
    }

private:
    const std::string &path_;
    const uint8_t *p_, *end_;
};

void expect_wire(const std::string &path, const char *what, uint32_t wire, uint32_t want) {
    if (wire != want) fail(GPT_ERR_FORMAT, "%s: %s has protobuf wire type %u, expected %u", path.c_str(), what, wire, want);
}

} // namespace

TokenizerData import_llama2c_tokenizer(const std::string &path, uint32_t vocab_size) {
    std::string data = convert::read_text_file(path);
    const char *p = path.c_str();
    size_t pos = 0;
    auto read = [&](void *dst, size_t n, const char *what, size_t index) {
        if (data.size() - pos < n) fail(GPT_ERR_FORMAT, "%s: truncated in the %s of token %zu", p, what, index);
        memcpy(dst, data.data() + pos, n);
        pos += n;
    };
    int32_t max_len = 0;
    if (data.size() < 4) fail(GPT_ERR_FORMAT, "%s: too short for a llama2.c tokenizer (no max_token_length)", p);
    read(&max_len, 4, "header", 0);
    if (max_len <= 0) fail(GPT_ERR_FORMAT, "%s: max_token_length is %d", p, max_len);

    TokenizerData t;
    t.kind = TokenizerKind::SPM;
    t.pre = PreTokenizer::NONE;
    t.add_space_prefix = true;  // llama2.c's encode prepends a space (the dummy prefix)
    while (vocab_size ? t.tokens.size() < vocab_size : pos < data.size()) {
        size_t i = t.tokens.size();
        float score;
        int32_t len;
        read(&score, 4, "score", i);
        read(&len, 4, "length", i);
        if (len < 0 || (size_t)len > data.size() - pos)
            fail(GPT_ERR_FORMAT, "%s: token %zu has length %d, past the end of the file", p, i, len);
        if (std::isnan(score)) fail(GPT_ERR_FORMAT, "%s: token %zu has a NaN score", p, i);
        std::string raw = data.substr(pos, (size_t)len);
        pos += (size_t)len;
        // llama2.c's exporter wrote '▁' as ' ' and BOS/EOS as "\n<s>\n", "\n</s>\n".
        std::string tok;
        for (char c : raw) {
            if (c == ' ') tok += kSpm;
            else tok += c;
        }
        if (tok == "\n<s>\n") tok = "<s>";
        if (tok == "\n</s>\n") tok = "</s>";
        t.tokens.push_back(tok);
        t.scores.push_back(score);
    }
    if (vocab_size && pos != data.size())
        fail(GPT_ERR_FORMAT, "%s: %zu bytes left after the %u tokens the model's vocab_size asks for", p, data.size() - pos, vocab_size);
    if (t.tokens.size() < 3) fail(GPT_ERR_FORMAT, "%s: has %zu tokens; llama2.c needs at least <unk>, <s>, </s>", p, t.tokens.size());
    t.types.assign(t.tokens.size(), TOKEN_NORMAL);
    for (size_t i = 0; i < t.tokens.size(); ++i)
        if (is_byte_token(t.tokens[i])) t.types[i] = TOKEN_BYTE;
    // llama2.c's fixed ids.
    t.unk_id = 0;
    t.bos_id = 1;
    t.eos_id = 2;
    t.types[0] = TOKEN_UNKNOWN;
    t.types[1] = TOKEN_CONTROL;
    t.types[2] = TOKEN_CONTROL;
    t.add_bos = true;  // llama2.c's run.c encodes prompts with BOS
    return t;
}

TokenizerData import_sentencepiece_model(const std::string &path, ImportNotes *notes) {
    std::string data = convert::read_text_file(path);
    const char *p = path.c_str();
    TokenizerData t;
    t.kind = TokenizerKind::SPM;
    t.pre = PreTokenizer::NONE;
    // proto2 defaults
    int64_t model_type = 1;  // UNIGRAM
    bool byte_fallback = false, add_dummy_prefix = true, remove_extra_whitespaces = true, escape_whitespaces = true;
    bool treat_whitespace_as_suffix = false;
    int64_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
    std::string norm_name;
    size_t charsmap_size = 0;

    ProtoReader r(path, reinterpret_cast<const uint8_t *>(data.data()), data.size());
    while (!r.done()) {
        uint32_t field, wire;
        r.key(&field, &wire);
        if (field == 1) {  // SentencePiece pieces
            expect_wire(path, "a piece", wire, 2);
            ProtoReader pr = r.bytes();
            std::string piece;
            float score = 0;
            int64_t type = TOKEN_NORMAL;
            while (!pr.done()) {
                uint32_t f, w;
                pr.key(&f, &w);
                if (f == 1 && w == 2) piece = pr.string();
                else if (f == 2 && w == 5) score = pr.fixed32_float();
                else if (f == 3 && w == 0) type = (int64_t)pr.varint();
                else pr.skip(w);
            }
            if (type < TOKEN_NORMAL || type > TOKEN_BYTE)
                fail(GPT_ERR_FORMAT, "%s: piece %zu '%s' has type %lld", p, t.tokens.size(), piece.c_str(), (long long)type);
            if (std::isnan(score)) fail(GPT_ERR_FORMAT, "%s: piece %zu '%s' has a NaN score", p, t.tokens.size(), piece.c_str());
            t.tokens.push_back(piece);
            t.scores.push_back(score);
            t.types.push_back((int32_t)type);
        } else if (field == 2) {  // TrainerSpec
            expect_wire(path, "trainer_spec", wire, 2);
            ProtoReader tr = r.bytes();
            while (!tr.done()) {
                uint32_t f, w;
                tr.key(&f, &w);
                if (w != 0) {
                    tr.skip(w);
                    continue;
                }
                uint64_t v = tr.varint();
                switch (f) {
                case 3: model_type = (int64_t)v; break;
                case 24: treat_whitespace_as_suffix = v != 0; break;
                case 35: byte_fallback = v != 0; break;
                case 40: unk_id = (int32_t)(uint32_t)v; break;
                case 41: bos_id = (int32_t)(uint32_t)v; break;
                case 42: eos_id = (int32_t)(uint32_t)v; break;
                case 43: pad_id = (int32_t)(uint32_t)v; break;
                default: break;
                }
            }
        } else if (field == 3) {  // NormalizerSpec
            expect_wire(path, "normalizer_spec", wire, 2);
            ProtoReader nr = r.bytes();
            while (!nr.done()) {
                uint32_t f, w;
                nr.key(&f, &w);
                if (f == 1 && w == 2) norm_name = nr.string();
                else if (f == 2 && w == 2) charsmap_size = nr.string().size();
                else if (f == 3 && w == 0) add_dummy_prefix = nr.varint() != 0;
                else if (f == 4 && w == 0) remove_extra_whitespaces = nr.varint() != 0;
                else if (f == 5 && w == 0) escape_whitespaces = nr.varint() != 0;
                else nr.skip(w);
            }
        } else {
            r.skip(wire);
        }
    }
    if (t.tokens.empty()) fail(GPT_ERR_FORMAT, "%s: no pieces (not a SentencePiece model?)", p);
    if (model_type != 2)
        fail(GPT_ERR_UNSUPPORTED, "%s: SentencePiece model type %s is not supported (BPE is)", p,
             model_type == 1 ? "UNIGRAM" : model_type == 3 ? "WORD" : model_type == 4 ? "CHAR" : "unknown");
    if (charsmap_size > 0 && norm_name != "identity")
        fail(GPT_ERR_UNSUPPORTED, "%s: normalization rule '%s' (a precompiled character map) is not supported", p, norm_name.c_str());
    if (remove_extra_whitespaces)
        fail(GPT_ERR_UNSUPPORTED, "%s: remove_extra_whitespaces=true (collapsing spaces) is not supported", p);
    if (!escape_whitespaces) fail(GPT_ERR_UNSUPPORTED, "%s: escape_whitespaces=false is not supported", p);
    if (treat_whitespace_as_suffix) fail(GPT_ERR_UNSUPPORTED, "%s: treat_whitespace_as_suffix is not supported", p);
    if (!byte_fallback && notes) notes->push_back(path + ": byte_fallback is off; characters outside the vocabulary become <unk>");
    if (notes) notes->push_back(path + ": USER_DEFINED pieces are matched in text only when special tokens are parsed");

    int64_t n = (int64_t)t.tokens.size();
    auto id = [&](const char *what, int64_t v) -> int32_t {
        if (v < -1 || v >= n) fail(GPT_ERR_FORMAT, "%s: trainer_spec %s %lld is outside the %lld pieces", p, what, (long long)v, (long long)n);
        return (int32_t)v;
    };
    t.unk_id = id("unk_id", unk_id);
    t.bos_id = id("bos_id", bos_id);
    t.eos_id = id("eos_id", eos_id);
    t.pad_id = id("pad_id", pad_id);
    t.add_space_prefix = add_dummy_prefix;
    t.add_bos = t.bos_id >= 0;  // as Llama's tokenizers use it; SentencePiece itself adds none
    return t;
}

} // namespace gpt
