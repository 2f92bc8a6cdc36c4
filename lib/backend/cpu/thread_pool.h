// thread_pool.h - a fixed set of worker threads for the CPU backend's parallel loops.
// Created with the context, so forward passes start no threads and allocate nothing.
// Workers spin briefly between jobs (decode issues dozens of small jobs per token), then
// sleep on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace gpt::cpu {

class ThreadPool {
public:
    // fn(arg, begin, end, thread_index) handles items [begin, end).
    using Fn = void (*)(void *arg, uint64_t begin, uint64_t end, uint32_t thread);

    explicit ThreadPool(uint32_t n_threads); // n_threads >= 1, including the caller
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    uint32_t size() const { return n_threads_; }
    // Splits [0, n) into contiguous parts, one per thread; returns when all are done.
    void parallel_for(uint64_t n, Fn fn, void *arg);

    // Lambda convenience; f(begin, end, thread).
    template <typename F> void run(uint64_t n, F &&f) {
        parallel_for(n, [](void *a, uint64_t b, uint64_t e, uint32_t t) { (*static_cast<F *>(a))(b, e, t); }, &f);
    }

private:
    void worker(uint32_t index);
    void do_part(uint32_t index);

    uint32_t n_threads_;
    std::vector<std::thread> threads_;
    std::mutex mu_;
    std::condition_variable wake_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<uint32_t> pending_{0};
    std::atomic<bool> stop_{false};
    // The current job (written before generation_ is bumped).
    Fn fn_ = nullptr;
    void *arg_ = nullptr;
    uint64_t n_ = 0;
};

uint32_t hardware_threads();

} // namespace gpt::cpu
