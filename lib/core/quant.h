// quant.h - weight-only quantized matrices (DType::Q8, DType::Q4): their byte layout, sizes,
// and the reference quantizer and dequantizer every backend and tool follows.
//
// A quantized [rows][cols] matrix with group size g (32, 64 or 128, dividing cols) is two
// planes, back to back (docs/FORMAT.md, section 5.1):
//   1. the integers, row-major, packed_row_bytes(t, cols) bytes per row:
//        q8: one int8 (two's complement) per element, -127..127 as written by the quantizer;
//        q4: two per byte, element 2i in the low nibble of byte i and 2i+1 in the high one,
//            each stored as q + 8 (0..15 holds -8..7; the quantizer writes -7..7);
//   2. the scales, f16, [rows][cols / g]: element c of row r is q * scale[r][c / g].
// The scale plane starts rows * packed_row_bytes(t, cols) bytes in, a multiple of 16.
#pragma once

#include "core/tensor.h"

#include <cstdint>
#include <string>

namespace gpt {

// The group sizes a file may use.
inline bool is_valid_group(uint64_t g) { return g == 32 || g == 64 || g == 128; }
// The largest |q| the quantizer writes: scale = max|w| / quant_max.
inline int quant_max(DType t) { return t == DType::Q8 ? 127 : 7; }
// Bytes of one row of the integer plane.
inline uint64_t packed_row_bytes(DType t, uint64_t cols) { return t == DType::Q8 ? cols : cols / 2; }

// Bytes a tensor of this dtype, element count and (for quantized types) [rows][cols] shape and
// group takes in a file or in memory; false on overflow. Float types: numel * dtype_bytes.
bool tensor_bytes(DType t, uint64_t numel, uint64_t cols, uint64_t group, uint64_t *out);
// The bytes of a weight as it is held (float or quantized).
uint64_t weight_bytes(const Weight &w);

// The scale plane of a quantized weight: [rows][cols / group] f16 bits.
inline const uint16_t *quant_scales(const Weight &w) {
    return reinterpret_cast<const uint16_t *>(static_cast<const uint8_t *>(w.data) + w.rows * packed_row_bytes(w.dtype, w.cols));
}
// out[0..cols) = row `row` of a quantized weight in f32 (exact: q * scale fits a float).
void dequantize_row(const Weight &w, uint64_t row, float *out);
// Row `row` of any matrix weight (float or quantized) widened to f32.
void weight_row_f32(const Weight &w, uint64_t row, float *out);

// Round-to-nearest symmetric quantization of src [rows][cols] (f32) into dst, which holds
// tensor_bytes(t, rows * cols, cols, group) bytes. Each group's scale is max|w| / quant_max(t)
// rounded to f16; q = round(w / scale) clamped to +-quant_max. Throws GPT_ERR_UNSUPPORTED
// naming `what` when a scale does not fit f16 or a value is not finite, GPT_ERR_INVALID_ARG
// for a group that is not 32, 64 or 128 or does not divide cols.
void quantize_matrix(const float *src, uint64_t rows, uint64_t cols, DType t, uint32_t group, uint8_t *dst,
                     const std::string &what);

} // namespace gpt
