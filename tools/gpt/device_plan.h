// device_plan.h - `gpt info --device D` (what the device is and can give) and `gpt info
// MODEL|--synthetic NAME --plan` (what loading the model and one context would take there,
// from the tensor table, before loading: runtime/load_plan.h).
#pragma once

#include "gpt.h"

#include <cstdint>
#include <cstdio>
#include <string>

namespace cli {

// Two lines on the device (gpt_device_get_info), each starting with `indent`. Throws Failure
// with the library's message when the device cannot be asked.
void print_device_facts(std::FILE *out, int32_t device, const char *indent);

// One line on the device ("cuda:0 NVIDIA H100 80GB HBM3, cc 9.0, 132 SMs, discrete, 79.2 GiB,
// 78.6 available, ..."); throws Failure like print_device_facts.
std::string device_summary(int32_t device);

struct PlanRequest {
    std::string model;       // a weight file, or
    std::string synthetic;   // a synthetic shape (tools/gpt/synthetic.h)
    uint32_t dtype = GPT_DTYPE_AUTO; // synthetic: the file's dtype (default f16); a file: weight_dtype
    int32_t device = GPT_DEVICE_AUTO;
    std::string weights;     // "host" | "device" | "" (the default for the device)
    uint32_t ctx = 0;        // gpt_ctx_params.max_seq (0: the default)
    uint32_t batch = 1;      // gpt_ctx_params.max_batch
    bool json = false;       // one JSON object instead of the table
};
// Prints the plan; returns the exit status (1: it does not fit the device present).
int print_plan(const PlanRequest &r);

} // namespace cli
