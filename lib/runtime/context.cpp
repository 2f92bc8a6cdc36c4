// context.cpp - splitting calls into steps, committing sequence lengths only when a call
// succeeds, and the generate loop.
#include "runtime/context.h"

#include "core/error.h"
#include "core/memory.h"
#include "runtime/memory_fit.h"
#include "runtime/stop_strings.h"
#include "sampler/rng.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gpt {

namespace {
constexpr uint32_t kMaxBatch = 4096;
// Default max_seq: the model's context length up to this. Models made for 128k positions
// would otherwise commit gigabytes per context that nobody asked for.
constexpr uint32_t kDefaultMaxSeq = 4096;

double mib(uint64_t bytes) { return (double)bytes / (1 << 20); }
constexpr uint32_t kMaxRepetitionWindow = 4096;
} // namespace

const uint32_t Context::kWarmupPrompt;

struct Context::AbortHook final : LayerHook {
    const Context *ctx;
    explicit AbortHook(const Context *c) : ctx(c) {}
    void between_layers() override { ctx->check_abort(); }
};

ExecParams Context::resolve(const Model &m, const gpt_ctx_params &p) { return resolve(m.config(), m.device(), p); }

ExecParams Context::resolve(const ModelConfig &c, const Device &d, const gpt_ctx_params &p) {
    const uint32_t known = GPT_CTX_ALLOW_TF32 | GPT_CTX_NO_GRAPHS | GPT_CTX_NO_WARMUP;
    if (p.flags & ~known) fail(GPT_ERR_INVALID_ARG, "unknown gpt_ctx_params.flags 0x%x", p.flags & ~known);
    ExecParams e;
    e.max_batch = p.max_batch ? p.max_batch : 1;
    if (e.max_batch > kMaxBatch) fail(GPT_ERR_INVALID_ARG, "max_batch %u exceeds %u", e.max_batch, kMaxBatch);
    e.max_seq = p.max_seq ? p.max_seq : std::min(c.context_length, kDefaultMaxSeq);
    if (e.max_seq > c.context_length)
        fail(GPT_ERR_INVALID_ARG, "max_seq %u exceeds the model's context length %u", e.max_seq, c.context_length);
    const uint64_t all = (uint64_t)e.max_batch * e.max_seq;
    uint64_t step = p.max_step_tokens ? p.max_step_tokens : std::min<uint64_t>(512, all);
    if (step > (1u << 20)) fail(GPT_ERR_INVALID_ARG, "max_step_tokens %llu is too large", (unsigned long long)step);
    e.max_step_tokens = (uint32_t)std::max<uint64_t>(step, e.max_batch);
    if (p.compute_dtype > GPT_DTYPE_BF16) fail(GPT_ERR_INVALID_ARG, "compute_dtype %u is not a gpt_dtype", p.compute_dtype);
    if (p.kv_dtype > GPT_DTYPE_BF16) fail(GPT_ERR_INVALID_ARG, "kv_dtype %u is not a gpt_dtype", p.kv_dtype);
    d.choose(e, p.compute_dtype, p.kv_dtype, p.n_threads);
    e.allow_tf32 = (p.flags & GPT_CTX_ALLOW_TF32) != 0;
    e.use_graphs = (p.flags & GPT_CTX_NO_GRAPHS) == 0;
    return e;
}

MemoryPlan Context::estimate(const Model &m, const gpt_ctx_params &p) { return memory_of(m, resolve(m, p)); }

MemoryPlan Context::memory_of(const Model &m, const ExecParams &e) { return memory_of(m.config(), m.shape(), m.device(), e); }

MemoryPlan Context::memory_of(const ModelConfig &c, const ModelShape &s, const Device &d, const ExecParams &e) {
    MemoryPlan plan = d.plan(s, e);
    plan.host_bytes += own_host_bytes(c, e);
    return plan;
}

uint64_t Context::own_host_bytes(const ExecParams &e) {
    return 4ull * ((uint64_t)e.max_batch + (uint64_t)e.max_batch * e.max_seq + e.max_step_tokens + e.max_batch);
}

