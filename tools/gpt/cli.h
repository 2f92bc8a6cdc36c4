// cli.h - shared pieces of the `gpt` subcommands: argument parsing helpers, owners of the
// library's handles, device selection, and the subcommand entry points.
//
// Errors: a command throws UsageError (exit status 2: a malformed or out-of-range option,
// something the user must change on the command line) or Failure (exit status 1: the run
// failed); main() prints "gpt COMMAND: message" with the message made printable. Every
// handle a command creates is owned by one of the guards below, so no path out of a command
// (return or throw) leaks it.
#pragma once

#include "gpt.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace cli {

struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};
struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Number options. Each takes the option's name (for the message) and its value, and throws
// UsageError naming both unless the value is exactly a decimal integer (digits only: no sign,
// space, base prefix or trailing junk) within [min, max], or for floats a finite decimal
// number (no inf, nan or hex) that stays finite as a float, within its bounds.
uint64_t parse_uint(const std::string &flag, const char *value, uint64_t min = 0,
                    uint64_t max = std::numeric_limits<uint64_t>::max());
uint32_t parse_u32(const std::string &flag, const char *value, uint32_t min = 0,
                   uint32_t max = std::numeric_limits<uint32_t>::max());
// lo/hi bounds; lo_open: lo itself excluded.
float parse_float(const std::string &flag, const char *value, double lo, double hi, bool lo_open = false);
// "auto" | "cpu" | "cuda" | "cuda:N" (N a CUDA ordinal below the device count) -> GPT_DEVICE_*;
// prints a notice when auto finds no GPU.
int32_t parse_device(const char *value);
// "auto" | "f32" | "f16" | "bf16" (and with quantized: "q8" | "q4") -> gpt_dtype
uint32_t parse_dtype(const std::string &flag, const char *value, bool quantized = false);
// --weights: "host" | "device" -> GPT_MODEL_HOST_WEIGHTS | GPT_MODEL_DEVICE_WEIGHTS.
uint32_t parse_weights(const char *value);
// The help line of --weights (every command that loads a model onto a GPU shows it).
extern const char *const kWeightsHelp;
// The help line of --tf32 (generate, chat): GPT_CTX_ALLOW_TF32.
extern const char *const kTf32Help;
// After a load that asked for host weights (mp.flags): a notice on stderr when the weights went
// to device memory instead (the driver refused to register them), with what that costs.
void report_weights_placement(gpt_model *model, const gpt_model_params &mp);
// "1,2,3" -> ids (each 0 .. INT32_MAX; the model's vocabulary is checked by the library)
std::vector<int32_t> parse_token_list(const char *value);

// Text from a file or the command line, safe for a terminal (control bytes and invalid UTF-8
// as \xNN): gpt::printable.
std::string printable(const std::string &text);

// ---------------------------------------------------------------- owners of handles
struct ModelFree {
    void operator()(gpt_model *m) const { gpt_model_free(m); }
};
struct CtxFree {
    void operator()(gpt_ctx *c) const { gpt_ctx_free(c); }
};
struct DetokFree {
    void operator()(gpt_detokenizer *d) const { gpt_detokenizer_free(d); }
};
using ModelPtr = std::unique_ptr<gpt_model, ModelFree>;
using CtxPtr = std::unique_ptr<gpt_ctx, CtxFree>; // declare after the ModelPtr it uses
using DetokPtr = std::unique_ptr<gpt_detokenizer, DetokFree>;

// Loads a model; throws Failure with the library's message.
ModelPtr load_model(const char *path, const gpt_model_params &p);
// Current time in seconds (monotonic).
double now_seconds();

// SIGBUS (a mapped file truncated under the process) ends the process with one line naming
// the model file instead of a crash. main() installs the handler; a command names the file it
// maps (and a hint on how to avoid it) before loading. The message is formatted here, outside
// the handler, which only write()s it and calls _exit(1).
void install_sigbus_handler();
void set_mapped_file(const std::string &path, const char *hint);

// How `gpt generate` and `gpt bench FILE` open the model file (issue 15 item 8). A mapped
// file truncated under the process is SIGBUS at the next read of a weight, and one rewritten
// in place changes the weights after their checksums were checked. So when the weights stay
// on the CPU (where they would be read from the mapping for the whole run) the file is read
// into memory (GPT_MODEL_NO_MMAP) unless --mmap asks for the mapping (faster start; the file
// must then not change); so with --weights host (GPT_MODEL_HOST_WEIGHTS in mp.flags), where a
// GPU reads them from host memory for the whole run. Weights going to a GPU are copied there
// at load and the mapping is released, so the file is mapped by default (no second host copy
// of a large model) and --no-mmap reads it instead. Sets mp.flags and the SIGBUS line.
enum class FileAccess { Default, Map, Read };
void choose_file_access(FileAccess access, const std::string &path, gpt_model_params &mp);

int cmd_info(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_synth(int argc, char **argv);

} // namespace cli
