// thread_pool.cpp - spin-then-sleep worker pool.
#include "backend/cpu/thread_pool.h"

#include "core/error.h"

#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GPT_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define GPT_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define GPT_CPU_RELAX() ((void)0)
#endif

namespace gpt::cpu {

uint32_t hardware_threads() {
    unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
}

ThreadPool::ThreadPool(uint32_t n_threads) : n_threads_(n_threads ? n_threads : 1) {
    try {
        threads_.reserve(n_threads_ - 1);
        for (uint32_t i = 1; i < n_threads_; i++) threads_.emplace_back(&ThreadPool::worker, this, i);
    } catch (...) {
        // Stop the workers already started (bumping the generation wakes the sleeping ones;
        // joinable threads left in threads_ would terminate the process), then report.
        {
            std::lock_guard<std::mutex> lk(mu_);
            stop_ = true;
            generation_.fetch_add(1);
        }
        wake_.notify_all();
        for (auto &t : threads_) t.join();
        threads_.clear();
        try {
            throw;
        } catch (const std::system_error &e) {
            fail(GPT_ERR_OUT_OF_MEMORY, "cannot start %u CPU worker threads: %s", n_threads_ - 1, e.what());
        }
    }
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto &t : threads_) t.join();
}

void ThreadPool::do_part(uint32_t index) {
    const uint64_t per = n_ / n_threads_, extra = n_ % n_threads_;
    const uint64_t begin = index * per + (index < extra ? index : extra);
    const uint64_t end = begin + per + (index < extra ? 1 : 0);
    if (begin < end) fn_(arg_, begin, end, index);
}

void ThreadPool::parallel_for(uint64_t n, Fn fn, void *arg) {
    if (n == 0) return;
    if (n_threads_ == 1 || n == 1) {
        fn(arg, 0, n, 0);
        return;
    }
    fn_ = fn;
    arg_ = arg;
    n_ = n;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    {
        std::lock_guard<std::mutex> lk(mu_);
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    do_part(0);
    // Spin briefly, then yield: when the machine is oversubscribed (more runnable threads
    // than cores) a worker may be waiting for this very core, and pure spinning would burn
    // the rest of our time slice on every op.
    for (uint32_t spins = 0; pending_.load(std::memory_order_acquire) != 0; spins++) {
        if (spins < 2048) GPT_CPU_RELAX();
        else std::this_thread::yield();
    }
}

void ThreadPool::worker(uint32_t index) {
    uint64_t seen = 0;
    for (;;) {
        // Spin a little: the next job usually follows within microseconds.
        uint64_t g = generation_.load(std::memory_order_acquire);
        for (int i = 0; i < 20000 && g == seen; i++) {
            if (i < 2048) GPT_CPU_RELAX();
            else std::this_thread::yield(); // let the caller (or anyone) run on an oversubscribed machine
            g = generation_.load(std::memory_order_acquire);
        }
        if (g == seen) {
            std::unique_lock<std::mutex> lk(mu_);
            wake_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
            g = generation_.load(std::memory_order_acquire);
        }
        seen = g;
        if (stop_.load()) return;
        do_part(index);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

} // namespace gpt::cpu