uint64_t Context::own_host_bytes(const ModelConfig &c, const ExecParams &e) {
    return own_host_bytes(e) + TokenAdjust::bytes(c.vocab_size);
}

Context::Context(const Model &m, const gpt_ctx_params &p) : model_(m) {
    params_ = resolve(m, p);
    abort_fn_ = p.abort_fn;
    abort_user_ = p.abort_user;
    // Refused up front, with the numbers, when the memory is not there: the allocation might
    // succeed (overcommit) and the first forward be killed, or it could take minutes to fail.
    const ExecParams &e = params_;
    const MemoryPlan need = memory_of(m, e), free = m.device().available_memory();
    MemoryAvailable have;
    have.host_bytes = free.host_bytes;
    have.device_bytes = free.device_bytes;
    have.shared = cuda_is_integrated(m.device().ordinal());
    const MemoryFit fit = check_memory_fit(need, have);
    if (fit.short_of == MemoryFit::SHARED)
        fail(GPT_ERR_OUT_OF_MEMORY,
             "a context of max_seq %u x max_batch %u needs %.1f MiB (KV cache and scratch: %.1f MiB on the GPU, %.1f MiB "
             "of host memory), %.1f MiB are available in the memory %s shares with the host (MemAvailable): lower "
             "gpt_ctx_params.max_seq or max_batch",
             e.max_seq, e.max_batch, mib(fit.need), mib(need.device_bytes), mib(need.host_bytes), mib(fit.have),
             m.device().name());
    if (fit.short_of == MemoryFit::HOST)
        fail(GPT_ERR_OUT_OF_MEMORY,
             "a context of max_seq %u x max_batch %u needs %.1f MiB of host memory (KV cache and scratch), %.1f MiB are "
             "available: lower gpt_ctx_params.max_seq or max_batch",
             e.max_seq, e.max_batch, mib(fit.need), mib(fit.have));
    if (fit.short_of == MemoryFit::DEVICE)
        fail(GPT_ERR_OUT_OF_MEMORY,
             "a context of max_seq %u x max_batch %u needs %.1f MiB of GPU memory (KV cache and scratch), %.1f MiB are "
             "free on %s: lower gpt_ctx_params.max_seq or max_batch",
             e.max_seq, e.max_batch, mib(fit.need), mib(fit.have), m.device().name());
    // The executor first: its (much larger) allocation is the one likely to fail.
    exec_ = m.device().create_executor(m.shape(), params_);
    own_ = host_alloc(own_host_bytes(m.config(), params_), "the context's token history");
    seq_len_ = static_cast<uint32_t *>(own_);
    history_ = reinterpret_cast<int32_t *>(seq_len_ + params_.max_batch);
    step_tokens_ = history_ + (uint64_t)params_.max_batch * params_.max_seq;
    step_pos_ = reinterpret_cast<uint32_t *>(step_tokens_ + params_.max_step_tokens);
    std::memset(seq_len_, 0, sizeof(uint32_t) * params_.max_batch);
    adjust_.attach(static_cast<char *>(own_) + own_host_bytes(params_), m.config().vocab_size);
}

Context::~Context() { host_free(own_); }

bool Context::warm_up_worthwhile() const {
    const Device &d = model_.device();
    // Host weights on a discrete GPU: a step reads the weights over the bus (tens of ms a
    // token for a 1B model), far more than the loading it would hide.
    return d.ordinal() != GPT_DEVICE_CPU && (!d.keeps_host_weights() || d.integrated()) && params_.max_seq >= 3;
}

