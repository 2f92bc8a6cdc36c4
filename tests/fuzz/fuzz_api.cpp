// fuzz_api - the C API driven in random orders with random arguments on tiny models.
//
// Two models are loaded once: a Llama with the llama2.c-style SentencePiece tokenizer
// (300 tokens) and a GPT-2 without a tokenizer (vocab 61). The input is a program: each op
// byte picks a call (create/free a context with random params, forward, generate with random
// sampling params and stop tokens, truncate, reset, seq_len, estimate, tokenize, detokenize,
// streaming detokenizer, model info), its arguments come from the following bytes (sizes,
// token ids that are sometimes out of range, NaN temperatures, abort after k callbacks ...).
//
// The driver keeps its own model of every context (each sequence's length) and checks the
// library against it after every call: the status is one the call may return and the one
// the arguments call for (INVALID_ARG, CONTEXT_FULL, ABORTED, OK ...), a failed forward
// changes nothing, generate leaves prompt + n_out - 1 tokens cached, OUT pointers are NULL
// on failure, ids and logits are in range / finite, nothing is written past a buffer.
#include "common.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

namespace {

constexpr uint32_t kMaxCtx = 3;

struct Models {
    gpt_model *m[2] = {};
    uint32_t vocab[2] = {};
    bool tok[2] = {};
    uint32_t ctx_len[2] = {};
    Models() {
        const std::vector<uint8_t> files[2] = {fuzz::tiny_model(GPT_ARCH_LLAMA, &fuzz::spm_tokenizer(), 0, 7),
                                               fuzz::tiny_model(GPT_ARCH_GPT2, nullptr, 61, 8)};
        for (int i = 0; i < 2; i++) {
            gpt_model_params mp;
            gpt_model_params_init(&mp);
            mp.device = GPT_DEVICE_CPU;
            mp.flags = GPT_MODEL_COPY_BUFFER;
            FUZZ_CHECK(gpt_model_load_from_memory(files[i].data(), files[i].size(), &mp, &m[i]) == GPT_OK, "%s", gpt_last_error());
            gpt_model_info info;
            std::memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            FUZZ_CHECK(gpt_model_get_info(m[i], &info) == GPT_OK, "info");
            vocab[i] = info.vocab_size;
            tok[i] = info.flags & GPT_MODEL_INFO_HAS_TOKENIZER;
            ctx_len[i] = info.context_length;
        }
    }
};

const Models &models() {
    static Models s;
    return s;
}

struct Abort {
    int64_t left = -1; // abort when it reaches 0; -1: never
    bool fired = false;
};
int abort_cb(void *user) {
    Abort *a = static_cast<Abort *>(user);
    if (!a || a->left < 0) return 0;
    if (a->left-- > 0) return 0;
    a->fired = true;
    return 1;
}

struct Ctx {
    gpt_ctx *c = nullptr;
    int model = 0;
    uint32_t max_batch = 1, max_seq = 0;
    std::vector<uint32_t> len; // the driver's idea of each sequence's length
    Abort abort;
};

struct Stop {
    int32_t after = -1; // on_token returns nonzero on this call (0-based)
    uint32_t calls = 0;
    uint32_t vocab = 0;
};
int on_token(int32_t tok, void *user) {
    Stop *s = static_cast<Stop *>(user);
    FUZZ_CHECK(tok >= 0 && (uint32_t)tok < s->vocab, "on_token %d", tok);
    return (int32_t)s->calls++ == s->after;
}

void check_status(gpt_status st) {
    FUZZ_CHECK(fuzz::valid_status(st), "status %d", (int)st);
    FUZZ_CHECK(st != GPT_ERR_INTERNAL, "internal error: %s", gpt_last_error());
}

void expect(gpt_status got, gpt_status want, const char *call) {
    check_status(got);
    FUZZ_CHECK(got == want, "%s gave %s (%s), expected %s", call, gpt_status_str(got), gpt_last_error(), gpt_status_str(want));
}

int32_t token(fuzz::Bytes &in, uint32_t vocab, bool *bad) {
    const uint8_t k = in.u8();
    if (k < 250) return (int32_t)(in.u16() % vocab);
    *bad = true;
    switch (k) {
    case 250: return -1;
    case 251: return (int32_t)vocab;
    case 252: return INT32_MIN;
    case 253: return INT32_MAX;
    default: return (int32_t)vocab + (int32_t)(in.u8() % 8);
    }
}

void op_create(Ctx *ctxs, fuzz::Bytes &in) {
    const Models &M = models();
    Ctx &x = ctxs[in.below(kMaxCtx)];
    gpt_ctx_free(x.c);
    x = Ctx();
    x.model = in.below(2);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_batch = in.below(5);                  // 0: default 1; 4 allowed
    cp.max_seq = in.below(M.ctx_len[x.model] + 3); // past the context length: INVALID_ARG
    cp.max_step_tokens = in.flip() ? in.below(12) : 0;
    cp.n_threads = 1 + in.below(2) * (in.u8() < 16); // worker threads mostly off: each context would start them
    cp.flags = in.u8() < 250 ? 0 : 0x80;
    const bool with_abort = in.flip();
    if (with_abort) {
        cp.abort_fn = abort_cb;
        cp.abort_user = &x.abort;
    }
    // Only today's size or a plausible larger one (a newer header) is accepted: shorter sizes
    // (no older header had one), sizes ending inside a field and garbage are refused.
    const uint32_t sizes[] = {0, 4, 8, 12, 33, 38, 40, 48, (uint32_t)sizeof cp - 4, (uint32_t)sizeof cp + 8,
                              (uint32_t)sizeof cp + 16, 0xDEADBEEFu};
    const uint32_t struct_size = in.u8() < 240 ? (uint32_t)sizeof cp : sizes[in.below(12)];
    cp.struct_size = struct_size;
    const bool size_ok = struct_size == sizeof cp || (struct_size > sizeof cp && struct_size <= 4096 &&
                                                      struct_size % alignof(gpt_ctx_params) == 0);
    const bool bad = cp.max_seq > M.ctx_len[x.model] || cp.flags != 0 || !size_ok;
    uint64_t host = 0;
    const gpt_status es = gpt_ctx_estimate_memory(M.m[x.model], &cp, &host, nullptr);
    check_status(es);
    gpt_ctx *c = reinterpret_cast<gpt_ctx *>(0x1);
    const gpt_status st = gpt_ctx_create(M.m[x.model], &cp, &c);
    check_status(st);
    FUZZ_CHECK(es == st, "estimate %d, create %d", (int)es, (int)st);
    if (bad) {
        expect(st, GPT_ERR_INVALID_ARG, "gpt_ctx_create with a bad field or struct_size");
    } else {
        expect(st, GPT_OK, "gpt_ctx_create");
    }
    if (st != GPT_OK) {
        FUZZ_CHECK(c == nullptr, "OUT not NULL on failure");
        return;
    }
    x.c = c;
    x.max_batch = cp.max_batch ? cp.max_batch : 1;
    x.max_seq = cp.max_seq ? cp.max_seq : std::min<uint32_t>(M.ctx_len[x.model], 4096); // gpt.h: the default
    x.len.assign(x.max_batch, 0);
    for (uint32_t b = 0; b < x.max_batch + 1; b++)
        FUZZ_CHECK(gpt_ctx_seq_len(c, b) == 0, "fresh seq_len");
}

void op_forward(Ctx &x, fuzz::Bytes &in) {
    const Models &M = models();
    const uint32_t V = M.vocab[x.model];
    const uint32_t batch = in.below(x.max_batch + 2); // 0 and max_batch + 1 are refused
    const uint32_t n = in.below(x.max_seq + 4);        // 0 refused; past max_seq: CONTEXT_FULL
    uint32_t flags = in.u8() < 128 ? 0 : GPT_FORWARD_ALL_LOGITS;
    if (in.u8() >= 252) flags |= 0x10;
    bool bad_tok = false;
    std::vector<int32_t> toks((size_t)batch * n);
    for (auto &t : toks) t = token(in, V, &bad_tok);
    const bool want_logits = in.u8() < 200;
    const size_t n_logits = (size_t)batch * ((flags & GPT_FORWARD_ALL_LOGITS) ? n : 1) * V;
    std::vector<float> logits(n_logits + 4, NAN);
    x.abort.left = in.u8() < 200 ? -1 : (int64_t)in.below(12);
    x.abort.fired = false;
    const gpt_status st = gpt_forward(x.c, toks.empty() ? nullptr : toks.data(), batch, n, flags, want_logits ? logits.data() : nullptr);
    check_status(st);
    gpt_status want = GPT_OK;
    bool full = false;
    for (uint32_t b = 0; b < batch && b < x.max_batch; b++) full |= x.len[b] + n > x.max_seq;
    if (batch == 0 || n == 0 || batch > x.max_batch || (flags & 0x10) || bad_tok) want = GPT_ERR_INVALID_ARG;
    else if (full) want = GPT_ERR_CONTEXT_FULL;
    if (want == GPT_OK && st == GPT_ERR_ABORTED) {
        FUZZ_CHECK(x.abort.fired, "ABORTED without an abort");
    } else {
        expect(st, want, "gpt_forward");
    }
    if (x.abort.fired) FUZZ_CHECK(st == GPT_ERR_ABORTED, "an abort that fired gave %d", (int)st);
    for (size_t i = n_logits; i < logits.size(); i++) FUZZ_CHECK(std::isnan(logits[i]), "logits written past the buffer");
    if (st == GPT_OK) {
        for (uint32_t b = 0; b < batch; b++) x.len[b] += n;
        if (want_logits)
            for (size_t i = 0; i < n_logits; i++) FUZZ_CHECK(std::isfinite(logits[i]), "logit %zu is %g", i, logits[i]);
    }
    x.abort.left = -1;
}

void op_generate(Ctx &x, fuzz::Bytes &in) {
    const Models &M = models();
    const uint32_t V = M.vocab[x.model];
    const uint32_t n_prompt = in.below(x.max_seq + 3);
    bool bad = false;
    std::vector<int32_t> prompt(n_prompt);
    for (auto &t : prompt) t = token(in, V, &bad);
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    const uint8_t what = in.u8();
    if (what & 1) sp.temperature = in.f32();
    if (what & 2) sp.top_k = in.u8() < 200 ? in.below(V + 2) : in.u32();
    if (what & 4) sp.top_p = in.f32();
    if (what & 8) sp.min_p = in.f32();
    if (what & 16) sp.repetition_penalty = in.f32();
    if (what & 32) sp.repetition_last_n = in.u8() < 200 ? in.below(80) : in.u32();
    if (what & 64) {
        const uint8_t k = in.u8();
        sp.flags = k < 160 ? GPT_SAMPLING_IGNORE_EOS : k < 240 ? GPT_SAMPLING_IGNORE_EOS | GPT_SAMPLING_CONTEXT_SHIFT : in.u32();
    }
    const bool shift = (sp.flags & GPT_SAMPLING_CONTEXT_SHIFT) != 0;
    sp.seed = in.u64();
    std::vector<int32_t> stops(in.below(4));
    for (auto &s : stops) s = (int32_t)in.u32() % (int32_t)(V + 4);
    sp.stop_tokens = stops.empty() ? (in.u8() < 250 ? nullptr : stops.data()) : stops.data();
    sp.n_stop_tokens = (uint32_t)stops.size();
    if (in.u8() >= 252) { // NULL stop list with a count
        sp.stop_tokens = nullptr;
        sp.n_stop_tokens = 1;
    }
    const bool bad_params = !std::isfinite(sp.temperature) || !(sp.top_p > 0.0f && sp.top_p <= 1.0f) ||
                            !(sp.min_p >= 0.0f && sp.min_p <= 1.0f) || !(sp.repetition_penalty > 0.0f) ||
                            !std::isfinite(sp.repetition_penalty) || sp.repetition_last_n > 4096 ||
                            (sp.n_stop_tokens && !sp.stop_tokens) ||
                            (sp.flags & ~(GPT_SAMPLING_IGNORE_EOS | GPT_SAMPLING_CONTEXT_SHIFT));
    const uint32_t cap = in.below(12);
    std::vector<int32_t> out(cap + 2, -77);
    Stop stop;
    stop.after = in.u8() < 200 ? -1 : (int32_t)in.below(cap + 1);
    stop.vocab = V;
    const bool callback = in.flip();
    x.abort.left = in.u8() < 200 ? -1 : (int64_t)in.below(20);
    x.abort.fired = false;
    uint32_t n_out = 12345;
    const bool null_out = cap == 0 && in.u8() >= 250;
    const uint32_t before = x.len[0];
    const gpt_status st = gpt_generate(x.c, prompt.empty() ? nullptr : prompt.data(), n_prompt, &sp, callback ? on_token : nullptr,
                                       &stop, null_out ? nullptr : out.data(), cap, &n_out);
    check_status(st);
    FUZZ_CHECK(n_out <= cap, "n_out %u > cap %u", n_out, cap);
    for (uint32_t i = cap; i < out.size(); i++) FUZZ_CHECK(out[i] == -77, "written past cap");
    for (uint32_t i = 0; i < n_out; i++) FUZZ_CHECK(out[i] >= 0 && (uint32_t)out[i] < V, "generated id %d", out[i]);
    const uint32_t len = gpt_ctx_seq_len(x.c, 0);
    if (n_prompt == 0 || bad || bad_params) {
        expect(st, GPT_ERR_INVALID_ARG, "gpt_generate (bad arguments)");
    } else if (!shift && before + n_prompt > x.max_seq) {
        expect(st, GPT_ERR_CONTEXT_FULL, "gpt_generate (prompt past max_seq)");
    } else if (shift) {
        FUZZ_CHECK(st != GPT_ERR_CONTEXT_FULL, "CONTEXT_FULL with GPT_SAMPLING_CONTEXT_SHIFT");
    }
    if (shift && !bad && !bad_params && n_prompt > 0) {
        // The window slides: the cache holds the last max_seq tokens (empty after a failure
        // inside a re-encoding).
        FUZZ_CHECK(len <= x.max_seq, "cache %u past max_seq %u", len, x.max_seq);
        const uint64_t all = (uint64_t)before + n_prompt + (n_out ? n_out - 1 : 0);
        if (st == GPT_OK) FUZZ_CHECK(len == std::min<uint64_t>(all, x.max_seq), "cache %u, expected min(%llu, %u)", len,
                                     (unsigned long long)all, x.max_seq);
    } else if (st != GPT_OK && n_out == 0) {
        // Nothing generated: the cache holds what it held, or (an abort after the prompt,
        // before the first token was sampled cannot happen: sampling follows the prompt
        // directly) the prompt.
        FUZZ_CHECK(len == before || len == before + n_prompt, "cache %u after a failed generate from %u", len, before);
    } else if (n_out > 0) {
        FUZZ_CHECK(len == before + n_prompt + n_out - 1, "cache %u, expected %u + %u + %u - 1", len, before, n_prompt, n_out);
    } else {
        FUZZ_CHECK(len == before + n_prompt, "cap 0: cache %u", len);
    }
    if (st == GPT_OK && !callback && stop.after < 0 && n_out < cap) {
        // Stopped early without a callback: at EOS or a stop token, which is the last one.
        const int32_t last = out[n_out - 1];
        bool is_stop = false;
        for (int32_t s : stops) is_stop |= s == last;
        FUZZ_CHECK(is_stop || !(sp.flags & GPT_SAMPLING_IGNORE_EOS), "stopped early at %d", last);
    }
    if (st == GPT_ERR_ABORTED) FUZZ_CHECK(x.abort.fired, "ABORTED without an abort");
    if (x.abort.fired) FUZZ_CHECK(st == GPT_ERR_ABORTED, "an abort that fired gave %d", (int)st);
    x.len[0] = len;
    x.abort.left = -1;
}

void op_tokenizer(Ctx *ctxs, fuzz::Bytes &in) {
    const Models &M = models();
    const int mi = in.below(2);
    gpt_model *m = M.m[mi];
    const uint32_t V = M.vocab[mi];
    const uint8_t which = in.u8() % 4;
    (void)ctxs;
    if (which == 0) {
        const std::string text = in.str(200);
        const uint32_t flags = in.u8() < 240 ? in.below(8) : in.u32();
        const uint32_t cap = in.below(64);
        std::vector<int32_t> ids(cap + 1, -77);
        uint32_t n = 0;
        const gpt_status st = gpt_tokenize(m, text.data(), text.size(), flags, in.flip() ? ids.data() : nullptr, cap, &n);
        check_status(st);
        if (!M.tok[mi]) FUZZ_CHECK(st == GPT_ERR_UNSUPPORTED, "no tokenizer: %d", (int)st);
        FUZZ_CHECK(ids[cap] == -77, "tokenize wrote past cap");
        if (st == GPT_OK)
            for (uint32_t i = 0; i < n && i < cap; i++) FUZZ_CHECK(ids[i] >= 0 && (uint32_t)ids[i] < V, "id");
    } else if (which == 1) {
        bool bad = false;
        std::vector<int32_t> ids(in.below(16));
        for (auto &t : ids) t = token(in, V, &bad);
        const size_t cap = in.below(64);
        std::vector<char> buf(cap + 1, 'Z');
        size_t n = 0;
        const gpt_status st = gpt_detokenize(m, ids.empty() ? nullptr : ids.data(), (uint32_t)ids.size(), in.u8() < 250 ? in.below(2) : in.u32(),
                                             in.flip() ? buf.data() : nullptr, cap, &n);
        check_status(st);
        FUZZ_CHECK(buf[cap] == 'Z', "detokenize wrote past cap");
        if (M.tok[mi] && bad) FUZZ_CHECK(st == GPT_ERR_INVALID_ARG, "bad id: %d", (int)st);
    } else if (which == 2) {
        gpt_detokenizer *d = reinterpret_cast<gpt_detokenizer *>(0x1);
        const gpt_status st = gpt_detokenizer_create(m, in.u8() < 250 ? in.below(2) : in.u32(), &d);
        check_status(st);
        if (st != GPT_OK) {
            FUZZ_CHECK(d == nullptr, "OUT");
            return;
        }
        for (uint32_t i = in.below(10); i > 0; i--) {
            bool bad = false;
            const int32_t t = token(in, V, &bad);
            char buf[8];
            size_t n = 0;
            const gpt_status ps = gpt_detokenizer_push(d, t, buf, in.below(9), &n);
            check_status(ps);
            if (bad) FUZZ_CHECK(ps == GPT_ERR_INVALID_ARG, "push bad id");
        }
        char buf[8];
        size_t n = 0;
        check_status(gpt_detokenizer_flush(d, buf, in.below(9), &n));
        gpt_detokenizer_free(d);
    } else {
        char buf[16];
        size_t n = 0;
        bool bad = false;
        const int32_t t = token(in, V, &bad);
        const gpt_status st = gpt_token_to_piece(m, t, in.u8() < 250 ? 0 : in.u32(), buf, in.below(17), &n);
        check_status(st);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz::Bytes in(data, size);
    Ctx ctxs[kMaxCtx];
    for (int steps = 0; steps < 64 && !in.empty(); steps++) {
        const uint8_t op = in.u8() % 12;
        Ctx &x = ctxs[in.below(kMaxCtx)];
        if (op == 0 || (!x.c && op < 8)) {
            op_create(ctxs, in);
            continue;
        }
        switch (op) {
        case 1: gpt_ctx_free(x.c); x.c = nullptr; break;
        case 2: case 3: op_forward(x, in); break;
        case 4: op_generate(x, in); break;
        case 5: {
            const uint32_t seq = in.below(x.max_batch + 2);
            const uint32_t n = in.below(x.max_seq + 3);
            const gpt_status st = gpt_ctx_truncate(x.c, seq, n);
            const bool ok = seq < x.max_batch && n <= x.len[seq];
            expect(st, ok ? GPT_OK : GPT_ERR_INVALID_ARG, "gpt_ctx_truncate");
            if (ok) x.len[seq] = n;
            break;
        }
        case 6:
            gpt_ctx_reset(x.c);
            for (auto &l : x.len) l = 0;
            break;
        case 7: {
            const uint32_t seq = in.below(x.max_batch + 2);
            FUZZ_CHECK(gpt_ctx_seq_len(x.c, seq) == (seq < x.max_batch ? x.len[seq] : 0), "seq_len");
            break;
        }
        case 8: case 9: op_tokenizer(ctxs, in); break;
        case 10: {
            gpt_model_info info;
            std::memset(&info, 0, sizeof info);
            // Valid: today's size, or the one gpt.h had before 0.6.0 (filled up to its end).
            const uint32_t old_size = offsetof(gpt_model_info, name) + sizeof info.name;
            const uint32_t want = in.flip() ? (uint32_t)sizeof info : in.flip() ? old_size : in.below(sizeof info + 8);
            info.struct_size = want;
            const gpt_status st = gpt_model_get_info(models().m[in.below(2)], &info);
            const bool valid = want == sizeof info || want == old_size;
            expect(st, valid ? GPT_OK : GPT_ERR_INVALID_ARG, "gpt_model_get_info");
            FUZZ_CHECK(!valid || info.struct_size == want, "gpt_model_get_info filled %u bytes of a %u-byte struct", info.struct_size, want);
            break;
        }
        default:
            // NULL handles and NULL OUT pointers.
            expect(gpt_forward(nullptr, nullptr, 1, 1, 0, nullptr), GPT_ERR_INVALID_ARG, "forward(NULL)");
            expect(gpt_ctx_truncate(nullptr, 0, 0), GPT_ERR_INVALID_ARG, "truncate(NULL)");
            gpt_ctx_reset(nullptr);
            FUZZ_CHECK(gpt_ctx_seq_len(nullptr, 0) == 0, "seq_len(NULL)");
            expect(gpt_ctx_create(models().m[0], nullptr, nullptr), GPT_ERR_INVALID_ARG, "create(out NULL)");
            break;
        }
        // The driver's model of every live context agrees with the library.
        for (const Ctx &c : ctxs)
            if (c.c)
                for (uint32_t b = 0; b < c.max_batch; b++)
                    FUZZ_CHECK(gpt_ctx_seq_len(c.c, b) == c.len[b], "seq %u: library %u, driver %u", b, gpt_ctx_seq_len(c.c, b), c.len[b]);
    }
    for (Ctx &c : ctxs) gpt_ctx_free(c.c);
    return 0;
}
