/* header_c99.c - include/gpt.h compiled as strict C99 (-std=c99 -pedantic-errors -Wall
 * -Wextra -Werror, see tests/meson.build) and linked against the shared library, so the
 * header is plain C and every function called here is exported. */
#include "gpt.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "header_c99: line %d: %s failed\n", __LINE__, #cond); \
            failures++;                                                          \
        }                                                                        \
    } while (0)

static int on_token(int32_t token, void *user) {
    (void)token;
    (void)user;
    return 0;
}
static int on_abort(void *user) {
    (void)user;
    return 0;
}

int main(void) {
    gpt_model_params mp;
    gpt_ctx_params cp;
    gpt_sampling_params sp;
    gpt_model_info info;
    gpt_model *model = (gpt_model *)&mp; /* must be reset to NULL on failure */
    gpt_ctx *ctx = NULL;
    gpt_token_fn token_fn = on_token;
    gpt_abort_fn abort_fn = on_abort;
    gpt_status st;
    gpt_dtype dt = GPT_DTYPE_BF16;
    gpt_arch arch = GPT_ARCH_LLAMA;
    char version[32];
    uint64_t host = 0, device = 0;
    unsigned flags = GPT_MODEL_SKIP_CHECKSUMS | GPT_MODEL_NO_MMAP | GPT_MODEL_COPY_BUFFER | GPT_MODEL_INFO_TIED_HEAD |
                     GPT_MODEL_INFO_QKV_BIAS | GPT_MODEL_INFO_HAS_TOKENIZER | GPT_CTX_ALLOW_TF32 | GPT_CTX_NO_GRAPHS | GPT_CTX_NO_WARMUP |
                     GPT_FORWARD_ALL_LOGITS | GPT_SAMPLING_IGNORE_EOS;

    CHECK(gpt_version() == GPT_VERSION_NUMBER);
    sprintf(version, "%d.%d.%d", GPT_VERSION_MAJOR, GPT_VERSION_MINOR, GPT_VERSION_PATCH);
    CHECK(strcmp(gpt_version_string(), version) == 0);
    CHECK(gpt_build_info() != NULL);
    CHECK(strncmp(gpt_status_str(GPT_ERR_FORMAT), "GPT_ERR_FORMAT", 14) == 0);
    CHECK(strcmp(gpt_dtype_name(dt), "bf16") == 0);
    CHECK(strcmp(gpt_arch_name(arch), "llama") == 0);
    CHECK(gpt_cuda_device_count() >= 0);
    CHECK(flags == 0x7u);
    CHECK(GPT_DEVICE_CPU == -1 && GPT_DEVICE_AUTO == -2);

    gpt_model_params_init(&mp);
    gpt_ctx_params_init(&cp);
    gpt_sampling_params_init(&sp);
    CHECK(mp.struct_size == sizeof mp && cp.struct_size == sizeof cp && sp.struct_size == sizeof sp);
    CHECK(offsetof(gpt_model_info, struct_size) == 0);
    cp.abort_fn = abort_fn;
    info.struct_size = sizeof info;

    mp.device = GPT_DEVICE_CPU;
    st = gpt_model_load("/nonexistent/header_c99.gpt", &mp, &model);
    CHECK(st == GPT_ERR_IO);
    CHECK(model == NULL);
    CHECK(strstr(gpt_last_error(), "header_c99.gpt") != NULL);
    CHECK(gpt_model_get_info(NULL, &info) == GPT_ERR_INVALID_ARG);
    CHECK(gpt_ctx_estimate_memory(NULL, &cp, &host, &device) == GPT_ERR_INVALID_ARG);
    CHECK(gpt_ctx_create(NULL, &cp, &ctx) == GPT_ERR_INVALID_ARG && ctx == NULL);
    CHECK(gpt_forward(NULL, NULL, 1, 1, 0, NULL) == GPT_ERR_INVALID_ARG);
    CHECK(gpt_generate(NULL, NULL, 0, &sp, token_fn, NULL, NULL, 0, NULL) == GPT_ERR_INVALID_ARG);
    CHECK(gpt_model_load_from_memory(NULL, 0, NULL, &model) == GPT_ERR_INVALID_ARG);
    CHECK(gpt_ctx_truncate(NULL, 0, 0) == GPT_ERR_INVALID_ARG);
    CHECK(gpt_ctx_seq_len(NULL, 0) == 0);
    CHECK(strcmp(gpt_ctx_last_error(NULL), "") == 0);
    gpt_ctx_reset(NULL);
    gpt_ctx_free(NULL);
    gpt_model_free(NULL);

    if (failures) return 1;
    printf("header_c99: ok\n");
    return 0;
}