void Context::warm_up(const gpt_sampling_params &sampling) {
    // A prompt long enough for the prefill path (not the few-row GEMVs), then one decode step:
    // its kernels load and its graph is captured; the sequence is forgotten after.
    const uint32_t n_prompt = std::min<uint32_t>(kWarmupPrompt, params_.max_seq - 2); // + the first token fed back
    int32_t prompt[kWarmupPrompt] = {0};
    int32_t out[2];
    uint32_t n_out = 0;
    gpt_sampling_params s = sampling;
    s.flags |= GPT_SAMPLING_IGNORE_EOS;
    s.n_stop_strings = 0, s.n_stop_tokens = 0, s.n_logit_bias = 0;
    // The caller's abort callback is not asked: creating a context is not a call it stops.
    const gpt_abort_fn abort_fn = abort_fn_;
    abort_fn_ = nullptr;
    try {
        generate(prompt, n_prompt, s, nullptr, nullptr, out, 2, &n_out);
    } catch (...) {
        abort_fn_ = abort_fn;
        throw;
    }
    abort_fn_ = abort_fn;
    reset();
}

void Context::check_abort() const {
    if (abort_fn_ && abort_fn_(abort_user_)) fail(GPT_ERR_ABORTED, "aborted by the abort callback");
}

void Context::check_tokens(const int32_t *tokens, uint64_t n) const {
    const uint32_t v = model_.config().vocab_size;
    for (uint64_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= v)
            fail(GPT_ERR_INVALID_ARG, "token %llu is %d, outside the vocabulary [0, %u)", (unsigned long long)i, tokens[i], v);
}

void Context::step(const int32_t *tokens, uint32_t batch, uint32_t n_total, uint32_t t0, uint32_t nt, bool all_logits,
                   float *host_all_logits, bool replayable) {
    for (uint32_t b = 0; b < batch; b++) {
        std::memcpy(step_tokens_ + (uint64_t)b * nt, tokens + (uint64_t)b * n_total + t0, nt * sizeof(int32_t));
        step_pos_[b] = seq_len_[b] + t0;
    }
    StepInput in;
    in.batch = batch;
    in.n_tokens = nt;
    in.tokens = step_tokens_;
    in.start_pos = step_pos_;
    in.all_logits = all_logits;
    in.logits_seq_stride = n_total;
    in.host_all_logits = host_all_logits ? host_all_logits + (uint64_t)t0 * model_.config().vocab_size : nullptr;
    exec_->begin_step(in);
    AbortHook hook(this);
    ForwardArgs args;
    args.hook = &hook; // a replayed recording skips it: aborts are then seen between steps
    args.host_all_logits = in.host_all_logits;
    exec_->run([&] { model_.architecture().forward(*exec_, args); }, replayable);
}

void Context::forward(const int32_t *tokens, uint32_t batch, uint32_t n_tokens, uint32_t flags, float *logits) {
    if (!tokens) fail(GPT_ERR_INVALID_ARG, "tokens is NULL");
    if (batch == 0 || n_tokens == 0) fail(GPT_ERR_INVALID_ARG, "batch (%u) and n_tokens (%u) must be at least 1", batch, n_tokens);
    if (batch > params_.max_batch) fail(GPT_ERR_INVALID_ARG, "batch %u exceeds the context's max_batch %u", batch, params_.max_batch);
    if (flags & ~GPT_FORWARD_ALL_LOGITS) fail(GPT_ERR_INVALID_ARG, "unknown forward flags 0x%x", flags);
    check_tokens(tokens, (uint64_t)batch * n_tokens);
    for (uint32_t b = 0; b < batch; b++)
        if ((uint64_t)seq_len_[b] + n_tokens > params_.max_seq)
            fail(GPT_ERR_CONTEXT_FULL, "sequence %u holds %u tokens; %u more exceed max_seq %u", b, seq_len_[b], n_tokens,
                 params_.max_seq);
    const bool all = (flags & GPT_FORWARD_ALL_LOGITS) != 0;
    const uint32_t per_step = std::max<uint32_t>(1, params_.max_step_tokens / batch);
    for (uint32_t t0 = 0; t0 < n_tokens; t0 += per_step) {
        const uint32_t nt = std::min(per_step, n_tokens - t0);
        check_abort();
        step(tokens, batch, n_tokens, t0, nt, all, all ? logits : nullptr, true);
    }
    if (logits && !all) exec_->read_logits(logits);
    // Success: the new tokens now belong to the sequences.
    for (uint32_t b = 0; b < batch; b++) {
        // memmove: refill_window passes the history itself.
        std::memmove(history_ + (uint64_t)b * params_.max_seq + seq_len_[b], tokens + (uint64_t)b * n_tokens,
                     n_tokens * sizeof(int32_t));
        seq_len_[b] += n_tokens;
        exec_->set_seq_len(b, seq_len_[b]);
    }
}

