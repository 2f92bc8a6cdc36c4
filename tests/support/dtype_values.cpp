// dtype_values.cpp - drawing, rounding, encoding and decoding of f32 values in the file
// dtypes (see dtype_values.h).
#include "dtype_values.h"

#include "core/half.h"

#include <cstring>

namespace fixture {

using gpt::DType;

float round_to(float x, DType t) {
    switch (t) {
    case DType::F32: return x;
    case DType::F16: return gpt::f16_to_f32(gpt::f32_to_f16(x));
    case DType::BF16: return gpt::bf16_to_f32(gpt::f32_to_bf16(x));
    case DType::Q8:
    case DType::Q4: break; // per group, not per value: quantized fixtures use core/quant.h
    }
    return x;
}

std::vector<float> rounded(const std::vector<float> &v, DType t) {
    std::vector<float> o(v.size());
    for (size_t i = 0; i < v.size(); i++) o[i] = round_to(v[i], t);
    return o;
}

std::vector<uint8_t> encode(const std::vector<float> &v, DType t) {
    std::vector<uint8_t> b(v.size() * (t == DType::F32 ? 4 : 2));
    for (size_t i = 0; i < v.size(); i++) {
        if (t == DType::F32) std::memcpy(b.data() + 4 * i, &v[i], 4);
        else {
            const uint16_t h = t == DType::F16 ? gpt::f32_to_f16(v[i]) : gpt::f32_to_bf16(v[i]);
            std::memcpy(b.data() + 2 * i, &h, 2);
        }
    }
    return b;
}

float decode_one(const uint8_t *p, DType t) {
    if (t == DType::F32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return t == DType::F16 ? gpt::f16_to_f32(h) : gpt::bf16_to_f32(h);
}

std::vector<float> draw(std::mt19937_64 &rng, uint64_t n, float mean, float std, DType t) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto &x : v) x = round_to(mean + std * nd(rng), t);
    return v;
}

} // namespace fixture
