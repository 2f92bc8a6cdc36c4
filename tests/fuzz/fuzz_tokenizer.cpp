// fuzz_tokenizer - the tokenizer engine (lib/tokenizer) and its public API.
//
// The first byte picks what the rest is:
//   bits 0-1  the tokenizer: the shipped model's byte-level BPE with the gpt2, llama3 or
//             qwen2 pre-tokenizer, or a llama2.c-style SentencePiece tokenizer (common.cpp);
//             with bits 6-7 = 1 instead: o200k, gpt2_digits, qwen2 with NFC and specials that
//             strip whitespace, SentencePiece with Metaspace's "first" rule, NFC and stripping
//   bits 6-7  3: a hostile vocabulary (the bytes build a TokenizerData: duplicate, empty and
//             odd entries, merges, types, special ids), which must be refused with
//             GPT_ERR_FORMAT/UNSUPPORTED or work;
//   bit 4     token ids (16-bit each, some outside the vocabulary, negative or huge) to
//             decode: piece by piece, all at once, streamed, and through gpt_detokenize /
//             gpt_token_to_piece / gpt_detokenizer_* with buffer sizes from the input;
//   else      text to encode (bit 2: add BOS, bit 3: parse special tokens, bit 5: render
//             special tokens when decoding back).
// Invariants: ids in range; decode(encode(text)) == text where the tokenizer promises it
// (byte-level BPE always; SentencePiece when the text holds no U+2581; not across NFC or a
// Metaspace "first" text that starts with a space); the streaming
// detokenizer's bytes equal decode's; out-of-range ids are GPT_ERR_INVALID_ARG; the sizing
// rule (needed size reported, BUFFER_TOO_SMALL) holds.
#include "common.h"

#include "core/error.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/nfc.h"
#include "tokenizer/tokenizer.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

// Special tokens take the whitespace beside them: every other one on the left, every third on the right.
void strip_specials(gpt::TokenizerData &d) {
    for (size_t id = 0; id < d.types.size(); ++id) {
        if (d.types[id] != gpt::TOKEN_CONTROL && d.types[id] != gpt::TOKEN_USER_DEFINED) continue;
        if (id % 2 == 0) d.lstrip_ids.push_back((int32_t)id);
        if (id % 3 == 0) d.rstrip_ids.push_back((int32_t)id);
    }
}

// 0-2: byte-level BPE (gpt2, llama3, qwen2), 3: SentencePiece-style, 4: o200k, 5: gpt2_digits,
// 6: qwen2 with NFC and stripping specials, 7: SentencePiece-style with Metaspace's "first"
// prefix rule, NFC and stripping specials.
constexpr int kSetups = 8;
bool nfc_setup(int which) { return which >= 6; }
bool spm_setup(int which) { return which == 3 || which == 7; }

struct Setup {
    std::unique_ptr<gpt::Tokenizer> tok[kSetups];
    gpt_model *model[kSetups] = {}; // the same tokenizers behind the public API
    Setup() {
        gpt::TokenizerData d = fuzz::kjv_tokenizer();
        const gpt::PreTokenizer pres[3] = {gpt::PreTokenizer::GPT2, gpt::PreTokenizer::LLAMA3, gpt::PreTokenizer::QWEN2};
        std::vector<gpt::TokenizerData> datas;
        for (auto pre : pres) {
            d.pre = pre;
            datas.push_back(d);
        }
        datas.push_back(fuzz::spm_tokenizer());
        for (auto pre : {gpt::PreTokenizer::O200K, gpt::PreTokenizer::GPT2_DIGITS}) {
            d.pre = pre;
            datas.push_back(d);
        }
        d.pre = gpt::PreTokenizer::QWEN2;
        d.normalizer = gpt::TextNormalizer::NFC;
        strip_specials(d);
        datas.push_back(d);
        gpt::TokenizerData spm = fuzz::spm_tokenizer();
        spm.prefix_rule = gpt::SpacePrefixRule::FIRST_SEGMENT;
        spm.normalizer = gpt::TextNormalizer::NFC;
        strip_specials(spm);
        datas.push_back(spm);
        for (int i = 0; i < kSetups; i++) {
            tok[i] = gpt::Tokenizer::create(datas[i], "fuzz");
            const std::vector<uint8_t> file = fuzz::tiny_model(GPT_ARCH_LLAMA, &datas[i], 0, 1);
            gpt_model_params mp;
            gpt_model_params_init(&mp);
            mp.device = GPT_DEVICE_CPU;
            mp.flags = GPT_MODEL_COPY_BUFFER;
            FUZZ_CHECK(gpt_model_load_from_memory(file.data(), file.size(), &mp, &model[i]) == GPT_OK, "%s", gpt_last_error());
        }
    }
};

