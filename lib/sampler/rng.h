// rng.h - the sampler's random numbers: splitmix64, seeded per generate call, so the same
// seed gives the same draws on every platform and backend.
#pragma once

#include <cstdint>

namespace gpt {

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next_u64() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, 1) with 24 bits, exactly representable as float.
    float next_float() { return (float)(next_u64() >> 40) * 0x1p-24f; }

private:
    uint64_t state_;
};

} // namespace gpt
