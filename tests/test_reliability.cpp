// test_reliability.cpp - hostile and broken inputs, and the library's behaviour at its limits,
// each with the exact status it must give (docs/RELIABILITY.md lists every case and where it
// is tested; tests/test_format.cpp and tests/test_api.cpp hold the cases already covered there):
//   - a bit flip at every bit of a weight file, truncation at every byte (with and without a
//     header that agrees), random multi-byte damage in the data;
//   - NaN and infinity in the weights (f32, f16, bf16): GPT_ERR_FORMAT naming the tensor at
//     load with checksums, loaded and run (no crash, non-finite logits) without;
//   - a tokenizer with duplicate or empty entries in a weight file; token ids out of range or
//     negative in every tokenizer call; prompts longer than the context; a full context and
//     reset;
//   - sizes near 2^64 in a context's KV cache (no wrap-around, no huge allocation);
//   - injected allocation failures in loading a tokenizer-bearing model and in the tokenizer
//     calls: GPT_ERR_OUT_OF_MEMORY, nothing leaked (ASan/valgrind), streams left intact;
//   - regressions of the bugs the fuzzers found: the streaming detokenizer's size query,
//     gpt_tokenize of text with no tokens, JSON nested 200 000 deep in config.json,
//     safetensors headers and tokenizer.json.
//
// Global operator new/delete are replaced (tests/support/alloc_hooks) to fail on request.
#include "gpt.h"

#include "alloc_hooks.h"
#include "backend/backend.h"
#include "model/arch.h"
#include "core/error.h"
#include "core/memory.h"
#include "fixture.h"
#include "format/reader.h"
#include "format/writer.h"
#include "format_decoder.h"
#include "reference.h"
#include "tokenizer/tokenizer_data.h"

#if GPT_HAVE_CONVERT
#include "convert/hf_config.h"
#include "convert/safetensors.h"
#include "convert/tokenizer_import.h"
#endif

#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

using namespace format_decoder; // Bytes, header_of, table_entries, put32, zcrc, fix_all_crcs, ...
using gpt::DType;

