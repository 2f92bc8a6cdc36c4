// test_scaling.cpp - hostile input must cost linear (or n log n) time (issue 15, items 1-3):
// every parser and tokenizer is timed on an input of size n and of size 4n, and the ratio
// must stay below kMaxRatio (8). Linear code gives about 4 (n log n, and caches a 4n input
// fits less well in, up to about 5.5); code that is quadratic in the input gives 11-22.
//
// Each case fixes n: small enough that the 4n input and what is built from it stay near the
// caches (a 100 MB working set costs more per byte than a 25 MB one, which blurs linear
// with quadratic), large enough that today's quadratic code shows its quadratic term. A
// timing repeats the operation `reps` times, reps doubling until the run at n takes
// kTargetSeconds (20-40 ms on any machine, AddressSanitizer included: it slows code about
// uniformly, so the ratios hold). Then n and 4n are timed kRounds times each, interleaved,
// and the best times compared. Times are the process's CPU time, so that tests running
// beside this one (meson runs them in parallel) do not count; what load still costs (shared
// caches) is met by measuring a ratio over the bound twice more, keeping the best times,
// before the check fails.
// GPT_TEST_FILTER=<cmocka pattern> runs some of the test functions.
//
// Cases: weight-file metadata with many keys (through gpt_model_load_from_memory); the GPT-2,
// Llama-3 and Qwen2 byte-level BPE tokenizers on long runs of digits (ASCII and other \p{N})
// and on long words (one pre-token that BPE merges as a whole); SentencePiece-style BPE on
// long text without spaces (by merge rank and by score); the special-token matcher on text
// of partial matches; and, with the converter compiled in, model.safetensors.index.json with
// many shard names, config.json with many eos ids and tokenizer.json with many
// post-processors naming a token.
#include "gpt.h"

#include "core/error.h"
#include "fixture.h"
#include "format/reader.h"
#include "format/writer.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/tokenizer.h"

#if GPT_HAVE_CONVERT
#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "convert/tokenizer_import.h"
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <vector>

// cmocka last: it defines a fail() macro.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

constexpr double kTargetSeconds = 0.020; // the n run takes at least this long
constexpr double kMaxRatio = 8.0;        // t(4n) / t(n): linear ~4, n log n ~4.5, quadratic ~16
constexpr int kRounds = 3;

using Op = std::function<void()>;
std::vector<std::string> g_failures; // the checks of the running test function that failed
// Builds the input of size n (untimed) and returns the operation to time on it.
using Prepare = std::function<Op(size_t n)>;

// CPU time of the process (all its threads, user and system), not wall time: time spent
// descheduled while other tests run beside this one does not count.
double cpu_now() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double seconds(const Op &op) {
    const double t0 = cpu_now();
    op();
    return cpu_now() - t0;
}

// Runs a test body; an escaping exception becomes a cmocka failure (cmocka is C).
void run(const std::function<void()> &body) {
    std::string error;
    try {
        body();
    } catch (const std::exception &e) {
        error = e.what();
    }
    if (!error.empty()) fail_msg("unexpected exception: %s", error.c_str());
}

// Times prepare(n)'s operation at n and at 4n; fails when the ratio of the best times
// reaches kMaxRatio. Each timing repeats the operation `reps` times, reps doubling until the
// run at n takes kTargetSeconds: n itself stays small enough (each case picks it) that the
// 4n input and what is built from it stay in cache, since a fresh 100 MB working set costs
// more per byte than a 25 MB one (page faults, cache misses) and would blur linear with
// quadratic; n is also large enough that today's quadratic code is dominated by its
// quadratic term (ratio 11-16 there).
void check_scaling(const char *what, size_t n, const Prepare &prepare) {
    run([&] {
        const Op one = prepare(n), four = prepare(4 * n);
        size_t reps = 1;
        auto timed = [&reps](const Op &op) {
            return seconds([&] {
                for (size_t r = 0; r < reps; r++) op();
            });
        };
        double t = timed(one);
        while (t < kTargetSeconds && reps < (1u << 20)) {
            reps *= 2;
            t = timed(one);
        }
        double best = t, best4 = 1e30, ratio = 0;
        for (int attempt = 0; attempt < 3; attempt++) { // more chances against bursts of load
            for (int r = 0; r < kRounds; r++) {
                best4 = std::min(best4, timed(four));
                best = std::min(best, timed(one));
            }
            ratio = best4 / best;
            if (ratio < kMaxRatio) break;
        }
        std::printf("[ scaling ] %-56s n=%-7zu x%-5zu %8.2f ms   4n: %8.2f ms   ratio %5.2f\n", what, n, reps, best * 1e3,
                    best4 * 1e3, ratio);
        std::fflush(stdout);
        if (!(ratio < kMaxRatio)) {
            char msg[512];
            std::snprintf(msg, sizeof msg, "%s: %.2f ms at n=%zu but %.2f ms at 4n (ratio %.2f, limit %.1f): not linear", what,
                          best * 1e3, n, best4 * 1e3, ratio, kMaxRatio);
            g_failures.push_back(msg);
        }
    });
}

