// gpt.hpp - header-only C++17 RAII wrapper over libgpt's C API (gpt.h).
//
// The C ABI stays the only compiled interface: this header adds no symbol to the library and
// needs nothing but gpt.h and libgpt (link with `pkg-config --libs gpt`).
//
//     #include <gpt.hpp>
//
//     gpt::ModelParams mp;                      // filled by gpt_model_params_init
//     mp.device = GPT_DEVICE_CPU;
//     gpt::Model model = gpt::Model::load("model.gpt", mp);        // throws gpt::Error
//     gpt::CtxParams cp;
//     cp.max_seq = 512;
//     gpt::Context ctx = model.context(cp);
//     gpt::Detokenizer detok = model.detokenizer();
//     gpt::SamplingParams sp;
//     sp.temperature = 0.0f;
//     ctx.generate(model.tokenize("In the beginning"), 64, sp, [&](int32_t token) {
//         std::cout << detok.push(token) << std::flush;   // return true (or nothing) to go on
//         return true;
//     });
//     std::cout << detok.flush() << "\n";
//
// Errors: every failed call throws gpt::Error, which carries the gpt_status and the
// library's message (gpt_last_error / gpt_ctx_last_error). Handles are move-only and free
// themselves (assign an empty object, `model = gpt::Model();`, to free one early); as in C,
// free contexts and detokenizers before the model they use (declare the model first, or keep
// it in a longer-lived scope). Threads: a Model may be shared by
// any number of threads; a Context is used by one thread at a time.
#ifndef GPT_HPP
#define GPT_HPP

