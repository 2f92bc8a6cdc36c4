// cpu_quant.cpp - the q8/q4 matrix kernels of cpu_quant.h: portable, AVX2 and NEON tiles
// behind one driver. A tile computes NO outputs for NR rows of x at once, converting each 16
// weights to f32 once for all NR rows (1 row: 4 outputs, 2 rows: 2 outputs, 3 or 4 rows: one
// output), so decode reads the packed weights once and prefill runs them over x four rows at a
// time. Every (output, row) pair follows the order cpu_quant.h states whatever tile computes it,
// so a result does not depend on how many rows a step holds.
#include "backend/cpu/cpu_quant.h"

#include "core/half.h"
#include "core/quant.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__)
#define GPT_QUANT_AVX2 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#define GPT_QUANT_NEON 1
#include <arm_neon.h>
#endif

namespace gpt::cpu {

namespace {

// The operands of a quantized weight as the tiles read them.
struct Packed {
    const uint8_t *q;       // integer plane: row o at q + o * row_bytes
    const uint16_t *scales; // [rows][groups] f16
    uint64_t row_bytes, k, g, groups;
    float *scratch; // k floats: the portable kernel's widened row
    const uint8_t *row(uint64_t o) const { return q + o * row_bytes; }
    uint16_t scale(uint64_t o, uint64_t gi) const { return scales[o * groups + gi]; }
};

// ---------------------------------------------------------------------------- portable

#if defined(FP_FAST_FMAF)
constexpr bool kPortableFused = true;
inline float mac(float a, float b, float c) { return std::fma(a, b, c); }
#else
constexpr bool kPortableFused = false; // std::fma would be a library call per element
inline float mac(float a, float b, float c) { return a * b + c; }
#endif

// A row's integers as f32 (exact: small integers).
template <DType T> inline void portable_widen(const uint8_t *row, uint64_t k, float *qf) {
    if constexpr (T == DType::Q8) {
        const int8_t *q = reinterpret_cast<const int8_t *>(row);
        for (uint64_t c = 0; c < k; c++) qf[c] = (float)q[c];
    } else {
        for (uint64_t c = 0; c < k / 2; c++) {
            qf[2 * c] = (float)((int)(row[c] & 15) - 8);
            qf[2 * c + 1] = (float)((int)(row[c] >> 4) - 8);
        }
    }
}

// Each output's integers are widened once into scratch and used for all NR rows (one row of
// q8 reads them in place: there the buffer's stores and loads cost more than the conversion
// they save); the loops are plain arrays of partial sums the compiler vectorises.
struct PortableTiles {
    // out[i * NR + r] = output o + i for row r of x ([NR][k]).
    template <DType T, int NO, int NR> static void tile(const Packed &m, uint64_t o, const float *x, float *out) {
        constexpr bool in_place = T == DType::Q8 && NR == 1;
        for (int i = 0; i < NO; i++) {
            const int8_t *q8 = reinterpret_cast<const int8_t *>(m.row(o + i));
            if (!in_place) portable_widen<T>(m.row(o + i), m.k, m.scratch);
            float t[NR][8] = {};
            for (uint64_t gi = 0, c0 = 0; gi < m.groups; gi++, c0 += m.g) {
                const float s = f16_to_f32(m.scale(o + i, gi));
                for (int r = 0; r < NR; r++) {
                    const float *xg = x + r * m.k + c0;
                    float p[16] = {0};
                    for (uint64_t c = c0; c < c0 + m.g; c += 16)
                        for (int l = 0; l < 16; l++)
                            p[l] = mac(in_place ? (float)q8[c + l] : m.scratch[c + l], xg[c - c0 + l], p[l]);
                    for (int l = 0; l < 8; l++) t[r][l] = mac(p[l] + p[l + 8], s, t[r][l]);
                }
            }
            for (int r = 0; r < NR; r++)
                out[i * NR + r] = ((t[r][0] + t[r][4]) + (t[r][2] + t[r][6])) + ((t[r][1] + t[r][5]) + (t[r][3] + t[r][7]));
        }
    }
};

// ---------------------------------------------------------------------------- AVX2

#if GPT_QUANT_AVX2
#define GPT_AVX2 __attribute__((target("avx2,fma,f16c")))

// Columns [c, c + 16) of a row as f32: w0 holds lanes 0-7, w1 lanes 8-15.
template <DType T> GPT_AVX2 inline __attribute__((always_inline)) void avx2_load16(const uint8_t *row, uint64_t c, __m256 &w0,
                                                                                 __m256 &w1) {
    if constexpr (T == DType::Q8) { // two 8-byte loads widen in one instruction each
        w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(row + c))));
        w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(row + c + 8))));
    } else {
        // 8 bytes = 16 nibbles; column 2i is byte i's low nibble: interleave low and high.
        const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(row + c / 2));
        const __m128i mask = _mm_set1_epi8(15);
        const __m128i lo = _mm_and_si128(b, mask), hi = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
        const __m128i q = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), _mm_set1_epi8(8)); // 16 int8, column order
        w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
        w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)));
    }
}

