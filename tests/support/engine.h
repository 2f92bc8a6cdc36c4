// engine.h - running a converted weight file through the public API, for the converter tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace engine {

// Logits [toks.size()][vocab] of the file at path for the prompt toks on the CPU (2 threads),
// one prefill with GPT_FORWARD_ALL_LOGITS. Any failure is a cmocka failure naming the step.
std::vector<float> cpu_logits(const std::string &path, const std::vector<int32_t> &toks, uint32_t vocab);

} // namespace engine
