// handles.h - what the opaque public handles hold, and the guard every extern "C" function
// runs its body in: exceptions become a status plus a last-error message, never escape.
#pragma once

#include "gpt.h"
#include "core/error.h"
#include "runtime/context.h"
#include "runtime/model.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>

struct gpt_model {
    std::unique_ptr<gpt::Model> impl;
};

struct gpt_ctx {
    std::unique_ptr<gpt::Context> impl;
    std::string last_error;
};

namespace gpt::api {

// Never throws (an allocation failure keeps a shortened message).
void set_last_error(gpt_ctx *ctx, const char *message) noexcept;

// Runs f(); maps gpt::Error, std::bad_alloc and anything else to a status.
template <typename F> gpt_status guarded(gpt_ctx *ctx, F &&f) noexcept {
    try {
        f();
        return GPT_OK;
    } catch (const gpt::Error &e) {
        set_last_error(ctx, e.what());
        return e.status();
    } catch (const std::bad_alloc &) {
        set_last_error(ctx, "out of host memory");
        return GPT_ERR_OUT_OF_MEMORY;
    } catch (const std::exception &e) {
        char m[512]; // no allocation in here: a bad_alloc would escape this noexcept function
        std::snprintf(m, sizeof m, "internal error: %s", e.what());
        set_last_error(ctx, m);
        return GPT_ERR_INTERNAL;
    } catch (...) {
        set_last_error(ctx, "internal error: unknown exception");
        return GPT_ERR_INTERNAL;
    }
}

// Sizes earlier versions of gpt.h gave a struct (0: none). A caller of such a size gets the
// defaults for every field past it.
template <typename T> constexpr uint32_t older_size() { return 0; }
// gpt_sampling_params before issue #18 ended at `reserved`.
template <> constexpr uint32_t older_size<gpt_sampling_params>() {
    return offsetof(gpt_sampling_params, reserved) + sizeof(uint32_t);
}
// gpt_model_info before 0.6.0 ended at `name`.
template <> constexpr uint32_t older_size<gpt_model_info>() {
    return offsetof(gpt_model_info, name) + sizeof(gpt_model_info::name);
}
static_assert(offsetof(gpt_model_info, n_experts) == older_size<gpt_model_info>(),
              "the fields added in 0.6.0 come after the old struct's end");
static_assert(offsetof(gpt_sampling_params, stop_strings) >= offsetof(gpt_sampling_params, reserved) + sizeof(uint32_t),
              "the fields added by issue #18 come after the old struct's end");

// The struct_size values a caller may pass for a versioned struct T: a size some version of
// gpt.h gave T (today's, older_size<T>()), or a larger one from a newer header, whose extra
// fields are ignored. A larger size must be plausible (at most kMaxStructSize, a multiple of
// T's alignment), so garbage such as 0xDEADBEEF is refused, and no size may end inside a
// field: a torn pointer would be called.
inline constexpr uint32_t kMaxStructSize = 4096;
template <typename T> void check_struct_size(uint32_t size, const char *what) {
    if (size == sizeof(T) || (older_size<T>() != 0 && size == older_size<T>())) return;
    if (size > sizeof(T) && size <= kMaxStructSize && size % alignof(T) == 0) return;
    gpt::fail(GPT_ERR_INVALID_ARG, "%s.struct_size is %u, which no version of gpt.h has (this one: %zu): fill the struct with its _init function or set it to sizeof",
              what, size, sizeof(T));
}

// Copies a caller's versioned params struct over our defaults: an older caller's struct up to
// its size (the newer fields keep their defaults), a newer caller's extra fields ignored.
template <typename T> T read_params(const T *given, const T &defaults, const char *what) {
    T out = defaults;
    if (!given) return out;
    check_struct_size<T>(given->struct_size, what);
    std::memcpy(&out, given, given->struct_size < sizeof(T) ? given->struct_size : sizeof(T));
    out.struct_size = sizeof(T);
    return out;
}

} // namespace gpt::api
