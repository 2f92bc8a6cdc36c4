// char_vocab.cpp - character vocabularies from meta.pkl or a text file (see char_vocab.h).
#include "convert/char_vocab.h"

#include "convert/fs_util.h"
#include "convert/pickle_vm.h"
#include "core/error.h"
#include "tokenizer/utf8.h"

#include <algorithm>
#include <set>

namespace gpt::convert {

namespace {

constexpr int64_t kMaxChars = 1 << 21; // every code point once

// The code point of a one-character string, or -1.
int64_t single_char(const std::string &s) {
    if (s.empty()) return -1;
    const utf8::Unit u = utf8::decode(reinterpret_cast<const unsigned char *>(s.data()), s.size());
    return u.cp == utf8::kInvalid || u.len != s.size() ? -1 : (int64_t)u.cp;
}

TokenizerData char_data(std::vector<std::string> tokens) {
    TokenizerData t;
    t.kind = TokenizerKind::CHAR;
    t.pre = PreTokenizer::NONE;
    t.tokens = std::move(tokens);
    t.add_space_prefix = false;
    return t;
}

} // namespace

TokenizerData import_meta_pkl_bytes(const uint8_t *data, uint64_t size, const std::string &source) {
    using pickle::Kind;
    const char *src = source.c_str();
    const pickle::Unpickled u = pickle::unpickle(data, size, source, nullptr);
    const pickle::Value *itos = u.root->get("itos");
    if (!itos || !itos->is(Kind::DICT)) fail(GPT_ERR_FORMAT, "%s: not a nanoGPT meta.pkl (no 'itos' dict)", src);
    const size_t n = itos->dict->entries.size();
    if (n == 0 || (int64_t)n > kMaxChars) fail(GPT_ERR_FORMAT, "%s: 'itos' holds %zu entries", src, n);
    std::vector<std::string> tokens(n);
    std::vector<bool> seen(n, false);
    std::set<std::string> distinct;
    for (const auto &[k, v] : itos->dict->entries) {
        if (!k->is(Kind::INT) || k->i < 0 || (uint64_t)k->i >= n)
            fail(GPT_ERR_FORMAT, "%s: 'itos' has a key that is not an id in [0, %zu)", src, n);
        if (!v->is(Kind::STR) || single_char(v->s) < 0)
            fail(GPT_ERR_FORMAT, "%s: 'itos'[%lld] is not a single character", src, (long long)k->i);
        if (!distinct.insert(v->s).second) fail(GPT_ERR_FORMAT, "%s: 'itos'[%lld] repeats a character", src, (long long)k->i);
        tokens[(size_t)k->i] = v->s;
        seen[(size_t)k->i] = true;
    }
    for (size_t i = 0; i < n; i++)
        if (!seen[i]) fail(GPT_ERR_FORMAT, "%s: 'itos' has no entry %zu", src, i);
    if (const pickle::Value *vs = u.root->get("vocab_size"))
        if (!vs->is(Kind::INT) || vs->i != (int64_t)n)
            fail(GPT_ERR_FORMAT, "%s: 'vocab_size' disagrees with the %zu entries of 'itos'", src, n);
    // stoi, when present, must be itos inverted (sample.py encodes with it).
    if (const pickle::Value *stoi = u.root->get("stoi")) {
        if (!stoi->is(Kind::DICT) || stoi->dict->entries.size() != n) fail(GPT_ERR_FORMAT, "%s: 'stoi' is not the inverse of 'itos'", src);
        for (const auto &[k, v] : stoi->dict->entries)
            if (!k->is(Kind::STR) || !v->is(Kind::INT) || v->i < 0 || (uint64_t)v->i >= n || tokens[(size_t)v->i] != k->s)
                fail(GPT_ERR_FORMAT, "%s: 'stoi' is not the inverse of 'itos'", src);
    }
    return char_data(std::move(tokens));
}

TokenizerData import_meta_pkl(const std::string &path) {
    std::shared_ptr<MappedFile> f = MappedFile::open(path);
    return import_meta_pkl_bytes(f->data(), f->size(), path);
}

TokenizerData char_vocab_from_text(const std::string &path) {
    std::shared_ptr<MappedFile> f = MappedFile::open(path);
    const unsigned char *p = f->data();
    std::set<uint32_t> cps;
    for (uint64_t pos = 0; pos < f->size();) {
        const utf8::Unit u = utf8::decode(p + pos, (size_t)std::min<uint64_t>(f->size() - pos, 4));
        if (u.cp == utf8::kInvalid)
            fail(GPT_ERR_FORMAT, "%s: byte %llu (0x%02x) is not valid UTF-8; a character vocabulary needs UTF-8 text", path.c_str(),
                 (unsigned long long)pos, p[pos]);
        cps.insert(u.cp);
        pos += u.len;
    }
    if (cps.empty()) fail(GPT_ERR_FORMAT, "%s: is empty; a character vocabulary needs its training text", path.c_str());
    std::vector<std::string> tokens;
    for (uint32_t cp : cps) {
        std::string c;
        utf8::append(c, cp);
        tokens.push_back(std::move(c));
    }
    return char_data(std::move(tokens));
}

} // namespace gpt::convert