#define CHECK_OK(expr)                                                                                                 \
    do {                                                                                                               \
        const gpt_status st_ = (expr);                                                                                 \
        if (st_ != GPT_OK) fail_msg("%s -> %s: %s", #expr, gpt_status_str(st_), gpt_last_error());                     \
    } while (0)

#define CHECK_STATUS(expr, want, needle)                                                                               \
    do {                                                                                                               \
        const gpt_status st_ = (expr);                                                                                 \
        if (st_ != (want) || !std::strstr(gpt_last_error(), needle))                                                   \
            fail_msg("%s -> %s \"%s\", expected %s with \"%s\"", #expr, gpt_status_str(st_), gpt_last_error(),         \
                     gpt_status_str(want), needle);                                                                    \
    } while (0)

// ---------------------------------------------------------------- weight file helpers

// Where things are in a valid file (docs/FORMAT.md), from the independent decoder's header
// and table.
struct Entry {
    std::string name;
    DType dtype;
    uint64_t offset, nbytes; // absolute
    size_t crc_at;           // where the table stores its crc32
};
struct Layout {
    uint64_t meta_off, meta_size, table_off, table_size, data_off;
    std::vector<Entry> tensors;
};
Layout layout_of(const Bytes &b) {
    const Header h = header_of(b);
    Layout l{h.meta_off, h.meta_size, h.table_off, h.table_size, h.data_off, {}};
    for (const TensorPos &t : table_entries(b))
        l.tensors.push_back(Entry{t.name, (DType)t.dtype, h.data_off + t.rel, t.nbytes, t.crc_at});
    return l;
}

gpt_status load(const Bytes &b, uint32_t flags, gpt_model **m) {
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    mp.flags = flags;
    *m = reinterpret_cast<gpt_model *>(0x1);
    const gpt_status st = gpt_model_load_from_memory(b.data(), b.size(), &mp, m);
    if (st != GPT_OK && *m != nullptr) fail_msg("OUT pointer not NULL after %s", gpt_status_str(st));
    return st;
}

// Loads, expecting st (and needle in the message); frees what loaded.
void expect_load(const Bytes &b, uint32_t flags, gpt_status want, const char *needle, const std::string &what) {
    gpt_model *m = nullptr;
    const gpt_status st = load(b, flags, &m);
    if (st != want || !std::strstr(gpt_last_error(), needle))
        fail_msg("%s: %s \"%s\", expected %s with \"%s\"", what.c_str(), gpt_status_str(st), gpt_last_error(), gpt_status_str(want),
                 needle);
    gpt_model_free(m);
}

std::vector<float> logits_of(gpt_model *m, const std::vector<int32_t> &toks) {
    gpt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(gpt_model_get_info(m, &info));
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.n_threads = 1;
    gpt_ctx *ctx = nullptr;
    CHECK_OK(gpt_ctx_create(m, &cp, &ctx));
    std::vector<float> out(toks.size() * info.vocab_size);
    CHECK_OK(gpt_forward(ctx, toks.data(), 1, (uint32_t)toks.size(), GPT_FORWARD_ALL_LOGITS, out.data()));
    gpt_ctx_free(ctx);
    return out;
}

fixture::Spec tiny_spec(uint64_t seed) {
    fixture::Spec s;
    s.arch = GPT_ARCH_LLAMA;
    s.n_layers = 1, s.d_model = 8, s.n_heads = 2, s.n_kv_heads = 1, s.head_dim = 4, s.d_ff = 12, s.vocab_size = 24;
    s.context_length = 8;
    s.seed = seed;
    return s;
}

// A small SentencePiece-style tokenizer (<unk> <s> </s>, bytes, a few pieces with scores).
gpt::TokenizerData small_spm() {
    gpt::TokenizerData d = fixture::spm_base();
    d.add_bos = true;
    float score = -1;
    for (const char *p : {"\xE2\x96\x81", "a", "b", "c", "e", "h", "t", "ab", "th", "he", "the", "\xE2\x96\x81t", "\xE2\x96\x81th",
                          "\xE2\x96\x81the", "\xC3\xA9", "abcdefghijklmnopqrstuvwxyz"})
        fixture::add_token(d, p, gpt::TOKEN_NORMAL, score--); // the last (id 274) is longer than a short-string buffer
    return d;
}

// The replaced operator new (tests/support/alloc_hooks) is what this binary links; without it
// the allocation checks here would pass without checking anything.
void test_alloc_hooks_linked(void **) { assert_true(alloc_hooks::installed()); }

// ======================================================================== bit flips

// Every bit of a small file flipped in turn: each flip is caught, with the status the spec
// says for where it lands, or lands in padding no reader looks at (and then the model is
// exactly the undamaged one).
void test_bit_flips_everywhere(void **) {
    const fixture::Model fx = fixture::make(tiny_spec(reference::sub_seed("bit flips")));
    const Bytes &good = fx.file;
    const Layout l = layout_of(good);
    gpt_model *ref = nullptr;
    CHECK_OK(load(good, 0, &ref));
    const std::vector<int32_t> toks = {1, 5, 9, 23};
    const std::vector<float> want = logits_of(ref, toks);
    gpt_model_free(ref);

    std::map<std::string, uint64_t> tally;
    Bytes b = good;
    for (size_t at = 0; at < good.size(); at++) {
        // What the byte is.
        const char *region = "padding";
        std::string needle;
        gpt_status expect = GPT_OK;
        if (at < 8) region = "magic", expect = GPT_ERR_FORMAT, needle = "bad magic";
        else if (at < 12) region = "version", expect = GPT_ERR_UNSUPPORTED, needle = "version";
        else if (at < 128) region = "header", expect = GPT_ERR_CHECKSUM, needle = "header checksum mismatch";
        else if (at >= l.meta_off && at < l.meta_off + l.meta_size)
            region = "metadata", expect = GPT_ERR_CHECKSUM, needle = "metadata checksum mismatch";
        else if (at >= l.table_off && at < l.table_off + l.table_size)
            region = "table", expect = GPT_ERR_CHECKSUM, needle = "tensor table checksum mismatch";
        else
            for (const Entry &e : l.tensors)
                if (at >= e.offset && at < e.offset + e.nbytes)
                    region = "tensor data", expect = GPT_ERR_CHECKSUM, needle = "tensor '" + e.name + "' checksum mismatch";
        for (int bit = 0; bit < 8; bit++) {
            b[at] ^= (uint8_t)(1u << bit);
            gpt_model *m = nullptr;
            const gpt_status st = load(b, 0, &m);
            const std::string what = "bit " + std::to_string(bit) + " of byte " + std::to_string(at) + " (" + region + ")";
            if (st != expect || !std::strstr(gpt_last_error(), needle.c_str()))
                fail_msg("%s: %s \"%s\", expected %s \"%s\"", what.c_str(), gpt_status_str(st), gpt_last_error(),
                         gpt_status_str(expect), needle.c_str());
            if (st == GPT_OK) {
                const auto got = logits_of(m, toks);
                assert_memory_equal(got.data(), want.data(), want.size() * sizeof(float));
                gpt_model_free(m);
            }
            // Skipping checksums skips the tensor crcs only: header, metadata and table
            // damage is still refused, tensor damage loads.
            if (std::strcmp(region, "tensor data") == 0 && bit == 0) {
                gpt_model *s = nullptr;
                CHECK_OK(load(b, GPT_MODEL_SKIP_CHECKSUMS, &s));
                gpt_model_free(s);
            } else if (expect == GPT_ERR_CHECKSUM && bit == 0) {
                gpt_model *s = nullptr;
                assert_int_equal(load(b, GPT_MODEL_SKIP_CHECKSUMS, &s), GPT_ERR_CHECKSUM);
            }
            b[at] ^= (uint8_t)(1u << bit);
            const std::string name = gpt_status_str(st);
            tally[std::string(region) + " -> " + name.substr(0, name.find(':'))]++;
        }
    }
    std::printf("# %zu bytes, %zu single-bit flips:\n", good.size(), good.size() * 8);
    for (const auto &[k, n] : tally) std::printf("#   %-50s %" PRIu64 "\n", k.c_str(), n);
}

// Bursts: random runs of random bytes inside tensor data, always caught.
void test_bursts_in_tensor_data(void **) {
    const fixture::Model fx = fixture::make(tiny_spec(reference::sub_seed("bit flips")));
    const Bytes &good = fx.file;
    const Layout l = layout_of(good);
    std::mt19937_64 rng(reference::sub_seed("bursts"));
    for (int i = 0; i < 300; i++) {
        Bytes d = good;
        const Entry &e = l.tensors[rng() % l.tensors.size()];
        const uint64_t len = 1 + rng() % std::min<uint64_t>(e.nbytes, 64);
        const uint64_t at = e.offset + rng() % (e.nbytes - len + 1);
        bool changed = false;
        for (uint64_t k = 0; k < len; k++) {
            const uint8_t v = (uint8_t)rng();
            changed |= d[at + k] != v;
            d[at + k] = v;
        }
        if (!changed) continue;
        expect_load(d, 0, GPT_ERR_CHECKSUM, ("tensor '" + e.name + "' checksum mismatch").c_str(), "burst in " + e.name);
    }
}

// Flips over a file carrying a tokenizer (one bit per byte): the same rules.
void test_bit_flips_tokenizer_file(void **) {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = tiny_spec(reference::sub_seed("bit flips tokenizer"));
    s.vocab_size = (uint32_t)tok.tokens.size();
    s.bos_id = 1, s.eos_id = 2;
    const Bytes good = fixture::make(s, &tok).file;
    const Layout l = layout_of(good);
    uint64_t caught = 0, padding = 0;
    Bytes b = good;
    for (size_t at = 0; at < good.size(); at++) {
        const uint8_t bit = (uint8_t)(1u << (at % 8));
        b[at] ^= bit;
        gpt_model *m = nullptr;
        const gpt_status st = load(b, 0, &m);
        b[at] ^= bit;
        bool in_section = at < 128 || (at >= l.meta_off && at < l.meta_off + l.meta_size) ||
                          (at >= l.table_off && at < l.table_off + l.table_size);
        for (const Entry &e : l.tensors) in_section |= at >= e.offset && at < e.offset + e.nbytes;
        if (in_section) {
            if (st == GPT_OK) fail_msg("flip at byte %zu loaded", at);
            assert_true(st == GPT_ERR_CHECKSUM || st == GPT_ERR_FORMAT || st == GPT_ERR_UNSUPPORTED);
            caught++;
        } else {
            if (st != GPT_OK) fail_msg("flip in padding at byte %zu: %s", at, gpt_last_error());
            gpt_model_free(m);
            padding++;
        }
    }
    std::printf("# %zu bytes (metadata %" PRIu64 " of them): %" PRIu64 " flips caught, %" PRIu64 " in padding\n", good.size(),
                l.meta_size, caught, padding);
}

// ======================================================================== truncation

// Cut at every length: refused with GPT_ERR_FORMAT, both with the header's file_size as
// written (the size disagrees) and with a header made to agree (the section the cut falls
// in is outside the file).
void test_truncated_everywhere(void **) {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = tiny_spec(reference::sub_seed("truncation"));
    s.vocab_size = (uint32_t)tok.tokens.size();
    const Bytes good = fixture::make(s, &tok).file;
    const Layout l = layout_of(good);
    for (size_t cut = 0; cut < good.size(); cut++) {
        Bytes b(good.begin(), good.begin() + cut);
        const std::string what = "cut at " + std::to_string(cut);
        if (cut < 128) {
            gpt_model *m = nullptr;
            gpt_model_params mp;
            gpt_model_params_init(&mp);
            mp.device = GPT_DEVICE_CPU;
            const uint8_t empty = 0;
            const gpt_status st = gpt_model_load_from_memory(cut ? b.data() : &empty, cut, &mp, &m);
            if (st != GPT_ERR_FORMAT || !std::strstr(gpt_last_error(), "shorter than the 128-byte header"))
                fail_msg("%s: %s", what.c_str(), gpt_last_error());
            continue;
        }
        expect_load(b, 0, GPT_ERR_FORMAT, "header says the file is", what);
        put64(b, H_FILE_SIZE, cut);
        const uint64_t meta_end = l.meta_off + l.meta_size, table_end = l.table_off + l.table_size;
        // Crcs of sections still inside the file are made to match.
        if (meta_end <= cut) put32(b, H_META_CRC, zcrc(b.data() + l.meta_off, l.meta_size));
        if (table_end <= cut) put32(b, H_TABLE_CRC, zcrc(b.data() + l.table_off, l.table_size));
        put32(b, H_HEADER_CRC, zcrc(b.data(), 124));
        const char *needle = cut < meta_end ? "metadata section [" : cut < table_end ? "tensor table [" : cut < l.data_off ? "data offset" : "data [";
        expect_load(b, 0, GPT_ERR_FORMAT, needle, what + " (header agrees)");
    }
    std::printf("# %zu cut lengths refused, each with and without a consistent header\n", good.size());
}

// ======================================================================== NaN / Inf

Bytes with_value(const Bytes &good, const Entry &e, uint64_t element, uint32_t bits) {
    Bytes b = good;
    const size_t es = e.dtype == DType::F32 ? 4 : 2;
    if (es == 4) put32(b, e.offset + element * 4, bits);
    else {
        b[e.offset + element * 2] = (uint8_t)bits;
        b[e.offset + element * 2 + 1] = (uint8_t)(bits >> 8);
    }
    fix_all_crcs(b);
    return b;
}

// NaN, +inf and -inf in the first, a middle and the last element of tensors of every dtype:
// with checksums (the default) the load fails with GPT_ERR_FORMAT naming the tensor, the
// element and the value; with GPT_MODEL_SKIP_CHECKSUMS it loads and runs without crashing
// (documented: skipping the checksums skips this check), forward giving non-finite logits.
void check_nan_inf_weights(DType dt) {
    fixture::Spec s = tiny_spec(reference::sub_seed("nan inf"));
    s.d_model = 256, s.n_heads = 4, s.head_dim = 64, s.d_ff = 16, s.vocab_size = 300; // tok_emb: 76 800 elements
    s.dtype = dt;
    const Bytes good = fixture::make(s).file;
    const Layout l = layout_of(good);
    struct V {
        const char *kind;
        uint32_t f32, f16, bf16;
    } values[] = {{"NaN", 0x7fc00000u, 0x7e00u, 0x7fc0u}, {"inf", 0x7f800000u, 0x7c00u, 0x7f80u},
                  {"-inf", 0xff800000u, 0xfc00u, 0xff80u}, {"NaN", 0xffffffffu, 0xffffu, 0xffffu}};
    for (const Entry &e : l.tensors) {
        const uint64_t n = e.nbytes / (dt == DType::F32 ? 4 : 2);
        const bool big = e.name == "tok_emb.weight";
        std::vector<uint64_t> where = {0, n / 2, n - 1};
        if (big) where.push_back(70000); // past the first 256 KiB piece of the crc pass
        for (uint64_t at : where)
            for (const V &v : values) {
                const uint32_t bits = dt == DType::F32 ? v.f32 : dt == DType::F16 ? v.f16 : v.bf16;
                const Bytes b = with_value(good, e, at, bits);
                const std::string needle =
                    "tensor '" + e.name + "' holds a non-finite value (" + v.kind + " at element " + std::to_string(at) + ")";
                expect_load(b, 0, GPT_ERR_FORMAT, needle.c_str(), needle + " " + gpt::dtype_name(dt));
                if (at != 0 || std::strcmp(v.kind, "NaN") != 0) continue;
                // Unchecked: loads; forward runs (a NaN in a row of tok_emb only affects
                // that token); generate returns valid ids.
                gpt_model *m = nullptr;
                CHECK_OK(load(b, GPT_MODEL_SKIP_CHECKSUMS, &m));
                const std::vector<float> lg = logits_of(m, {0, 1});
                bool finite = true;
                for (float x : lg) finite &= std::isfinite(x);
                if (finite) fail_msg("%s: a NaN at element 0 left every logit finite", e.name.c_str());
                gpt_ctx *ctx = nullptr;
                CHECK_OK(gpt_ctx_create(m, nullptr, &ctx));
                for (float temp : {0.0f, 0.8f}) {
                    gpt_sampling_params sp;
                    gpt_sampling_params_init(&sp);
                    sp.temperature = temp;
                    int32_t out[4];
                    uint32_t n_out = 0;
                    const int32_t prompt[2] = {0, 3};
                    gpt_ctx_reset(ctx);
                    CHECK_OK(gpt_generate(ctx, prompt, 2, &sp, nullptr, nullptr, out, 4, &n_out));
                    for (uint32_t i = 0; i < n_out; i++) assert_true(out[i] >= 0 && out[i] < (int32_t)s.vocab_size);
                }
                gpt_ctx_free(ctx);
                gpt_model_free(m);
            }
    }
    // From a file too (mmap and read()), same message.
    const Bytes b = with_value(good, l.tensors.back(), 0, dt == DType::F32 ? 0x7f800000u : 0x7c00u | (dt == DType::BF16 ? 0x0380u : 0));
    const std::string path = fixture::write_temp(b);
    for (uint32_t flags : {0u, (uint32_t)GPT_MODEL_NO_MMAP}) {
        gpt_model_params mp;
        gpt_model_params_init(&mp);
        mp.device = GPT_DEVICE_CPU;
        mp.flags = flags;
        gpt_model *m = nullptr;
        CHECK_STATUS(gpt_model_load(path.c_str(), &mp, &m), GPT_ERR_FORMAT, "non-finite");
        assert_null(m);
    }
    ::unlink(path.c_str());
}

void test_nan_inf_weights_f32(void **) { check_nan_inf_weights(DType::F32); }

void test_nan_inf_weights_f16(void **) { check_nan_inf_weights(DType::F16); }

void test_nan_inf_weights_bf16(void **) { check_nan_inf_weights(DType::BF16); }

// ======================================================================== tokenizer entries

// A weight file whose tokenizer has duplicate or empty entries (or ids out of range) is
// refused with GPT_ERR_FORMAT naming the entries.
void test_hostile_tokenizer_in_file(void **) {
    const gpt::TokenizerData base = small_spm();
    fixture::Spec s = tiny_spec(1);
    s.vocab_size = (uint32_t)base.tokens.size();
    struct Case {
        const char *what;
        std::function<void(gpt::TokenizerData &)> edit;
        gpt_status want;
        const char *needle;
    } cases[] = {
        {"duplicate entry", [](gpt::TokenizerData &d) { d.tokens[262] = d.tokens[261]; }, GPT_ERR_FORMAT, "tokens 261 and 262 are both"},
        {"empty normal entry", [](gpt::TokenizerData &d) { d.tokens[270] = ""; }, GPT_ERR_FORMAT, "token 270 is an empty string"},
        {"empty byte token", [](gpt::TokenizerData &d) { d.tokens[3] = ""; }, GPT_ERR_FORMAT, "token 3 is an empty string"},
        {"bad byte token", [](gpt::TokenizerData &d) { d.tokens[5] = "<0xZZ>"; }, GPT_ERR_FORMAT, "byte token 5"},
        {"type 0", [](gpt::TokenizerData &d) { d.types[7] = 0; }, GPT_ERR_FORMAT, "has type 0"},
        {"NaN score", [](gpt::TokenizerData &d) { d.scores[9] = NAN; }, GPT_ERR_FORMAT, "NaN score"},
        {"unk id = vocab", [](gpt::TokenizerData &d) { d.unk_id = (int32_t)d.tokens.size(); }, GPT_ERR_FORMAT, "outside the vocabulary"},
        {"pad id -7", [](gpt::TokenizerData &d) { d.pad_id = -7; }, GPT_ERR_FORMAT, "outside the vocabulary"},
        {"merge of unknown tokens", [](gpt::TokenizerData &d) { d.merges = {"zz yy"}; }, GPT_ERR_FORMAT, "is not in the vocabulary"},
        {"no merges, no scores", [](gpt::TokenizerData &d) { d.scores.clear(); }, GPT_ERR_FORMAT, "neither merges nor scores"},
    };
    for (const Case &c : cases) {
        gpt::TokenizerData d = base;
        c.edit(d);
        expect_load(fixture::make(s, &d).file, 0, c.want, c.needle, c.what);
    }
}

// Duplicates among UNUSED padding entries and empty control tokens are allowed.
void test_tokenizer_allowed_duplicates_in_file(void **) {
    const gpt::TokenizerData base = small_spm();
    fixture::Spec s = tiny_spec(1);
    s.vocab_size = (uint32_t)base.tokens.size();
    gpt::TokenizerData ok = base;
    ok.tokens[272] = ok.tokens[271] = "pad";
    ok.types[272] = ok.types[271] = gpt::TOKEN_UNUSED;
    ok.tokens[273] = "";
    ok.types[273] = gpt::TOKEN_CONTROL;
    expect_load(fixture::make(s, &ok).file, 0, GPT_OK, "", "allowed duplicates");
}

// ======================================================================== token ids

// Ids out of range or negative in every tokenizer call: GPT_ERR_INVALID_ARG naming the id,
// nothing written, a streaming detokenizer unchanged (forward and generate are covered in
// test_api.cpp: test_bad_tokens). One test per call; each tries every bad id.
gpt_model *load_token_ids_model() {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = tiny_spec(2);
    s.vocab_size = (uint32_t)tok.tokens.size();
    gpt_model *m = nullptr;
    CHECK_OK(load(fixture::make(s, &tok).file, 0, &m));
    return m;
}
std::vector<int32_t> bad_ids(gpt_model *m) {
    gpt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(gpt_model_get_info(m, &info));
    const int32_t V = (int32_t)info.vocab_size;
    return {-1, -2, V, V + 1, INT32_MIN, INT32_MAX};
}

void test_detokenize_bad_ids(void **) {
    gpt_model *m = load_token_ids_model();
    for (int32_t bad : bad_ids(m)) {
        const int32_t ids[3] = {270, bad, 271};
        char buf[32];
        std::memset(buf, 'Z', sizeof buf);
        size_t n = 99;
        CHECK_STATUS(gpt_detokenize(m, ids, 3, 0, buf, sizeof buf, &n), GPT_ERR_INVALID_ARG, "outside the vocabulary");
        assert_int_equal(buf[0], 'Z');
    }
    gpt_model_free(m);
}

void test_token_to_piece_bad_ids(void **) {
    gpt_model *m = load_token_ids_model();
    for (int32_t bad : bad_ids(m)) {
        char buf[32];
        size_t n = 99;
        CHECK_STATUS(gpt_token_to_piece(m, bad, 0, buf, sizeof buf, &n), GPT_ERR_INVALID_ARG, std::to_string(bad).c_str());
    }
    gpt_model_free(m);
}

void test_detokenizer_push_bad_ids(void **) {
    gpt_model *m = load_token_ids_model();
    for (int32_t bad : bad_ids(m)) {
        char buf[32];
        size_t n = 99;
        gpt_detokenizer *d = nullptr;
        CHECK_OK(gpt_detokenizer_create(m, 0, &d));
        // "é" is two bytes: push its byte tokens one at a time, a bad id in between.
        const int32_t c3 = 3 + 0xC3, a9 = 3 + 0xA9;
        CHECK_OK(gpt_detokenizer_push(d, c3, buf, sizeof buf, &n));
        assert_int_equal(n, 0); // held back: an incomplete character
        CHECK_STATUS(gpt_detokenizer_push(d, bad, buf, sizeof buf, &n), GPT_ERR_INVALID_ARG, "outside the vocabulary");
        CHECK_OK(gpt_detokenizer_push(d, a9, buf, sizeof buf, &n));
        assert_int_equal(n, 2);
        assert_memory_equal(buf, "\xC3\xA9", 2);
        gpt_detokenizer_free(d);
    }
    gpt_model_free(m);
}

// ======================================================================== context limits

// The context-limit tests' model (context_length 32), a 40-token prompt, and a context of
// max_seq tokens (0: the model's context) with greedy sampling.
struct LongPrompt {
    fixture::Spec s = tiny_spec(reference::sub_seed("long prompt"));
    Bytes file; // the model may borrow it (an aligned buffer): kept as long as the model
    gpt_model *m = nullptr;
    gpt_ctx *ctx = nullptr;
    std::vector<int32_t> prompt = std::vector<int32_t>(40);
    uint32_t cap_seq = 0;
    gpt_sampling_params sp;
    explicit LongPrompt(uint32_t max_seq) {
        s.context_length = 32;
        file = fixture::make(s).file;
        CHECK_OK(load(file, 0, &m));
        for (size_t i = 0; i < prompt.size(); i++) prompt[i] = (int32_t)(i * 7 % s.vocab_size);
        gpt_ctx_params cp;
        gpt_ctx_params_init(&cp);
        cp.max_seq = max_seq;
        cp.n_threads = 1;
        CHECK_OK(gpt_ctx_create(m, &cp, &ctx));
        cap_seq = max_seq ? max_seq : s.context_length;
        gpt_sampling_params_init(&sp);
        sp.temperature = 0;
        sp.flags = GPT_SAMPLING_IGNORE_EOS;
    }
    ~LongPrompt() {
        gpt_ctx_free(ctx);
        gpt_model_free(m);
    }
};

// Prompts longer than the context (or than the room left): CONTEXT_FULL, n_out 0, the cache
// unchanged, the context usable (exactly filling it works).
void check_prompt_longer_than_context(uint32_t max_seq) {
    LongPrompt t(max_seq);
    gpt_ctx *ctx = t.ctx;
    const auto &prompt = t.prompt;
    const uint32_t cap_seq = t.cap_seq;
    int32_t out[64];
    uint32_t n_out = 77;
    for (uint32_t held : {0u, 5u}) {
        gpt_ctx_reset(ctx);
        if (held) CHECK_OK(gpt_forward(ctx, prompt.data(), 1, held, 0, nullptr));
        for (uint32_t len : {cap_seq - held + 1, cap_seq + 1, (uint32_t)prompt.size()}) {
            CHECK_STATUS(gpt_generate(ctx, prompt.data(), len, &t.sp, nullptr, nullptr, out, 8, &n_out), GPT_ERR_CONTEXT_FULL,
                         "max_seq");
            assert_int_equal(n_out, 0);
            assert_int_equal(gpt_ctx_seq_len(ctx, 0), held);
            CHECK_STATUS(gpt_forward(ctx, prompt.data(), 1, len, 0, nullptr), GPT_ERR_CONTEXT_FULL, "max_seq");
            assert_int_equal(gpt_ctx_seq_len(ctx, 0), held);
        }
        // Exactly filling it works.
        CHECK_OK(gpt_forward(ctx, prompt.data(), 1, cap_seq - held, 0, nullptr));
        assert_int_equal(gpt_ctx_seq_len(ctx, 0), cap_seq);
    }
}

// Generation running into the end: CONTEXT_FULL part way, then reset recovers and the same
// call gives the same tokens.
void check_generation_fills_context(uint32_t max_seq) {
    LongPrompt t(max_seq);
    gpt_ctx *ctx = t.ctx;
    const auto &prompt = t.prompt;
    const uint32_t cap_seq = t.cap_seq;
    int32_t out[64];
    uint32_t n_out = 77;
    std::vector<int32_t> first(64), again(64);
    uint32_t n1 = 0, n2 = 0;
    gpt_ctx_reset(ctx);
    CHECK_STATUS(gpt_generate(ctx, prompt.data(), 4, &t.sp, nullptr, nullptr, first.data(), 64, &n1), GPT_ERR_CONTEXT_FULL, "full");
    assert_int_equal(n1, cap_seq - 4 + 1);
    assert_int_equal(gpt_ctx_seq_len(ctx, 0), cap_seq);
    int32_t one = 0;
    CHECK_STATUS(gpt_generate(ctx, &one, 1, &t.sp, nullptr, nullptr, out, 1, &n_out), GPT_ERR_CONTEXT_FULL, "max_seq");
    gpt_ctx_reset(ctx);
    CHECK_STATUS(gpt_generate(ctx, prompt.data(), 4, &t.sp, nullptr, nullptr, again.data(), 64, &n2), GPT_ERR_CONTEXT_FULL, "full");
    assert_int_equal(n1, n2);
    assert_memory_equal(first.data(), again.data(), n1 * sizeof(int32_t));
}

void test_prompt_longer_than_model_context(void **) { check_prompt_longer_than_context(0); }
void test_prompt_longer_than_max_seq(void **) { check_prompt_longer_than_context(16); }
void test_generation_fills_model_context(void **) { check_generation_fills_context(0); }
void test_generation_fills_max_seq(void **) { check_generation_fills_context(16); }

// A context whose KV cache would pass 2^64 bytes (2^10 layers x 2^12 sequences x 2^10 kv
// heads x 2^22 positions x 2^10 dims: every factor inside the limits) is refused with
// GPT_ERR_OUT_OF_MEMORY instead of wrapping to a small allocation that forward would
// overrun (regression: the product was computed without an overflow check).
void test_kv_cache_size_overflow(void **) {
    gpt::ModelConfig c;
    c.arch = GPT_ARCH_LLAMA;
    c.n_layers = 1024, c.d_model = 64, c.n_heads = 1024, c.n_kv_heads = 1024, c.head_dim = 1024, c.d_ff = 64;
    c.vocab_size = 32, c.context_length = 1u << 22, c.rope_theta = 10000;
    c.validate("test");
    const gpt::ModelShape shape = gpt::make_architecture(c)->shape();
    auto dev = gpt::make_cpu_device();
    gpt::ExecParams p;
    p.max_batch = 4096, p.max_seq = 1u << 22, p.max_step_tokens = 4096, p.n_threads = 1;
    try {
        const gpt::MemoryPlan plan = dev->plan(shape, p);
        fail_msg("a 2^66-byte KV cache planned as %" PRIu64 " bytes", plan.host_bytes);
    } catch (const gpt::Error &e) {
        assert_int_equal(e.status(), GPT_ERR_OUT_OF_MEMORY);
        assert_non_null(std::strstr(e.what(), "KV cache"));
    }
    try {
        (void)dev->create_executor(shape, p);
        fail_msg("created");
    } catch (const gpt::Error &e) {
        assert_int_equal(e.status(), GPT_ERR_OUT_OF_MEMORY);
    }
    // Just under the limit: planned at its true size (no wrap), then refused by the allocator.
    p.max_batch = 1, p.max_seq = 1u << 16;
    const gpt::MemoryPlan plan = dev->plan(shape, p);
    assert_true(plan.host_bytes >= 2ull * 4 * 1024 * 1024 * 1024 * (1ull << 16)); // 2^49: k and v caches
}

// ======================================================================== allocation failures

// Loading a model with a tokenizer (thousands of small allocations building it) with each
// operator new failing in turn: GPT_ERR_OUT_OF_MEMORY, OUT NULL, nothing leaked (the
// sanitizer build checks leaks). test_api.cpp covers a model without a tokenizer and contexts.
void test_tokenizer_model_allocation_failures(void **) {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = tiny_spec(3);
    s.vocab_size = (uint32_t)tok.tokens.size();
    const Bytes file = fixture::make(s, &tok).file;
    uint32_t failures = 0;
    for (int64_t k = 0;; k++) {
        alloc_hooks::fail_nth(k);
        gpt_model *m = nullptr;
        const gpt_status st = load(file, 0, &m);
        alloc_hooks::disarm();
        if (st == GPT_OK) {
            assert_false(alloc_hooks::fired());
            gpt_model_free(m);
            break;
        }
        if (st != GPT_ERR_OUT_OF_MEMORY) fail_msg("operator new %" PRId64 " failing: %s %s", k, gpt_status_str(st), gpt_last_error());
        failures++;
    }
    std::printf("# loading a %zu-token tokenizer model: %u allocation points failed cleanly\n", tok.tokens.size(), failures);
    assert_true(failures > 300);
}

// A tokenizer call (0: gpt_tokenize, 1: gpt_detokenize, 2: a streaming detokenizer) with
// each operator new failing in turn: OUT_OF_MEMORY or OK, and a failed push leaves the
// stream as it was (so the text is the same as without failures).
void check_tokenizer_call_allocation_failures(int call) {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = tiny_spec(4);
    s.vocab_size = (uint32_t)tok.tokens.size();
    gpt_model *m = nullptr;
    CHECK_OK(load(fixture::make(s, &tok).file, 0, &m));
    const char *text = "the cab \xC3\xA9 <s>hat\xFF abcdefghijklmnopqrstuvwxyz the\xE6\x97";
    int32_t want_ids[256];
    uint32_t n_want = 0;
    CHECK_OK(gpt_tokenize(m, text, std::strlen(text), GPT_TOKENIZE_PARSE_SPECIAL, want_ids, 200, &n_want));
    // Long pieces (past short-string storage, so pushing them allocates), and a character
    // split over tokens (held back by the stream).
    for (int32_t id : {274, 3 + 0xE6, 3 + 0x97, 274, 274, 3 + 0xE6, 3 + 0x97, 3 + 0xA5, 274}) want_ids[n_want++] = id;
    char want_text[512];
    size_t n_text = 0;
    CHECK_OK(gpt_detokenize(m, want_ids, n_want, 0, want_text, sizeof want_text, &n_text));
    uint32_t fails = 0;
    for (int64_t k = 0;; k++) {
        int32_t ids[256];
        uint32_t n = 0;
        char buf[512];
        size_t nb = 0;
        std::string streamed;
        streamed.reserve(1024); // the test itself must not allocate while failures are armed
        gpt_status st = GPT_OK;
        gpt_detokenizer *d = nullptr;
        alloc_hooks::fail_nth(k);
        if (call == 0) {
            st = gpt_tokenize(m, text, std::strlen(text), GPT_TOKENIZE_PARSE_SPECIAL, ids, 256, &n);
        } else if (call == 1) {
            st = gpt_detokenize(m, want_ids, n_want, 0, buf, sizeof buf, &nb);
        } else {
            st = gpt_detokenizer_create(m, 0, &d);
            for (uint32_t i = 0; st == GPT_OK && i < n_want; i++) {
                gpt_status ps;
                // A failed push changes nothing: retry it once allocations work again.
                while ((ps = gpt_detokenizer_push(d, want_ids[i], buf, sizeof buf, &nb)) == GPT_ERR_OUT_OF_MEMORY) {
                    alloc_hooks::disarm();
                    fails++;
                }
                CHECK_OK(ps);
                streamed.append(buf, nb);
            }
            if (st == GPT_OK) {
                alloc_hooks::disarm();
                CHECK_OK(gpt_detokenizer_flush(d, buf, sizeof buf, &nb));
                streamed.append(buf, nb);
            }
        }
        const bool injected = alloc_hooks::fired();
        alloc_hooks::disarm();
        gpt_detokenizer_free(d);
        if (st == GPT_ERR_OUT_OF_MEMORY) {
            fails++;
            continue;
        }
        CHECK_OK(st);
        if (call == 0) {
            assert_int_equal(n, n_want - 9);
            assert_memory_equal(ids, want_ids, n * sizeof(int32_t));
        } else if (call == 1) {
            assert_int_equal(nb, n_text);
            assert_memory_equal(buf, want_text, nb);
        } else {
            assert_int_equal(streamed.size(), n_text);
            assert_memory_equal(streamed.data(), want_text, n_text);
        }
        if (!injected) break;
    }
    std::printf("# tokenizer call %d: %u injected failures handled\n", call, fails);
    assert_true(fails > 0);
    gpt_model_free(m);
}

void test_tokenize_allocation_failures(void **) { check_tokenizer_call_allocation_failures(0); }
void test_detokenize_allocation_failures(void **) { check_tokenizer_call_allocation_failures(1); }
void test_detokenizer_stream_allocation_failures(void **) { check_tokenizer_call_allocation_failures(2); }

// Memory exhausted for good (every allocation on the thread fails, from a fresh thread whose
// last-error message has no storage yet): each call returns GPT_ERR_OUT_OF_MEMORY (the
// message may be cut short) instead of terminating the process (regression: storing the
// message allocated inside the noexcept guard's catch block, so the bad_alloc ended in
// std::terminate).
void test_out_of_memory_for_good(void **) {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = tiny_spec(7);
    s.vocab_size = (uint32_t)tok.tokens.size();
    const Bytes file = fixture::make(s, &tok).file;
    gpt_model *m = nullptr;
    CHECK_OK(load(file, 0, &m));
    gpt_ctx *ctx = nullptr;
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.n_threads = 1;
    CHECK_OK(gpt_ctx_create(m, &cp, &ctx));
    gpt_status st[6];
    const char *build_info = nullptr;
    std::thread t([&] {
        alloc_hooks::fail_all_on_this_thread(true);
        gpt_model *m2 = nullptr;
        gpt_model_params mp;
        gpt_model_params_init(&mp);
        mp.device = GPT_DEVICE_CPU;
        st[0] = gpt_model_load_from_memory(file.data(), file.size(), &mp, &m2);
        int32_t ids[64];
        uint32_t n = 0;
        const char *text = "the cab and the hat, a long enough text";
        st[1] = gpt_tokenize(m, text, std::strlen(text), 0, ids, 64, &n);
        const int32_t few[3] = {269, 274, 274};
        char buf[128];
        size_t nb = 0;
        st[2] = gpt_detokenize(m, few, 3, 0, buf, sizeof buf, &nb);
        gpt_detokenizer *d = nullptr;
        st[3] = gpt_detokenizer_create(m, 0, &d);
        gpt_ctx *c2 = nullptr;
        st[4] = gpt_ctx_create(m, &cp, &c2);
        const int32_t bad = -1; // an error whose message does not fit a short string
        st[5] = gpt_forward(ctx, &bad, 1, 1, 0, nullptr);
        build_info = gpt_build_info(); // returns a string, never throws
        alloc_hooks::fail_all_on_this_thread(false);
        gpt_model_free(m2);
        gpt_ctx_free(c2);
        gpt_detokenizer_free(d);
    });
    t.join();
    for (int i = 0; i < 5; i++)
        if (st[i] != GPT_ERR_OUT_OF_MEMORY) fail_msg("call %d: %s", i, gpt_status_str(st[i]));
    assert_true(st[5] == GPT_ERR_INVALID_ARG || st[5] == GPT_ERR_OUT_OF_MEMORY);
    assert_non_null(build_info);
    assert_non_null(std::strstr(build_info, "libgpt"));
    gpt_ctx_free(ctx);
    gpt_model_free(m);
}

// ======================================================================== regressions

// The streaming detokenizer's size query (NULL buffer, capacity 0) reports the size and
// consumes nothing, so the documented two-call pattern loses no text (regression:
// fuzz_tokenizer found the token consumed, and flush's held bytes dropped, by the query).
void test_detokenizer_size_query(void **) {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = tiny_spec(5);
    s.vocab_size = (uint32_t)tok.tokens.size();
    gpt_model *m = nullptr;
    CHECK_OK(load(fixture::make(s, &tok).file, 0, &m));
    const int32_t ids[] = {269, 3 + (int32_t)'x', 3 + 0xC3, 3 + 0xA9, 3 + 0xE6, 3 + 0x97}; // "the", x, "é", two bytes of "日"
    char want[64];
    size_t n_want = 0;
    CHECK_OK(gpt_detokenize(m, ids, 6, 0, want, sizeof want, &n_want));
    gpt_detokenizer *d = nullptr;
    CHECK_OK(gpt_detokenizer_create(m, 0, &d));
    std::string got;
    for (int32_t id : ids) {
        size_t need = 99;
        CHECK_OK(gpt_detokenizer_push(d, id, nullptr, 0, &need)); // query
        std::vector<char> buf(need + 1);
        size_t n = 0;
        CHECK_OK(gpt_detokenizer_push(d, id, buf.data(), need, &n));
        assert_int_equal(n, need);
        got.append(buf.data(), n);
    }
    size_t need = 0;
    CHECK_OK(gpt_detokenizer_flush(d, nullptr, 0, &need));
    assert_int_equal(need, 2); // the two bytes of an unfinished character
    char tail[8];
    size_t n = 0;
    CHECK_OK(gpt_detokenizer_flush(d, tail, sizeof tail, &n));
    assert_int_equal(n, 2);
    got.append(tail, n);
    assert_int_equal(got.size(), n_want);
    assert_memory_equal(got.data(), want, n_want);
    gpt_detokenizer_free(d);
    gpt_model_free(m);
}

// Text continued after a prompt keeps the space before its first word: with
// GPT_DETOKENIZE_CONTINUE neither the stream nor gpt_detokenize drops the leading space that
// a SentencePiece-style tokenizer drops at the start of a text, and every stream of that
// detokenizer continues (after a flush too). Without the flag the start of a text still
// drops it. Regression: `gpt generate -p "... went to the"` printed "...went to thepark".
void test_detokenizer_continues_text(void **) {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = tiny_spec(9);
    s.vocab_size = (uint32_t)tok.tokens.size();
    gpt_model *m = nullptr;
    CHECK_OK(load(fixture::make(s, &tok).file, 0, &m));
    const int32_t ids[] = {272, 3 + (int32_t)'x'}; // "\u2581the" ("the" after a space), then "x"
    char buf[64];
    size_t n = 0;
    CHECK_OK(gpt_detokenize(m, ids, 2, 0, buf, sizeof buf, &n));
    assert_int_equal(n, 4);
    assert_memory_equal(buf, "thex", 4); // the start of a text
    CHECK_OK(gpt_detokenize(m, ids, 2, GPT_DETOKENIZE_CONTINUE, buf, sizeof buf, &n));
    assert_int_equal(n, 5);
    assert_memory_equal(buf, " thex", 5);
    for (uint32_t flags : {0u, (uint32_t)GPT_DETOKENIZE_CONTINUE}) {
        gpt_detokenizer *d = nullptr;
        CHECK_OK(gpt_detokenizer_create(m, flags, &d));
        for (int stream = 0; stream < 2; stream++) { // the second after a flush
            std::string got;
            for (int32_t id : ids) {
                CHECK_OK(gpt_detokenizer_push(d, id, buf, sizeof buf, &n));
                got.append(buf, n);
            }
            CHECK_OK(gpt_detokenizer_flush(d, buf, sizeof buf, &n));
            got.append(buf, n);
            const std::string want = flags ? " thex" : "thex";
            if (got != want) fail_msg("flags 0x%x stream %d: '%s', expected '%s'", flags, stream, got.c_str(), want.c_str());
        }
        gpt_detokenizer_free(d);
    }
    gpt_detokenizer *d = nullptr;
    CHECK_STATUS(gpt_detokenizer_create(m, 0x4, &d), GPT_ERR_INVALID_ARG, "flags");
    CHECK_STATUS(gpt_token_to_piece(m, 272, GPT_DETOKENIZE_CONTINUE, buf, sizeof buf, &n), GPT_ERR_INVALID_ARG, "flags");
    gpt_model_free(m);
}

// Text that gives no tokens, into a real buffer (regression: memcpy from the empty vector's
// NULL data, undefined behaviour that UBSan reports).
void test_tokenize_no_tokens(void **) {
    const gpt::TokenizerData tok = small_spm();
    fixture::Spec s = tiny_spec(6);
    s.vocab_size = (uint32_t)tok.tokens.size();
    gpt_model *m = nullptr;
    CHECK_OK(load(fixture::make(s, &tok).file, 0, &m));
    int32_t ids[4] = {-7, -7, -7, -7};
    uint32_t n = 99;
    CHECK_OK(gpt_tokenize(m, "", 0, GPT_TOKENIZE_NO_BOS, ids, 4, &n));
    assert_int_equal(n, 0);
    CHECK_OK(gpt_tokenize(m, nullptr, 0, GPT_TOKENIZE_NO_BOS, ids, 4, &n));
    assert_int_equal(n, 0);
    assert_int_equal(ids[0], -7);
    char buf[4];
    size_t nb = 9;
    CHECK_OK(gpt_detokenize(m, nullptr, 0, 0, buf, sizeof buf, &nb));
    assert_int_equal(nb, 0);
    gpt_model_free(m);
}

#if GPT_HAVE_CONVERT
std::string nested(size_t depth, const std::string &open, const std::string &inner, const std::string &close) {
    std::string s;
    s.reserve(depth * (open.size() + close.size()) + inner.size());
    for (size_t i = 0; i < depth; i++) s += open;
    s += inner;
    for (size_t i = 0; i < depth; i++) s += close;
    return s;
}

template <typename F> void expect_convert_error(gpt_status want, const char *needle, F &&f, const char *what) {
    try {
        f();
        fail_msg("%s: accepted", what);
    } catch (const gpt::Error &e) {
        if (e.status() != want || !std::strstr(e.what(), needle))
            fail_msg("%s: %s \"%.300s\", expected %s with \"%s\"", what, gpt_status_str(e.status()), e.what(), gpt_status_str(want), needle);
    }
}

// JSON nested 200 000 deep where the converter quotes or walks it: rejected with
// GPT_ERR_FORMAT (regression: json::dump() in the error message, and flatten() of a
// tokenizer.json "Sequence", recursed once per level and overflowed the stack).
const size_t kDeep = 200000;

// In config.json: a value quoted in the message, an object expected.
void test_deep_json_config(void **) {
    const std::string deep = nested(kDeep, "[", "", "]");
    expect_convert_error(GPT_ERR_FORMAT, "\"n_embd\" must be a positive integer, not [[[[[...]]]]]",
                         [&] { gpt::convert::parse_hf_config(R"({"model_type":"gpt2","n_embd":)" + deep + "}", "config.json"); },
                         "deep config.json value");
    expect_convert_error(GPT_ERR_FORMAT, "must be an object",
                         [&] {
                             gpt::convert::parse_hf_config(R"({"model_type":"llama","hidden_size":8,"num_hidden_layers":1,)"
                                                           R"("num_attention_heads":1,"intermediate_size":8,"vocab_size":8,"rope_scaling":)" +
                                                               deep + "}",
                                                           "config.json");
                         },
                         "deep rope_scaling");
}

// A safetensors header's shape.
void test_deep_json_safetensors(void **) {
    const std::string deep = nested(kDeep, "[", "", "]");
    const std::string header = R"({"a":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,4]}})";
    expect_convert_error(GPT_ERR_FORMAT, "is not a list of non-negative integers",
                         [&] { gpt::convert::parse_safetensors_header((const uint8_t *)header.data(), header.size(), 4, "m.safetensors"); },
                         "deep safetensors shape");
}

// tokenizer.json: a pre_tokenizer Sequence nested 200 000 deep around a ByteLevel: imported
// or refused, no crash.
void test_deep_json_tokenizer(void **) {
    const size_t D = kDeep;
    char dir[] = "/tmp/gpt-reliability-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const std::string path = std::string(dir) + "/tokenizer.json";
    const std::string tj = R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":)" +
                           nested(D, R"({"type":"Sequence","pretokenizers":[)", R"({"type":"ByteLevel","use_regex":true})", "]}") + "}";
    FILE *f = std::fopen(path.c_str(), "wb");
    assert_non_null(f);
    std::fwrite(tj.data(), 1, tj.size(), f);
    std::fclose(f);
    try {
        const gpt::TokenizerData t = gpt::import_hf_tokenizer(path);
        assert_int_equal(t.tokens.size(), 1);
    } catch (const gpt::Error &e) {
        assert_true(e.status() == GPT_ERR_FORMAT || e.status() == GPT_ERR_UNSUPPORTED);
    }
    ::unlink(path.c_str());
    ::rmdir(dir);
}

// Token ids in tokenizer.json and config.json that no 32-bit id can hold are refused with
// GPT_ERR_FORMAT naming the file, the token and the value as written (issue 15 item 16:
// a post_processor special id of 2^32 + 5 silently became 5; 2^64 - 1, read as 64 bits,
// became -1 in the message or a dropped id).
void test_json_token_ids_out_of_range(void **) {
    char dir[] = "/tmp/gpt-reliability-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const std::string path = std::string(dir) + "/tokenizer.json";
    auto write_tokenizer = [&](const std::string &vocab, const std::string &added, const std::string &special_ids) {
        const std::string tj =
            R"({"model":{"type":"BPE","vocab":{)" + vocab + R"(},"merges":[]},"added_tokens":[)" + added + "]," +
            R"("pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},)" +
            R"("post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},)" +
            R"({"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[)" + special_ids +
            R"(],"tokens":["<s>"]}}}})";
        FILE *f = std::fopen(path.c_str(), "wb");
        assert_non_null(f);
        std::fwrite(tj.data(), 1, tj.size(), f);
        std::fclose(f);
    };
    const std::string vocab = R"("a":0,"b":1,"c":2,"d":3,"e":4,"<s>":5)";
    auto import = [&] { gpt::import_hf_tokenizer(path); };

    write_tokenizer(vocab, "", "5"); // as written by Hugging Face: accepted
    assert_int_equal(gpt::import_hf_tokenizer(path).bos_id, 5);
    write_tokenizer(vocab, "", "4294967301"); // 2^32 + 5
    expect_convert_error(GPT_ERR_FORMAT, "tokenizer.json: token '<s>' has id 4294967301", import, "post_processor id 2^32 + 5");
    write_tokenizer(vocab, "", "-1");
    expect_convert_error(GPT_ERR_FORMAT, "tokenizer.json: token '<s>' has id -1", import, "post_processor id -1");
    write_tokenizer(vocab, R"({"id":4294967301,"content":"<x>","special":true})", "5");
    expect_convert_error(GPT_ERR_FORMAT, "tokenizer.json: token '<x>' has id 4294967301", import, "added_tokens id 2^32 + 5");
    write_tokenizer(R"("a":0,"b":18446744073709551615,"<s>":1)", "", "1"); // 2^64 - 1
    expect_convert_error(GPT_ERR_FORMAT, "tokenizer.json: token 'b' has id 18446744073709551615", import, "vocab id 2^64 - 1");
    ::unlink(path.c_str());
    ::rmdir(dir);

    // config.json: ids outside the vocabulary are dropped with a warning, one beyond 2^63
    // (which would wrap) is refused.
    const std::string cfg = R"({"model_type":"llama","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":1,)"
                            R"("intermediate_size":8,"vocab_size":8,)";
    gpt::convert::HfConfig h = gpt::convert::parse_hf_config(cfg + R"("eos_token_id":[4294967301,2]})", "config.json");
    assert_int_equal(h.config.eos_id, 2);
    assert_int_equal(h.warnings.size(), 1);
    assert_non_null(std::strstr(h.warnings[0].c_str(), "4294967301"));
    expect_convert_error(GPT_ERR_FORMAT, "config.json: \"eos_token_id\" holds 18446744073709551615",
                         [&] { gpt::convert::parse_hf_config(cfg + R"("eos_token_id":[18446744073709551615,2]})", "config.json"); },
                         "config.json eos id 2^64 - 1");
}
#endif

} // namespace

