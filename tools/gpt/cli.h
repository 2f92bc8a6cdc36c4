// cli.h - shared pieces of the `gpt` subcommands: argument parsing helpers, device
// selection, and the subcommand entry points.
#pragma once

#include "gpt.h"

#include <cstdint>
#include <string>
#include <vector>

namespace cli {

// Throws std::runtime_error with a usage message on a malformed value.
uint64_t parse_uint(const std::string &flag, const char *value);
double parse_double(const std::string &flag, const char *value);
// "auto" | "cpu" | "cuda" | "cuda:N" -> GPT_DEVICE_*; prints a notice when auto finds no GPU.
int32_t parse_device(const char *value);
// "auto" | "f32" | "f16" | "bf16" -> gpt_dtype
uint32_t parse_dtype(const std::string &flag, const char *value);
// "1,2,3" -> ids
std::vector<int32_t> parse_token_list(const char *value);

// Loads a model, printing the library's message on failure; returns nullptr then.
gpt_model *load_model(const char *path, const gpt_model_params &p);
// Current time in seconds (monotonic).
double now_seconds();

int cmd_info(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_convert(int argc, char **argv);

} // namespace cli