// ((t0 + t4) + (t2 + t6)) + ((t1 + t5) + (t3 + t7))
GPT_AVX2 inline __attribute__((always_inline)) float avx2_reduce(__m256 t) {
    const __m128 u = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)); // t[l] + t[l + 4]
    const __m128 v = _mm_add_ps(u, _mm_movehl_ps(u, u));                                  // u0 + u2, u1 + u3
    return _mm_cvtss_f32(_mm_add_ss(v, _mm_shuffle_ps(v, v, 1)));
}

struct Avx2Tiles {
    template <DType T, int NO, int NR> GPT_AVX2 static void tile(const Packed &m, uint64_t o, const float *x, float *out) {
        __m256 t[NO][NR];
        for (auto &ti : t)
            for (auto &v : ti) v = _mm256_setzero_ps();
        for (uint64_t gi = 0, c0 = 0; gi < m.groups; gi++, c0 += m.g) {
            __m256 p0[NO][NR], p1[NO][NR]; // partial sums of lanes 0-7 and 8-15
            for (int i = 0; i < NO; i++)
                for (int r = 0; r < NR; r++) p0[i][r] = p1[i][r] = _mm256_setzero_ps();
            for (uint64_t c = c0; c < c0 + m.g; c += 16)
                for (int i = 0; i < NO; i++) {
                    __m256 w0, w1;
                    avx2_load16<T>(m.row(o + i), c, w0, w1);
                    for (int r = 0; r < NR; r++) {
                        p0[i][r] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + r * m.k + c), p0[i][r]);
                        p1[i][r] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + r * m.k + c + 8), p1[i][r]);
                    }
                }
            for (int i = 0; i < NO; i++) {
                const __m256 s = _mm256_cvtph_ps(_mm_set1_epi16((short)m.scale(o + i, gi)));
                for (int r = 0; r < NR; r++) t[i][r] = _mm256_fmadd_ps(_mm256_add_ps(p0[i][r], p1[i][r]), s, t[i][r]);
            }
        }
        for (int i = 0; i < NO; i++)
            for (int r = 0; r < NR; r++) out[i * NR + r] = avx2_reduce(t[i][r]);
    }
};
#endif

// ---------------------------------------------------------------------------- NEON