void Context::check_sampling(const gpt_sampling_params &s) const {
    if (!(s.temperature == s.temperature) || !std::isfinite(s.temperature))
        fail(GPT_ERR_INVALID_ARG, "temperature %g is not finite", (double)s.temperature);
    if (!(s.top_p > 0.0f && s.top_p <= 1.0f)) fail(GPT_ERR_INVALID_ARG, "top_p %g is outside (0, 1]", (double)s.top_p);
    if (!(s.min_p >= 0.0f && s.min_p <= 1.0f)) fail(GPT_ERR_INVALID_ARG, "min_p %g is outside [0, 1]", (double)s.min_p);
    if (!(s.repetition_penalty > 0.0f) || !std::isfinite(s.repetition_penalty))
        fail(GPT_ERR_INVALID_ARG, "repetition_penalty %g must be positive", (double)s.repetition_penalty);
    if (s.repetition_last_n > kMaxRepetitionWindow)
        fail(GPT_ERR_INVALID_ARG, "repetition_last_n %u exceeds %u", s.repetition_last_n, kMaxRepetitionWindow);
    if (s.n_stop_tokens && !s.stop_tokens) fail(GPT_ERR_INVALID_ARG, "stop_tokens is NULL but n_stop_tokens is %u", s.n_stop_tokens);
    const uint32_t known = GPT_SAMPLING_IGNORE_EOS | GPT_SAMPLING_CONTEXT_SHIFT;
    if (s.flags & ~known) fail(GPT_ERR_INVALID_ARG, "unknown sampling flags 0x%x", s.flags & ~known);
    auto bounded = [](float x) { return std::isfinite(x) && std::fabs(x) <= GPT_MAX_PENALTY; };
    if (!bounded(s.frequency_penalty))
        fail(GPT_ERR_INVALID_ARG, "frequency_penalty %g is not a finite number within +-%g", (double)s.frequency_penalty,
             (double)GPT_MAX_PENALTY);
    if (!bounded(s.presence_penalty))
        fail(GPT_ERR_INVALID_ARG, "presence_penalty %g is not a finite number within +-%g", (double)s.presence_penalty,
             (double)GPT_MAX_PENALTY);
    if (s.n_logit_bias > GPT_MAX_LOGIT_BIAS)
        fail(GPT_ERR_INVALID_ARG, "n_logit_bias %u exceeds %u", s.n_logit_bias, GPT_MAX_LOGIT_BIAS);
    if (s.n_logit_bias && !s.logit_bias) fail(GPT_ERR_INVALID_ARG, "logit_bias is NULL but n_logit_bias is %u", s.n_logit_bias);
    const uint32_t vocab = model_.config().vocab_size;
    for (uint32_t i = 0; i < s.n_logit_bias; i++) {
        if (s.logit_bias[i].token < 0 || (uint32_t)s.logit_bias[i].token >= vocab)
            fail(GPT_ERR_INVALID_ARG, "logit_bias[%u].token %d is outside the vocabulary [0, %u)", i, s.logit_bias[i].token, vocab);
        if (!bounded(s.logit_bias[i].bias))
            fail(GPT_ERR_INVALID_ARG, "logit_bias[%u].bias %g is not a finite number within +-%g", i, (double)s.logit_bias[i].bias,
                 (double)GPT_MAX_PENALTY);
    }
    if (s.n_stop_strings > GPT_MAX_STOP_STRINGS)
        fail(GPT_ERR_INVALID_ARG, "n_stop_strings %u exceeds %u", s.n_stop_strings, GPT_MAX_STOP_STRINGS);
    if (s.n_stop_strings && !s.stop_strings)
        fail(GPT_ERR_INVALID_ARG, "stop_strings is NULL but n_stop_strings is %u", s.n_stop_strings);
    for (uint32_t i = 0; i < s.n_stop_strings; i++) {
        if (!s.stop_strings[i]) fail(GPT_ERR_INVALID_ARG, "stop_strings[%u] is NULL", i);
        const size_t len = strnlen(s.stop_strings[i], GPT_MAX_STOP_STRING_BYTES + 1);
        if (len == 0) fail(GPT_ERR_INVALID_ARG, "stop_strings[%u] is empty", i);
        if (len > GPT_MAX_STOP_STRING_BYTES)
            fail(GPT_ERR_INVALID_ARG, "stop_strings[%u] is longer than %u bytes", i, GPT_MAX_STOP_STRING_BYTES);
    }
    if (s.n_stop_strings && !model_.tokenizer())
        fail(GPT_ERR_UNSUPPORTED, "stop_strings need the model's tokenizer, and this model file carries none");
}

