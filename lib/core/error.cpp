// error.cpp - gpt::fail and the checked arithmetic helpers.
#include "core/error.h"

#include "core/printable.h"

#include <cstdarg>
#include <cstdio>

namespace gpt {

Error::Error(gpt_status status, std::string_view message) : status_(status), message_(printable(message)) {}

void fail(gpt_status status, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    throw Error(status, buf);
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t *out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflows(uint64_t a, uint64_t b, uint64_t *out) { return __builtin_add_overflow(a, b, out); }

} // namespace gpt
