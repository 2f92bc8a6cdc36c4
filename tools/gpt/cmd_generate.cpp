// cmd_generate.cpp - `gpt generate MODEL`: streams tokens as they are sampled, then reports
// prompt and generation speed.
#include "cli.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace cli {

namespace {

struct StreamState {
    double first_token_time = 0;
    uint32_t count = 0;
    gpt_detokenizer *detok = nullptr; // text mode when set, token ids otherwise
    std::vector<char> buf = std::vector<char>(256);
};

void print_bytes(const char *p, size_t n) {
    std::fwrite(p, 1, n, stdout);
    std::fflush(stdout);
}

int print_token(int32_t token, void *user) {
    StreamState *s = static_cast<StreamState *>(user);
    if (s->count++ == 0) s->first_token_time = now_seconds();
    if (!s->detok) {
        std::printf("%s%d", s->count > 1 ? " " : "", token);
        std::fflush(stdout);
        return 0;
    }
    size_t n = 0;
    gpt_status st = gpt_detokenizer_push(s->detok, token, s->buf.data(), s->buf.size(), &n);
    if (st == GPT_ERR_BUFFER_TOO_SMALL) {
        s->buf.resize(n);
        st = gpt_detokenizer_push(s->detok, token, s->buf.data(), s->buf.size(), &n);
    }
    if (st == GPT_OK) print_bytes(s->buf.data(), n);
    return 0;
}

void usage() {
    std::printf("usage: gpt generate MODEL [options]\n"
                "  -p, --prompt TEXT    prompt text (models with a tokenizer)\n"
                "  --tokens IDS         prompt as comma-separated token ids (prints ids)\n"
                "  --special            parse special-token strings in the prompt, print control tokens\n"
                "  -n, --max-tokens N   tokens to generate (default 64)\n"
                "  --temp T             temperature; 0 = greedy (default 0.8)\n"
                "  --top-k K            (default 40; 0 = off)\n"
                "  --top-p P            (default 0.95; 1 = off)\n"
                "  --min-p P            (default 0.05; 0 = off)\n"
                "  --repeat-penalty R   (default 1.0 = off)\n"
                "  --seed S             (default 0)\n"
                "  --ignore-eos         keep going past the end-of-sequence token\n"
                "  --device D           auto | cpu | cuda | cuda:N (default auto)\n"
                "  --dtype T            GPU weights and compute: auto | f32 | f16 | bf16 (default auto)\n"
                "  --threads N          CPU threads (default: all cores)\n"
                "  --max-seq N          context size (default: the model's)\n");
}

} // namespace

