// error.h - how failures travel inside the library.
// Internal code throws gpt::Error (a status plus a message naming what was wrong); only
// lib/api catches, turning it into a gpt_status and the last-error text. Nothing else may
// let an exception reach the C boundary.
#pragma once

#include "gpt.h"

#include <exception>
#include <string>
#include <string_view>

namespace gpt {

class Error : public std::exception {
public:
    // The message is made printable (core/printable.h): it names files, keys and tensors
    // taken from outside, which must not reach a terminal or a log as control bytes.
    Error(gpt_status status, std::string_view message);
    gpt_status status() const noexcept { return status_; }
    const char *what() const noexcept override { return message_.c_str(); }

private:
    gpt_status status_;
    std::string message_;
};

// printf-style constructor of the message; throws gpt::Error.
[[noreturn]] void fail(gpt_status status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Overflow-checked size arithmetic for anything derived from file or caller input.
bool mul_overflows(uint64_t a, uint64_t b, uint64_t *out);
bool add_overflows(uint64_t a, uint64_t b, uint64_t *out);

} // namespace gpt
