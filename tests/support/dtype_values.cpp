// dtype_values.cpp - drawing, rounding, encoding and decoding of f32 values in the file
// dtypes (see dtype_values.h).
#include "dtype_values.h"

#include "core/half.h"

#include <cstring>

namespace fixture {

using gpt::format::FileDType;

float round_to(float x, FileDType t) {
    switch (t) {
    case FileDType::F32: return x;
    case FileDType::F16: return gpt::f16_to_f32(gpt::f32_to_f16(x));
    case FileDType::BF16: return gpt::bf16_to_f32(gpt::f32_to_bf16(x));
    }
    return x;
}

std::vector<float> rounded(const std::vector<float> &v, FileDType t) {
    std::vector<float> o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = round_to(v[i], t);
    return o;
}

std::vector<uint8_t> encode(const std::vector<float> &v, FileDType t) {
    std::vector<uint8_t> b(v.size() * (t == FileDType::F32 ? 4 : 2));
    for (size_t i = 0; i < v.size(); i++) {
        if (t == FileDType::F32) std::memcpy(b.data() + 4 * i, &v[i], 4);
        else {
            const uint16_t h = t == FileDType::F16 ? gpt::f32_to_f16(v[i]) : gpt::f32_to_bf16(v[i]);
            std::memcpy(b.data() + 2 * i, &h, 2);
        }
    }
    return b;
}

float decode_one(const uint8_t *p, FileDType t) {
    if (t == FileDType::F32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return t == FileDType::F16 ? gpt::f16_to_f32(h) : gpt::bf16_to_f32(h);
}

std::vector<float> draw(std::mt19937_64 &rng, uint64_t n, float mean, float std, FileDType t) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto &x : v) x = round_to(mean + std * nd(rng), t);
    return v;
}

} // namespace fixture
