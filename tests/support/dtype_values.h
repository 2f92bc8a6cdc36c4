// dtype_values.h - f32 values in the weight file's dtypes, for fixtures and expected
// outputs: drawn at random, rounded once (round to nearest even, through core/half.h) and
// encoded as the little-endian bytes a file stores.
#pragma once

#include "format/spec.h"

#include <cstdint>
#include <random>
#include <vector>

namespace fixture {

// x as the dtype holds it (f32: unchanged).
float round_to(float x, gpt::DType t);
std::vector<float> rounded(const std::vector<float> &v, gpt::DType t);
// The bytes of v stored as t (each value rounded once).
std::vector<uint8_t> encode(const std::vector<float> &v, gpt::DType t);
// One stored element back to f32.
float decode_one(const uint8_t *p, gpt::DType t);
// n normal values (mean, std), rounded to the dtype they will be stored in.
std::vector<float> draw(std::mt19937_64 &rng, uint64_t n, float mean, float std, gpt::DType t);

} // namespace fixture
