// cmd_convert.cpp - `gpt convert SRC OUT`: a Hugging Face model directory or a llama2.c
// checkpoint to one verified weight file (tools/convert/convert.h does the work). Ctrl-C
// stops it cleanly: the old OUT (if any) stays, no partial or temporary file is left.
#include "cli.h"

#if GPT_HAVE_CONVERT

#include "convert/convert.h"
#include "core/error.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace cli {

namespace {

volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_signal(int) { g_stop = 1; }

// Routes SIGINT/SIGTERM to the stop flag for its lifetime.
struct SignalScope {
    struct sigaction old_int {}, old_term {};
    SignalScope() {
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
    }
    ~SignalScope() {
        sigaction(SIGINT, &old_int, nullptr);
        sigaction(SIGTERM, &old_term, nullptr);
    }
};

void usage(FILE *f) {
    std::fprintf(f,
                 "usage: gpt convert SRC OUT [options]\n"
                 "  Converts a checkpoint into one weight file, then loads it back (checksums on) and\n"
                 "  runs one token on the CPU before putting it in place.\n"
                 "\n"
                 "  SRC is either\n"
                 "    a Hugging Face model directory: config.json (model_type gpt2, llama, mistral or\n"
                 "    qwen2), model.safetensors or model-*.safetensors with model.safetensors.index.json,\n"
                 "    and tokenizer.json, vocab.json + merges.txt or tokenizer.model; GPTQ (4/8-bit) and\n"
                 "    AWQ (4-bit gemm) checkpoints too, by their config.json's quantization_config; or\n"
                 "    a llama2.c checkpoint (float32, version 0 or 1), with tokenizer.bin beside it; or\n"
                 "    a PyTorch .pt file of a training script: nanoGPT's ckpt.pt (its meta.pkl found as\n"
                 "    sample.py finds it), a minGPT state dict (config.json beside it), or the model of the\n"
                 "    \"Let's build GPT\" lecture's gpt.py. Read safely: nothing in the file is executed.\n"
                 "\n"
                 "options:\n"
                 "  --dtype f32|f16|bf16|q8|q4  element type of the output (default: the source's); q8 and q4\n"
                 "                        quantize every matrix whose width the group divides (weight-only,\n"
                 "                        round to nearest, one f16 scale per group); the rest stays as the source.\n"
                 "                        GPTQ/AWQ: default q4 (symmetric 4-bit) or q8 (asymmetric 4-bit, 8-bit),\n"
                 "                        codes and scales copied exactly; f16 (dequantized) for act-order\n"
                 "  --group 32|64|128     q8/q4: columns per scale (default 32; GPTQ/AWQ: the checkpoint's)\n"
                 "  --force               replace OUT if it exists (otherwise it is an error)\n"
                 "  --tokenizer PATH      tokenizer file or directory to use instead of the one beside SRC\n"
                 "  --name NAME           the model's name in the file (default: SRC's base name)\n"
                 "  --meta PATH           nanoGPT: the meta.pkl holding the character vocabulary\n"
                 "                        (default: data/<dataset>/meta.pkl from the current directory)\n"
                 "  --char-vocab-from TEXTFILE  a character vocabulary: the sorted set of the file's\n"
                 "                        characters, as minGPT's chargpt and the lecture build it\n"
                 "  --n-head N            minGPT: number of heads when no config.json is beside SRC\n"
                 "  --progress            show the progress bar even when stderr is not a terminal\n"
                 "  --no-progress         never show it\n"
                 "  --threads N           CPU threads for the verification (default: all cores)\n"
                 "  --quiet               no summary\n"
                 "\n"
                 "Exit status: 0 on success, 1 when the conversion fails (OUT untouched), 2 on a usage error.\n");
}

} // namespace

int cmd_convert(int argc, char **argv) {
    gpt::convert::ConvertOptions opt;
    int progress = -1; // -1: when stderr is a terminal
    bool quiet = false;
    std::vector<const char *> positional;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        }
        if (a == "--dtype") opt.dtype = parse_dtype(a, value(), true);
        else if (a == "--group") opt.group = parse_u32(a, value(), 32, 128);
        else if (a == "--force" || a == "-f") opt.force = true;
        else if (a == "--tokenizer") opt.tokenizer = value();
        else if (a == "--name") opt.name = value();
        else if (a == "--meta") opt.meta = value();
        else if (a == "--char-vocab-from") opt.char_vocab_from = value();
        else if (a == "--n-head") opt.n_head = parse_u32(a, value(), 1, 1024);
        else if (a == "--progress") progress = 1;
        else if (a == "--no-progress") progress = 0;
        else if (a == "--threads") opt.verify_threads = parse_u32(a, value(), 0, 256);
        else if (a == "--quiet" || a == "-q") quiet = true;
        else if (a.size() > 1 && a[0] == '-') throw std::runtime_error("unknown option " + a + " (see gpt convert --help)");
        else positional.push_back(argv[i]);
    }
    if (positional.size() != 2) {
        usage(stderr);
        return 2;
    }
    opt.src = positional[0];
    opt.out = positional[1];
    opt.progress = progress < 0 ? isatty(2) != 0 : progress != 0;
    opt.stop = &g_stop;
    g_stop = 0;

    SignalScope signals;
    try {
        const gpt::convert::ConvertResult r = gpt::convert::convert_model(opt);
        if (!quiet) std::fputs(gpt::convert::format_summary(r).c_str(), stdout);
        return 0;
    } catch (const gpt::Error &e) {
        if (e.status() == GPT_ERR_ABORTED) std::fprintf(stderr, "gpt convert: interrupted; %s was not written\n", opt.out.c_str());
        else {
            std::string code = gpt_status_str(e.status());
            code = code.substr(0, code.find(':'));
            std::fprintf(stderr, "gpt convert: %s\n  (%s; %s was not written)\n", e.what(), code.c_str(), opt.out.c_str());
        }
        return 1;
    } catch (const std::bad_alloc &) {
        std::fprintf(stderr, "gpt convert: out of memory; %s was not written\n", opt.out.c_str());
        return 1;
    }
}

} // namespace cli

#else // built without nlohmann/json

#include <cstdio>

namespace cli {

int cmd_convert(int, char **) {
    std::fprintf(stderr, "gpt convert: this build has no converter (nlohmann/json was not found when it was configured)\n");
    return 1;
}

} // namespace cli

#endif
