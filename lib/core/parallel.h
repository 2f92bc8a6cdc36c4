// parallel.h - fn(i) for every i in [0, n) on up to max_threads threads (the calling thread
// among them, never more than the hardware has or than there are items), items handed out
// one at a time. Where a thread cannot be started, the threads that run do its share.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
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

} // namespace gpt
