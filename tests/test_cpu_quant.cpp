// test_cpu_quant.cpp - the CPU's q8/q4 matrix kernels (lib/backend/cpu/cpu_quant.h), each one
// this machine has (portable always, AVX2 on x86-64 CPUs with it, NEON on aarch64: CI runs this
// under qemu), against "decode in double, then a naive matmul" written here from
// docs/FORMAT.md section 5.1. The weights are packed here from random integers over the whole
// range a reader accepts (q8 -128..127, every q4 nibble) and random f16 scales (zero,
// subnormal, negative, large), so no library quantizer is involved. Shapes: K = group x an odd
// count, N odd (tiles of 4 outputs and their tails, more than one 64-output slice), groups
// 32/64/128, 1 to 5 and 17 rows of x, output ranges that do not start at 0, outputs poisoned.
// Beyond the tolerance: one summation order per (output, row), so a result must not depend on
// how many rows or outputs a call holds, and the portable kernel, where it fuses its
// multiply-adds, must give the SIMD kernel's bits.
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/cpu_quant.h"
#include "core/half.h"
#include "core/quant.h"
#include "reference.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

// cmocka last: it defines a fail() macro.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

using gpt::DType;
using gpt::cpu::QuantKernel;

const char *label(DType t) { return t == DType::Q8 ? "q8" : "q4"; }
const char *label(QuantKernel k) { return k == QuantKernel::Portable ? "portable" : "simd"; }

// A packed [n][k] matrix with group g, and its values decoded in double.
struct Matrix {
    std::vector<uint8_t> bytes;
    std::vector<double> value; // [n][k]
    gpt::Weight view() const { return gpt::Weight{bytes.data(), t, n, k, g}; }
    DType t;
    uint64_t n, k;
    uint32_t g;
};

// A random f16 scale: mostly ordinary magnitudes of either sign, sometimes 0, a subnormal or a
// large one (the result stays far from f32 overflow).
uint16_t draw_scale(std::mt19937_64 &rng) {
    const int kind = (int)(rng() % 16);
    const uint16_t sign = (rng() & 1) ? 0x8000 : 0;
    if (kind == 0) return 0;
    if (kind == 1) return (uint16_t)(sign | (1 + rng() % 0x3ff)); // subnormal
    if (kind == 2) return (uint16_t)(sign | (0x5800 + rng() % 0x800)); // 128..256
    return (uint16_t)(sign | ((0x1c00 + rng() % 0x2000) & 0x7fff)); // 2^-8 .. 2^0
}

Matrix draw_matrix(std::mt19937_64 &rng, DType t, uint64_t n, uint64_t k, uint32_t g) {
    Matrix m{{}, std::vector<double>(n * k), t, n, k, g};
    const uint64_t row_bytes = t == DType::Q8 ? k : k / 2, groups = k / g;
    m.bytes.resize(n * row_bytes + 2 * n * groups);
    for (uint64_t i = 0; i < n * row_bytes; i++) m.bytes[i] = (uint8_t)rng();
    std::vector<double> scale(n * groups);
    for (uint64_t i = 0; i < n * groups; i++) {
        const uint16_t s = draw_scale(rng);
        m.bytes[n * row_bytes + 2 * i] = (uint8_t)(s & 0xff); // little-endian f16
        m.bytes[n * row_bytes + 2 * i + 1] = (uint8_t)(s >> 8);
        scale[i] = gpt::f16_to_f32(s);
    }
    for (uint64_t o = 0; o < n; o++)
        for (uint64_t c = 0; c < k; c++) {
            int q;
            if (t == DType::Q8) q = (int8_t)m.bytes[o * row_bytes + c];
            else {
                const uint8_t b = m.bytes[o * row_bytes + c / 2];
                q = (c % 2 == 0 ? b & 15 : b >> 4) - 8;
            }
            m.value[o * k + c] = q * scale[o * groups + c / g];
        }
    return m;
}

