// cmd_perplexity.cpp - `gpt perplexity MODEL TEXTFILE [--compare REF]`: the model's perplexity
// on a text, over sliding windows, and with --compare the next-token distributions against a
// reference model of the same vocabulary (say, the f16 or f32 file a quantized one came from):
// mean KL(ref || model), top-1 agreement and the largest |logit difference|. Only the public
// API (include/gpt.h); runs on the CPU or a GPU.
#include "cli.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace cli {

namespace {

void usage(FILE *f) {
    std::fprintf(f,
                 "usage: gpt perplexity MODEL TEXTFILE [options]\n"
                 "  The perplexity of MODEL on the text (tokenized with MODEL's tokenizer, BOS first as it\n"
                 "  adds one): windows of --window tokens every --stride tokens; the first window scores\n"
                 "  all its tokens, later ones their last --stride (each token is scored once, with at\n"
                 "  least window - stride tokens of context after the first window).\n"
                 "options:\n"
                 "  --compare REF      also run REF (same vocabulary) on the same windows: its perplexity,\n"
                 "                     the mean KL divergence KL(REF || MODEL) of the next-token\n"
                 "                     distributions, top-1 agreement and the largest |logit difference|\n"
                 "  --window N         tokens per window (default 512, at most the model's context)\n"
                 "  --stride S         tokens between windows, 1 to N (default N / 2)\n"
                 "  --max-tokens T     score at most the first T tokens of the text (default: all)\n"
                 "  --device D         auto | cpu | cuda | cuda:N (default cpu)\n"
                 "%s"
                 "  --threads N        CPU threads (default: all cores)\n",
                 kWeightsHelp);
}

struct Run {
    ModelPtr model;
    CtxPtr ctx;
    gpt_model_info info{};
};

Run open_run(const char *path, int32_t device, uint32_t weights, uint32_t threads, uint32_t window) {
    Run r;
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    mp.device = device;
    mp.flags |= weights;
    r.model = load_model(path, mp);
    report_weights_placement(r.model.get(), mp);
    r.info.struct_size = sizeof r.info;
    gpt_model_get_info(r.model.get(), &r.info);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.max_seq = std::min(window, r.info.context_length);
    cp.n_threads = threads;
    gpt_ctx *c = nullptr;
    if (gpt_ctx_create(r.model.get(), &cp, &c) != GPT_OK) throw Failure(std::string(path) + ": " + gpt_last_error());
    r.ctx.reset(c);
    return r;
}

// Logits of every token of one window, [n][vocab].
void window_logits(Run &r, const int32_t *tokens, uint32_t n, std::vector<float> &out) {
    out.assign((size_t)n * r.info.vocab_size, 0.0f);
    gpt_ctx_reset(r.ctx.get());
    if (gpt_forward(r.ctx.get(), tokens, 1, n, GPT_FORWARD_ALL_LOGITS, out.data()) != GPT_OK)
        throw Failure(std::string("forward: ") + gpt_ctx_last_error(r.ctx.get()));
}

// log-softmax of one row, in double.
void log_softmax(const float *logits, uint32_t v, std::vector<double> &out) {
    out.resize(v);
    double mx = -INFINITY;
    for (uint32_t i = 0; i < v; i++) mx = std::max(mx, (double)logits[i]);
    double sum = 0;
    for (uint32_t i = 0; i < v; i++) sum += std::exp((double)logits[i] - mx);
    const double lse = mx + std::log(sum);
    for (uint32_t i = 0; i < v; i++) out[i] = (double)logits[i] - lse;
}

} // namespace

