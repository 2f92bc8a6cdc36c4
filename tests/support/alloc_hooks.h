// alloc_hooks.h - the global operator new/delete replaced for the tests that watch the
// library's C++ allocations: counts every call, fails the n-th following one or every one on
// a thread on request, and records the largest request.
#pragma once

// tests/meson.build links alloc_hooks.cpp whole into each test that uses it, so the
// replacement is always in the binary (installed() checks).

#include <cstddef>
#include <cstdint>

namespace alloc_hooks {

// True when the replacement is linked in (a direct ::operator new call was counted).
bool installed();

// operator new calls (any form) and bytes requested since the start, all threads.
uint64_t count();
uint64_t bytes();

// The n-th following operator new (0: the next one) throws std::bad_alloc (the nothrow forms
// return NULL); clears fired(). disarm() cancels what has not fired, keeping fired().
void fail_nth(int64_t n);
void disarm();
// Whether the failure armed by the last fail_nth has been injected.
bool fired();

// While on, every operator new on the calling thread fails.
void fail_all_on_this_thread(bool on);

// The largest single request since the last reset_largest() (all threads).
size_t largest();
void reset_largest();

} // namespace alloc_hooks