#if GPT_QUANT_NEON
// Columns [c, c + 16) of a row as f32: w[j] holds lanes 4j to 4j + 3.
template <DType T> inline void neon_load16(const uint8_t *row, uint64_t c, float32x4_t w[4]) {
    int8x16_t q; // in column order
    if constexpr (T == DType::Q8) {
        q = vld1q_s8(reinterpret_cast<const int8_t *>(row + c));
    } else {
        // 8 bytes = 16 nibbles; column 2i is byte i's low nibble: interleave low and high.
        const uint8x8_t b = vld1_u8(row + c / 2);
        const uint8x8_t lo = vand_u8(b, vdup_n_u8(15)), hi = vshr_n_u8(b, 4);
        q = vsubq_s8(vreinterpretq_s8_u8(vcombine_u8(vzip1_u8(lo, hi), vzip2_u8(lo, hi))), vdupq_n_s8(8));
    }
    const int16x8_t a = vmovl_s8(vget_low_s8(q)), b = vmovl_high_s8(q);
    w[0] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(a)));
    w[1] = vcvtq_f32_s32(vmovl_high_s16(a));
    w[2] = vcvtq_f32_s32(vmovl_s16(vget_low_s16(b)));
    w[3] = vcvtq_f32_s32(vmovl_high_s16(b));
}

struct NeonTiles {
    template <DType T, int NO, int NR> static void tile(const Packed &m, uint64_t o, const float *x, float *out) {
        float32x4_t t[NO][NR][2]; // lanes 0-3 and 4-7 of the running totals
        for (int i = 0; i < NO; i++)
            for (int r = 0; r < NR; r++) t[i][r][0] = t[i][r][1] = vdupq_n_f32(0.0f);
        for (uint64_t gi = 0, c0 = 0; gi < m.groups; gi++, c0 += m.g) {
            float32x4_t p[NO][NR][4]; // partial sums of lanes 4j to 4j + 3
            for (int i = 0; i < NO; i++)
                for (int r = 0; r < NR; r++)
                    for (int j = 0; j < 4; j++) p[i][r][j] = vdupq_n_f32(0.0f);
            for (uint64_t c = c0; c < c0 + m.g; c += 16)
                for (int i = 0; i < NO; i++) {
                    float32x4_t w[4];
                    neon_load16<T>(m.row(o + i), c, w);
                    for (int r = 0; r < NR; r++)
                        for (int j = 0; j < 4; j++) p[i][r][j] = vfmaq_f32(p[i][r][j], w[j], vld1q_f32(x + r * m.k + c + 4 * j));
                }
            for (int i = 0; i < NO; i++) {
                // FCVT (exact, as f16_to_f32)
                const float s = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(m.scale(o + i, gi)))), 0);
                for (int r = 0; r < NR; r++) {
                    t[i][r][0] = vfmaq_n_f32(t[i][r][0], vaddq_f32(p[i][r][0], p[i][r][2]), s); // lanes l + (l + 8)
                    t[i][r][1] = vfmaq_n_f32(t[i][r][1], vaddq_f32(p[i][r][1], p[i][r][3]), s);
                }
            }
        }
        for (int i = 0; i < NO; i++)
            for (int r = 0; r < NR; r++) {
                const float32x4_t u = vaddq_f32(t[i][r][0], t[i][r][1]);              // t[l] + t[l + 4]
                const float32x2_t v = vadd_f32(vget_low_f32(u), vget_high_f32(u)); // u0 + u2, u1 + u3
                out[i * NR + r] = vget_lane_f32(v, 0) + vget_lane_f32(v, 1);
            }
    }
};
#endif

// ---------------------------------------------------------------------------- driver

// Rows [0, NR) of x for outputs [o0, o1): NO outputs per tile, then single outputs.
template <class Tiles, DType T, int NO, int NR>
void run_rows(const Packed &m, const float *x, const float *bias, uint64_t o0, uint64_t o1, float *y, uint64_t y_stride) {
    float out[NO * NR];
    auto store = [&](uint64_t o, int no) {
        for (int i = 0; i < no; i++) {
            const float b = bias ? bias[o + i] : 0.0f;
            for (int r = 0; r < NR; r++) y[r * y_stride + o + i] = out[i * NR + r] + b;
        }
    };
    uint64_t o = o0;
    for (; o + NO <= o1; o += NO) {
        Tiles::template tile<T, NO, NR>(m, o, x, out);
        store(o, NO);
    }
    for (; o < o1; o++) {
        Tiles::template tile<T, 1, NR>(m, o, x, out);
        store(o, 1);
    }
}

