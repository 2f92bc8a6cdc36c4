// cmd_generate.cpp - `gpt generate MODEL`: streams tokens as they are sampled, then reports
// prompt and generation speed.
//
// Everything that can be refused is checked before the first byte goes to stdout: the
// options (when parsed), the prompt's token ids and its length against the context (after
// tokenizing), the context itself (created before the prompt is echoed). The context is sized
// to the run: prompt + -n tokens, at most the model's context length (--max-seq overrides).
// Reaching the end of the context is the normal end of a long run (a notice, exit status 0).
#include "cli.h"
#include "sampling_options.h"

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <cstring>
#include <random>
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
                "  -n, --max-tokens N   tokens to generate (default 64); generation also stops when the\n"
                "                       context is full (a notice on stderr, exit status 0)\n"
                "%s"
                "  --context-shift      at a full context keep going on the last max-seq tokens, as\n"
                "                       nanoGPT's and minGPT's generate() do (re-encodes that window\n"
                "                       for every further token: slower past the context)\n"
                "  --device D           auto | cpu | cuda | cuda:N (default auto)\n"
                "  --dtype T            GPU weights and compute: auto | f32 | f16 | bf16 (default auto)\n"
                "%s"
                "%s"
                "  --threads N          CPU threads, 0 to 256 (default 0: all cores)\n"
                "  --max-seq N          context size (default: prompt + N tokens, at most the model's)\n"
                "  --no-verify          load without checking the tensors' crc32s (faster start)\n"
                "  --mmap               on the CPU (or with --weights host), map the model file instead of\n"
                "                       reading it into memory\n"
                "                       (faster start; the file must then not change while gpt runs)\n"
                "  --no-mmap            on a GPU, read the file before copying it (default: mapped\n"
                "                       while it loads)\n"
                "Exit status: 0 on success, 1 when the run fails, 2 on a usage error.\n",
                SamplingOptions::help(), kTf32Help, kWeightsHelp);
}

uint64_t random_seed() {
    try {
        std::random_device rd;
        return (uint64_t)rd() << 32 ^ rd();
    } catch (const std::exception &) {
        return (uint64_t)(now_seconds() * 1e9);
    }
}

} // namespace