// Ends a test function: fails it with every check above that was not linear (each check
// runs, so one slow case does not hide the others).
void expect_linear() {
    if (g_failures.empty()) return;
    std::string all;
    for (const std::string &f : g_failures) all += "\n  " + f;
    g_failures.clear();
    fail_msg("%zu check(s) failed:%s", (size_t)std::count(all.begin(), all.end(), '\n'), all.c_str());
}

// A sink the compiler cannot drop.
volatile size_t g_sink;

// ---------------------------------------------------------------- weight file metadata

// A tiny valid model with n extra metadata keys: the model's own entries, then the extras.
std::vector<uint8_t> model_with_keys(size_t n) {
    static const std::vector<uint8_t> base = [] {
        fixture::Spec s;
        s.n_layers = 1, s.d_model = 8, s.n_heads = 2, s.n_kv_heads = 1, s.head_dim = 4, s.d_ff = 8, s.vocab_size = 16;
        s.context_length = 8;
        return fixture::make(s).file;
    }();
    auto f = gpt::format::WeightFile::from_memory(base.data(), base.size(), true, gpt::format::ReadOptions());
    gpt::format::Writer w;
    for (const auto &[key, v] : f->metadata().entries()) w.metadata().set(key, v);
    char key[64];
    for (size_t i = 0; i < n; i++) {
        std::snprintf(key, sizeof key, "user.extra.key_%zu", i);
        w.metadata().set(key, gpt::format::MetaValue::of_u32((uint32_t)i));
    }
    for (const auto &t : f->tensors())
        w.add_tensor(t.name, t.dtype, std::vector<uint64_t>(t.dims, t.dims + t.ndim), f->data(t), t.nbytes);
    return w.write_memory();
}

void test_metadata_keys(void **) {
    check_scaling("weight file: metadata keys (gpt_model_load_from_memory)", 2048, [](size_t n) -> Op {
        auto bytes = std::make_shared<std::vector<uint8_t>>(model_with_keys(n));
        return [bytes] {
            gpt_model_params mp;
            gpt_model_params_init(&mp);
            mp.device = GPT_DEVICE_CPU;
            gpt_model *m = nullptr;
            const gpt_status st = gpt_model_load_from_memory(bytes->data(), bytes->size(), &mp, &m);
            if (st != GPT_OK) throw std::runtime_error(std::string("load: ") + gpt_last_error());
            gpt_model_free(m);
        };
    });
    expect_linear();
}

// ---------------------------------------------------------------- tokenizers

// Byte-level BPE: the 256 mapped bytes, then he ll hell hello (merges h e, l l, he ll,
// hell o), a control token <|endoftext|> and a user-defined <|x|>.
gpt::TokenizerData tiny_bpe(gpt::PreTokenizer pre) {
    gpt::TokenizerData d;
    d.kind = gpt::TokenizerKind::BPE;
    d.pre = pre;
    d.add_space_prefix = false;
    for (int b = 0; b < 256; ++b) d.tokens.push_back(gpt::byte_to_utf8((uint8_t)b));
    for (const char *t : {"he", "ll", "hell", "hello", "<|endoftext|>", "<|x|>"}) d.tokens.push_back(t);
    d.merges = {"h e", "l l", "he ll", "hell o"};
    d.types.assign(d.tokens.size(), gpt::TOKEN_NORMAL);
    d.types[260] = gpt::TOKEN_CONTROL;
    d.types[261] = gpt::TOKEN_USER_DEFINED;
    d.bos_id = d.eos_id = 260;
    return d;
}

// SentencePiece-style by rank: <unk> <s> </s>, the byte tokens, then ▁ h e l o ▁h ll ▁he llo
// ▁hello he hello (merges ▁ h, l l, ▁h e, ll o, ▁he llo, h e, he llo).
gpt::TokenizerData tiny_spm() {
    gpt::TokenizerData d = fixture::spm_base();
    const std::string sp = "\xE2\x96\x81";
    for (const std::string &t : {sp, std::string("h"), std::string("e"), std::string("l"), std::string("o"), sp + "h",
                                 std::string("ll"), sp + "he", std::string("llo"), sp + "hello", std::string("he"),
                                 std::string("hello")})
        fixture::add_token(d, t, gpt::TOKEN_NORMAL, 0.0f);
    d.merges = {sp + " h", "l l", sp + "h e", "ll o", sp + "he llo", "h e", "he llo"};
    return d;
}