void Context::generate(const int32_t *prompt, uint32_t n_prompt, const gpt_sampling_params &s, gpt_token_fn on_token,
                       void *user, int32_t *out, uint32_t cap, uint32_t *n_out) {
    if (n_out) *n_out = 0;
    if (!prompt || n_prompt == 0) fail(GPT_ERR_INVALID_ARG, "the prompt must hold at least one token");
    if (!out && cap > 0) fail(GPT_ERR_INVALID_ARG, "out is NULL");
    check_sampling(s);
    const bool shift = (s.flags & GPT_SAMPLING_CONTEXT_SHIFT) != 0;
    check_tokens(prompt, n_prompt);

    SampleSpec spec;
    spec.temperature = s.temperature;
    spec.top_k = s.top_k;
    spec.top_p = s.top_p;
    spec.min_p = s.min_p;
    spec.repetition_penalty = s.repetition_penalty;
    const bool stop_at_eos = (s.flags & GPT_SAMPLING_IGNORE_EOS) == 0;
    const std::vector<int32_t> &eos_ids = model_.config().eos_ids;
    Rng rng(s.seed);
    std::unique_ptr<StopMatcher> matcher; // only with stop strings: it keeps text (allocates)
    if (s.n_stop_strings) matcher = std::make_unique<StopMatcher>(*model_.tokenizer(), s.stop_strings, s.n_stop_strings);

    if (shift && (uint64_t)seq_len_[0] + n_prompt > params_.max_seq) refill_window(prompt, n_prompt);
    else forward(prompt, 1, n_prompt, 0, nullptr);
    adjust_.begin(s.frequency_penalty, s.presence_penalty, s.logit_bias, s.n_logit_bias);
    uint32_t delivered = 0;
    int32_t newest = 0; // generated token i, not yet in the cache; tokens before it are
    // With stop strings: generated tokens [delivered, i], kept here because a context shift
    // may move the held ones out of the cache (without stop strings none is ever held).
    std::vector<int32_t> pending;
    size_t pending_head = 0;
    // Shows generated tokens [delivered, upto) of the i + 1 so far; true when on_token says stop.
    auto deliver = [&](uint32_t upto) {
        for (; delivered < upto; *n_out = delivered) {
            const int32_t tok = matcher ? pending[pending_head++] : newest;
            out[delivered++] = tok;
            if (on_token && on_token(tok, user)) {
                *n_out = delivered;
                return true;
            }
        }
        if (pending_head * 2 >= pending.size()) { // amortised O(1) per token
            pending.erase(pending.begin(), pending.begin() + (ptrdiff_t)pending_head);
            pending_head = 0;
        }
        return false;
    };
    // The cache then holds the prompt and the delivered tokens but the last (gpt.h): of the i
    // generated tokens it holds, those after them leave its end. After a context shift it may
    // hold fewer than that many generated tokens and then keeps none of them.
    auto end_cache = [&](uint32_t i) {
        const uint32_t drop = i - (delivered ? delivered - 1 : 0);
        truncate(0, seq_len_[0] - std::min(seq_len_[0], drop));
    };
    for (uint32_t i = 0; i < cap; i++) {
        // No abort check here: forward() checks before each step, so an abort lands before
        // the previous token is cached and the cache keeps every generated token but the
        // last (gpt.h). A check here, after that token's forward, would cache it too.
        SampleRow row;
        row.uniform = rng.next_float();
        const uint32_t len = seq_len_[0];
        const uint32_t window = std::min(len, s.repetition_last_n);
        row.recent = history_ + (len - window);
        row.n_recent = window;
        row.adjust_tokens = adjust_.tokens();
        row.adjust_deltas = adjust_.deltas();
        row.n_adjust = adjust_.size();
        exec_->sample(spec, &row, &newest);
        adjust_.count(newest);
        if (matcher) pending.push_back(newest);
        bool end = stop_at_eos && std::find(eos_ids.begin(), eos_ids.end(), newest) != eos_ids.end();
        for (uint32_t j = 0; j < s.n_stop_tokens && !end; j++) end = s.stop_tokens[j] == newest;
        StopMatcher::Verdict v{i + 1, false};
        if (matcher && !end) v = matcher->push(newest);
        const bool full = seq_len_[0] + 1 > params_.max_seq;
        const bool last = end || v.matched || i + 1 == cap || (full && !shift);
        const bool asked_to_stop = deliver(last && !v.matched ? i + 1 : v.deliverable);
        if (last || asked_to_stop) {
            end_cache(i);
            if (!end && !v.matched && !asked_to_stop && i + 1 < cap)
                fail(GPT_ERR_CONTEXT_FULL, "the context is full after %u generated tokens (max_seq %u; "
                     "GPT_SAMPLING_CONTEXT_SHIFT keeps going on the last max_seq tokens)", i + 1, params_.max_seq);
            return;
        }
        try {
            // Past the context: the last max_seq tokens, held ones included, encoded afresh.
            if (full) refill_window(&newest, 1);
            else forward(&newest, 1, 1, 0, nullptr);
        } catch (...) {
            end_cache(i); // held tokens are dropped with the failed call
            throw;
        }
    }
}