int cmd_generate(int argc, char **argv) {
    const char *path = nullptr;
    std::vector<int32_t> prompt;
    std::string text;
    bool have_text = false, special = false;
    uint32_t max_tokens = 64;
    gpt_sampling_params sp;
    gpt_sampling_params_init(&sp);
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage();
            return 0;
        } else if (a == "--tokens") prompt = parse_token_list(next());
        else if (a == "-p" || a == "--prompt") {
            text = next();
            have_text = true;
        } else if (a == "--special") special = true;
        else if (a == "-n" || a == "--max-tokens") max_tokens = (uint32_t)parse_uint(a, next());
        else if (a == "--temp") sp.temperature = (float)parse_double(a, next());
        else if (a == "--top-k") sp.top_k = (uint32_t)parse_uint(a, next());
        else if (a == "--top-p") sp.top_p = (float)parse_double(a, next());
        else if (a == "--min-p") sp.min_p = (float)parse_double(a, next());
        else if (a == "--repeat-penalty") sp.repetition_penalty = (float)parse_double(a, next());
        else if (a == "--seed") sp.seed = parse_uint(a, next());
        else if (a == "--ignore-eos") sp.flags |= GPT_SAMPLING_IGNORE_EOS;
        else if (a == "--device") mp.device = parse_device(next());
        else if (a == "--dtype") mp.weight_dtype = parse_dtype(a, next());
        else if (a == "--threads") cp.n_threads = (uint32_t)parse_uint(a, next());
        else if (a == "--max-seq") cp.max_seq = (uint32_t)parse_uint(a, next());
        else if (a[0] == '-') throw std::runtime_error("unknown option " + a + " (see gpt generate --help)");
        else if (!path) path = argv[i];
        else throw std::runtime_error("more than one MODEL given");
    }
    if (!path) throw std::runtime_error("no MODEL given (see gpt generate --help)");

    const double t_load = now_seconds();
    gpt_model *model = load_model(path, mp);
    if (!model) return 1;
    gpt_model_info info;
    info.struct_size = sizeof info;
    gpt_model_get_info(model, &info);
    const bool has_tokenizer = info.flags & GPT_MODEL_INFO_HAS_TOKENIZER;
    StreamState stream;
    if (have_text) {
        if (!has_tokenizer) {
            gpt_model_free(model);
            throw std::runtime_error("this model file carries no tokenizer: give the prompt with --tokens");
        }
        const uint32_t flags = special ? GPT_TOKENIZE_PARSE_SPECIAL : 0;
        uint32_t n = 0;
        gpt_tokenize(model, text.data(), text.size(), flags, nullptr, 0, &n);
        prompt.resize(n);
        if (gpt_tokenize(model, text.data(), text.size(), flags, prompt.data(), n, &n) != GPT_OK) {
            std::fprintf(stderr, "gpt generate: %s\n", gpt_last_error());
            gpt_model_free(model);
            return 1;
        }
    }
    if (prompt.empty()) {
        if (info.bos_token < 0) {
            gpt_model_free(model);
            throw std::runtime_error("give a prompt with -p or --tokens (this model has no BOS token to start from)");
        }
        prompt.push_back(info.bos_token);
    }
    // Text out when the model has a tokenizer and the prompt was text (or just BOS).
    const bool text_out = has_tokenizer && (have_text || prompt.size() == 1);
    if (text_out && gpt_detokenizer_create(model, special ? GPT_DETOKENIZE_RENDER_SPECIAL : 0, &stream.detok) != GPT_OK) {
        std::fprintf(stderr, "gpt generate: %s\n", gpt_last_error());
        gpt_model_free(model);
        return 1;
    }
    gpt_ctx *ctx = nullptr;
    gpt_status st = gpt_ctx_create(model, &cp, &ctx);
    if (st != GPT_OK) {
        std::fprintf(stderr, "gpt generate: %s\n  %s\n", gpt_status_str(st), gpt_last_error());
        gpt_model_free(model);
        return 1;
    }
    std::fprintf(stderr, "gpt: %s %s, %u layers, d_model %u, on %s\n", info.name[0] ? info.name : "model",
                 gpt_arch_name(info.arch), info.n_layers, info.d_model,
                 info.device == GPT_DEVICE_CPU ? "cpu" : ("cuda:" + std::to_string(info.device)).c_str());

    if (text_out && have_text) print_bytes(text.data(), text.size()); // the continuation follows the prompt
    std::vector<int32_t> out(max_tokens);
    uint32_t n_out = 0;
    const double t0 = now_seconds();
    st = gpt_generate(ctx, prompt.data(), (uint32_t)prompt.size(), &sp, print_token, &stream, out.data(), max_tokens, &n_out);
    const double t1 = now_seconds();
    if (stream.detok) {
        size_t n = 0;
        if (gpt_detokenizer_flush(stream.detok, stream.buf.data(), stream.buf.size(), &n) == GPT_OK) print_bytes(stream.buf.data(), n);
        gpt_detokenizer_free(stream.detok);
    }
    std::printf("\n");
    std::fflush(stdout); // the statistics go to stderr: keep them after the text
    if (st != GPT_OK) std::fprintf(stderr, "gpt generate: %s\n  %s\n", gpt_status_str(st), gpt_ctx_last_error(ctx));
    if (n_out > 0) {
        const double first = stream.first_token_time - t0;
        const double rest = t1 - stream.first_token_time;
        std::fprintf(stderr, "gpt: prompt %zu tokens + first token in %.1f ms (load %.1f ms); ", prompt.size(), first * 1e3,
                     (t0 - t_load) * 1e3);
        if (n_out > 1) std::fprintf(stderr, "%u tokens in %.1f ms: %.1f tokens/s\n", n_out - 1, rest * 1e3, (n_out - 1) / rest);
        else std::fprintf(stderr, "\n");
    }
    gpt_ctx_free(ctx);
    gpt_model_free(model);
    return st == GPT_OK ? 0 : 1;
}

} // namespace cli