// SentencePiece-style by score (llama2.c): a b c ab bc abc.
gpt::TokenizerData tiny_scored() {
    gpt::TokenizerData d = fixture::spm_base();
    const std::pair<const char *, float> pieces[] = {{"\xE2\x96\x81", 0}, {"a", 0}, {"b", 0}, {"c", 0},
                                                     {"ab", -1},          {"bc", -2}, {"abc", -3}};
    for (const auto &p : pieces) fixture::add_token(d, p.first, gpt::TOKEN_NORMAL, p.second);
    return d;
}

// text repeated to at least n bytes.
std::string repeat(const std::string &unit, size_t n) {
    std::string s;
    s.reserve(n + unit.size());
    while (s.size() < n) s += unit;
    return s;
}

void check_encode(const char *what, const gpt::TokenizerData &d, const std::string &unit, bool parse_special) {
    std::shared_ptr<gpt::Tokenizer> tok = gpt::Tokenizer::create(d, "test");
    check_scaling(what, 16384, [tok, unit, parse_special](size_t n) -> Op {
        auto text = std::make_shared<std::string>(repeat(unit, n));
        return [tok, text, parse_special] {
            std::vector<int32_t> ids;
            tok->encode(*text, false, parse_special, ids);
            g_sink = ids.size();
        };
    });
}

// Digits: ASCII, then ARABIC-INDIC ONE, TWO (Nd), SUPERSCRIPT TWO and VULGAR FRACTION ONE HALF (No).
const std::string kDigits = "0123456789\xD9\xA1\xD9\xA2\xC2\xB2\xC2\xBD";

void test_bpe_digits(void **) {
    check_encode("gpt2 BPE: one run of digits", tiny_bpe(gpt::PreTokenizer::GPT2), kDigits, false);
    check_encode("llama3 BPE: one run of digits (\\p{N}{1,3} pieces)", tiny_bpe(gpt::PreTokenizer::LLAMA3), kDigits, false);
    check_encode("qwen2 BPE: one run of digits (\\p{N} pieces)", tiny_bpe(gpt::PreTokenizer::QWEN2), kDigits, false);
    check_encode("o200k BPE: one run of digits", tiny_bpe(gpt::PreTokenizer::O200K), kDigits, false);
    check_encode("gpt2_digits BPE: one run of digits", tiny_bpe(gpt::PreTokenizer::GPT2_DIGITS), kDigits, false);
    check_encode("gpt2_digits BPE: digits between words", tiny_bpe(gpt::PreTokenizer::GPT2_DIGITS), "ab 1 2c", false);
    expect_linear();
}

void test_bpe_letters(void **) {
    // One pre-token of n letters with merges throughout, and one letter without any.
    check_encode("gpt2 BPE: one word 'hellohello...'", tiny_bpe(gpt::PreTokenizer::GPT2), "hello", false);
    check_encode("llama3 BPE: one word 'hellohello...'", tiny_bpe(gpt::PreTokenizer::LLAMA3), "hello", false);
    check_encode("gpt2 BPE: one word 'lll...'", tiny_bpe(gpt::PreTokenizer::GPT2), "l", false);
    // o200k backtracks over an upper-case run looking for lower case: none comes.
    check_encode("o200k BPE: one upper-case run 'HHH...'", tiny_bpe(gpt::PreTokenizer::O200K), "H", false);
    check_encode("o200k BPE: one run of marks", tiny_bpe(gpt::PreTokenizer::O200K), "\xCC\x81", false);
    check_encode("o200k BPE: 'Hello' repeated", tiny_bpe(gpt::PreTokenizer::O200K), "Hello", false);
    // NFC sorts a run of combining marks of two classes (n log n), composes each pair.
    gpt::TokenizerData nfc = tiny_bpe(gpt::PreTokenizer::QWEN2);
    nfc.normalizer = gpt::TextNormalizer::NFC;
    check_encode("NFC BPE: one run of marks of two classes", nfc, "\xCC\x81\xCC\xA3", false);
    check_encode("NFC BPE: 'e' + COMBINING ACUTE repeated (composes)", nfc, "e\xCC\x81", false);
    expect_linear();
}

void test_spm_long_text(void **) {
    check_encode("spm by rank: 'hellohello...' without spaces", tiny_spm(), "hello", false);
    check_encode("spm by score: 'abcabc...' without spaces", tiny_scored(), "abc", false);
    expect_linear();
}

void test_special_partial_matches(void **) {
    // Every position starts a partial match of <|endoftext|> or <|x|>; a few match fully.
    check_encode("special tokens: text of partial matches", tiny_bpe(gpt::PreTokenizer::GPT2),
                 "<|endoftext|<|x|<|endoftext<|x|><|", true);
    // lstrip/rstrip tokens widen over whitespace runs on both sides.
    gpt::TokenizerData strip = tiny_bpe(gpt::PreTokenizer::GPT2);
    strip.lstrip_ids = {260};
    strip.rstrip_ids = {261};
    check_encode("special tokens: lstrip/rstrip over whitespace", strip, "<|x|>  \t \n <|endoftext|>   ", true);
    expect_linear();
}

