// api_common.cpp - versions, status strings, the per-thread last error, enum names.
#include "api/handles.h"

#include "runtime/library.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace gpt::api {

static thread_local std::string t_last_error;

// Stores a message without letting an allocation failure out: this runs in the guard's catch
// blocks, in noexcept code, where a bad_alloc would terminate the host process. Out of memory
// for the text itself, it keeps the part that fits the storage the string already has.
static void store_message(std::string &dst, const char *message) noexcept {
    try {
        dst = message;
    } catch (...) {
        try {
            dst.assign(message, std::min(std::strlen(message), dst.capacity())); // within capacity: no allocation
        } catch (...) {
            dst.clear();
        }
    }
}

void set_last_error(gpt_ctx *ctx, const char *message) noexcept {
    store_message(t_last_error, message);
    if (ctx) store_message(ctx->last_error, message);
}

} // namespace gpt::api

using gpt::api::guarded;

extern "C" {

uint32_t gpt_version(void) { return GPT_VERSION_NUMBER; }

const char *gpt_version_string(void) {
#define GPT_STR2(x) #x
#define GPT_STR(x) GPT_STR2(x)
    return GPT_STR(GPT_VERSION_MAJOR) "." GPT_STR(GPT_VERSION_MINOR) "." GPT_STR(GPT_VERSION_PATCH);
}

const char *gpt_build_info(void) {
    static thread_local std::string s;
    try {
        s = std::string("libgpt ") + gpt_version_string() + "; cpu; " + gpt::backends_info();
    } catch (...) { // out of memory: no exception may leave a C function
        return "libgpt " GPT_STR(GPT_VERSION_MAJOR) "." GPT_STR(GPT_VERSION_MINOR) "." GPT_STR(GPT_VERSION_PATCH);
    }
    return s.c_str();
}

const char *gpt_status_str(int status) {
    switch (status) {
    case GPT_OK: return "GPT_OK: success";
    case GPT_ERR_INVALID_ARG: return "GPT_ERR_INVALID_ARG: invalid argument";
    case GPT_ERR_IO: return "GPT_ERR_IO: file input/output failed";
    case GPT_ERR_FORMAT: return "GPT_ERR_FORMAT: malformed weight file";
    case GPT_ERR_CHECKSUM: return "GPT_ERR_CHECKSUM: checksum mismatch";
    case GPT_ERR_UNSUPPORTED: return "GPT_ERR_UNSUPPORTED: not supported";
    case GPT_ERR_OUT_OF_MEMORY: return "GPT_ERR_OUT_OF_MEMORY: out of memory";
    case GPT_ERR_DEVICE: return "GPT_ERR_DEVICE: CUDA error";
    case GPT_ERR_CONTEXT_FULL: return "GPT_ERR_CONTEXT_FULL: context is full";
    case GPT_ERR_ABORTED: return "GPT_ERR_ABORTED: aborted";
    case GPT_ERR_INTERNAL: return "GPT_ERR_INTERNAL: internal error";
    case GPT_ERR_BUFFER_TOO_SMALL: return "GPT_ERR_BUFFER_TOO_SMALL: output buffer too small";
    }
    return "unknown status";
}

const char *gpt_last_error(void) { return gpt::api::t_last_error.c_str(); }

const char *gpt_dtype_name(int dtype) { return dtype < 0 ? "?" : gpt::dtype_code_name((uint32_t)dtype); }

const char *gpt_arch_name(int arch) { return gpt::architecture_name(arch); }

int gpt_cuda_device_count(void) {
    try {
        return gpt::gpu_count();
    } catch (...) {
        return 0;
    }
}

gpt_status gpt_device_get_info(int32_t device, gpt_device_info *info) {
    return guarded(nullptr, [&] {
        if (!info) gpt::fail(GPT_ERR_INVALID_ARG, "info must not be NULL");
        gpt::api::check_struct_size<gpt_device_info>(info->struct_size, "gpt_device_info");
        const gpt_device_info full = gpt::device_info(device); // a newer caller's extra fields are left alone
        std::memcpy(info, &full, sizeof full);
    });
}

} // extern "C"
