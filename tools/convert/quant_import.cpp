// quant_import.cpp - writing a plan's GPTQ/AWQ linears (see quant_import.h).
#include "convert/quant_import.h"

#include "convert/hf_quantized.h"
#include "core/error.h"
#include "core/half.h"
#include "core/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace gpt::convert {

QuantImport inspect_quantized(const TensorPlan &p) {
    QuantImport qi;
    bool one_group = true, all_q4 = true, all_q8 = true;
    uint64_t group = 0;
    for (const PlannedTensor &t : p.tensors)
        for (const SrcMatrix &m : t.parts) {
            if (!m.quant) continue;
            const QuantLinear &q = *m.quant;
            if (!qi.n_linears++) {
                qi.source = q.cfg.describe();
                qi.source_group = q.cfg.group;
                group = q.group;
            }
            one_group = one_group && q.group == group;
            all_q4 = all_q4 && repacks_exactly(q, DType::Q4, (uint32_t)q.group);
            all_q8 = all_q8 && repacks_exactly(q, DType::Q8, (uint32_t)q.group);
        }
    if (!qi.n_linears) return qi;
    qi.group = one_group && is_valid_group(group) ? (uint32_t)group : 0;
    qi.natural = qi.group && all_q4 ? DType::Q4 : qi.group && all_q8 ? DType::Q8 : p.source_dtype;
    return qi;
}

bool has_quantized_parts(const PlannedTensor &t) {
    for (const SrcMatrix &m : t.parts)
        if (m.quant) return true;
    return false;
}

bool repacks_exactly(const PlannedTensor &t, DType q, uint32_t group) {
    if (t.shape.size() != 2 || t.parts.empty()) return false;
    for (const SrcMatrix &m : t.parts)
        if (!m.quant || !repacks_exactly(*m.quant, q, group)) return false;
    return true;
}

void fill_repacked(const PlannedTensor &t, DType q, uint32_t group, uint8_t *dst, uint64_t nbytes,
                   const volatile std::sig_atomic_t *stop) {
    const uint64_t rows = t.shape[0], cols = t.shape[1], R = packed_row_bytes(q, cols), G = cols / group;
    uint64_t want = 0;
    if (!tensor_bytes(q, rows * cols, cols, group, &want) || want != nbytes)
        fail(GPT_ERR_INTERNAL, "converter bug: tensor '%s': %llu bytes asked for its repack", t.name.c_str(), (unsigned long long)nbytes);
    uint64_t r0 = 0; // the part's first row: both planes are row-major, so parts stack in each
    for (const SrcMatrix &m : t.parts) {
        if (stop && *stop) fail(GPT_ERR_ABORTED, "interrupted");
        repack_linear(*m.quant, q, dst + r0 * R, dst + rows * R + 2 * r0 * G);
        r0 += m.rows;
    }
}

void fill_requantized(const PlannedTensor &t, DType q, uint32_t group, uint8_t *dst, uint64_t nbytes, double *max_diff,
                      const volatile std::sig_atomic_t *stop) {
    const uint64_t rows = t.shape[0], cols = t.shape[1], R = packed_row_bytes(q, cols), G = cols / group;
    uint64_t want = 0;
    if (!tensor_bytes(q, rows * cols, cols, group, &want) || want != nbytes)
        fail(GPT_ERR_INTERNAL, "converter bug: tensor '%s': %llu bytes asked for its quantization", t.name.c_str(), (unsigned long long)nbytes);
    std::vector<float> w(rows * cols);
    fill_tensor(t, DType::F32, reinterpret_cast<uint8_t *>(w.data()), w.size() * 4, stop);
    quantize_matrix(w.data(), rows, cols, q, group, dst, t.name);
    // Read back from the planes as written (docs/FORMAT.md 5.1), to say what requantizing cost.
    for (uint64_t n = 0; n < rows; n++)
        for (uint64_t k = 0; k < cols; k++) {
            const uint8_t b = dst[n * R + (q == DType::Q8 ? k : k / 2)];
            const int v = q == DType::Q8 ? (int)(int8_t)b : (int)((b >> (4 * (k % 2))) & 15) - 8;
            uint16_t h;
            std::memcpy(&h, dst + rows * R + 2 * (n * G + k / group), 2);
            *max_diff = std::max(*max_diff, std::fabs((double)v * f16_to_f32(h) - (double)w[n * cols + k]));
        }
}

} // namespace gpt::convert
