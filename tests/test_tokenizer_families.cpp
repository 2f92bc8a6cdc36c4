// test_tokenizer_families.cpp - the tokenizer configurations of today's small models (issue
// #18): SmolLM2's Digits + ByteLevel, Phi-4-mini's o200k split, Gemma's SentencePiece-style
// BPE without a space prefix, Metaspace's prepend schemes (Mistral v0.3), Phi-3's rstrip chat
// tokens. Each family is a tokenizer.json written here in its configuration over a tiny
// vocabulary, imported by the converter and run by the engine; the expected ids are derived
// by hand from the rules in Hugging Face tokenizers' documentation and source (the regex
// alternatives, Digits, Metaspace's prepend_scheme, AddedToken's lstrip/rstrip), never
// produced by this code. Also: the converter's refusals of what the engine cannot
// reproduce, and the new metadata fields' round trip. NFC (Qwen2.5/Qwen3's normalizer) is
// checked against the Unicode Character Database's own NormalizationTest.txt cases
// (tests/data/nfc_cases.txt). Random tests print their seed;
// GPT_TEST_SEED reproduces.
#include "convert/tokenizer_import.h"
#include "core/error.h"
#include "format/keys.h"
#include "format/metadata.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/nfc.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using gpt::PreTokenizer;
using gpt::TokenizerData;
using nlohmann::json;
using Ids = std::vector<int32_t>;