const Setup &setup() {
    static Setup s;
    return s;
}

// Decodes ids every way the library offers and checks they agree.
void decode_all_ways(const gpt::Tokenizer &t, gpt_model *m, const std::vector<int32_t> &ids, bool render, fuzz::Bytes &in) {
    const uint32_t V = t.vocab_size();
    bool all_valid = true;
    for (int32_t id : ids) all_valid &= id >= 0 && (uint32_t)id < V;
    std::string whole;
    bool threw = false;
    try {
        whole = t.decode(ids.data(), ids.size(), render);
    } catch (const gpt::Error &e) {
        FUZZ_CHECK(e.status() == GPT_ERR_INVALID_ARG, "decode: %s", e.what());
        threw = true;
    }
    FUZZ_CHECK(threw == !all_valid, "decode threw %d with all ids valid %d", threw, all_valid);

    // Public: size query, then a buffer of a size taken from the input.
    const uint32_t flags = render ? GPT_DETOKENIZE_RENDER_SPECIAL : 0;
    size_t need = 7777;
    gpt_status st = gpt_detokenize(m, ids.data(), (uint32_t)ids.size(), flags, nullptr, 0, &need);
    if (!all_valid) {
        FUZZ_CHECK(st == GPT_ERR_INVALID_ARG, "gpt_detokenize with a bad id: %d", (int)st);
    } else {
        FUZZ_CHECK(st == GPT_OK && need == whole.size(), "size query %d: %zu vs %zu", (int)st, need, whole.size());
        const size_t cap = in.below((uint32_t)need + 3);
        std::vector<char> buf(cap + 1, '\x55');
        size_t got = 0;
        st = gpt_detokenize(m, ids.data(), (uint32_t)ids.size(), flags, buf.data(), cap, &got);
        FUZZ_CHECK(got == need, "needed size");
        if (cap < need) FUZZ_CHECK(st == GPT_ERR_BUFFER_TOO_SMALL, "cap %zu need %zu: %d", cap, need, (int)st);
        else {
            FUZZ_CHECK(st == GPT_OK && std::memcmp(buf.data(), whole.data(), need) == 0, "bytes");
            if (cap > need) FUZZ_CHECK(buf[need] == '\0', "NUL");
            FUZZ_CHECK(buf[cap] == '\x55', "wrote past cap");
        }
    }

    // Streaming, internal and public (small buffers retried at the reported size).
    gpt::Detokenizer d(t, render);
    gpt_detokenizer *pd = nullptr;
    FUZZ_CHECK(gpt_detokenizer_create(m, flags, &pd) == GPT_OK, "detokenizer_create");
    std::string streamed, pstreamed;
    for (int32_t id : ids) {
        const size_t held = d.pending();
        try {
            streamed += d.push(id);
            FUZZ_CHECK(id >= 0 && (uint32_t)id < V, "push accepted id %d", id);
        } catch (const gpt::Error &e) {
            FUZZ_CHECK(e.status() == GPT_ERR_INVALID_ARG && d.pending() == held, "push: %s", e.what());
        }
        char buf[64];
        size_t n = 0;
        size_t cap = in.below(8);
        st = gpt_detokenizer_push(pd, id, buf, cap, &n);
        if (st == GPT_ERR_BUFFER_TOO_SMALL) {
            FUZZ_CHECK(n > cap, "too small");
            std::vector<char> big(n);
            st = gpt_detokenizer_push(pd, id, big.data(), big.size(), &n);
            FUZZ_CHECK(st == GPT_OK, "push retry %d", (int)st);
            pstreamed.append(big.data(), n);
        } else if (st == GPT_OK) {
            pstreamed.append(buf, n);
        } else {
            FUZZ_CHECK(st == GPT_ERR_INVALID_ARG && !(id >= 0 && (uint32_t)id < V), "push status %d", (int)st);
        }
    }
    streamed += d.flush();
    size_t n = 0;
    st = gpt_detokenizer_flush(pd, nullptr, 0, &n);
    FUZZ_CHECK(st == GPT_OK || st == GPT_ERR_BUFFER_TOO_SMALL, "flush query %d", (int)st);
    std::vector<char> tail(n + 1);
    FUZZ_CHECK(gpt_detokenizer_flush(pd, tail.data(), tail.size(), &n) == GPT_OK, "flush");
    pstreamed.append(tail.data(), n);
    gpt_detokenizer_free(pd);
    // Dropping the bad ids leaves the stream of the good ones.
    std::vector<int32_t> good;
    for (int32_t id : ids)
        if (id >= 0 && (uint32_t)id < V) good.push_back(id);
    const std::string want = all_valid ? whole : t.decode(good.data(), good.size(), render);
    FUZZ_CHECK(streamed == want, "streamed %zu bytes, decode %zu", streamed.size(), want.size());
    FUZZ_CHECK(pstreamed == want, "public stream %zu bytes, decode %zu", pstreamed.size(), want.size());

    for (size_t i = 0; i < ids.size() && i < 8; i++) {
        char buf[16];
        size_t pn = 0;
        st = gpt_token_to_piece(m, ids[i], flags, buf, sizeof buf, &pn);
        const bool ok = ids[i] >= 0 && (uint32_t)ids[i] < V;
        FUZZ_CHECK(ok ? (st == GPT_OK || (st == GPT_ERR_BUFFER_TOO_SMALL && pn > sizeof buf)) : st == GPT_ERR_INVALID_ARG,
                   "piece %d: %d", ids[i], (int)st);
    }
}