#include "gpt.h"

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpt {

// ------------------------------------------------------------------------------ errors

// A failed libgpt call: status() is the gpt_status, message() the library's message.
class Error : public std::runtime_error {
public:
    Error(gpt_status status, const std::string &message)
        : std::runtime_error(std::string(status_name(status)) + ": " + message), status_(status), message_(message) {}

    gpt_status status() const noexcept { return status_; }
    const std::string &message() const noexcept { return message_; }

    // "GPT_ERR_FORMAT" (gpt_status_str without its explanation).
    static std::string status_name(gpt_status status) {
        std::string s = gpt_status_str(status);
        const size_t colon = s.find(':');
        return colon == std::string::npos ? s : s.substr(0, colon);
    }

private:
    gpt_status status_;
    std::string message_;
};

namespace detail {

inline void check(gpt_status st) {
    if (st != GPT_OK) throw Error(st, gpt_last_error());
}

inline void check(gpt_status st, const gpt_ctx *ctx) {
    if (st != GPT_OK) throw Error(st, gpt_ctx_last_error(ctx));
}

// A move-only owner of a C handle freed by Free.
template <typename T, void (*Free)(T *)> class Handle {
public:
    Handle() noexcept = default;
    explicit Handle(T *p) noexcept : p_(p) {}
    Handle(Handle &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    Handle &operator=(Handle &&o) noexcept {
        if (this != &o) {
            reset();
            p_ = std::exchange(o.p_, nullptr);
        }
        return *this;
    }
    Handle(const Handle &) = delete;
    Handle &operator=(const Handle &) = delete;
    ~Handle() { reset(); }

    T *get() const noexcept { return p_; }
    T *release() noexcept { return std::exchange(p_, nullptr); }
    void reset() noexcept {
        if (p_) Free(std::exchange(p_, nullptr));
    }
    explicit operator bool() const noexcept { return p_ != nullptr; }

    // The handle, or an Error for a moved-from or freed object.
    T *checked() const {
        if (!p_) throw Error(GPT_ERR_INVALID_ARG, "use of an empty (moved-from or freed) libgpt handle");
        return p_;
    }

private:
    T *p_ = nullptr;
};

// Runs fill(buf, cap, &n) with a buffer that grows to the size the library reports.
template <typename F> std::string read_bytes(F &&fill, size_t first_cap = 256) {
    std::string out(first_cap, '\0');
    size_t n = 0;
    gpt_status st = fill(&out[0], out.size(), &n);
    if (st == GPT_ERR_BUFFER_TOO_SMALL && n > out.size()) {
        out.assign(n + 1, '\0');
        st = fill(&out[0], out.size(), &n);
    }
    check(st);
    out.resize(n);
    return out;
}

} // namespace detail

// ------------------------------------------------------------------------ library-wide

inline std::string version() { return gpt_version_string(); }
inline std::string build_info() { return gpt_build_info(); }
inline int cuda_device_count() { return gpt_cuda_device_count(); }
// What a device is and how much memory it can give now (GPT_DEVICE_CPU: the host).
inline gpt_device_info device_info(int32_t device = GPT_DEVICE_AUTO) {
    gpt_device_info i{};
    i.struct_size = sizeof i;
    detail::check(gpt_device_get_info(device, &i));
    return i;
}

// ---------------------------------------------------------------------- params structs

// The C params structs, filled with the library's defaults by their *_init functions (so
// struct_size is right); change fields as in C. They convert to the C struct implicitly.
struct ModelParams : gpt_model_params {
    ModelParams() noexcept : gpt_model_params() { gpt_model_params_init(this); }
};

struct CtxParams : gpt_ctx_params {
    CtxParams() noexcept : gpt_ctx_params() { gpt_ctx_params_init(this); }
};

// stop_tokens: set with stop() (the vector is kept in this object) or as in C.
struct SamplingParams : gpt_sampling_params {
    SamplingParams() noexcept : gpt_sampling_params() { gpt_sampling_params_init(this); }
    SamplingParams(const SamplingParams &o) : gpt_sampling_params(o), stops_(o.stops_) { rebind(); }
    SamplingParams &operator=(const SamplingParams &o) {
        gpt_sampling_params::operator=(o);
        stops_ = o.stops_;
        rebind();
        return *this;
    }
    SamplingParams &stop(std::vector<int32_t> tokens) {
        stops_ = std::move(tokens);
        stop_tokens = stops_.data();
        n_stop_tokens = (uint32_t)stops_.size();
        return *this;
    }

private:
    void rebind() {
        if (!stops_.empty()) stop_tokens = stops_.data();
    }
    std::vector<int32_t> stops_;
};

class Context;
class Detokenizer;

// ------------------------------------------------------------------------------- model

class Model {
public:
    Model() noexcept = default;
    // Takes ownership of a handle from gpt_model_load.
    explicit Model(gpt_model *owned) noexcept : h_(owned) {}

    static Model load(const std::string &path, const gpt_model_params &params = ModelParams()) {
        gpt_model *m = nullptr;
        detail::check(gpt_model_load(path.c_str(), &params, &m));
        return Model(m);
    }

    // A weight file image in memory. Unless params.flags has GPT_MODEL_COPY_BUFFER the model may
    // borrow the buffer on the CPU: it must then outlive the model, unchanged.
    static Model from_memory(const void *data, size_t size, const gpt_model_params &params = ModelParams()) {
        gpt_model *m = nullptr;
        detail::check(gpt_model_load_from_memory(data, size, &params, &m));
        return Model(m);
    }

    gpt_model *get() const noexcept { return h_.get(); }
    explicit operator bool() const noexcept { return (bool)h_; }

    gpt_model_info info() const {
        gpt_model_info i{};
        i.struct_size = sizeof i;
        detail::check(gpt_model_get_info(h_.checked(), &i));
        return i;
    }

    // Text -> token ids (flags: GPT_TOKENIZE_*).
    std::vector<int32_t> tokenize(std::string_view text, uint32_t flags = 0) const {
        std::vector<int32_t> ids(text.size() + 8);
        uint32_t n = 0;
        gpt_status st = gpt_tokenize(h_.checked(), text.data(), text.size(), flags, ids.data(), (uint32_t)ids.size(), &n);
        if (st == GPT_ERR_BUFFER_TOO_SMALL && n > ids.size()) {
            ids.resize(n);
            st = gpt_tokenize(h_.get(), text.data(), text.size(), flags, ids.data(), (uint32_t)ids.size(), &n);
        }
        detail::check(st);
        ids.resize(n);
        return ids;
    }

    // Token ids -> bytes (flags: GPT_DETOKENIZE_*).
    std::string detokenize(const std::vector<int32_t> &tokens, uint32_t flags = 0) const {
        gpt_model *m = h_.checked();
        return detail::read_bytes([&](char *buf, size_t cap, size_t *n) {
            return gpt_detokenize(m, tokens.data(), (uint32_t)tokens.size(), flags, buf, cap, n);
        });
    }

    std::string token_to_piece(int32_t token, uint32_t flags = 0) const {
        gpt_model *m = h_.checked();
        return detail::read_bytes(
            [&](char *buf, size_t cap, size_t *n) { return gpt_token_to_piece(m, token, flags, buf, cap, n); }, 64);
    }

    // Memory a context with these params would take: {host bytes, device bytes}.
    std::pair<uint64_t, uint64_t> estimate_memory(const gpt_ctx_params &params = CtxParams()) const {
        uint64_t host = 0, dev = 0;
        detail::check(gpt_ctx_estimate_memory(h_.checked(), &params, &host, &dev));
        return {host, dev};
    }

    inline Context context(const gpt_ctx_params &params = CtxParams()) const;
    inline Detokenizer detokenizer(uint32_t flags = 0) const;

private:
    detail::Handle<gpt_model, gpt_model_free> h_;
};

// ----------------------------------------------------------------------------- context

class Context {
public:
    Context() noexcept = default;
    explicit Context(gpt_ctx *owned) noexcept : h_(owned) {}
    Context(const Model &model, const gpt_ctx_params &params = CtxParams()) {
        gpt_ctx *c = nullptr;
        detail::check(gpt_ctx_create(model.get(), &params, &c));
        h_ = Handle(c);
    }

    gpt_ctx *get() const noexcept { return h_.get(); }
    explicit operator bool() const noexcept { return (bool)h_; }

    // Empties every sequence's KV cache (gpt_ctx_reset; the handle stays).
    void reset() { gpt_ctx_reset(h_.checked()); }
    uint32_t seq_len(uint32_t seq = 0) const { return gpt_ctx_seq_len(h_.checked(), seq); }
    void truncate(uint32_t n_tokens, uint32_t seq = 0) {
        gpt_ctx *c = h_.checked();
        detail::check(gpt_ctx_truncate(c, seq, n_tokens), c);
    }

    // The C call: tokens [batch][n_tokens], logits as gpt.h describes (may be NULL).
    void forward(const int32_t *tokens, uint32_t batch, uint32_t n_tokens, uint32_t flags, float *logits) {
        gpt_ctx *c = h_.checked();
        detail::check(gpt_forward(c, tokens, batch, n_tokens, flags, logits), c);
    }

    // One sequence: appends tokens to sequence 0 and returns the last token's logits [vocab],
    // or with all_logits every new token's, [n_tokens][vocab] flattened.
    std::vector<float> forward(const std::vector<int32_t> &tokens, uint32_t vocab_size, bool all_logits = false) {
        std::vector<float> logits((all_logits ? tokens.size() : 1) * (size_t)vocab_size);
        forward(tokens.data(), 1, (uint32_t)tokens.size(), all_logits ? GPT_FORWARD_ALL_LOGITS : 0u, logits.data());
        return logits;
    }

    // Generates up to max_tokens after prompt and returns them. on_token(int32_t) is called for
    // each new token; it may return void, or bool: false stops after that token. An exception
    // it throws stops the generation and is rethrown here.
    template <typename F>
    std::vector<int32_t> generate(const std::vector<int32_t> &prompt, uint32_t max_tokens,
                                  const gpt_sampling_params &sampling, F &&on_token) {
        using Fn = std::remove_reference_t<F>;
        struct State {
            Fn *fn;
            std::exception_ptr error;
        } state{&on_token, nullptr};
        gpt_token_fn trampoline = [](int32_t token, void *user) -> int {
            State *s = static_cast<State *>(user);
            try {
                if constexpr (std::is_same_v<std::invoke_result_t<Fn &, int32_t>, void>) {
                    (*s->fn)(token);
                    return 0;
                } else {
                    return (*s->fn)(token) ? 0 : 1;
                }
            } catch (...) {
                s->error = std::current_exception();
                return 1;
            }
        };
        return run(prompt, max_tokens, sampling, trampoline, &state, [&] {
            if (state.error) std::rethrow_exception(state.error);
        });
    }

    std::vector<int32_t> generate(const std::vector<int32_t> &prompt, uint32_t max_tokens,
                                  const gpt_sampling_params &sampling = SamplingParams()) {
        return run(prompt, max_tokens, sampling, nullptr, nullptr, [] {});
    }

private:
    template <typename After>
    std::vector<int32_t> run(const std::vector<int32_t> &prompt, uint32_t max_tokens, const gpt_sampling_params &sampling,
                             gpt_token_fn fn, void *user, After &&after) {
        gpt_ctx *c = h_.checked();
        std::vector<int32_t> out(max_tokens ? max_tokens : 1);
        uint32_t n = 0;
        const gpt_status st =
            gpt_generate(c, prompt.data(), (uint32_t)prompt.size(), &sampling, fn, user, out.data(), max_tokens, &n);
        after();
        detail::check(st, c);
        out.resize(n);
        return out;
    }

    using Handle = detail::Handle<gpt_ctx, gpt_ctx_free>;
    Handle h_;
};

// ------------------------------------------------------------------------- detokenizer

// Streaming detokenizer: push(token) returns the bytes completed by the token (never half a
// UTF-8 character), flush() whatever is held back at the end.
class Detokenizer {
public:
    Detokenizer() noexcept = default;
    explicit Detokenizer(const Model &model, uint32_t flags = 0) {
        gpt_detokenizer *d = nullptr;
        detail::check(gpt_detokenizer_create(model.get(), flags, &d));
        h_ = Handle(d);
    }

    gpt_detokenizer *get() const noexcept { return h_.get(); }

    std::string push(int32_t token) {
        gpt_detokenizer *d = h_.checked();
        return detail::read_bytes(
            [&](char *buf, size_t cap, size_t *n) { return gpt_detokenizer_push(d, token, buf, cap, n); }, 64);
    }

    std::string flush() {
        gpt_detokenizer *d = h_.checked();
        return detail::read_bytes([&](char *buf, size_t cap, size_t *n) { return gpt_detokenizer_flush(d, buf, cap, n); },
                                  64);
    }

private:
    using Handle = detail::Handle<gpt_detokenizer, gpt_detokenizer_free>;
    Handle h_;
};

inline Context Model::context(const gpt_ctx_params &params) const { return Context(*this, params); }
inline Detokenizer Model::detokenizer(uint32_t flags) const { return Detokenizer(*this, flags); }

} // namespace gpt

#endif // GPT_HPP
