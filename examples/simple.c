/* simple.c - load a model and stream a completion through libgpt's C API.
 *   cc simple.c -o simple $(pkg-config --cflags --libs gpt) && ./simple MODEL.gpt "In the beginning" 64 */
#define _POSIX_C_SOURCE 200809L
#include <gpt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int on_token(int32_t token, void *user) { /* print the text each token completes */
    char buf[256];
    size_t n = 0;
    if (gpt_detokenizer_push((gpt_detokenizer *)user, token, buf, sizeof buf, &n) == GPT_OK) fwrite(buf, 1, n, stdout);
    fflush(stdout);
    return 0; /* nonzero would stop generation after this token */
}

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: %s MODEL PROMPT [N]\n", argv[0]), 2;
    gpt_model *model = NULL; gpt_ctx *ctx = NULL; gpt_detokenizer *detok = NULL;
    gpt_model_info info;
    memset(&info, 0, sizeof info), info.struct_size = sizeof info; /* the caller sets struct_size */
    gpt_ctx_params cp;
    gpt_sampling_params sp;
    uint32_t cap = argc > 3 ? (uint32_t)atoi(argv[3]) : 64, n_prompt = 0, n_out = 0;
    int32_t prompt[512], *out = malloc(sizeof(int32_t) * (cap ? cap : 1));
    gpt_status st = gpt_model_load(argv[1], NULL, &model); /* NULL: default params (a GPU if any) */
    if (st == GPT_OK) st = gpt_model_get_info(model, &info);
    gpt_ctx_params_init(&cp);
    cp.max_seq = info.context_length < 512 ? info.context_length : 512; /* the KV cache is sized once */
    if (st == GPT_OK) st = gpt_tokenize(model, argv[2], strlen(argv[2]), 0, prompt, 512, &n_prompt);
    if (st == GPT_OK) st = gpt_ctx_create(model, &cp, &ctx);
    if (st == GPT_OK) st = gpt_detokenizer_create(model, GPT_DETOKENIZE_CONTINUE, &detok); /* continues the prompt printed below */
    if (st != GPT_OK) return fprintf(stderr, "error: %s\n", gpt_last_error()), 1;
    gpt_sampling_params_init(&sp); /* temperature 0.8, top-k 40, top-p 0.95, seed 0 */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    printf("%s", argv[2]);
    st = gpt_generate(ctx, prompt, n_prompt, &sp, on_token, detok, out, cap, &n_out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char tail[64]; size_t n = 0;
    if (gpt_detokenizer_flush(detok, tail, sizeof tail, &n) == GPT_OK) fwrite(tail, 1, n, stdout);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (st != GPT_OK) fprintf(stderr, "\nerror: %s\n", gpt_ctx_last_error(ctx));
    fprintf(stderr, "\n%s: %u tokens in %.3f s, %.1f tokens/s\n", info.name, n_out, s, n_out / (s > 0 ? s : 1e-9));
    gpt_detokenizer_free(detok);
    gpt_ctx_free(ctx); /* contexts before their model */
    gpt_model_free(model);
    return free(out), st == GPT_OK ? 0 : 1;
}
