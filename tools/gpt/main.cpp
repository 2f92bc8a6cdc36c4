// main.cpp - `gpt`: the command-line face of libgpt. Dispatches to one file per subcommand.
#include "cli.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace cli {

uint64_t parse_uint(const std::string &flag, const char *value) {
    if (!value || !*value) throw std::runtime_error(flag + " needs a value");
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(value, &end, 10);
    if (*end || errno || value[0] == '-') throw std::runtime_error(flag + ": '" + value + "' is not a non-negative integer");
    return v;
}

double parse_double(const std::string &flag, const char *value) {
    if (!value || !*value) throw std::runtime_error(flag + " needs a value");
    char *end = nullptr;
    double v = std::strtod(value, &end);
    if (*end) throw std::runtime_error(flag + ": '" + value + "' is not a number");
    return v;
}

int32_t parse_device(const char *value) {
    if (!value) throw std::runtime_error("--device needs a value");
    std::string v = value;
    if (v == "auto") {
        if (gpt_cuda_device_count() == 0) std::fprintf(stderr, "gpt: no CUDA device available; running on the CPU\n");
        return GPT_DEVICE_AUTO;
    }
    if (v == "cpu") return GPT_DEVICE_CPU;
    if (v == "cuda") return 0;
    if (v.rfind("cuda:", 0) == 0) return (int32_t)parse_uint("--device", value + 5);
    throw std::runtime_error("--device: '" + v + "' is not auto, cpu, cuda or cuda:N");
}

uint32_t parse_dtype(const std::string &flag, const char *value) {
    if (!value) throw std::runtime_error(flag + " needs a value");
    std::string v = value;
    if (v == "auto") return GPT_DTYPE_AUTO;
    if (v == "f32" || v == "fp32") return GPT_DTYPE_F32;
    if (v == "f16" || v == "fp16") return GPT_DTYPE_F16;
    if (v == "bf16") return GPT_DTYPE_BF16;
    throw std::runtime_error(flag + ": '" + v + "' is not auto, f32, f16 or bf16");
}

std::vector<int32_t> parse_token_list(const char *value) {
    std::vector<int32_t> out;
    std::string s = value ? value : "";
    size_t i = 0;
    while (i < s.size()) {
        size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        std::string item = s.substr(i, j - i);
        char *end = nullptr;
        long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end) throw std::runtime_error("--tokens: '" + item + "' is not a token id");
        out.push_back((int32_t)v);
        i = j + 1;
    }
    return out;
}

gpt_model *load_model(const char *path, const gpt_model_params &p) {
    gpt_model *m = nullptr;
    gpt_status st = gpt_model_load(path, &p, &m);
    if (st != GPT_OK) {
        std::fprintf(stderr, "gpt: %s\n  %s\n", gpt_status_str(st), gpt_last_error());
        return nullptr;
    }
    return m;
}

double now_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

} // namespace cli

static void usage(FILE *f) {
    std::fprintf(f,
                 "usage: gpt <command> [options]\n"
                 "\n"
                 "commands:\n"
                 "  convert SRC OUT [options]  convert a Hugging Face model directory or llama2.c checkpoint\n"
                 "  generate MODEL [options]   generate text (or token ids) from a prompt\n"
                 "  info MODEL                 show a weight file's metadata, tensors and checksums\n"
                 "  bench MODEL|--synthetic N  measure load, prefill, decode and forward speed\n"
                 "\n"
                 "Run `gpt <command> --help` for the options of a command.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    try {
        if (!std::strcmp(cmd, "info")) return cli::cmd_info(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "generate")) return cli::cmd_generate(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "bench")) return cli::cmd_bench(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "convert")) return cli::cmd_convert(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "--version")) {
            std::printf("%s\n", gpt_build_info());
            return 0;
        }
        if (!std::strcmp(cmd, "-h") || !std::strcmp(cmd, "--help")) {
            usage(stdout);
            return 0;
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gpt %s: %s\n", cmd, e.what());
        return 2;
    }
    std::fprintf(stderr, "gpt: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return 2;
}
