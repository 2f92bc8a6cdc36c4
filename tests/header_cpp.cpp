// header_cpp.cpp - include/gpt.h compiled as C++ (-Wall -Wextra -Werror -pedantic, as
// C++11 and C++17; see tests/meson.build) and linked against the shared library: the
// declarations have C linkage, the structs are standard-layout and begin with struct_size.
#include "gpt.h"
#include "gpt.h" // include guard

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_standard_layout<gpt_model_params>::value, "C layout");
static_assert(std::is_standard_layout<gpt_ctx_params>::value, "C layout");
static_assert(std::is_standard_layout<gpt_sampling_params>::value, "C layout");
static_assert(std::is_standard_layout<gpt_model_info>::value, "C layout");
static_assert(offsetof(gpt_model_params, struct_size) == 0, "struct_size first");
static_assert(offsetof(gpt_ctx_params, struct_size) == 0, "struct_size first");
static_assert(offsetof(gpt_sampling_params, struct_size) == 0, "struct_size first");
static_assert(offsetof(gpt_model_info, struct_size) == 0, "struct_size first");
static_assert(sizeof(gpt_status) == sizeof(int), "enum size");

// Pointers to the functions with their exact C types.
static gpt_status (*const load_fn)(const char *, const gpt_model_params *, gpt_model **) = gpt_model_load;
static gpt_status (*const forward_fn)(gpt_ctx *, const int32_t *, uint32_t, uint32_t, uint32_t, float *) = gpt_forward;

static int failures = 0;
#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            std::fprintf(stderr, "header_cpp: line %d: %s failed\n", __LINE__, #cond);   \
            failures++;                                                                  \
        }                                                                                \
    } while (0)

int main() {
    CHECK(gpt_version() == GPT_VERSION_NUMBER);
    CHECK(std::strncmp(gpt_status_str(GPT_ERR_CONTEXT_FULL), "GPT_ERR_CONTEXT_FULL", 20) == 0);
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    gpt_model *model = reinterpret_cast<gpt_model *>(&mp);
    CHECK(load_fn("/nonexistent/header_cpp.gpt", &mp, &model) == GPT_ERR_IO);
    CHECK(model == nullptr);
    CHECK(std::strstr(gpt_last_error(), "header_cpp.gpt") != nullptr);
    CHECK(forward_fn(nullptr, nullptr, 1, 1, GPT_FORWARD_ALL_LOGITS, nullptr) == GPT_ERR_INVALID_ARG);
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    uint32_t n_out = 5;
    CHECK(gpt_generate(nullptr, nullptr, 0, &sp, [](int32_t, void *) { return 0; }, nullptr, nullptr, 0, &n_out) ==
          GPT_ERR_INVALID_ARG);
    CHECK(n_out == 0);
    gpt_ctx_free(nullptr);
    gpt_model_free(nullptr);
    if (failures) return 1;
    std::printf("header_cpp (C++%ld): ok\n", __cplusplus / 100 % 100);
    return 0;
}
