// main.cpp - `gpt`: the command-line face of libgpt. Dispatches to one file per subcommand.
#include "cli.h"

#include "core/printable.h"

#include <cerrno>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

namespace cli {

namespace {

std::string quoted(const char *value) { return "'" + printable(value ? value : "") + "'"; }

bool all_digits(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

} // namespace

std::string printable(const std::string &text) { return gpt::printable(text); }

uint64_t parse_uint(const std::string &flag, const char *value, uint64_t min, uint64_t max) {
    if (!value) throw UsageError(flag + " needs a value");
    if (!all_digits(value)) throw UsageError(flag + ": " + quoted(value) + " is not a non-negative decimal integer");
    uint64_t v = 0;
    bool overflow = false;
    for (const char *p = value; *p && !overflow; p++) {
        const unsigned d = (unsigned)(*p - '0');
        overflow = v > (std::numeric_limits<uint64_t>::max() - d) / 10;
        v = v * 10 + d;
    }
    if (overflow || v < min || v > max)
        throw UsageError(flag + ": " + quoted(value) + " is out of range (" + std::to_string(min) + " to " + std::to_string(max) + ")");
    return v;
}

uint32_t parse_u32(const std::string &flag, const char *value, uint32_t min, uint32_t max) {
    return (uint32_t)parse_uint(flag, value, min, max);
}

float parse_float(const std::string &flag, const char *value, double lo, double hi, bool lo_open) {
    if (!value) throw UsageError(flag + " needs a value");
    // Decimal notation only: strtod would also take leading spaces, "inf", "nan" and hex.
    bool ok = *value != 0;
    for (const char *p = value; *p && ok; p++) ok = std::strchr("0123456789+-.eE", *p) != nullptr;
    char *end = nullptr;
    errno = 0;
    const double d = ok ? std::strtod(value, &end) : 0;
    if (!ok || end == value || *end) throw UsageError(flag + ": " + quoted(value) + " is not a finite decimal number");
    const float f = (float)d;
    char range[96];
    std::snprintf(range, sizeof range, "%s%g, %g]", lo_open ? "(" : "[", lo, hi);
    if (!std::isfinite(d) || !std::isfinite(f) || (errno == ERANGE && d != 0))
        throw UsageError(flag + ": " + quoted(value) + " is out of range " + range);
    if (lo_open ? !(f > lo) : !(f >= lo)) throw UsageError(flag + ": " + quoted(value) + " is out of range " + range);
    if (!(f <= hi)) throw UsageError(flag + ": " + quoted(value) + " is out of range " + range);
    return f;
}

int32_t parse_device(const char *value) {
    if (!value) throw UsageError("--device needs a value");
    std::string v = value;
    if (v == "auto") {
        if (gpt_cuda_device_count() == 0) std::fprintf(stderr, "gpt: no CUDA device available; running on the CPU\n");
        return GPT_DEVICE_AUTO;
    }
    if (v == "cpu") return GPT_DEVICE_CPU;
    if (v == "cuda") return 0;
    if (v.rfind("cuda:", 0) == 0) return (int32_t)parse_uint("--device cuda:N", value + 5, 0, INT32_MAX);
    throw UsageError("--device: " + quoted(value) + " is not auto, cpu, cuda or cuda:N");
}

uint32_t parse_dtype(const std::string &flag, const char *value, bool quantized) {
    if (!value) throw UsageError(flag + " needs a value");
    std::string v = value;
    if (v == "auto") return GPT_DTYPE_AUTO;
    if (v == "f32" || v == "fp32") return GPT_DTYPE_F32;
    if (v == "f16" || v == "fp16") return GPT_DTYPE_F16;
    if (v == "bf16") return GPT_DTYPE_BF16;
    if (quantized && v == "q8") return GPT_DTYPE_Q8;
    if (quantized && v == "q4") return GPT_DTYPE_Q4;
    throw UsageError(flag + ": " + quoted(value) + (quantized ? " is not auto, f32, f16, bf16, q8 or q4" : " is not auto, f32, f16 or bf16"));
}

std::vector<int32_t> parse_token_list(const char *value) {
    std::vector<int32_t> out;
    const std::string s = value ? value : "";
    if (s.empty()) throw UsageError("--tokens needs at least one token id");
    size_t i = 0;
    while (i <= s.size()) {
        size_t j = s.find(',', i);
        if (j == std::string::npos) j = s.size();
        const std::string item = s.substr(i, j - i);
        out.push_back((int32_t)parse_uint("--tokens", item.c_str(), 0, INT32_MAX));
        i = j + 1;
    }
    return out;
}

ModelPtr load_model(const char *path, const gpt_model_params &p) {
    gpt_model *m = nullptr;
    gpt_status st = gpt_model_load(path, &p, &m);
    if (st != GPT_OK) throw Failure(std::string(gpt_status_str(st)) + ": " + gpt_last_error());
    return ModelPtr(m);
}

double now_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// ------------------------------------------------------------------------ SIGBUS
namespace {

// The line the handler writes, formatted beforehand (the handler may only write() it).
char g_sigbus_line[1024] = "gpt: a mapped file changed on disk while in use (truncated?); stopped\n";
size_t g_sigbus_len = std::strlen(g_sigbus_line);

extern "C" void on_sigbus(int sig, siginfo_t *info, void *) {
    // BUS_ADRERR: an access to a page past the end of a mapped file (the file was truncated).
    // Anything else (an alignment fault) is a bug: fall back to the default action.
    if (info && info->si_code != BUS_ADRERR) {
        signal(sig, SIG_DFL);
        return; // the faulting instruction runs again and the default action applies
    }
    ssize_t r = write(STDERR_FILENO, g_sigbus_line, g_sigbus_len);
    (void)r;
    _exit(1);
}

} // namespace

void install_sigbus_handler() {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, nullptr);
}

void set_mapped_file(const std::string &path, const char *hint) {
    std::string line = "gpt: " + printable(path) + " changed on disk while in use (truncated?); stopped. " + hint + "\n";
    if (line.size() >= sizeof g_sigbus_line) line = line.substr(0, sizeof g_sigbus_line - 5) + "...\n";
    // Blocked while it changes: a SIGBUS now would otherwise write half a line.
    sigset_t bus, old;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_BLOCK, &bus, &old);
    std::memcpy(g_sigbus_line, line.c_str(), line.size() + 1);
    g_sigbus_len = line.size();
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

uint32_t parse_weights(const char *value) {
    const std::string v = value;
    if (v == "host") return GPT_MODEL_HOST_WEIGHTS;
    if (v == "device") return GPT_MODEL_DEVICE_WEIGHTS;
    throw UsageError("--weights " + printable(v) + ": expected host or device");
}

const char *const kTf32Help =
    "  --tf32               let f32 matrix products on a GPU use TF32 tensor cores: faster, with\n"
    "                       10-bit mantissas in the products (PyTorch's allow_tf32; nanoGPT's\n"
    "                       sample.py turns it on)\n";

const char *const kWeightsHelp =
    "  --weights W          on a GPU: host (read in place from host memory: the default on an\n"
    "                       integrated GPU; slow over a discrete GPU's bus, but fits models larger\n"
    "                       than its memory) | device (copied to GPU memory: the default elsewhere)\n";

void report_weights_placement(gpt_model *model, const gpt_model_params &mp) {
    if (!(mp.flags & GPT_MODEL_HOST_WEIGHTS)) return;
    gpt_model_info info;
    info.struct_size = sizeof info;
    if (gpt_model_get_info(model, &info) != GPT_OK || info.device == GPT_DEVICE_CPU) return;
    if (info.flags & GPT_MODEL_INFO_HOST_WEIGHTS) return;
    std::fprintf(stderr,
                 "gpt: notice: the CUDA driver refused to register the weights in host memory (an old driver, or the "
                 "locked-memory limit: see `ulimit -l`); they were copied to device memory instead: %.1f MiB of GPU "
                 "memory (on an integrated GPU, memory the host shares)\n",
                 (double)info.device_bytes / (1 << 20));
}

void choose_file_access(FileAccess access, const std::string &path, gpt_model_params &mp) {
    const bool on_cpu = mp.device == GPT_DEVICE_CPU || (mp.device == GPT_DEVICE_AUTO && gpt_cuda_device_count() == 0);
    // Host weights are read from the file's bytes for the whole run, as on the CPU.
    const bool stays_on_host = on_cpu || (mp.flags & GPT_MODEL_HOST_WEIGHTS);
    const bool map = access == FileAccess::Map || (access == FileAccess::Default && !stays_on_host);
    if (!map) {
        mp.flags |= GPT_MODEL_NO_MMAP;
        return;
    }
    set_mapped_file(path, access == FileAccess::Map
                              ? "With --mmap the file must not change while gpt runs: run without --mmap to read it into memory."
                              : "The file must not change while it loads: replace a model file by renaming a new one over it.");
}

} // namespace cli

