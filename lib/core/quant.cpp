// quant.cpp - the reference quantizer and dequantizer (layout: core/quant.h).
#include "core/quant.h"

#include "core/error.h"
#include "core/half.h"
#include "core/parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gpt {

bool tensor_bytes(DType t, uint64_t numel, uint64_t cols, uint64_t group, uint64_t *out) {
    if (!is_quantized(t)) return !mul_overflows(numel, dtype_bytes(t), out);
    if (cols == 0 || group == 0 || numel % cols != 0 || cols % group != 0) return false;
    const uint64_t rows = numel / cols;
    // Integers: numel bytes (q8) or numel / 2 (q4, cols even as group is); scales: 2 per group.
    const uint64_t ints = t == DType::Q8 ? numel : numel / 2;
    uint64_t scales;
    if (mul_overflows(rows, cols / group, &scales) || mul_overflows(scales, 2, &scales)) return false;
    return !add_overflows(ints, scales, out);
}

uint64_t weight_bytes(const Weight &w) {
    uint64_t n = 0;
    return tensor_bytes(w.dtype, w.numel(), w.cols, w.group, &n) ? n : 0;
}

void dequantize_row(const Weight &w, uint64_t row, float *out) {
    const uint64_t k = w.cols, g = w.group;
    const uint16_t *scales = quant_scales(w) + row * (k / g);
    const uint8_t *q = static_cast<const uint8_t *>(w.data) + row * packed_row_bytes(w.dtype, k);
    for (uint64_t c0 = 0; c0 < k; c0 += g) {
        const float s = f16_to_f32(scales[c0 / g]);
        if (w.dtype == DType::Q8) {
            for (uint64_t c = c0; c < c0 + g; c++) out[c] = (float)(int8_t)q[c] * s;
        } else {
            for (uint64_t c = c0; c < c0 + g; c += 2) {
                const uint8_t b = q[c / 2];
                out[c] = (float)((int)(b & 15) - 8) * s;
                out[c + 1] = (float)((int)(b >> 4) - 8) * s;
            }
        }
    }
}

void weight_row_f32(const Weight &w, uint64_t row, float *out) {
    if (is_quantized(w.dtype)) return dequantize_row(w, row, out);
    const uint8_t *p = static_cast<const uint8_t *>(w.data) + row * w.cols * dtype_bytes(w.dtype);
    for (uint64_t c = 0; c < w.cols; c++) {
        if (w.dtype == DType::F32) std::memcpy(&out[c], p + 4 * c, 4);
        else {
            uint16_t h;
            std::memcpy(&h, p + 2 * c, 2);
            out[c] = w.dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
        }
    }
}

namespace {

// Quantizes rows [r0, r1) of src into the layout quantize_matrix documents; throws at the first
// problem in row-major order.
void quantize_rows(const float *src, uint64_t r0, uint64_t r1, uint64_t cols, DType t, uint32_t group, uint8_t *dst,
                   uint64_t rows, const std::string &what) {
    const int qmax = quant_max(t);
    const uint64_t row_bytes = packed_row_bytes(t, cols), groups = cols / group;
    uint8_t *ints = dst;
    uint8_t *scales = dst + rows * row_bytes;
    for (uint64_t r = r0; r < r1; r++) {
        const float *w = src + r * cols;
        for (uint64_t gi = 0; gi < groups; gi++) {
            const uint64_t c0 = gi * group;
            float mx = 0;
            for (uint64_t c = c0; c < c0 + group; c++) {
                if (!std::isfinite(w[c]))
                    fail(GPT_ERR_UNSUPPORTED, "%s: element [%llu, %llu] is %g; only finite weights can be quantized",
                         what.c_str(), (unsigned long long)r, (unsigned long long)c, (double)w[c]);
                mx = std::max(mx, std::fabs(w[c]));
            }
            const uint16_t sh = f32_to_f16(mx / (float)qmax);
            const float s = f16_to_f32(sh);
            if (!std::isfinite(s))
                fail(GPT_ERR_UNSUPPORTED, "%s: row %llu holds %g, too large for an f16 group scale", what.c_str(),
                     (unsigned long long)r, (double)mx);
            std::memcpy(scales + 2 * (r * groups + gi), &sh, 2);
            for (uint64_t c = c0; c < c0 + group; c++) {
                // A zero (or underflowed) scale dequantizes everything to 0 whatever q is.
                const float qf = s > 0 ? std::nearbyint(w[c] / s) : 0.0f;
                const int q = (int)std::min<float>(std::max<float>(qf, (float)-qmax), (float)qmax);
                if (t == DType::Q8) ints[r * row_bytes + c] = (uint8_t)(int8_t)q;
                else ints[r * row_bytes + c / 2] |= (uint8_t)((q + 8) << ((c & 1) ? 4 : 0));
            }
        }
    }
}

} // namespace

void quantize_matrix(const float *src, uint64_t rows, uint64_t cols, DType t, uint32_t group, uint8_t *dst,
                     const std::string &what) {
    if (!is_quantized(t)) fail(GPT_ERR_INVALID_ARG, "%s: %s is not a quantized dtype", what.c_str(), dtype_name(t));
    if (!is_valid_group(group) || cols % group != 0)
        fail(GPT_ERR_INVALID_ARG, "%s: group size %u must be 32, 64 or 128 and divide the %llu columns", what.c_str(), group,
             (unsigned long long)cols);
    if (t == DType::Q4) std::memset(dst, 0, rows * packed_row_bytes(t, cols)); // nibbles are OR-ed in
    // Slices of rows on up to 8 threads (a 7B model's matrices took a minute on one); every row
    // is computed alone, so the bytes do not depend on the threads, and the problem reported is
    // the first in row-major order, as one thread would meet it (parallel_for_or_throw).
    const uint64_t slice_rows = std::max<uint64_t>(1, (256u << 10) / cols), slices = (rows + slice_rows - 1) / slice_rows;
    parallel_for_or_throw((size_t)slices, 8, [&](size_t i) {
        const uint64_t r0 = i * slice_rows;
        quantize_rows(src, r0, std::min(rows, r0 + slice_rows), cols, t, group, dst, rows, what);
    });
}

} // namespace gpt