void text_mode(int which, uint8_t sel, fuzz::Bytes &in) {
    const Setup &s = setup();
    const gpt::Tokenizer &t = *s.tok[which];
    const bool add_bos = sel & 4, special = sel & 8, render = sel & 32;
    const std::string text = in.str(4096);
    std::vector<int32_t> ids;
    t.encode(text, add_bos, special, ids);
    for (int32_t id : ids) FUZZ_CHECK(id >= 0 && (uint32_t)id < t.vocab_size(), "id %d", id);
    if (!special) {
        // Round trips, except where the source's own rules lose text: SPM's literal "▁",
        // NFC, and Metaspace "first" on text starting with a space (no prefix, one stripped).
        const bool spm = spm_setup(which);
        const std::string back = t.decode(ids.data(), ids.size(), false);
        const bool lossy = (spm && text.find("\xE2\x96\x81") != std::string::npos) ||
                           (nfc_setup(which) && gpt::may_change_under_nfc(text)) || (which == 7 && !text.empty() && text[0] == ' ');
        if (!lossy) FUZZ_CHECK(back == text, "round trip: %zu bytes back for %zu", back.size(), text.size());
    }
    // The public call gives the same ids.
    const uint32_t flags = (add_bos ? GPT_TOKENIZE_ADD_BOS : GPT_TOKENIZE_NO_BOS) | (special ? GPT_TOKENIZE_PARSE_SPECIAL : 0);
    uint32_t n = 0;
    gpt_status st = gpt_tokenize(s.model[which], text.data(), text.size(), flags, nullptr, 0, &n);
    FUZZ_CHECK(st == GPT_OK && n == ids.size(), "size query");
    std::vector<int32_t> pub(n + 1, -77);
    const uint32_t cap = n ? n - (in.flip() ? 1 : 0) : 0;
    st = gpt_tokenize(s.model[which], text.data(), text.size(), flags, pub.data(), cap, &n);
    if (cap < ids.size()) FUZZ_CHECK(st == GPT_ERR_BUFFER_TOO_SMALL && n == ids.size(), "too small");
    else FUZZ_CHECK(st == GPT_OK && std::equal(ids.begin(), ids.end(), pub.begin()) && pub[n] == -77, "public ids");
    decode_all_ways(t, s.model[which], ids, render, in);
}

void ids_mode(int which, uint8_t sel, fuzz::Bytes &in) {
    const Setup &s = setup();
    const gpt::Tokenizer &t = *s.tok[which];
    const uint32_t V = t.vocab_size();
    std::vector<int32_t> ids;
    const size_t n = in.u8() % 64;
    for (size_t i = 0; i < n && !in.empty(); i++) {
        const uint8_t kind = in.u8();
        if (kind < 240) ids.push_back((int32_t)(in.u16() % V));
        else if (kind < 248) ids.push_back((int32_t)V + (int32_t)(kind - 244)); // V-4 .. V+3
        else ids.push_back((int32_t)in.u32());                                 // anything, INT32_MIN included
    }
    decode_all_ways(t, s.model[which], ids, (sel & 32) != 0, in);
}