int cmd_generate(int argc, char **argv) {
    const char *path = nullptr;
    std::vector<int32_t> prompt;
    std::string text;
    bool have_text = false, have_tokens = false, special = false;
    FileAccess access = FileAccess::Default;
    uint32_t weights = 0; // --weights: GPT_MODEL_HOST_WEIGHTS or GPT_MODEL_DEVICE_WEIGHTS
    uint32_t max_tokens = 64, max_seq_opt = 0;
    SamplingOptions opts;
    gpt_model_params mp;
    gpt_model_params_init(&mp);
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto next = [&]() -> const char * {
            if (i + 1 >= argc) throw UsageError(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage();
            return 0;
        } else if (a == "--tokens") {
            prompt = parse_token_list(next());
            have_tokens = true;
        } else if (a == "-p" || a == "--prompt") {
            text = next();
            have_text = true;
        } else if (a == "--special") special = true;
        else if (a == "-n" || a == "--max-tokens") max_tokens = parse_u32(a, next());
        else if (opts.parse(argc, argv, i)) continue;
        else if (a == "--context-shift") opts.params.flags |= GPT_SAMPLING_CONTEXT_SHIFT; // generate only: chat keeps its own window
        else if (a == "--device") mp.device = parse_device(next());
        else if (a == "--dtype") mp.weight_dtype = parse_dtype(a, next());
        else if (a == "--tf32") cp.flags |= GPT_CTX_ALLOW_TF32;
        else if (a == "--weights") weights = parse_weights(next());
        else if (a == "--threads") cp.n_threads = parse_u32(a, next(), 0, 256);
        else if (a == "--max-seq") max_seq_opt = parse_u32(a, next(), 1);
        else if (a == "--no-verify") mp.flags |= GPT_MODEL_SKIP_CHECKSUMS;
        else if (a == "--mmap") access = FileAccess::Map;
        else if (a == "--no-mmap") access = FileAccess::Read;
        else if (a[0] == '-') throw UsageError("unknown option " + a + " (see gpt generate --help)");
        else if (!path) path = argv[i];
        else throw UsageError("more than one MODEL given");
    }
    if (!path) throw UsageError("no MODEL given (see gpt generate --help)");
    gpt_sampling_params sp = opts.finish();
    const bool seed_given = opts.seed_given;
    if (have_text && have_tokens) throw UsageError("give the prompt either as text (-p) or as token ids (--tokens), not both");
    mp.flags |= weights;
    choose_file_access(access, path, mp); // read into memory when the weights stay on the CPU

    const double t_load = now_seconds();
    ModelPtr model = load_model(path, mp);
    report_weights_placement(model.get(), mp);
    gpt_model_info info;
    info.struct_size = sizeof info;
    gpt_model_get_info(model.get(), &info);
    const bool has_tokenizer = info.flags & GPT_MODEL_INFO_HAS_TOKENIZER;
    opts.check_vocabulary(info.vocab_size);
    if (have_text) {
        if (!has_tokenizer) throw UsageError("this model file carries no tokenizer: give the prompt with --tokens");
        const uint32_t flags = special ? GPT_TOKENIZE_PARSE_SPECIAL : 0;
        uint32_t n = 0;
        gpt_status st = gpt_tokenize(model.get(), text.data(), text.size(), flags, nullptr, 0, &n);
        if (st == GPT_OK) {
            prompt.resize(n);
            st = gpt_tokenize(model.get(), text.data(), text.size(), flags, prompt.data(), n, &n);
        }
        if (st != GPT_OK) throw Failure(std::string("tokenizing the prompt: ") + gpt_status_str(st) + ": " + gpt_last_error());
    }
    for (int32_t id : prompt)
        if ((uint32_t)id >= info.vocab_size)
            throw UsageError("--tokens: id " + std::to_string(id) + " is outside the model's vocabulary (0 to " +
                             std::to_string(info.vocab_size - 1) + ")");
    if (prompt.empty()) {
        if (info.bos_token < 0) throw UsageError("give a prompt with -p or --tokens (this model has no BOS token to start from)");
        prompt.push_back(info.bos_token);
    }

    // The context: what the run needs, no more (a model made for 128k positions would
    // otherwise commit gigabytes for a short prompt).
    const uint64_t n_prompt = prompt.size();
    if (max_seq_opt > info.context_length)
        throw UsageError("--max-seq: " + std::to_string(max_seq_opt) + " exceeds the model's context length (" +
                         std::to_string(info.context_length) + ")");
    const bool shift = (sp.flags & GPT_SAMPLING_CONTEXT_SHIFT) != 0;
    if (shift && max_tokens > (1u << 24)) throw UsageError("-n: at most 16777216 tokens with --context-shift");
    if (!shift && n_prompt > (max_seq_opt ? max_seq_opt : info.context_length))
        throw Failure("the prompt is " + std::to_string(n_prompt) + " tokens, longer than " +
                      (max_seq_opt ? "--max-seq " + std::to_string(max_seq_opt)
                                   : "the model's context length (" + std::to_string(info.context_length) + " tokens)") +
                      ": shorten it" + (max_seq_opt && max_seq_opt < info.context_length ? " or raise --max-seq" : ""));
    cp.max_seq = max_seq_opt ? max_seq_opt : (uint32_t)std::min<uint64_t>(n_prompt + max_tokens, info.context_length);
    // gpt_generate samples one token more than the cache holds (the last is not cached).
    // With --context-shift the window slides instead, so every token asked for comes.
    const uint32_t cap = shift ? max_tokens : (uint32_t)std::min<uint64_t>(max_tokens, cp.max_seq - n_prompt + 1);

    // Text out when the model has a tokenizer and the prompt was text (or just BOS). Text
    // that continues an echoed prompt keeps its first space ("the" + " park").
    StreamState stream;
    DetokPtr detok;
    const bool text_out = has_tokenizer && (have_text || prompt.size() == 1);
    if (text_out) {
        uint32_t flags = special ? GPT_DETOKENIZE_RENDER_SPECIAL : 0;
        if (have_text && !text.empty()) flags |= GPT_DETOKENIZE_CONTINUE;
        gpt_detokenizer *d = nullptr;
        const gpt_status st = gpt_detokenizer_create(model.get(), flags, &d);
        if (st != GPT_OK) throw Failure(std::string(gpt_status_str(st)) + ": " + gpt_last_error());
        detok.reset(d);
        stream.detok = d;
    }
    CtxPtr ctx;
    {
        gpt_ctx *c = nullptr;
        const gpt_status st = gpt_ctx_create(model.get(), &cp, &c);
        if (st != GPT_OK) throw Failure(std::string(gpt_status_str(st)) + ": " + gpt_last_error());
        ctx.reset(c);
    }
    std::vector<int32_t> eos; // the ids that end generation (to tell that end from a full context)
    {
        uint32_t n_eos = 0;
        gpt_model_get_eos_tokens(model.get(), nullptr, 0, &n_eos);
        eos.resize(n_eos);
        if (n_eos) gpt_model_get_eos_tokens(model.get(), eos.data(), n_eos, &n_eos);
    }
    std::vector<int32_t> out(cap);

    std::fprintf(stderr, "gpt: %s %s, %u layers, d_model %u, on %s, context %u of %u positions\n",
                 info.name[0] ? printable(info.name).c_str() : "model", gpt_arch_name(info.arch), info.n_layers, info.d_model,
                 info.device == GPT_DEVICE_CPU ? "cpu" : ("cuda:" + std::to_string(info.device)).c_str(), cp.max_seq,
                 info.context_length);
    if (!seed_given && sp.temperature > 0) {
        sp.seed = random_seed();
        std::fprintf(stderr, "gpt: seed %llu (give --seed %llu to repeat this run)\n", (unsigned long long)sp.seed,
                     (unsigned long long)sp.seed);
    }

    if (text_out && have_text) print_bytes(text.data(), text.size()); // the continuation follows the prompt
    uint32_t n_out = 0;
    const double t0 = now_seconds();
    gpt_status st = gpt_generate(ctx.get(), prompt.data(), (uint32_t)n_prompt, &sp, print_token, &stream, out.data(), cap, &n_out);
    const double t1 = now_seconds();
    if (stream.detok) {
        size_t n = 0;
        gpt_status fs = gpt_detokenizer_flush(stream.detok, stream.buf.data(), stream.buf.size(), &n);
        if (fs == GPT_ERR_BUFFER_TOO_SMALL) {
            stream.buf.resize(n);
            fs = gpt_detokenizer_flush(stream.detok, stream.buf.data(), stream.buf.size(), &n);
        }
        if (fs == GPT_OK) print_bytes(stream.buf.data(), n);
    }
    std::printf("\n");
    std::fflush(stdout); // the statistics go to stderr: keep them after the text
    // The end of the context ends a long run normally: either cap (sized to the context) was
    // reached short of -n without an end-of-sequence token, or the library says it filled up.
    const bool ended_by_eos = n_out > 0 && !(sp.flags & GPT_SAMPLING_IGNORE_EOS) &&
                              std::find(eos.begin(), eos.end(), out[n_out - 1]) != eos.end();
    const bool context_full = (st == GPT_OK && n_out == cap && cap < max_tokens && !ended_by_eos) ||
                              (st == GPT_ERR_CONTEXT_FULL && n_out > 0);
    if (st != GPT_OK && !context_full)
        throw Failure(std::string(gpt_status_str(st)) + ": " + gpt_ctx_last_error(ctx.get()));
    if (context_full)
        std::fprintf(stderr,
                     "gpt: the context is full: stopped after %u of the %u tokens asked for (prompt %llu tokens + %u generated; "
                     "%s%u, the model's context length %u)\n",
                     n_out, max_tokens, (unsigned long long)n_prompt, n_out, max_seq_opt ? "--max-seq " : "max_seq ", cp.max_seq,
                     info.context_length);
    if (n_out > 0) {
        const double first = stream.first_token_time - t0;
        const double rest = t1 - stream.first_token_time;
        std::fprintf(stderr, "gpt: prompt %llu tokens + first token in %.1f ms (load %.1f ms); ", (unsigned long long)n_prompt,
                     first * 1e3, (t0 - t_load) * 1e3);
        if (n_out > 1) std::fprintf(stderr, "%u tokens in %.1f ms: %.1f tokens/s\n", n_out - 1, rest * 1e3, (n_out - 1) / rest);
        else std::fprintf(stderr, "\n");
    }
    return 0;
}

} // namespace cli
