// parallel.h - fn(i) for every i in [0, n) on up to max_threads threads (the calling thread
// among them, never more than the hardware has or than there are items), items handed out
// one at a time. Where a thread cannot be started, the threads that run do its share. fn must
// not throw (parallel_for_or_throw is for one that may).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace gpt {

template <typename Fn> void parallel_for(size_t n, size_t max_threads, Fn fn) {
    const size_t hw = std::max(1u, std::thread::hardware_concurrency());
    const size_t n_threads = std::min({hw, max_threads, n});
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i; (i = next.fetch_add(1)) < n;) fn(i);
    };
    std::vector<std::thread> threads;
    try {
        for (size_t i = 1; i < n_threads; i++) threads.emplace_back(work);
    } catch (...) { // no thread: the others do the rest
    }
    work();
    for (std::thread &t : threads) t.join();
}

// parallel_for for an fn that may throw: after the threads join, the exception of the lowest
// index that threw is rethrown, so the error reported is the one a loop in index order would
// meet first. Items above a failed one are skipped; those below still run.
template <typename Fn> void parallel_for_or_throw(size_t n, size_t max_threads, Fn fn) {
    std::mutex m; // guards error and the stores to failed_at
    std::exception_ptr error;
    std::atomic<size_t> failed_at{n}; // lowest index that threw so far (n: none)
    parallel_for(n, max_threads, [&](size_t i) {
        if (i > failed_at.load()) return;
        try {
            fn(i);
        } catch (...) {
            std::lock_guard<std::mutex> lock(m);
            if (i < failed_at.load()) {
                failed_at.store(i);
                error = std::current_exception();
            }
        }
    });
    if (error) std::rethrow_exception(error);
}

} // namespace gpt