// Outputs in slices of kOutputSlice (their packed rows stay in L2 while every row block of x
// passes over them), rows of x four at a time.
constexpr uint64_t kOutputSlice = 64;

template <class Tiles, DType T>
void run(const Packed &m, const float *x, uint32_t n_rows, const float *bias, uint64_t o_begin, uint64_t o_end, float *y,
         uint64_t y_stride) {
    for (uint64_t s0 = o_begin; s0 < o_end; s0 += kOutputSlice) {
        const uint64_t s1 = std::min(o_end, s0 + kOutputSlice);
        for (uint32_t r0 = 0; r0 < n_rows; r0 += 4) {
            const float *xr = x + (uint64_t)r0 * m.k;
            float *yr = y + (uint64_t)r0 * y_stride;
            switch (std::min(4u, n_rows - r0)) {
            case 1: run_rows<Tiles, T, 4, 1>(m, xr, bias, s0, s1, yr, y_stride); break;
            case 2: run_rows<Tiles, T, 2, 2>(m, xr, bias, s0, s1, yr, y_stride); break;
            case 3: run_rows<Tiles, T, 1, 3>(m, xr, bias, s0, s1, yr, y_stride); break;
            default: run_rows<Tiles, T, 1, 4>(m, xr, bias, s0, s1, yr, y_stride); break;
            }
        }
    }
}

template <class Tiles>
void run_dtype(const Packed &m, DType t, const float *x, uint32_t n_rows, const float *bias, uint64_t o_begin,
               uint64_t o_end, float *y, uint64_t y_stride) {
    if (t == DType::Q8) run<Tiles, DType::Q8>(m, x, n_rows, bias, o_begin, o_end, y, y_stride);
    else run<Tiles, DType::Q4>(m, x, n_rows, bias, o_begin, o_end, y, y_stride);
}

} // namespace

bool have_avx2_fma_f16c() {
#if GPT_QUANT_AVX2
    // F16C from CPUID leaf 1 (ECX bit 29): clang (14) has no "f16c" for __builtin_cpu_supports.
    static const bool yes = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && ((ecx >> 29) & 1u);
        return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return yes;
#else
    return false;
#endif
}

bool quant_kernel_available(QuantKernel k) {
    if (k == QuantKernel::Portable) return true;
#if GPT_QUANT_AVX2
    return have_avx2_fma_f16c();
#elif GPT_QUANT_NEON
    return true;
#else
    return false;
#endif
}

QuantKernel best_quant_kernel() {
    static const QuantKernel best = quant_kernel_available(QuantKernel::Simd) ? QuantKernel::Simd : QuantKernel::Portable;
    return best;
}

bool quant_portable_fused() { return kPortableFused; }

void quant_matmul(QuantKernel kernel, const float *x, uint32_t n_rows, const Weight &w, const float *bias,
                  uint64_t o_begin, uint64_t o_end, float *y, uint64_t y_stride, float *scratch) {
    const uint64_t row_bytes = packed_row_bytes(w.dtype, w.cols);
    const Packed m{static_cast<const uint8_t *>(w.data), quant_scales(w), row_bytes, w.cols, w.group, w.cols / w.group, scratch};
    if (kernel == QuantKernel::Simd && quant_kernel_available(kernel)) {
#if GPT_QUANT_AVX2
        return run_dtype<Avx2Tiles>(m, w.dtype, x, n_rows, bias, o_begin, o_end, y, y_stride);
#elif GPT_QUANT_NEON
        return run_dtype<NeonTiles>(m, w.dtype, x, n_rows, bias, o_begin, o_end, y, y_stride);
#endif
    }
    run_dtype<PortableTiles>(m, w.dtype, x, n_rows, bias, o_begin, o_end, y, y_stride);
}

} // namespace gpt::cpu