namespace {

const std::string kSp = "\xE2\x96\x81";  // "▁"

// ---------------------------------------------------------------- helpers

void run(const std::function<void()> &body) {
    std::string error;
    try {
        body();
    } catch (const std::exception &e) {
        error = e.what();
    }
    if (!error.empty()) fail_msg("unexpected exception: %s", error.c_str());
}

void expect_error(gpt_status status, const char *needle, const std::function<void()> &body) {
    try {
        body();
    } catch (const gpt::Error &e) {
        if (e.status() != status) fail_msg("expected status %d, got %d: %s", (int)status, (int)e.status(), e.what());
        if (std::string(e.what()).find(needle) == std::string::npos) fail_msg("message '%s' does not mention '%s'", e.what(), needle);
        return;
    }
    fail_msg("expected gpt::Error containing '%s', nothing was thrown", needle);
}

std::string escaped(const std::string &s) {
    std::string out;
    for (unsigned char c : s) {
        if (c >= 0x20 && c < 0x7F && c != '\\') {
            out += (char)c;
        } else {
            char b[8];
            snprintf(b, sizeof b, "\\x%02X", c);
            out += b;
        }
    }
    return out;
}

std::string show(const Ids &ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s + "]";
}

void expect_ids(const gpt::Tokenizer &t, const std::string &text, const Ids &want, bool bos = false) {
    Ids got;
    t.encode(text, bos, true, got);
    if (got != want) fail_msg("'%s': got %s, want %s", escaped(text).c_str(), show(got).c_str(), show(want).c_str());
}

std::vector<std::string> split(PreTokenizer kind, const std::string &text) {
    std::vector<gpt::TextSpan> spans;
    gpt::pretokenize(kind, text, spans);
    std::vector<std::string> out;
    size_t at = 0;
    for (const auto &s : spans) {
        if (s.begin != at || s.end <= s.begin) fail_msg("spans do not tile '%s' at %zu", escaped(text).c_str(), s.begin);
        at = s.end;
        out.push_back(text.substr(s.begin, s.end - s.begin));
    }
    if (at != text.size()) fail_msg("spans stop at %zu of %zu", at, text.size());
    return out;
}

void expect_split(PreTokenizer kind, const std::string &text, const std::vector<std::string> &want) {
    std::vector<std::string> got = split(kind, text);
    if (got == want) return;
    std::string g, w;
    for (const auto &s : got) g += "|" + escaped(s);
    for (const auto &s : want) w += "|" + escaped(s);
    fail_msg("%s split of '%s':\n  got  %s|\n  want %s|", gpt::pretokenizer_name(kind), escaped(text).c_str(), g.c_str(), w.c_str());
}

uint64_t seed() {
    static uint64_t s = [] {
        const char *env = getenv("GPT_TEST_SEED");
        uint64_t v = env ? strtoull(env, nullptr, 10) : (uint64_t)std::random_device{}();
        printf("[ families ] random seed %llu (set GPT_TEST_SEED to reproduce)\n", (unsigned long long)v);
        return v;
    }();
    return s;
}

// A tokenizer.json in a temporary folder, imported and built.
struct Imported {
    TokenizerData data;
    std::unique_ptr<gpt::Tokenizer> tok;
    gpt::ImportNotes notes;
};

std::string write_temp(const std::string &text) {
    char tmpl[] = "/tmp/gpt_fam_XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    std::ofstream(tmpl, std::ios::binary) << text;
    return tmpl;
}

Imported import_json(const json &j) {
    std::string path = write_temp(j.dump());
    Imported r;
    try {
        r.data = gpt::import_hf_tokenizer(path, "", &r.notes);
        r.tok = gpt::Tokenizer::create(r.data, path);
    } catch (...) {
        unlink(path.c_str());
        throw;
    }
    unlink(path.c_str());
    return r;
}

void expect_refused(const json &j, const char *needle) {
    std::string path = write_temp(j.dump());
    expect_error(GPT_ERR_UNSUPPORTED, needle, [&] { gpt::import_hf_tokenizer(path); });
    unlink(path.c_str());
}

json added(int id, const std::string &content, bool special, bool lstrip = false, bool rstrip = false) {
    return {{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", lstrip}, {"rstrip", rstrip},
            {"normalized", false}, {"special", special}};
}

// ---------------------------------------------------------------- byte-level fixtures

// ids 0..255: the bytes (bytes_to_unicode spelling, so id = byte); then the extra tokens.
json byte_level_json(const json &pre_tokenizer, const std::vector<std::string> &extra, const std::vector<std::string> &merges,
                     const json &added_tokens) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[gpt::byte_to_utf8((uint8_t)b)] = b;
    for (size_t i = 0; i < extra.size(); ++i) vocab[extra[i]] = 256 + i;
    return {{"version", "1.0"},
            {"added_tokens", added_tokens},
            {"normalizer", nullptr},
            {"pre_tokenizer", pre_tokenizer},
            {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
            {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                       {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
                       {"vocab", vocab}, {"merges", merges}}}};
}

json byte_level(bool use_regex) {
    return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

// SmolLM2's pre_tokenizer, as its tokenizer.json has it.
json smollm2_pre(bool individual_digits = true) {
    return {{"type", "Sequence"},
            {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", individual_digits}}, byte_level(true)}}};
}

const char kO200k[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

json split_then_byte_level(const char *pattern) {
    return {{"type", "Sequence"},
            {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                               byte_level(false)}}};
}

// ---------------------------------------------------------------- SmolLM2: Digits + ByteLevel

void test_digits_split(void **) {
    run([] {
        const PreTokenizer D = PreTokenizer::GPT2_DIGITS;
        // Digits(individual_digits=true): "every digit is its own piece"; the GPT-2 regex
        // then runs on the pieces between, so a space before a digit stays alone.
        expect_split(D, "abc 123", {"abc", " ", "1", "2", "3"});
        expect_split(D, "a1b", {"a", "1", "b"});
        expect_split(D, " 12 x", {" ", "1", "2", " x"});
        expect_split(D, "x  9", {"x", "  ", "9"});  // "  " ends the stretch: \s+(?!\S) takes both
        expect_split(D, "3.14", {"3", ".", "1", "4"});
        // \p{N} beyond ASCII: ARABIC-INDIC THREE (Nd), VULGAR FRACTION ONE HALF (No)
        expect_split(D, "x\xD9\xA3y\xC2\xBD", {"x", "\xD9\xA3", "y", "\xC2\xBD"});
        expect_split(D, "it's 5pm", {"it", "'s", " ", "5", "pm"});
        expect_split(D, "", {});
        // The plain GPT-2 regex keeps " 123" whole: the difference the family makes.
        expect_split(PreTokenizer::GPT2, "abc 123", {"abc", " 123"});

        // Random strings over a small alphabet: every \p{N} unit alone, and each stretch
        // between split exactly as the GPT-2 regex splits that stretch by itself.
        std::mt19937_64 rng(seed());
        const std::vector<std::string> alphabet = {"a", "B", " ", "  ", "1", "7", "\xD9\xA3", ".", "'s", "\n", "\xC3\xA9", "\xE2\x80\x83"};
        for (int iter = 0; iter < 2000; ++iter) {
            std::string text;
            for (int k = (int)(rng() % 12); k > 0; --k) text += alphabet[rng() % alphabet.size()];
            std::vector<std::string> want;
            std::string stretch;
            auto flush = [&] {
                for (const auto &p : split(PreTokenizer::GPT2, stretch)) want.push_back(p);
                stretch.clear();
            };
            const auto *s = reinterpret_cast<const unsigned char *>(text.data());
            for (size_t pos = 0; pos < text.size();) {
                gpt::utf8::Unit u = gpt::utf8::decode(s + pos, text.size() - pos);
                std::string unit = text.substr(pos, u.len);
                if (u.cp != gpt::utf8::kInvalid && gpt::unicode::char_class(u.cp) == gpt::unicode::CC_NUMBER) {
                    flush();
                    want.push_back(unit);
                } else {
                    stretch += unit;
                }
                pos += u.len;
            }
            flush();
            expect_split(D, text, want);
        }
    });
}

void test_smollm2_import(void **) {
    run([] {
        // ids 256 Ġ1, 257 12, 258 he, 259 hel (merges Ġ 1, 1 2, h e, he l)
        json j = byte_level_json(smollm2_pre(), {"\xC4\xA0" "1", "12", "he", "hel"}, {"\xC4\xA0 1", "1 2", "h e", "he l"},
                                 json::array({added(260, "<|endoftext|>", true)}));
        Imported r = import_json(j);
        assert_int_equal((int)r.data.pre, (int)PreTokenizer::GPT2_DIGITS);
        assert_int_equal(r.notes.size(), 0);
        expect_ids(*r.tok, "x 12", {'x', ' ', '1', '2'});  // never Ġ1 nor 12: the digits stand alone
        expect_ids(*r.tok, "hel 1<|endoftext|>", {259, ' ', '1', 260});
        // the same vocabulary with GPT-2's own regex merges them
        j["pre_tokenizer"] = byte_level(true);
        Imported plain = import_json(j);
        expect_ids(*plain.tok, "x 12", {'x', 256, '2'});
        expect_ids(*plain.tok, "12", {257});

        json bad = byte_level_json(smollm2_pre(false), {}, {}, json::array());
        expect_refused(bad, "Digits");
        bad["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {byte_level(true), {{"type", "Digits"}, {"individual_digits", true}}}}};
        expect_refused(bad, "Digits");
        bad["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level(false)}}};
        expect_refused(bad, "Digits");
    });
}

// ---------------------------------------------------------------- Phi-4-mini: o200k

void test_o200k_split(void **) {
    run([] {
        const PreTokenizer O = PreTokenizer::O200K;
        // [U]*[L]+ : an upper-case run followed by lower case is one word; a lower-case word
        // ends where upper case starts (camelCase splits, PascalCase stays).
        expect_split(O, "Hello World", {"Hello", " World"});
        expect_split(O, "helloWorld", {"hello", "World"});
        expect_split(O, "JSONParser", {"JSONParser"});
        // No lower case after the run: [U]*[L]+ fails, [U]+[L]* takes the run.
        expect_split(O, "HELLO world", {"HELLO", " world"});
        // contractions only at the end of a word, case-insensitively
        expect_split(O, "don't", {"don't"});
        expect_split(O, "DON'T", {"DON'T"});
        expect_split(O, "I'm", {"I'm"});
        expect_split(O, "'s", {"'s"});  // the apostrophe opens the word "s", as any punctuation would
        // marks belong to words (both sets): e + COMBINING ACUTE is one word, as is a
        // title-case DŽ (Lt, upper set) before lower case
        expect_split(O, "e\xCC\x81t\xC3\xA9", {"e\xCC\x81t\xC3\xA9"});
        expect_split(O, "\xC7\x85ungla", {"\xC7\x85ungla"});
        // Lo (CJK) is in both sets: one run
        expect_split(O, "\xE4\xBD\xA0\xE5\xA5\xBD!", {"\xE4\xBD\xA0\xE5\xA5\xBD", "!"});
        // digits in threes; punctuation takes trailing CR/LF and '/'
        expect_split(O, "12345", {"123", "45"});
        expect_split(O, "x//\n", {"x", "//\n"});
        expect_split(O, "a/b", {"a", "/b"});
        // whitespace as in Llama-3
        expect_split(O, "a  b", {"a", " ", " b"});
        expect_split(O, "a \n\n b", {"a", " \n\n", " b"});
        expect_split(O, "  ", {"  "});
        // Llama-3 on the same text: marks are not letters there
        expect_split(PreTokenizer::LLAMA3, "e\xCC\x81t", {"e", "\xCC\x81t"});
        expect_split(PreTokenizer::LLAMA3, "helloWorld", {"helloWorld"});
    });
}

void test_o200k_import(void **) {
    run([] {
        // 256 he 257 hel 258 hell 259 hello 260 ĠW (merges h e, he l, hel l, hell o, Ġ W)
        json j = byte_level_json(split_then_byte_level(kO200k), {"he", "hel", "hell", "hello", "\xC4\xA0W"},
                                 {"h e", "he l", "hel l", "hell o", "\xC4\xA0 W"}, json::array({added(261, "<|endoftext|>", true)}));
        j["model"]["ignore_merges"] = true;
        Imported r = import_json(j);
        assert_int_equal((int)r.data.pre, (int)PreTokenizer::O200K);
        assert_true(r.data.ignore_merges);
        expect_ids(*r.tok, "helloWorld", {259, 'W', 'o', 'r', 'l', 'd'});  // camelCase splits before merging
        expect_ids(*r.tok, "hello World<|endoftext|>", {259, 260, 'o', 'r', 'l', 'd', 261});
    });
}

// ---------------------------------------------------------------- SentencePiece-style fixtures

// Gemma's layout: 0 <pad> 1 <eos> 2 <bos> 3 <unk> 4 <start_of_turn> 5 <end_of_turn>,
// 6..261 <0x00>..<0xFF>, then 262 ▁ 263 h 264 e 265 l 266 o 267 ▁h 268 ll 269 ▁he 270 llo
// 271 ▁hello 272 <h1> (a user-defined, non-special added token).
// merges: ▁ h, l l, ▁h e, ll o, ▁he llo.
enum : int32_t { kByte0 = 6, kSpTok = 262, kH, kE, kL, kO, kSpH, kLL, kSpHe, kLLO, kSpHello, kH1 };

json spm_json(const json &normalizer, const json &pre_tokenizer, const json &decoder, const json &added_tokens) {
    std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        tokens.push_back(name);
    }
    for (const std::string &t : {kSp, std::string("h"), std::string("e"), std::string("l"), std::string("o"), kSp + "h",
                                 std::string("ll"), kSp + "he", std::string("llo"), kSp + "hello", std::string("<h1>")})
        tokens.push_back(t);
    json vocab = json::object();
    for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
    return {{"version", "1.0"},
            {"added_tokens", added_tokens},
            {"normalizer", normalizer},
            {"pre_tokenizer", pre_tokenizer},
            {"post_processor", json::parse(R"({"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": "<bos>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}})")},
            {"decoder", decoder},
            {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", "<unk>"}, {"continuing_subword_prefix", nullptr},
                       {"end_of_word_suffix", nullptr}, {"fuse_unk", true}, {"byte_fallback", true}, {"ignore_merges", false},
                       {"vocab", vocab}, {"merges", {kSp + " h", "l l", kSp + "h e", "ll o", kSp + "he llo"}}}}};
}

json spm_added(bool rstrip_turns = false, bool lstrip_turns = false) {
    json a = json::array();
    const char *names[] = {"<pad>", "<eos>", "<bos>", "<unk>"};
    for (int i = 0; i < 4; ++i) a.push_back(added(i, names[i], true));
    a.push_back(added(4, "<start_of_turn>", true, lstrip_turns, rstrip_turns));
    a.push_back(added(5, "<end_of_turn>", true, lstrip_turns, rstrip_turns));
    a.push_back(added(kH1, "<h1>", false));
    return a;
}

json replace_space() { return {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSp}}; }

json spm_decoder(bool strip) {
    json parts = {{{"type", "Replace"}, {"pattern", {{"String", kSp}}}, {"content", " "}}, {{"type", "ByteFallback"}}, {{"type", "Fuse"}}};
    if (strip) parts.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    return {{"type", "Sequence"}, {"decoders", parts}};
}

// Gemma-2/3 exactly as transformers' GemmaConverter writes it.
json gemma_json() {
    return spm_json(replace_space(), {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}, {"invert", false}},
                    spm_decoder(false), spm_added());
}

json metaspace(const char *scheme) {
    return {{"type", "Metaspace"}, {"replacement", kSp}, {"prepend_scheme", scheme}, {"split", false}};
}

// Llama-2 (legacy) normalizer: Prepend("▁") + Replace(" ", "▁").
json llama_normalizer() {
    return {{"type", "Sequence"}, {"normalizers", {{{"type", "Prepend"}, {"prepend", kSp}}, replace_space()}}};
}

std::string decoded(const gpt::Tokenizer &t, const Ids &ids) { return t.decode(ids.data(), ids.size(), true); }

// ---------------------------------------------------------------- Gemma

void test_gemma(void **) {
    run([] {
        Imported r = import_json(gemma_json());
        const gpt::Tokenizer &t = *r.tok;
        assert_int_equal((int)r.data.kind, (int)gpt::TokenizerKind::SPM);
        assert_false(r.data.add_space_prefix);
        assert_int_equal(r.notes.size(), 0);
        assert_true(t.default_add_bos());
        assert_int_equal(t.bos_id(), 2);
        // No space is prepended: "hello" has no "▁h" to merge into, " hello" does.
        expect_ids(t, "hello", {kH, kE, kLLO});
        expect_ids(t, " hello", {kSpHello});
        expect_ids(t, "hello hello", {kH, kE, kLLO, kSpHello});
        expect_ids(t, "hello", {2, kH, kE, kLLO}, true);
        // Byte fallback: each byte of a character the vocabulary lacks, in UTF-8 order.
        expect_ids(t, "\xE4\xB8\xAD", {kByte0 + 0xE4, kByte0 + 0xB8, kByte0 + 0xAD});
        expect_ids(t, "h\n", {kH, kByte0 + '\n'});
        // The turn markers and the non-special <h1> split the text; no prefix after them either.
        expect_ids(t, "<start_of_turn>hello<end_of_turn> hello<h1>", {4, kH, kE, kLLO, 5, kSpHello, kH1});
        // Decoding keeps every space (no Strip in Gemma's decoder).
        assert_string_equal(decoded(t, {kSpHello, kSpHello}).c_str(), " hello hello");
        assert_string_equal(decoded(t, {kH, kE, kLLO, kByte0 + 0x0A}).c_str(), "hello\n");
        assert_string_equal(decoded(t, {4, kH, 5}).c_str(), "<start_of_turn>h<end_of_turn>");

        // A decoder that strips a space the encoder never prepended cannot be reproduced.
        json bad = gemma_json();
        bad["decoder"] = spm_decoder(true);
        expect_refused(bad, "decoder strips");
        bad = gemma_json();
        bad["decoder"]["decoders"][0]["content"] = "_";
        expect_refused(bad, "decoder Replace");
        // ... nor a Split on something the normalizer left in place.
        bad = gemma_json();
        bad["pre_tokenizer"]["pattern"]["String"] = "\n";
        expect_refused(bad, "'Split'");
        // An added token matched in normalized text that holds a space.
        bad = gemma_json();
        bad["added_tokens"].push_back({{"id", 271}, {"content", kSp + "hello"}, {"normalized", true}, {"special", false}});
        expect_refused(bad, "normalized=true");
        bad = gemma_json();
        bad["added_tokens"][6]["single_word"] = true;
        expect_refused(bad, "single_word");
    });
}

// ---------------------------------------------------------------- Metaspace prepend schemes

void test_metaspace_schemes(void **) {
    run([] {
        json added = spm_added();
        // prepend_scheme "first" (transformers' non-legacy Llama/Mistral conversion): "▁" only
        // before the text's first segment, and not when it already starts with a space.
        Imported first = import_json(spm_json(nullptr, metaspace("first"), spm_decoder(true), added));
        assert_int_equal((int)first.data.prefix_rule, (int)gpt::SpacePrefixRule::FIRST_SEGMENT);
        assert_int_equal(first.notes.size(), 0);
        expect_ids(*first.tok, "hello", {kSpHello});
        expect_ids(*first.tok, " hello", {kSpHello});
        expect_ids(*first.tok, "<start_of_turn>hello", {4, kH, kE, kLLO});
        expect_ids(*first.tok, "hello<end_of_turn>hello", {kSpHello, 5, kH, kE, kLLO});
        expect_ids(*first.tok, kSp + "hello", {kSpHello});  // a literal U+2581 counts as the prefix
        // "always": before every segment, unless it starts with a space.
        Imported always = import_json(spm_json(nullptr, metaspace("always"), spm_decoder(true), added));
        assert_int_equal((int)always.data.prefix_rule, (int)gpt::SpacePrefixRule::UNLESS_SPACE);
        expect_ids(*always.tok, "<start_of_turn>hello", {4, kSpHello});
        expect_ids(*always.tok, "<start_of_turn> hello", {4, kSpHello});
        // Llama-2's Prepend normalizer: before every segment, even one starting with a space
        // ("▁▁hello": ▁ h merges first, then up to ▁hello, leaving the first ▁ alone).
        Imported legacy = import_json(spm_json(llama_normalizer(), nullptr, spm_decoder(true), added));
        assert_int_equal((int)legacy.data.prefix_rule, (int)gpt::SpacePrefixRule::EVERY_SEGMENT);
        expect_ids(*legacy.tok, " hello", {kSpTok, kSpHello});
        expect_ids(*legacy.tok, "<start_of_turn>hello", {4, kSpHello});
        // "never": no prefix; then the decoder must not strip one.
        Imported never = import_json(spm_json(nullptr, metaspace("never"), spm_decoder(false), added));
        assert_false(never.data.add_space_prefix);
        expect_ids(*never.tok, "hello", {kH, kE, kLLO});
        // decoding: Strip(" ", 1, 0) drops the one prefixed space
        assert_string_equal(decoded(*first.tok, {kSpHello, kSpHello}).c_str(), "hello hello");

        expect_refused(spm_json(nullptr, metaspace("sometimes"), spm_decoder(true), added), "prepend_scheme 'sometimes'");
        expect_refused(spm_json(nullptr, metaspace("first"), spm_decoder(false), added), "decoder keeps");
        expect_refused(spm_json(llama_normalizer(), metaspace("first"), spm_decoder(true), added), "both a Prepend");
    });
}

// ---------------------------------------------------------------- Phi-3: lstrip / rstrip

void test_added_token_strip(void **) {
    run([] {
        // Phi-3's chat tokens have rstrip=true: "this token should strip all potential
        // whitespaces on its right side"; lstrip the same on the left.
        Imported r = import_json(spm_json(llama_normalizer(), nullptr, spm_decoder(true), spm_added(true, false)));
        const gpt::Tokenizer &t = *r.tok;
        assert_int_equal(r.data.rstrip_ids.size(), 2);
        expect_ids(t, "<start_of_turn>\nhello<end_of_turn>\n", {4, kSpHello, 5});
        expect_ids(t, "<start_of_turn> \t\xE3\x80\x80hello", {4, kSpHello});  // U+3000 is whitespace too
        expect_ids(t, "hello <end_of_turn>", {kSpHello, kSpTok, 5});          // rstrip only: the space before stays
        expect_ids(t, "<bos>\nhello", {2, kSpTok, kByte0 + '\n', kH, kE, kLLO});  // <bos> strips nothing
        Imported l = import_json(spm_json(llama_normalizer(), nullptr, spm_decoder(true), spm_added(false, true)));
        assert_int_equal(l.data.lstrip_ids.size(), 2);
        expect_ids(*l.tok, "hello \n<end_of_turn> hello", {kSpHello, 5, kSpTok, kSpHello});
        expect_ids(*l.tok, "hello.<end_of_turn>", {kSpHello, kByte0 + '.', 5});
        // lstrip never reaches back into the previous token's match
        Imported both = import_json(spm_json(llama_normalizer(), nullptr, spm_decoder(true), spm_added(true, true)));
        expect_ids(*both.tok, "<start_of_turn>  <end_of_turn>  hello", {4, 5, kSpHello});
    });
}

// ---------------------------------------------------------------- NFC (Qwen2.5 / Qwen3)

std::string utf8_of(uint32_t cp) {
    std::string out;
    if (cp < 0x80) {
        out += (char)cp;
    } else if (cp < 0x800) {
        out += (char)(0xC0 | (cp >> 6));
        out += (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += (char)(0xE0 | (cp >> 12));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    } else {
        out += (char)(0xF0 | (cp >> 18));
        out += (char)(0x80 | ((cp >> 12) & 0x3F));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    }
    return out;
}

std::string from_hex_cps(const std::string &field) {
    std::istringstream in(field);
    std::string out, word;
    while (in >> word) out += utf8_of((uint32_t)std::stoul(word, nullptr, 16));
    return out;
}

void test_nfc_against_unicode(void **) {
    run([] {
        const char *dir = getenv("GPT_TEST_DATA_DIR");
        std::string path = std::string(dir ? dir : "tests/data") + "/nfc_cases.txt";
        std::ifstream f(path);
        if (!f) fail_msg("cannot open %s (set GPT_TEST_DATA_DIR)", path.c_str());
        std::string line;
        size_t n = 0, changed = 0;
        while (std::getline(f, line)) {
            if (line.empty() || line[0] == '#') continue;
            size_t semi = line.find(';');
            std::string src = from_hex_cps(line.substr(0, semi)), want = from_hex_cps(line.substr(semi + 1));
            std::string got = gpt::nfc(src);
            if (got != want) fail_msg("NFC of %s: got '%s', want '%s'", line.c_str(), escaped(got).c_str(), escaped(want).c_str());
            if (gpt::nfc(want) != want) fail_msg("NFC of NFC(%s) changed it", line.c_str());
            ++n;
            changed += src != want;
        }
        if (n < 4000 || changed < 2900) fail_msg("%s: only %zu cases (%zu changing)", path.c_str(), n, changed);
        // Invalid UTF-8 passes through and composes with nothing.
        assert_string_equal(escaped(gpt::nfc("e\xFF\xCC\x81")).c_str(), "e\\xFF\\xCC\\x81");
        assert_string_equal(gpt::nfc("e\xCC\x81").c_str(), "\xC3\xA9");
        assert_string_equal(gpt::nfc("plain ASCII").c_str(), "plain ASCII");
        assert_false(gpt::may_change_under_nfc("\xC3\xA9 caf\xC3\xA9"));  // below U+0300: always NFC
    });
}

void test_qwen25_nfc_import(void **) {
    run([] {
        // Qwen2.5's tokenizer.json: NFC normalizer, Split(Qwen2 regex), ByteLevel. ids 256 é (C3 A9 mapped).
        const char *qwen2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
        std::string e_acute = gpt::byte_to_utf8(0xC3) + gpt::byte_to_utf8(0xA9);
        json j = byte_level_json(split_then_byte_level(qwen2), {e_acute}, {gpt::byte_to_utf8(0xC3) + " " + gpt::byte_to_utf8(0xA9)},
                                 json::array({added(257, "<|im_start|>", true)}));
        j["normalizer"] = {{"type", "NFC"}};
        Imported r = import_json(j);
        assert_int_equal((int)r.data.normalizer, (int)gpt::TextNormalizer::NFC);
        assert_int_equal(r.notes.size(), 0);
        // e + COMBINING ACUTE becomes é before splitting; the special token is matched in the raw text
        expect_ids(*r.tok, "caf\xC3\xA9", {'c', 'a', 'f', 256});
        expect_ids(*r.tok, "cafe\xCC\x81<|im_start|>e\xCC\x81", {'c', 'a', 'f', 256, 257, 256});
        // an added token matched in normalized text that NFC would rewrite is refused
        json bad = j;
        bad["added_tokens"].push_back({{"id", 258}, {"content", "e\xCC\x81!"}, {"normalized", true}, {"special", false}});
        expect_refused(bad, "not in NFC");
        // without the normalizer the mark stays: its own bytes, a word of its own
        j["normalizer"] = nullptr;
        Imported raw = import_json(j);
        expect_ids(*raw.tok, "e\xCC\x81", {'e', 0xCC, 0x81});
    });
}

// ---------------------------------------------------------------- metadata

void test_metadata_round_trip(void **) {
    run([] {
        TokenizerData d;
        d.kind = gpt::TokenizerKind::SPM;
        d.tokens = {"<unk>", "a", "b"};
        d.scores = {0, -1, -2};
        d.prefix_rule = gpt::SpacePrefixRule::FIRST_SEGMENT;
        d.lstrip_ids = {1};
        d.rstrip_ids = {2, 1};
        d.ignore_merges = true;
        d.normalizer = gpt::TextNormalizer::NFC;
        gpt::format::Metadata m;
        d.to_metadata(m);
        TokenizerData back = TokenizerData::from_metadata(m, 3, "x");
        assert_int_equal((int)back.prefix_rule, (int)gpt::SpacePrefixRule::FIRST_SEGMENT);
        assert_true(back.ignore_merges);
        assert_int_equal((int)back.normalizer, (int)gpt::TextNormalizer::NFC);
        assert_true(back.lstrip_ids == d.lstrip_ids);
        assert_true(back.rstrip_ids == d.rstrip_ids);
        for (PreTokenizer p : {PreTokenizer::O200K, PreTokenizer::GPT2_DIGITS}) {
            d.kind = gpt::TokenizerKind::BPE;
            d.pre = p;
            d.to_metadata(m);
            assert_int_equal((int)TokenizerData::from_metadata(m, 3, "x").pre, (int)p);
        }
        // A file from before tokenizer.ignore_merges: Llama-3's pre-tokenizer implies it.
        gpt::format::Metadata old;
        old.set(gpt::keys::kTokModel, gpt::format::MetaValue::of_str("bpe"));
        old.set(gpt::keys::kTokPre, gpt::format::MetaValue::of_str("llama3"));
        old.set(gpt::keys::kTokTokens, gpt::format::MetaValue::of_strs({"a"}));
        assert_true(TokenizerData::from_metadata(old, 1, "x").ignore_merges);
        old.set(gpt::keys::kTokPre, gpt::format::MetaValue::of_str("qwen2"));
        assert_false(TokenizerData::from_metadata(old, 1, "x").ignore_merges);
        // hostile values
        gpt::format::Metadata bad = m;
        bad.set(gpt::keys::kTokRstripIds, gpt::format::MetaValue::of_i32s({5}));
        expect_error(GPT_ERR_FORMAT, "tokenizer.rstrip_ids holds 5", [&] { TokenizerData::from_metadata(bad, 3, "x"); });
        bad = m;
        bad.set(gpt::keys::kTokSpacePrefixRule, gpt::format::MetaValue::of_str("middle"));
        expect_error(GPT_ERR_UNSUPPORTED, "'middle'", [&] { TokenizerData::from_metadata(bad, 3, "x"); });
        bad = m; // NFC would change a character vocabulary's characters
        bad.set(gpt::keys::kTokModel, gpt::format::MetaValue::of_str("char"));
        bad.set(gpt::keys::kTokPre, gpt::format::MetaValue::of_str("none"));
        expect_error(GPT_ERR_UNSUPPORTED, "tokenizer.normalizer 'nfc' with a character vocabulary",
                     [&] { TokenizerData::from_metadata(bad, 3, "x"); });
        bad.set(gpt::keys::kTokNormalizer, gpt::format::MetaValue::of_str("none"));
        assert_int_equal((int)TokenizerData::from_metadata(bad, 3, "x").kind, (int)gpt::TokenizerKind::CHAR);
        TokenizerData direct = d;
        direct.lstrip_ids = {-3};
        expect_error(GPT_ERR_FORMAT, "lstrip_ids holds id -3", [&] { gpt::Tokenizer::create(direct, "x"); });
    });
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digits_split),
        cmocka_unit_test(test_smollm2_import),
        cmocka_unit_test(test_o200k_split),
        cmocka_unit_test(test_o200k_import),
        cmocka_unit_test(test_gemma),
        cmocka_unit_test(test_metaspace_schemes),
        cmocka_unit_test(test_added_token_strip),
        cmocka_unit_test(test_nfc_against_unicode),
        cmocka_unit_test(test_qwen25_nfc_import),
        cmocka_unit_test(test_metadata_round_trip),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