// Calls the kernel on outputs [o0, o1) with y poisoned; returns y ([rows][stride]).
std::vector<float> run(QuantKernel kernel, const Matrix &m, const std::vector<float> &x, uint32_t rows, const float *bias,
                       uint64_t o0, uint64_t o1, uint64_t stride) {
    std::vector<float> y(rows * stride), scratch(m.k);
    reference::poison(y.data(), y.size());
    reference::poison(scratch.data(), scratch.size());
    gpt::cpu::quant_matmul(kernel, x.data(), rows, m.view(), bias, o0, o1, y.data(), stride, scratch.data());
    return y;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_kernel(QuantKernel kernel) {
    std::mt19937_64 rng(reference::sub_seed(label(kernel)));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const double eps = std::ldexp(1.0, -24);
    struct Shape {
        uint64_t n, k;
        uint32_t g;
    };
    // K = g x (1, 3, 5, 7, 9); N odd: single outputs, tiles of 4 with tails, two slices of 64.
    const Shape shapes[] = {{1, 32, 32}, {7, 96, 32}, {67, 288, 32}, {13, 320, 64}, {5, 448, 64}, {9, 384, 128}, {3, 640, 128}};
    const uint32_t row_counts[] = {1, 2, 3, 4, 5, 17};
    for (DType t : {DType::Q8, DType::Q4})
        for (const Shape &s : shapes) {
            const Matrix m = draw_matrix(rng, t, s.n, s.k, s.g);
            for (uint32_t rows : row_counts) {
                std::vector<float> x(rows * s.k), bias(s.n);
                for (float &v : x) v = u(rng);
                for (float &v : bias) v = u(rng);
                if (rows > 1) // one row of large values
                    for (uint64_t c = 0; c < s.k; c++) x[s.k + c] *= 1000.0f;
                const uint64_t stride = s.n + 3, o0 = s.n > 2 ? 1 : 0;
                for (bool with_bias : {false, true}) {
                    const float *b = with_bias ? bias.data() : nullptr;
                    const std::vector<float> y = run(kernel, m, x, rows, b, o0, s.n, stride);
                    for (uint32_t r = 0; r < rows; r++)
                        for (uint64_t o = 0; o < stride; o++) {
                            const float got = y[r * stride + o];
                            if (o < o0 || o >= s.n) {
                                if (!std::isnan(got))
                                    fail_msg("%s %s: output %llu outside [%llu, %llu) written", label(kernel), label(t),
                                             (unsigned long long)o, (unsigned long long)o0, (unsigned long long)s.n);
                                continue;
                            }
                            double ref = with_bias ? bias[o] : 0, mag = std::fabs(ref);
                            for (uint64_t c = 0; c < s.k; c++) {
                                ref += (double)x[r * s.k + c] * m.value[o * s.k + c];
                                mag += std::fabs((double)x[r * s.k + c] * m.value[o * s.k + c]);
                            }
                            if (!(std::fabs(got - ref) <= (s.k + 3) * eps * mag + 1e-30))
                                fail_msg("%s %s %llux%llu g %u, %u rows%s: row %u output %llu = %.9g, want %.9g (tolerance %.3g)",
                                         label(kernel), label(t), (unsigned long long)s.n, (unsigned long long)s.k, s.g, rows,
                                         with_bias ? ", bias" : "", r, (unsigned long long)o, got, ref, (s.k + 3) * eps * mag);
                        }
                    // The same bits whatever else the call holds: each row alone, and the
                    // outputs split at a random point.
                    for (uint32_t r = 0; r < rows; r++) {
                        const std::vector<float> xr(x.begin() + r * s.k, x.begin() + (r + 1) * s.k);
                        const std::vector<float> yr = run(kernel, m, xr, 1, b, o0, s.n, stride);
                        for (uint64_t o = o0; o < s.n; o++)
                            if (!same_bits(yr[o], y[r * stride + o]))
                                fail_msg("%s %s %llux%llu g %u: row %u output %llu alone %.9g, among %u rows %.9g", label(kernel),
                                         label(t), (unsigned long long)s.n, (unsigned long long)s.k, s.g, r,
                                         (unsigned long long)o, yr[o], rows, y[r * stride + o]);
                    }
                    const uint64_t split = o0 + rng() % (s.n - o0 + 1);
                    std::vector<float> y2 = run(kernel, m, x, rows, b, o0, split, stride);
                    const std::vector<float> y3 = run(kernel, m, x, rows, b, split, s.n, stride);
                    for (uint32_t r = 0; r < rows; r++)
                        for (uint64_t o = split; o < s.n; o++) y2[r * stride + o] = y3[r * stride + o];
                    for (uint32_t r = 0; r < rows; r++)
                        for (uint64_t o = o0; o < s.n; o++)
                            if (!same_bits(y2[r * stride + o], y[r * stride + o]))
                                fail_msg("%s %s: output %llu of row %u differs when the outputs are split at %llu", label(kernel),
                                         label(t), (unsigned long long)o, r, (unsigned long long)split);
                    // Where the portable kernel fuses its multiply-adds, it is the SIMD
                    // kernel's order exactly.
                    if (kernel == QuantKernel::Simd && gpt::cpu::quant_portable_fused()) {
                        const std::vector<float> yp = run(QuantKernel::Portable, m, x, rows, b, o0, s.n, stride);
                        for (uint32_t r = 0; r < rows; r++)
                            for (uint64_t o = o0; o < s.n; o++)
                                if (!same_bits(yp[r * stride + o], y[r * stride + o]))
                                    fail_msg("%s %llux%llu g %u: row %u output %llu: simd %.9g, portable %.9g", label(t),
                                             (unsigned long long)s.n, (unsigned long long)s.k, s.g, r, (unsigned long long)o,
                                             y[r * stride + o], yp[r * stride + o]);
                    }
                }
            }
        }
}

void test_portable(void **) { check_kernel(QuantKernel::Portable); }

void test_simd(void **) {
    if (!gpt::cpu::quant_kernel_available(QuantKernel::Simd)) {
        std::printf("no SIMD quantized kernel on this CPU/build: skipped\n");
        skip();
    }
    check_kernel(QuantKernel::Simd);
}

// The kernel matmul_block uses: SIMD wherever it is available.
void test_best(void **) {
    const QuantKernel best = gpt::cpu::best_quant_kernel();
    assert_true(gpt::cpu::quant_kernel_available(best));
    assert_int_equal((int)best, (int)(gpt::cpu::quant_kernel_available(QuantKernel::Simd) ? QuantKernel::Simd : QuantKernel::Portable));
#if defined(__aarch64__)
    assert_int_equal((int)best, (int)QuantKernel::Simd); // NEON is part of the base architecture
#endif
    // matmul_block sends quantized weights there: the same bits.
    std::mt19937_64 rng(reference::sub_seed("best"));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (DType t : {DType::Q8, DType::Q4})
        for (uint32_t rows : {1u, 6u}) {
            const Matrix m = draw_matrix(rng, t, 11, 192, 64);
            std::vector<float> x(rows * m.k), scratch(m.k);
            for (float &v : x) v = u(rng);
            const std::vector<float> want = run(best, m, x, rows, nullptr, 2, m.n, m.n);
            std::vector<float> y(rows * m.n);
            reference::poison(y.data(), y.size());
            gpt::cpu::matmul_block(x.data(), rows, m.view(), nullptr, 2, m.n, y.data(), m.n, scratch.data());
            for (size_t i = 0; i < y.size(); i++)
                if (!same_bits(y[i], want[i]) && !(std::isnan(y[i]) && std::isnan(want[i])))
                    fail_msg("matmul_block %s, %u rows: element %zu = %.9g, the best kernel gives %.9g", label(t), rows, i, y[i], want[i]);
        }
    std::printf("kernels: simd %s, portable %s; matmul uses %s\n",
                gpt::cpu::quant_kernel_available(QuantKernel::Simd) ? "available" : "unavailable",
                gpt::cpu::quant_portable_fused() ? "fused" : "unfused", label(best));
}

} // namespace

int main(void) {
    reference::test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portable),
        cmocka_unit_test(test_simd),
        cmocka_unit_test(test_best),
    };
    return cmocka_run_group_tests_name("cpu_quant", tests, nullptr, nullptr);
}