// A vocabulary made from the input: tokens are '\n'-separated (empty ones included), each
// followed by a type byte; then merges; then special ids.
void hostile_vocab_mode(uint8_t sel, fuzz::Bytes &in) {
    gpt::TokenizerData d;
    d.kind = (sel & 1) ? gpt::TokenizerKind::SPM : gpt::TokenizerKind::BPE;
    const gpt::PreTokenizer pres[8] = {gpt::PreTokenizer::GPT2, gpt::PreTokenizer::LLAMA3, gpt::PreTokenizer::QWEN2,
                                       gpt::PreTokenizer::NONE, gpt::PreTokenizer::O200K, gpt::PreTokenizer::GPT2_DIGITS,
                                       gpt::PreTokenizer::GPT2, gpt::PreTokenizer::QWEN2};
    d.pre = pres[(sel >> 1) & 7];
    const uint32_t n_tokens = in.range(0, 300);
    const bool with_types = in.flip(), with_scores = in.flip();
    for (uint32_t i = 0; i < n_tokens && !in.empty(); i++) {
        const uint8_t how = in.u8();
        std::string tok;
        if (how < 64) tok = std::string(1, (char)in.u8());                       // one byte
        else if (how < 96) {
            char b[8];
            std::snprintf(b, sizeof b, "<0x%02X>", in.u8());                      // a byte token
            tok = b;
        } else if (how < 112) tok = "";                                           // empty
        else if (how < 128 && !d.tokens.empty()) tok = d.tokens[in.below((uint32_t)d.tokens.size())]; // duplicate
        else if (how < 160 && d.tokens.size() >= 2)                               // a concatenation
            tok = d.tokens[in.below((uint32_t)d.tokens.size())] + d.tokens[in.below((uint32_t)d.tokens.size())];
        else tok = in.str(12);
        d.tokens.push_back(tok);
        if (with_types) d.types.push_back((int32_t)(in.u8() % 8));
        if (with_scores) d.scores.push_back(in.f32());
    }
    const uint32_t n_merges = in.range(0, 64);
    for (uint32_t i = 0; i < n_merges && !d.tokens.empty() && !in.empty(); i++) {
        const uint8_t how = in.u8();
        if (how < 200) d.merges.push_back(d.tokens[in.below((uint32_t)d.tokens.size())] + " " +
                                          d.tokens[in.below((uint32_t)d.tokens.size())]);
        else d.merges.push_back(in.str(10));
    }
    const int32_t N = (int32_t)d.tokens.size();
    auto id = [&] { return (int32_t)in.below((uint32_t)N + 3) - 2; }; // -2 .. N
    d.bos_id = id(), d.eos_id = id(), d.unk_id = id(), d.pad_id = id();
    d.add_bos = in.flip();
    d.add_space_prefix = in.flip();
    d.prefix_rule = (gpt::SpacePrefixRule)in.below(3);
    d.normalizer = in.flip() ? gpt::TextNormalizer::NFC : gpt::TextNormalizer::NONE;
    d.ignore_merges = in.flip();
    for (uint32_t k = in.range(0, 4); k > 0; --k) (in.flip() ? d.lstrip_ids : d.rstrip_ids).push_back(id());
    std::unique_ptr<gpt::Tokenizer> t;
    try {
        t = gpt::Tokenizer::create(d, "hostile");
    } catch (const gpt::Error &e) {
        FUZZ_CHECK(e.status() == GPT_ERR_FORMAT || e.status() == GPT_ERR_UNSUPPORTED, "create: %s", e.what());
        return;
    }
    const std::string text = in.rest();
    for (bool special : {false, true}) {
        std::vector<int32_t> ids;
        t->encode(text, true, special, ids);
        for (int32_t x : ids) FUZZ_CHECK(x >= 0 && x < N, "id %d of %d", x, N);
        std::string back = t->decode(ids.data(), ids.size(), true);
        gpt::Detokenizer dt(*t, true);
        std::string s;
        for (int32_t x : ids) s += dt.push(x);
        s += dt.flush();
        FUZZ_CHECK(s == back, "stream");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    fuzz::Bytes in(data + 1, size - 1);
    const uint8_t sel = data[0];
    const int which = (sel & 3) + ((sel & 0xC0) == 0x40 ? 4 : 0);
    if ((sel & 0xC0) == 0xC0) hostile_vocab_mode(sel, in);
    else if (sel & 16) ids_mode(which, sel, in);
    else text_mode(which, sel, in);
    return 0;
}