int main(void) {
    reference::test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_hooks_linked),
        cmocka_unit_test(test_bit_flips_everywhere),
        cmocka_unit_test(test_bursts_in_tensor_data),
        cmocka_unit_test(test_bit_flips_tokenizer_file),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_nan_inf_weights_f32),
        cmocka_unit_test(test_nan_inf_weights_f16),
        cmocka_unit_test(test_nan_inf_weights_bf16),
        cmocka_unit_test(test_hostile_tokenizer_in_file),
        cmocka_unit_test(test_tokenizer_allowed_duplicates_in_file),
        cmocka_unit_test(test_detokenize_bad_ids),
        cmocka_unit_test(test_token_to_piece_bad_ids),
        cmocka_unit_test(test_detokenizer_push_bad_ids),
        cmocka_unit_test(test_prompt_longer_than_model_context),
        cmocka_unit_test(test_prompt_longer_than_max_seq),
        cmocka_unit_test(test_generation_fills_model_context),
        cmocka_unit_test(test_generation_fills_max_seq),
        cmocka_unit_test(test_kv_cache_size_overflow),
        cmocka_unit_test(test_tokenizer_model_allocation_failures),
        cmocka_unit_test(test_tokenize_allocation_failures),
        cmocka_unit_test(test_detokenize_allocation_failures),
        cmocka_unit_test(test_detokenizer_stream_allocation_failures),
        cmocka_unit_test(test_out_of_memory_for_good),
        cmocka_unit_test(test_detokenizer_size_query),
        cmocka_unit_test(test_detokenizer_continues_text),
        cmocka_unit_test(test_tokenize_no_tokens),
#if GPT_HAVE_CONVERT
        cmocka_unit_test(test_deep_json_config),
        cmocka_unit_test(test_deep_json_safetensors),
        cmocka_unit_test(test_deep_json_tokenizer),
        cmocka_unit_test(test_json_token_ids_out_of_range),
#endif
    };
    return cmocka_run_group_tests_name("reliability", tests, nullptr, nullptr);
}