#if GPT_HAVE_CONVERT
// ---------------------------------------------------------------- converter JSON readers

struct TempDir {
    std::string path;
    TempDir() {
        const char *t = std::getenv("TMPDIR");
        path = std::string(t && *t ? t : "/tmp") + "/gpt-scaling-XXXXXX";
        if (!mkdtemp(path.data())) throw std::runtime_error("mkdtemp failed");
    }
    ~TempDir() { (void)!std::system(("rm -rf '" + path + "'").c_str()); }
    void write(const std::string &name, const std::string &text) const {
        FILE *f = std::fopen((path + "/" + name).c_str(), "wb");
        if (!f) throw std::runtime_error("cannot write " + name);
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
    }
};

void test_safetensors_index_shards(void **) {
    // n tensors in n shards; none of the shards exists, so open_dir reads the whole index
    // and stops at the first shard with GPT_ERR_IO.
    check_scaling("safetensors index: distinct shard names", 4096, [](size_t n) -> Op {
        auto dir = std::make_shared<TempDir>();
        std::string j = "{\"metadata\":{},\"weight_map\":{";
        for (size_t i = 0; i < n; i++)
            j += (i ? ",\"t." : "\"t.") + std::to_string(i) + "\":\"shard-" + std::to_string(i) + ".safetensors\"";
        dir->write("model.safetensors.index.json", j + "}}");
        return [dir] {
            try {
                gpt::convert::SafetensorsSet::open_dir(dir->path);
            } catch (const gpt::Error &e) {
                if (e.status() != GPT_ERR_IO) throw;
                return;
            }
            throw std::runtime_error("open_dir accepted an index without shards");
        };
    });
    expect_linear();
}

void test_hf_config_eos_ids(void **) {
    check_scaling("config.json: distinct eos_token_id entries", 16384, [](size_t n) -> Op {
        std::string j = R"({"model_type":"llama","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,)"
                        R"("intermediate_size":8,"vocab_size":4194304,"eos_token_id":[)";
        for (size_t i = 0; i < n; i++) j += (i ? "," : "") + std::to_string(i);
        auto text = std::make_shared<std::string>(j + "]}");
        return [text, n] {
            gpt::convert::HfConfig h = gpt::convert::parse_hf_config(*text, "config.json");
            if (h.eos_ids.size() != n) throw std::runtime_error("eos ids lost");
        };
    });
    expect_linear();
}

void test_tokenizer_json_readers(void **) {
    // A byte-level tokenizer.json of n tokens and n TemplateProcessing post-processors, each
    // starting with the last token by name (not in its special_tokens): a lookup per processor.
    check_scaling("tokenizer.json: vocab and post-processors naming a token", 2048, [](size_t n) -> Op {
        auto dir = std::make_shared<TempDir>();
        // Names of one length with a long common prefix, as a hostile file would choose them.
        auto name = [](size_t i) {
            char b[64];
            std::snprintf(b, sizeof b, "token_with_a_long_common_prefix_%08zu", i);
            return std::string(b);
        };
        std::string vocab, procs;
        for (size_t i = 0; i < n; i++) {
            vocab += (i ? ",\"" : "\"") + name(i) + "\":" + std::to_string(i);
            procs += std::string(i ? "," : "") + R"({"type":"TemplateProcessing","single":[{"SpecialToken":{"id":")" +
                     name(n - 1) + R"(","type_id":0}}]})";
        }
        dir->write("tokenizer.json", R"({"model":{"type":"BPE","vocab":{)" + vocab + R"(},"merges":[]},)"
                                     R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},)"
                                     R"("post_processor":{"type":"Sequence","processors":[)" + procs + "]}}");
        return [dir, n] {
            gpt::TokenizerData t = gpt::import_hf_tokenizer(dir->path + "/tokenizer.json");
            if (t.tokens.size() != n || t.bos_id != (int32_t)n - 1) throw std::runtime_error("import result");
        };
    });
    expect_linear();
}
#endif

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata_keys),
        cmocka_unit_test(test_bpe_digits),
        cmocka_unit_test(test_bpe_letters),
        cmocka_unit_test(test_spm_long_text),
        cmocka_unit_test(test_special_partial_matches),
#if GPT_HAVE_CONVERT
        cmocka_unit_test(test_safetensors_index_shards),
        cmocka_unit_test(test_hf_config_eos_ids),
        cmocka_unit_test(test_tokenizer_json_readers),
#endif
    };
    if (const char *f = std::getenv("GPT_TEST_FILTER")) cmocka_set_test_filter(f); // e.g. "test_bpe_*"
    return cmocka_run_group_tests_name("scaling", tests, nullptr, nullptr);
}