int cmd_perplexity(int argc, char **argv) {
    const char *ref_path = nullptr;
    uint32_t window = 512, stride = 0, threads = 0;
    uint64_t max_tokens = 0;
    int32_t device = GPT_DEVICE_CPU;
    uint32_t weights = 0; // --weights: GPT_MODEL_HOST_WEIGHTS or GPT_MODEL_DEVICE_WEIGHTS
    std::vector<const char *> positional;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) throw UsageError(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        }
        if (a == "--compare") ref_path = value();
        else if (a == "--window") window = parse_u32(a, value(), 2, 1u << 20);
        else if (a == "--stride") stride = parse_u32(a, value(), 1, 1u << 20);
        else if (a == "--max-tokens") max_tokens = parse_uint(a, value(), 2);
        else if (a == "--device") device = parse_device(value());
        else if (a == "--weights") weights = parse_weights(value());
        else if (a == "--threads") threads = parse_u32(a, value(), 0, 256);
        else if (a.size() > 1 && a[0] == '-') throw UsageError("unknown option " + a + " (see gpt perplexity --help)");
        else positional.push_back(argv[i]);
    }
    if (positional.size() != 2) {
        usage(stderr);
        return 2;
    }
    const char *model_path = positional[0], *text_path = positional[1];

    Run m = open_run(model_path, device, weights, threads, window);
    window = std::min(window, m.info.context_length);
    if (stride == 0) stride = std::max(1u, window / 2);
    if (stride > window) throw UsageError("--stride " + std::to_string(stride) + " exceeds the window of " + std::to_string(window));
    Run ref;
    if (ref_path) {
        ref = open_run(ref_path, device, weights, threads, window);
        if (ref.info.vocab_size != m.info.vocab_size)
            throw Failure(std::string(ref_path) + ": vocabulary of " + std::to_string(ref.info.vocab_size) + " tokens, " +
                          model_path + " has " + std::to_string(m.info.vocab_size));
    }

    // The text, read whole (one pass, linear in its size).
    FILE *f = std::fopen(text_path, "rb");
    if (!f) throw Failure(std::string(text_path) + ": " + std::strerror(errno));
    std::string text;
    char buf[1 << 16];
    for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, got);
    const bool read_error = std::ferror(f) != 0;
    std::fclose(f);
    if (read_error) throw Failure(std::string(text_path) + ": read error");
    uint32_t n_tok = 0;
    std::vector<int32_t> tokens(text.size() + 2);
    if (text.size() + 2 > UINT32_MAX) throw Failure(std::string(text_path) + ": larger than 4 GiB");
    if (gpt_tokenize(m.model.get(), text.data(), text.size(), 0, tokens.data(), (uint32_t)tokens.size(), &n_tok) != GPT_OK)
        throw Failure(std::string(text_path) + ": " + gpt_last_error());
    tokens.resize(n_tok);
    if (max_tokens && tokens.size() > max_tokens) tokens.resize(max_tokens);
    if (tokens.size() < 2) throw Failure(std::string(text_path) + ": fewer than 2 tokens");

    const uint32_t V = m.info.vocab_size;
    const bool progress = isatty(2) != 0;
    const uint64_t n = tokens.size();
    const uint64_t n_windows = n <= window ? 1 : 1 + (n - window + stride - 1) / stride;
    double nll = 0, ref_nll = 0, kl = 0, max_diff = 0;
    uint64_t scored = 0, agree = 0, w_i = 0;
    std::vector<float> lm, lr;
    std::vector<double> pm, pr;
    for (uint64_t start = 0;; start += stride, w_i++) {
        const uint64_t end = std::min(n, start + window);
        // Scored targets: tokens [first, end); each predicted from the logits one before.
        const uint64_t first = start == 0 ? 1 : std::max(start + 1, start + window - stride);
        window_logits(m, tokens.data() + start, (uint32_t)(end - start), lm);
        if (ref_path) window_logits(ref, tokens.data() + start, (uint32_t)(end - start), lr);
        for (uint64_t t = first; t < end; t++) {
            const float *row = lm.data() + (t - 1 - start) * V;
            log_softmax(row, V, pm);
            nll -= pm[(uint32_t)tokens[t]];
            scored++;
            if (!ref_path) continue;
            const float *rrow = lr.data() + (t - 1 - start) * V;
            log_softmax(rrow, V, pr);
            ref_nll -= pr[(uint32_t)tokens[t]];
            double k = 0;
            uint32_t top_m = 0, top_r = 0;
            for (uint32_t i = 0; i < V; i++) {
                k += std::exp(pr[i]) * (pr[i] - pm[i]);
                max_diff = std::max(max_diff, (double)std::fabs(row[i] - rrow[i]));
                if (row[i] > row[top_m]) top_m = i;
                if (rrow[i] > rrow[top_r]) top_r = i;
            }
            kl += k;
            agree += top_m == top_r;
        }
        if (progress) std::fprintf(stderr, "\rwindow %llu of %llu", (unsigned long long)(w_i + 1), (unsigned long long)n_windows);
        if (end == n) break;
    }
    if (progress) std::fprintf(stderr, "\n");
    std::printf("model       %s (%s)\n", model_path, gpt_dtype_name((int)m.info.file_dtype));
    std::printf("text        %s: %llu tokens, %llu scored (window %u, stride %u)\n", text_path, (unsigned long long)n,
                (unsigned long long)scored, window, stride);
    std::printf("perplexity  %.4f\n", std::exp(nll / (double)scored));
    if (ref_path) {
        std::printf("reference   %s (%s): perplexity %.4f\n", ref_path, gpt_dtype_name((int)ref.info.file_dtype),
                    std::exp(ref_nll / (double)scored));
        std::printf("mean KL     %.6f nats (reference || model)\n", kl / (double)scored);
        std::printf("top-1       %.2f%% agreement\n", 100.0 * (double)agree / (double)scored);
        std::printf("max |dlogit| %.4f\n", max_diff);
    }
    return 0;
}

} // namespace cli
