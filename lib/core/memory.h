// memory.h - the library's large host allocations go through here: aligned, counted, and
// failing on demand in tests (fault injection) so every allocation site's error path runs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpt {

// 64-byte aligned allocation; throws gpt::Error(GPT_ERR_OUT_OF_MEMORY) naming `what`.
void *host_alloc(size_t bytes, const char *what);
void host_free(void *p);

// Zero-initialised array helper.
template <typename T> T *host_alloc_array(size_t n, const char *what) {
    return static_cast<T *>(host_alloc(n * sizeof(T), what));
}

namespace testing {
// Make the n-th following host_alloc (0 = the next one) fail; -1 disables. Test-only.
void fail_alloc_after(int64_t n);
// Number of host_alloc calls so far (monotonic).
uint64_t alloc_count();
// Bytes requested by successful host_alloc calls so far (monotonic; frees not subtracted).
uint64_t alloc_bytes();
} // namespace testing

} // namespace gpt
