// memory.cpp - aligned host allocation with a test hook for injected failures.
#include "core/memory.h"

#include "core/error.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace gpt {

static std::atomic<int64_t> g_fail_after{-1};
static std::atomic<uint64_t> g_count{0};
static std::atomic<uint64_t> g_bytes{0};

void *host_alloc(size_t bytes, const char *what) {
    g_count.fetch_add(1, std::memory_order_relaxed);
    int64_t f = g_fail_after.load(std::memory_order_relaxed);
    if (f >= 0) {
        g_fail_after.store(f - 1, std::memory_order_relaxed);
        if (f == 0) fail(GPT_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes for %s (injected)", bytes, what);
    }
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes) fail(GPT_ERR_OUT_OF_MEMORY, "allocation size overflow for %s", what);
    void *p = std::aligned_alloc(64, rounded ? rounded : 64);
    if (!p) fail(GPT_ERR_OUT_OF_MEMORY, "out of host memory allocating %zu bytes for %s", bytes, what);
    g_bytes.fetch_add(bytes, std::memory_order_relaxed);
    return p;
}

void host_free(void *p) { std::free(p); }

namespace testing {
void fail_alloc_after(int64_t n) { g_fail_after.store(n); }
uint64_t alloc_count() { return g_count.load(); }
uint64_t alloc_bytes() { return g_bytes.load(); }
} // namespace testing

} // namespace gpt