void Context::reset() {
    for (uint32_t b = 0; b < params_.max_batch; b++) {
        seq_len_[b] = 0;
        exec_->set_seq_len(b, 0);
    }
}

// Sequence 0 becomes the last max_seq tokens of (its tokens + extra), encoded afresh. The
// window is assembled in place in the history (extra may not point into it), so nothing is
// allocated; forward() then copies it onto itself.
void Context::refill_window(const int32_t *extra, uint32_t n_extra) {
    check_tokens(extra, n_extra);
    const uint32_t w = params_.max_seq, len = seq_len_[0];
    const uint32_t from_extra = std::min(n_extra, w), keep = std::min(len, w - from_extra);
    std::memmove(history_, history_ + (len - keep), keep * sizeof(int32_t));
    std::memcpy(history_ + keep, extra + (n_extra - from_extra), from_extra * sizeof(int32_t));
    truncate(0, 0);
    forward(history_, 1, keep + from_extra, 0, nullptr);
}

void Context::truncate(uint32_t seq, uint32_t n) {
    if (seq >= params_.max_batch) fail(GPT_ERR_INVALID_ARG, "sequence %u does not exist (max_batch %u)", seq, params_.max_batch);
    if (n > seq_len_[seq]) fail(GPT_ERR_INVALID_ARG, "sequence %u holds %u tokens, cannot truncate to %u", seq, seq_len_[seq], n);
    seq_len_[seq] = n;
    exec_->set_seq_len(seq, n);
}

} // namespace gpt
