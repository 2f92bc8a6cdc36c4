// tensor_plan.cpp - filling planned tensors (dtype conversion, transposes, permutations)
// and checking a plan against the engine's tensor table.
#include "convert/tensor_plan.h"

#include "convert/hf_quantized.h"
#include "core/error.h"
#include "core/half.h"
#include "core/parallel.h"
#include "model/arch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace gpt::convert {


namespace {


inline float load(const uint8_t *p, DType t) {
    if (t == DType::F32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    }
    uint16_t h;
    std::memcpy(&h, p, 2);
    return t == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

inline void store(uint8_t *p, DType t, float v) {
    if (t == DType::F32) {
        std::memcpy(p, &v, 4);
        return;
    }
    const uint16_t h = t == DType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
    std::memcpy(p, &h, 2);
}

// A finite value that f16 cannot hold (it would round to infinity).
[[noreturn]] void overflow(const PlannedTensor &t, const SrcMatrix &m, float v) {
    fail(GPT_ERR_UNSUPPORTED, "%s (for '%s'): value %g does not fit in f16 (largest 65504); convert with --dtype bf16 or f32",
         m.what.c_str(), t.name.c_str(), (double)v);
}

// Converts one element; a finite value never becomes infinite.
inline void convert_one(const uint8_t *s, DType st, uint8_t *d, DType dt, const PlannedTensor &t, const SrcMatrix &m) {
    const float v = m.add != 0.0f ? load(s, st) + m.add : load(s, st);
    if (dt == DType::F16 && std::fabs(v) >= 65520.0f && std::isfinite(v)) overflow(t, m, v);
    store(d, dt, v);
}

// Copies n contiguous source elements into contiguous dst.
void copy_run(const uint8_t *src, DType st, uint8_t *dst, DType dt, uint64_t n, const PlannedTensor &t, const SrcMatrix &m) {
    const size_t ss = dtype_bytes(st), ds = dtype_bytes(dt);
    if (st == dt && m.add == 0.0f) {
        std::memcpy(dst, src, n * ss);
        return;
    }
    for (uint64_t i = 0; i < n; i++) convert_one(src + i * ss, st, dst + i * ds, dt, t, m);
}

void check_stop(const volatile std::sig_atomic_t *stop) {
    if (stop && *stop) fail(GPT_ERR_ABORTED, "interrupted");
}

std::string shape_str(const std::vector<uint64_t> &s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

} // namespace

uint64_t PlannedTensor::numel() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
}

void fill_tensor(const PlannedTensor &t, DType out, uint8_t *dst, uint64_t nbytes, const volatile std::sig_atomic_t *stop) {
    const size_t ds = dtype_bytes(out);
    if (nbytes != t.numel() * ds)
        fail(GPT_ERR_INTERNAL, "tensor '%s': asked for %llu bytes, the plan holds %llu", t.name.c_str(), (unsigned long long)nbytes,
             (unsigned long long)(t.numel() * ds));
    uint64_t row0 = 0;
    for (const SrcMatrix &m : t.parts) {
        check_stop(stop);
        const size_t ss = dtype_bytes(m.dtype);
        const uint64_t cols = m.cols;
        uint8_t *base = dst + row0 * cols * ds;
        auto src_row = [&](uint64_t r) -> uint64_t { return m.row_perm.empty() ? r : m.row_perm[r]; };
        // Rows (or blocks of them) on threads: a 7B model's conversion to f32 for the quantizer
        // took seconds a tensor on one. An error (a value f16 cannot hold) is the first in the
        // order one thread would meet it.
        if (m.quant) { // dequantized whole (one linear at a time), then converted row by row
            std::vector<float> w(m.rows * cols);
            dequantize_linear(*m.quant, w.data());
            parallel_for_or_throw((size_t)m.rows, 8, [&](size_t r) {
                copy_run(reinterpret_cast<const uint8_t *>(&w[r * cols]), DType::F32, base + r * cols * ds, out, cols, t, m);
            });
        } else if (!m.transposed) {
            parallel_for_or_throw((size_t)m.rows, 8, [&](size_t r) {
                copy_run(m.data + src_row(r) * cols * ss, m.dtype, base + r * cols * ds, out, cols, t, m);
            });
        } else {
            // Stored [cols][rows]: walk blocks of logical rows so each read stays in a few lines.
            const uint64_t B = 64;
            parallel_for_or_throw((size_t)((m.rows + B - 1) / B), 8, [&](size_t block) {
                const uint64_t r0 = block * B, r1 = std::min(m.rows, r0 + B);
                for (uint64_t c = 0; c < cols; c++)
                    for (uint64_t r = r0; r < r1; r++) {
                        const uint8_t *s = m.data + (c * m.rows + src_row(r)) * ss;
                        uint8_t *d = base + (r * cols + c) * ds;
                        if (m.dtype == out && m.add == 0.0f) std::memcpy(d, s, ss);
                        else convert_one(s, m.dtype, d, out, t, m);
                    }
            });
        }
        row0 += m.rows;
    }
}

void check_plan(const TensorPlan &p) {
    std::map<std::string, std::vector<uint64_t>> want;
    for (const TensorSlot &s : tensor_table(p.config)) want[s.name] = s.shape;
    if (want.size() != p.tensors.size())
        fail(GPT_ERR_INTERNAL, "converter bug: planned %zu tensors, a %s model with this config has %zu", p.tensors.size(),
             arch_to_name(p.config.arch), want.size());
    for (const PlannedTensor &t : p.tensors) {
        auto it = want.find(t.name);
        if (it == want.end()) fail(GPT_ERR_INTERNAL, "converter bug: planned tensor '%s' is not in the engine's table", t.name.c_str());
        if (it->second != t.shape)
            fail(GPT_ERR_INTERNAL, "converter bug: tensor '%s' planned as %s, the engine expects %s", t.name.c_str(),
                 shape_str(t.shape).c_str(), shape_str(it->second).c_str());
        const uint64_t cols = t.shape.size() > 1 ? t.shape[1] : 1;
        uint64_t rows = 0;
        for (const SrcMatrix &m : t.parts) {
            if (m.cols != cols) fail(GPT_ERR_INTERNAL, "converter bug: tensor '%s': part %s has %llu columns", t.name.c_str(), m.what.c_str(), (unsigned long long)m.cols);
            uint64_t need = 0;
            if (m.quant) { // its tensors were checked when it was opened
                if (m.quant->rows != m.rows || m.quant->cols != m.cols || !m.row_perm.empty() || m.transposed)
                    fail(GPT_ERR_INTERNAL, "converter bug: tensor '%s': quantized part %s has another shape", t.name.c_str(), m.what.c_str());
                rows += m.rows;
                continue;
            }
            if (mul_overflows(m.rows, m.cols, &need) || mul_overflows(need, dtype_bytes(m.dtype), &need) || need > m.avail || !m.data)
                fail(GPT_ERR_INTERNAL, "converter bug: tensor '%s': part %s reads past its source", t.name.c_str(), m.what.c_str());
            if (!m.row_perm.empty()) {
                if (m.row_perm.size() != m.rows) fail(GPT_ERR_INTERNAL, "converter bug: tensor '%s': bad permutation", t.name.c_str());
                for (uint32_t r : m.row_perm)
                    if (r >= m.rows) fail(GPT_ERR_INTERNAL, "converter bug: tensor '%s': bad permutation", t.name.c_str());
            }
            rows += m.rows;
        }
        if (rows != t.shape[0]) fail(GPT_ERR_INTERNAL, "converter bug: tensor '%s': parts hold %llu rows of %llu", t.name.c_str(), (unsigned long long)rows, (unsigned long long)t.shape[0]);
    }
}

std::vector<uint32_t> rope_interleaved_to_half_perm(uint32_t n_heads, uint32_t head_dim) {
    std::vector<uint32_t> perm((size_t)n_heads * head_dim);
    const uint32_t half = head_dim / 2;
    for (uint32_t h = 0; h < n_heads; h++)
        for (uint32_t t = 0; t < 2; t++)
            for (uint32_t i = 0; i < half; i++) perm[(size_t)h * head_dim + t * half + i] = h * head_dim + 2 * i + t;
    return perm;
}

DType dominant_dtype(const std::vector<PlannedTensor> &tensors) {
    uint64_t count[4] = {0, 0, 0, 0};
    for (const auto &t : tensors)
        for (const auto &m : t.parts) count[(int)m.dtype] += m.rows * m.cols;
    DType best = DType::F32;
    for (DType d : {DType::F32, DType::F16, DType::BF16})
        if (count[(int)d] > count[(int)best]) best = d;
    return best;
}

} // namespace gpt::convert