static void usage(FILE *f) {
    std::fprintf(f,
                 "usage: gpt <command> [options]\n"
                 "\n"
                 "commands:\n"
                 "  convert SRC OUT [options]  convert a Hugging Face model directory or llama2.c checkpoint\n"
                 "  generate MODEL [options]   generate text (or token ids) from a prompt\n"
                 "  chat MODEL [options]       a conversation, one line per message (the model's chat template)\n"
                 "  quantize IN OUT --dtype q8|q4  quantize a weight file's matrices (weight-only)\n"
                 "  perplexity MODEL TEXT      perplexity on a text file; --compare REF: KL and top-1 vs REF\n"
                 "  info MODEL                 show a weight file's metadata, tensors and checksums;\n"
                 "                             --device D: the device; --plan: the memory a load would take\n"
                 "  bench MODEL|--synthetic N  measure load, prefill, decode and forward speed\n"
                 "  synth SHAPE OUT            write a synthetic shape's random weights as a weight file\n"
                 "\n"
                 "Run `gpt <command> --help` for the options of a command.\n"
                 "Exit status: 0 on success, 1 when the command fails, 2 on a usage error.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    cli::install_sigbus_handler();
    const char *cmd = argv[1];
    try {
        if (!std::strcmp(cmd, "info")) return cli::cmd_info(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "generate")) return cli::cmd_generate(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "chat")) return cli::cmd_chat(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "bench")) return cli::cmd_bench(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "convert")) return cli::cmd_convert(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "quantize")) return cli::cmd_quantize(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "perplexity")) return cli::cmd_perplexity(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "synth")) return cli::cmd_synth(argc - 1, argv + 1);
        if (!std::strcmp(cmd, "--version")) {
            std::printf("%s\n", gpt_build_info());
            return 0;
        }
        if (!std::strcmp(cmd, "-h") || !std::strcmp(cmd, "--help")) {
            usage(stdout);
            return 0;
        }
    } catch (const cli::Failure &e) {
        std::fflush(stdout);
        std::fprintf(stderr, "gpt %s: %s\n", cmd, cli::printable(e.what()).c_str());
        return 1;
    } catch (const std::bad_alloc &) {
        std::fflush(stdout);
        std::fprintf(stderr, "gpt %s: out of memory\n", cmd);
        return 1;
    } catch (const std::exception &e) {
        std::fflush(stdout);
        std::fprintf(stderr, "gpt %s: %s\n", cmd, cli::printable(e.what()).c_str());
        return 2;
    }
    std::fprintf(stderr, "gpt: unknown command %s\n\n", ("'" + cli::printable(cmd) + "'").c_str());
    usage(stderr);
    return 2;
}
