// context.h - one thread's working state on a model: the executor (KV cache, activations),
// each sequence's length and tokens, and the generate loop. Everything is sized at creation
// from gpt_ctx_params; forward and generate allocate nothing.
#pragma once

#include "gpt.h"
#include "backend/backend.h"
#include "runtime/model.h"
#include "runtime/token_adjust.h"

#include <memory>
#include <string>
#include <vector>

namespace gpt {

class Context {
public:
    // Resolves defaults and checks params against the model (throws on a bad value).
    static ExecParams resolve(const Model &m, const gpt_ctx_params &p);
    static ExecParams resolve(const ModelConfig &c, const Device &d, const gpt_ctx_params &p);
    // What a context of these params takes (gpt_ctx_estimate_memory), exactly.
    static MemoryPlan estimate(const Model &m, const gpt_ctx_params &p);
    // The same for resolved params on a model not (yet) loaded (runtime/load_plan.h).
    static MemoryPlan memory_of(const ModelConfig &c, const ModelShape &s, const Device &d, const ExecParams &e);

    Context(const Model &m, const gpt_ctx_params &p);
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    void forward(const int32_t *tokens, uint32_t batch, uint32_t n_tokens, uint32_t flags, float *logits);
    void generate(const int32_t *prompt, uint32_t n_prompt, const gpt_sampling_params &s, gpt_token_fn on_token,
                  void *user, int32_t *out, uint32_t cap, uint32_t *n_out);
    void reset();
    // gpt_ctx_create's warm-up (GPT_CTX_NO_WARMUP in gpt.h): whether this context gets one,
    // and the run itself (a kWarmupPrompt-token prompt and two sampled tokens, then reset).
    static constexpr uint32_t kWarmupPrompt = 12;
    bool warm_up_worthwhile() const;
    void warm_up(const gpt_sampling_params &sampling);
    uint32_t seq_len(uint32_t seq) const { return seq < params_.max_batch ? seq_len_[seq] : 0; }
    void truncate(uint32_t seq, uint32_t n);

    const ExecParams &params() const { return params_; }
    Executor &executor() { return *exec_; }
    std::string last_error;

private:
    struct AbortHook;
    // The executor's plan plus the Context's own arrays, for resolved params.
    static MemoryPlan memory_of(const Model &m, const ExecParams &e);
    // Host bytes the Context itself holds besides the executor: the arrays below, then the
    // sampling adjustments.
    static uint64_t own_host_bytes(const ExecParams &e);
    static uint64_t own_host_bytes(const ModelConfig &c, const ExecParams &e);
    void check_sampling(const gpt_sampling_params &s) const;
    void check_tokens(const int32_t *tokens, uint64_t n) const;
    // Runs tokens [t0, t0 + nt) of every sequence as one step; commits nothing.
    void step(const int32_t *tokens, uint32_t batch, uint32_t n_total, uint32_t t0, uint32_t nt, bool all_logits,
              float *host_all_logits, bool replayable);
    void check_abort() const;
    void refill_window(const int32_t *extra, uint32_t n_extra);

    const Model &model_;
    ExecParams params_;
    gpt_abort_fn abort_fn_ = nullptr;
    void *abort_user_ = nullptr;
    std::unique_ptr<Executor> exec_;
    // One host allocation (sized by own_host_bytes) holds the arrays below.
    void *own_ = nullptr;
    uint32_t *seq_len_ = nullptr;       // [max_batch]
    int32_t *history_ = nullptr;        // [max_batch][max_seq] tokens in each sequence's cache
    int32_t *step_tokens_ = nullptr;    // [max_step_tokens] staging of one step's tokens
    uint32_t *step_pos_ = nullptr;      // [max_batch]
    TokenAdjust adjust_;                // frequency/presence penalties and logit bias of a generate call
};

} // namespace gpt
