// tensor.h - a view of one weight tensor wherever it lives (the mapped file, host memory,
// device memory). Shapes follow PyTorch's nn.Linear: a matrix is [rows = out][cols = in];
// a vector has rows = its length and cols = 1. Quantized matrices (Q8, Q4) point at their
// integer plane, followed by their scales (core/quant.h).
#pragma once

#include "core/dtype.h"

#include <cstdint>

namespace gpt {

struct Weight {
    const void *data = nullptr;
    DType dtype = DType::F32;
    uint64_t rows = 0;
    uint64_t cols = 0;
    uint32_t group = 0; // quantized dtypes (core/quant.h): columns per scale; 0 otherwise
    explicit operator bool() const { return data != nullptr; }
    uint64_t numel() const { return rows * cols; }
    bool is_vector() const { return cols == 1; }
};

} // namespace gpt
