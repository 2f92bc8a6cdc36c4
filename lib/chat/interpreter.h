// interpreter.h - runs a parsed template (parser.h) over a set of global variables and
// returns the text it prints. Bounded: every expression, loop iteration and byte built is
// charged against a step budget, output and strings against a byte limit, lists against an
// item limit, and nested evaluation (macros calling macros) against a depth limit; running
// out is GPT_ERR_UNSUPPORTED naming the limit. Errors carry the template line.
#pragma once

#include "chat/ast.h"
#include "chat/value.h"

#include <cstdint>
#include <ctime>
#include <string>

namespace gpt::chat {

inline constexpr uint64_t kStepsPerIteration = 20; // a scope and the loop object

struct Limits {
    uint64_t max_steps = 2'000'000;    // well under a second: a step is one expression node, a loop
                                       // iteration costs kStepsPerIteration, 16 bytes built one
    size_t max_bytes = 16u << 20;      // the output, and any one string
    size_t max_items = 1u << 20;       // any one list (range(), split(), ...)
    int max_depth = 200;               // nested evaluation: expressions, blocks, macro calls
};

// globals: the variables the template sees (messages, add_generation_prompt, bos_token, ...).
// now: the time strftime_now formats (local time).
std::string render(const Body &program, const Dict &globals, const Limits &limits, std::time_t now);

} // namespace gpt::chat
