// alloc_hooks.cpp - the replaced global operator new/delete (see alloc_hooks.h): malloc and
// free underneath, with counters and failure injection. Only the plain and nothrow forms
// (and the sized deletes) are replaced; the aligned forms stay the C++ runtime's.
#include "alloc_hooks.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<uint64_t> g_count{0}, g_bytes{0};
std::atomic<size_t> g_largest{0};
std::atomic<int64_t> g_fail_after{-1}; // the n-th following operator new throws; -1: never
std::atomic<bool> g_fired{false};
thread_local bool t_fail_all = false; // every operator new on this thread throws

void note(size_t n) {
    g_count.fetch_add(1, std::memory_order_relaxed);
    g_bytes.fetch_add(n, std::memory_order_relaxed);
    size_t cur = g_largest.load(std::memory_order_relaxed);
    while (n > cur && !g_largest.compare_exchange_weak(cur, n, std::memory_order_relaxed)) {
    }
}

bool should_fail() {
    if (t_fail_all) return true;
    int64_t f = g_fail_after.load(std::memory_order_relaxed);
    while (f >= 0) {
        if (g_fail_after.compare_exchange_weak(f, f - 1)) {
            if (f == 0) g_fired = true;
            return f == 0;
        }
    }
    return false;
}

} // namespace

namespace alloc_hooks {

bool installed() {
    const uint64_t before = count();
    void *p = ::operator new(24); // a direct call: never elided, unlike a new-expression
    ::operator delete(p);
    return count() > before;
}

uint64_t count() { return g_count.load(); }
uint64_t bytes() { return g_bytes.load(); }

void fail_nth(int64_t n) {
    g_fired = false;
    g_fail_after = n;
}
void disarm() { g_fail_after = -1; }
bool fired() { return g_fired.load(); }

void fail_all_on_this_thread(bool on) { t_fail_all = on; }

size_t largest() { return g_largest.load(); }
void reset_largest() { g_largest = 0; }

} // namespace alloc_hooks

// GCC cannot see that these replacements pair malloc with free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void *operator new(size_t n) {
    note(n);
    if (should_fail()) throw std::bad_alloc();
    void *p = std::malloc(n ? n : 1);
    if (!p) throw std::bad_alloc();
    return p;
}
void *operator new[](size_t n) { return operator new(n); }
void *operator new(size_t n, const std::nothrow_t &) noexcept {
    try {
        return operator new(n);
    } catch (...) {
        return nullptr;
    }
}
void *operator new[](size_t n, const std::nothrow_t &) noexcept { return operator new(n, std::nothrow); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }
