/* dump_logits.c - logits and greedy generations of a weight file through the public API
 * only, for tests/reference/hf_logits_check.py (which compares them with transformers).
 * Built by meson (not installed): build/tests/dump_logits.
 *
 *   dump_logits logits   MODEL OUT TOKEN...    every position's logits: float32 [n][vocab]
 *   dump_logits generate MODEL OUT N TOKEN...  N greedy tokens after the prompt, EOS
 *                                              ignored: int32 [N]
 * Runs on the CPU (GPT_DUMP_DEVICE=N: CUDA device N). Files are little-endian raw arrays;
 * prints "tokens vocab" on stdout.
 * Exit status 0 on success, 1 on a library error, 2 on a usage error. */
#include "gpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
    fprintf(stderr, "usage: dump_logits logits MODEL OUT TOKEN...\n"
                    "       dump_logits generate MODEL OUT N TOKEN...\n");
    return 2;
}

static int lib_error(const char *what, const char *msg) {
    fprintf(stderr, "dump_logits: %s: %s\n", what, msg);
    return 1;
}

static int parse_ids(int argc, char **argv, int32_t **out) {
    int i;
    *out = (int32_t *)malloc(sizeof(int32_t) * (size_t)(argc > 0 ? argc : 1));
    if (!*out) return -1;
    for (i = 0; i < argc; i++) {
        char *end = NULL;
        long v = strtol(argv[i], &end, 10);
        if (!*argv[i] || *end || v < 0 || v > 0x7fffffffL) return -1;
        (*out)[i] = (int32_t)v;
    }
    return argc;
}

static int write_all(const char *path, const void *data, size_t bytes) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    if (bytes && fwrite(data, 1, bytes, f) != bytes) {
        fclose(f);
        return 0;
    }
    return fclose(f) == 0;
}

int main(int argc, char **argv) {
    int generate, n_prompt, rc = 1;
    unsigned long n_new = 0;
    const char *model_path, *out_path;
    int32_t *prompt = NULL;
    gpt_model *model = NULL;
    gpt_ctx *ctx = NULL;
    gpt_model_params mp;
    gpt_ctx_params cp;
    gpt_model_info info;
    gpt_status st;

    if (argc < 5) return usage();
    generate = strcmp(argv[1], "generate") == 0;
    if (!generate && strcmp(argv[1], "logits") != 0) return usage();
    model_path = argv[2];
    out_path = argv[3];
    if (generate) {
        char *end = NULL;
        if (argc < 6) return usage();
        n_new = strtoul(argv[4], &end, 10);
        if (!*argv[4] || *end || n_new == 0 || n_new > 1000000) return usage();
        n_prompt = parse_ids(argc - 5, argv + 5, &prompt);
    } else {
        n_prompt = parse_ids(argc - 4, argv + 4, &prompt);
    }
    if (n_prompt <= 0) {
        free(prompt);
        return usage();
    }

    gpt_model_params_init(&mp);
    mp.device = GPT_DEVICE_CPU;
    /* GPT_DUMP_DEVICE=N runs on CUDA device N instead (the GPU machine's checks). */
    if (getenv("GPT_DUMP_DEVICE") && *getenv("GPT_DUMP_DEVICE")) mp.device = atoi(getenv("GPT_DUMP_DEVICE"));
    st = gpt_model_load(model_path, &mp, &model);
    if (st != GPT_OK) {
        rc = lib_error(model_path, gpt_last_error());
        goto done;
    }
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    if (gpt_model_get_info(model, &info) != GPT_OK) {
        rc = lib_error("gpt_model_get_info", gpt_last_error());
        goto done;
    }
    gpt_ctx_params_init(&cp);
    cp.max_seq = (uint32_t)n_prompt + (uint32_t)n_new;
    if (cp.max_seq > info.context_length) cp.max_seq = info.context_length;
    if ((uint32_t)n_prompt + (uint32_t)n_new > cp.max_seq) {
        fprintf(stderr, "dump_logits: %d prompt + %lu new tokens exceed the model's context of %u\n", n_prompt, n_new,
                info.context_length);
        rc = 2;
        goto done;
    }
    st = gpt_ctx_create(model, &cp, &ctx);
    if (st != GPT_OK) {
        rc = lib_error("gpt_ctx_create", gpt_last_error());
        goto done;
    }

    if (!generate) {
        size_t n = (size_t)n_prompt * info.vocab_size;
        float *logits = (float *)malloc(sizeof(float) * n);
        if (!logits) goto done;
        st = gpt_forward(ctx, prompt, 1, (uint32_t)n_prompt, GPT_FORWARD_ALL_LOGITS, logits);
        if (st != GPT_OK) {
            rc = lib_error("gpt_forward", gpt_ctx_last_error(ctx));
            free(logits);
            goto done;
        }
        if (!write_all(out_path, logits, sizeof(float) * n)) {
            fprintf(stderr, "dump_logits: cannot write %s\n", out_path);
            free(logits);
            goto done;
        }
        free(logits);
    } else {
        gpt_sampling_params sp;
        uint32_t n_out = 0;
        int32_t *out = (int32_t *)malloc(sizeof(int32_t) * n_new);
        if (!out) goto done;
        gpt_sampling_params_init(&sp);
        sp.temperature = 0.0f; /* greedy */
        sp.flags = GPT_SAMPLING_IGNORE_EOS;
        st = gpt_generate(ctx, prompt, (uint32_t)n_prompt, &sp, NULL, NULL, out, (uint32_t)n_new, &n_out);
        if (st != GPT_OK) {
            rc = lib_error("gpt_generate", gpt_ctx_last_error(ctx));
            free(out);
            goto done;
        }
        if (!write_all(out_path, out, sizeof(int32_t) * n_out)) {
            fprintf(stderr, "dump_logits: cannot write %s\n", out_path);
            free(out);
            goto done;
        }
        free(out);
    }
    printf("%d %u\n", n_prompt, info.vocab_size);
    rc = 0;
done:
    gpt_ctx_free(ctx);
    gpt_model_free(model);
    free(prompt);
    return rc;
}
