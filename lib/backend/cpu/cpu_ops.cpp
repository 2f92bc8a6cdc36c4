// cpu_ops.cpp - plain loops; the hot dot product is compiled twice on x86-64 (AVX2+FMA and
// baseline) and picked at load time, so one binary runs everywhere and fast where it can.
// On aarch64, where Advanced SIMD (NEON) is part of the base architecture, the dot products,
// the f16/bf16 widening and attention's value sum have NEON versions chosen at compile time.
// The scalar code (dot_scalar, the loops in widen and attend) is the reference they follow.
// f16/bf16 matmuls on x86-64 with AVX2 + FMA + F16C have their own kernel (matmul_16: one
// per-pair arithmetic for every row count, register tiles for prefill).
// Quantized (q8/q4) weights go to cpu_quant.cpp's kernels.
#include "backend/cpu/cpu_ops.h"

#include "backend/cpu/cpu_quant.h"

#include "core/half.h"
#include "core/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define GPT_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GPT_MULTIVERSION
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define GPT_X86_SIMD 1
#include <immintrin.h>
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#define GPT_NEON 1
#include <arm_neon.h>
#endif

namespace gpt::cpu {

#if GPT_NEON
// Elements [i, i + 8) of a row of dtype D as two f32x4: f16 by FCVTL (exact: every half is a
// float), bf16 by a 16-bit left shift of each lane (the same bits as bf16_to_f32).
template <DType D> static inline void neon_load8(const void *row, uint64_t i, float32x4_t &lo, float32x4_t &hi) {
    if constexpr (D == DType::F32) {
        lo = vld1q_f32(static_cast<const float *>(row) + i);
        hi = vld1q_f32(static_cast<const float *>(row) + i + 4);
    } else {
        const uint16x8_t h = vld1q_u16(static_cast<const uint16_t *>(row) + i);
        if constexpr (D == DType::F16) {
            const float16x8_t f = vreinterpretq_f16_u16(h);
            lo = vcvt_f32_f16(vget_low_f16(f));
            hi = vcvt_high_f32_f16(f);
        } else {
            lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
            hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
        }
    }
}
// Element i of a row of dtype D as f32 (the scalar tails).
template <DType D> static inline float element(const void *row, uint64_t i) {
    if constexpr (D == DType::F32) return static_cast<const float *>(row)[i];
    else if constexpr (D == DType::F16) return f16_to_f32(static_cast<const uint16_t *>(row)[i]);
    else return bf16_to_f32(static_cast<const uint16_t *>(row)[i]);
}
template <DType D> static void neon_widen(const void *src, uint64_t n, float *dst) {
    uint64_t i = 0;
    for (float32x4_t lo, hi; i + 8 <= n; i += 8) {
        neon_load8<D>(src, i, lo, hi);
        vst1q_f32(dst + i, lo);
        vst1q_f32(dst + i + 4, hi);
    }
    for (; i < n; i++) dst[i] = element<D>(src, i);
}
#endif

void widen(const void *src, DType dtype, uint64_t n, float *dst) {
    switch (dtype) {
    case DType::Q8:
    case DType::Q4: break; // rows of quantized matrices go through embedding_row / matmul_block
    case DType::F32: std::memcpy(dst, src, n * sizeof(float)); break;
#if GPT_NEON
    case DType::F16: neon_widen<DType::F16>(src, n, dst); break;
    case DType::BF16: neon_widen<DType::BF16>(src, n, dst); break;
#else
    case DType::F16: {
        const uint16_t *s = static_cast<const uint16_t *>(src);
        for (uint64_t i = 0; i < n; i++) dst[i] = f16_to_f32(s[i]);
        break;
    }
    case DType::BF16: {
        const uint16_t *s = static_cast<const uint16_t *>(src);
        for (uint64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(s[i]);
        break;
    }
#endif
    }
}

// The reference dot product. 32 independent partial sums (four AVX2 registers) hide the FMA
// and load latency; they are added as a tree, which keeps a fixed order (no -ffast-math) yet
// vectorises. Inlined into the multiversioned callers below, so it is compiled for each of
// their targets. (Unused on aarch64, where dot_neon follows it.)
[[maybe_unused]] static inline __attribute__((always_inline)) float dot_scalar(const float *a, const float *b,
                                                                               uint64_t n) {
    float acc[32] = {0};
    uint64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 32; j++) acc[j] += a[i + j] * b[i + j];
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    for (int j = 0; j < 16; j++) acc[j] += acc[j + 16];
    for (int j = 0; j < 8; j++) acc[j] += acc[j + 8];
    for (int j = 0; j < 4; j++) acc[j] += acc[j + 4];
    float s = (acc[0] + acc[2]) + (acc[1] + acc[3]);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

#if GPT_NEON
// dot_scalar's 32 partial sums in eight NEON registers (acc[j] is lane j % 4 of register
// j / 4), the same tail of eight and the same addition tree, with fused multiply-adds. b is
// f32, or f16/bf16 widened in registers: the same arithmetic on the same values as widen()
// followed by the f32 version, so decode (16-bit weights read directly) and prefill (rows
// widened once) give identical results.
template <DType D> static inline float dot_neon(const float *a, const void *b, uint64_t n) {
    float32x4_t acc[8];
    for (auto &r : acc) r = vdupq_n_f32(0.0f);
    uint64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int j = 0; j < 8; j += 2) {
            float32x4_t lo, hi;
            neon_load8<D>(b, i + 4 * j, lo, hi);
            acc[j] = vfmaq_f32(acc[j], vld1q_f32(a + i + 4 * j), lo);
            acc[j + 1] = vfmaq_f32(acc[j + 1], vld1q_f32(a + i + 4 * j + 4), hi);
        }
    for (; i + 8 <= n; i += 8) {
        float32x4_t lo, hi;
        neon_load8<D>(b, i, lo, hi);
        acc[0] = vfmaq_f32(acc[0], vld1q_f32(a + i), lo);
        acc[1] = vfmaq_f32(acc[1], vld1q_f32(a + i + 4), hi);
    }
    for (int j = 0; j < 4; j++) acc[j] = vaddq_f32(acc[j], acc[j + 4]); // acc[j] += acc[j + 16]
    for (int j = 0; j < 2; j++) acc[j] = vaddq_f32(acc[j], acc[j + 2]); // acc[j] += acc[j + 8]
    const float32x4_t r = vaddq_f32(acc[0], acc[1]);                     // acc[j] += acc[j + 4]
    float s = (vgetq_lane_f32(r, 0) + vgetq_lane_f32(r, 2)) + (vgetq_lane_f32(r, 1) + vgetq_lane_f32(r, 3));
    // Fused here too, explicitly: left to the compiler, contraction could differ between the
    // f32 and the 16-bit instances and break the identity above.
    for (; i < n; i++) s = std::fma(a[i], element<D>(b, i), s);
    return s;
}
#endif

static inline __attribute__((always_inline)) float dot_inline(const float *a, const float *b, uint64_t n) {
#if GPT_NEON
    return dot_neon<DType::F32>(a, b, n);
#else
    return dot_scalar(a, b, n);
#endif
}

GPT_MULTIVERSION float dot(const float *a, const float *b, uint64_t n) { return dot_inline(a, b, n); }

// y[r][o] = x[r] . w[o] for o < n_out: one call per block of outputs rather than one
// (indirect, multiversioned) call per dot product, which cost ~4% of a small model's decode.
GPT_MULTIVERSION static void dot_rows(const float *x, uint32_t n_rows, const float *w, uint64_t k, uint64_t n_out,
                                      float *y, uint64_t y_stride) {
    for (uint64_t o = 0; o < n_out; o++)
        for (uint32_t r = 0; r < n_rows; r++) y[r * y_stride + o] = dot_inline(x + (uint64_t)r * k, w + o * k, k);
}

#if GPT_X86_SIMD
// 16-bit weights on AVX2 + FMA + F16C (checked once at run time), read as stored: F16C converts
// eight halves per instruction, bf16 is a 16-bit shift. One (row, output) pair's arithmetic,
// shared by decode and prefill so that every batch size and split of the outputs gives the same
// bits: the products in blocks of 16, the first 8 of a block into accumulator 0 and the next 8
// into accumulator 1, then acc0 + acc1 summed across lanes in a fixed tree, then the last
// k % 16 products added in order with fused multiply-adds. Decode (up to 4 rows) takes a pair
// at a time; prefill tiles 3 rows of x by 2 weight rows, so a weight vector is loaded once for
// 3 rows and an x vector once for 2 weight rows, and FMAs rather than loads bound the loop.
#define GPT_AVX2 __attribute__((target("avx2,fma,f16c")))

template <DType D> GPT_AVX2 static inline __m256 load8(const uint16_t *row, uint64_t i) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(row + i));
    if constexpr (D == DType::F16) return _mm256_cvtph_ps(h);
    else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

template <DType D>
GPT_AVX2 static inline float finish_pair(__m256 acc0, __m256 acc1, const float *x, const uint16_t *w, uint64_t k) {
    const __m256 acc = _mm256_add_ps(acc0, acc1);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s4 = _mm_hadd_ps(s4, s4);
    s4 = _mm_hadd_ps(s4, s4);
    float s = _mm_cvtss_f32(s4);
    for (uint64_t i = k / 16 * 16; i < k; i++) s = std::fma(x[i], D == DType::F16 ? f16_to_f32(w[i]) : bf16_to_f32(w[i]), s);
    return s;
}

// y[r][o + c] for the R rows of x (stride k) and the C weight rows from o.
template <DType D, int R, int C>
GPT_AVX2 static void pairs_16(const float *x, const uint16_t *w, uint64_t k, uint64_t o, const float *bias, float *y,
                              uint64_t y_stride) {
    __m256 acc[R][C][2];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) acc[r][c][0] = acc[r][c][1] = _mm256_setzero_ps();
    for (uint64_t i = 0; i + 16 <= k; i += 16)
        for (int half = 0; half < 2; half++) {
            __m256 wv[C];
            for (int c = 0; c < C; c++) wv[c] = load8<D>(w + (o + c) * k, i + 8 * half);
            for (int r = 0; r < R; r++) {
                const __m256 xv = _mm256_loadu_ps(x + r * k + i + 8 * half);
                for (int c = 0; c < C; c++) acc[r][c][half] = _mm256_fmadd_ps(xv, wv[c], acc[r][c][half]);
            }
        }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            y[r * y_stride + o + c] = finish_pair<D>(acc[r][c][0], acc[r][c][1], x + r * k, w + (o + c) * k, k) +
                                      (bias ? bias[o + c] : 0.0f);
}

template <DType D>
GPT_AVX2 static void matmul_16(const float *x, uint32_t n_rows, const uint16_t *w, uint64_t k, const float *bias,
                               uint64_t o_begin, uint64_t o_end, float *y, uint64_t y_stride) {
    if (n_rows <= 4) { // decode: one weight stream at a time, which the hardware prefetcher follows
        for (uint64_t o = o_begin; o < o_end; o++)
            for (uint32_t r = 0; r < n_rows; r++)
                pairs_16<D, 1, 1>(x + (uint64_t)r * k, w, k, o, bias, y + (uint64_t)r * y_stride, y_stride);
        return;
    }
    // Chunks of weight rows (~256 KB) stay in L2 while every tile of x rows passes over them.
    const uint64_t chunk = std::max<uint64_t>(2, (256u << 10) / (k * 2) / 2 * 2);
    for (uint64_t o0 = o_begin; o0 < o_end; o0 += chunk) {
        const uint64_t o1 = std::min(o_end, o0 + chunk);
        for (uint32_t r = 0; r < n_rows;) {
            const float *xr = x + (uint64_t)r * k;
            float *yr = y + (uint64_t)r * y_stride;
            uint64_t o = o0;
            if (n_rows - r >= 3) {
                for (; o + 2 <= o1; o += 2) pairs_16<D, 3, 2>(xr, w, k, o, bias, yr, y_stride);
                for (; o < o1; o++) pairs_16<D, 3, 1>(xr, w, k, o, bias, yr, y_stride);
                r += 3;
            } else {
                for (; o + 2 <= o1; o += 2) pairs_16<D, 1, 2>(xr, w, k, o, bias, yr, y_stride);
                for (; o < o1; o++) pairs_16<D, 1, 1>(xr, w, k, o, bias, yr, y_stride);
                r += 1;
            }
        }
    }
}
#endif

void embedding_row(const Weight &w, uint64_t row, float *out) {
    if (is_quantized(w.dtype)) dequantize_row(w, row, out);
    else widen(static_cast<const uint8_t *>(w.data) + row * w.cols * dtype_bytes(w.dtype), w.dtype, w.cols, out);
}

void matmul_block(const float *x, uint32_t n_rows, const Weight &w, const float *bias, uint64_t o_begin,
                  uint64_t o_end, float *y, uint64_t y_stride, float *scratch) {
    const uint64_t k = w.cols;
    // Quantized weights: dot products straight from the packed bytes (cpu_quant.cpp).
    if (is_quantized(w.dtype)) return quant_matmul(best_quant_kernel(), x, n_rows, w, bias, o_begin, o_end, y, y_stride, scratch);
#if GPT_X86_SIMD
    // 16-bit weights read as stored, any number of rows (matmul_16).
    if ((w.dtype == DType::F16 || w.dtype == DType::BF16) && have_avx2_fma_f16c()) {
        const uint16_t *base = static_cast<const uint16_t *>(w.data);
        if (w.dtype == DType::F16) return matmul_16<DType::F16>(x, n_rows, base, k, bias, o_begin, o_end, y, y_stride);
        return matmul_16<DType::BF16>(x, n_rows, base, k, bias, o_begin, o_end, y, y_stride);
    }
#elif GPT_NEON
    // Few rows (decode): dot products on the 16-bit weights directly, no widening pass (the
    // same results as the widening path below: see dot_neon).
    if ((w.dtype == DType::F16 || w.dtype == DType::BF16) && n_rows <= 4) {
        const uint16_t *base = static_cast<const uint16_t *>(w.data);
        const bool bf16 = w.dtype == DType::BF16;
        for (uint64_t o = o_begin; o < o_end; o++) {
            const float b = bias ? bias[o] : 0.0f;
            for (uint32_t r = 0; r < n_rows; r++) {
                const float *xr = x + (uint64_t)r * k;
                y[r * y_stride + o] = (bf16 ? dot_neon<DType::BF16>(xr, base + o * k, k)
                                            : dot_neon<DType::F16>(xr, base + o * k, k)) + b;
            }
        }
        return;
    }
#endif
    if (w.dtype == DType::F32) {
        dot_rows(x, n_rows, static_cast<const float *>(w.data) + o_begin * k, k, o_end - o_begin, y + o_begin, y_stride);
        if (bias)
            for (uint32_t r = 0; r < n_rows; r++)
                for (uint64_t o = o_begin; o < o_end; o++) y[r * y_stride + o] += bias[o];
        return;
    }
    for (uint64_t o = o_begin; o < o_end; o++) {
        widen(static_cast<const uint8_t *>(w.data) + o * k * 2, w.dtype, k, scratch);
        const float b = bias ? bias[o] : 0.0f;
        for (uint32_t r = 0; r < n_rows; r++) y[r * y_stride + o] = dot(x + (uint64_t)r * k, scratch, k) + b;
    }
}

void layer_norm(const float *x, const float *w, const float *b, float eps, uint32_t d, float *out) {
    double mean = 0, var = 0;
    for (uint32_t i = 0; i < d; i++) mean += x[i];
    mean /= d;
    for (uint32_t i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= d;
    const float inv = (float)(1.0 / std::sqrt(var + eps));
    for (uint32_t i = 0; i < d; i++) out[i] = (float)((x[i] - mean) * inv) * w[i] + (b ? b[i] : 0.0f);
}

void rms_norm(const float *x, const float *w, float eps, uint32_t d, float *out) {
    double ss = 0;
    for (uint32_t i = 0; i < d; i++) ss += (double)x[i] * x[i];
    const float inv = (float)(1.0 / std::sqrt(ss / d + eps));
    for (uint32_t i = 0; i < d; i++) out[i] = x[i] * inv * w[i];
}

float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; // sqrt(2 / pi)
    return 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

float gelu_erf(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f)); }

float silu(float x) { return x / (1.0f + std::exp(-x)); }

float activate(Activation a, float x) {
    switch (a) {
    case Activation::NONE: return x;
    case Activation::GELU_TANH: return gelu_tanh(x);
    case Activation::GELU_ERF: return gelu_erf(x);
    case Activation::RELU: return x > 0.0f ? x : 0.0f;
    case Activation::SILU: return silu(x);
    }
    return x;
}

void rope_rotate_half(float *v, uint32_t rot_dim, const float *cos, const float *sin) {
    const uint32_t half = rot_dim / 2;
    for (uint32_t i = 0; i < half; i++) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cos[i] - b * sin[i];
        v[i + half] = b * cos[i] + a * sin[i];
    }
}

// Multiversioned like dot_rows: the score dot products are inlined and the value sum vectorised
// (on aarch64: dot_neon and the NEON value sum).
GPT_MULTIVERSION void attend(const float *q, const float *k, const float *v, uint32_t n_keys, uint32_t hd, float scale,
                             float softcap, float *scores, float *out) {
    float mx = -INFINITY;
    for (uint32_t t = 0; t < n_keys; t++) {
        scores[t] = dot_inline(q, k + (uint64_t)t * hd, hd) * scale;
        if (softcap > 0) scores[t] = softcap * std::tanh(scores[t] / softcap);
        if (scores[t] > mx) mx = scores[t];
    }
    float sum = 0;
    for (uint32_t t = 0; t < n_keys; t++) {
        scores[t] = std::exp(scores[t] - mx);
        sum += scores[t];
    }
    const float inv = 1.0f / sum;
#if GPT_NEON
    // The value sum below, 16 (then 4) columns at a time held in registers across all keys:
    // each column is the same sum in the same order, with fused multiply-adds.
    for (uint32_t t = 0; t < n_keys; t++) scores[t] *= inv;
    uint32_t i = 0;
    for (; i + 16 <= hd; i += 16) {
        float32x4_t o0 = vdupq_n_f32(0.0f), o1 = o0, o2 = o0, o3 = o0;
        for (uint32_t t = 0; t < n_keys; t++) {
            const float *vt = v + (uint64_t)t * hd + i;
            o0 = vfmaq_n_f32(o0, vld1q_f32(vt), scores[t]);
            o1 = vfmaq_n_f32(o1, vld1q_f32(vt + 4), scores[t]);
            o2 = vfmaq_n_f32(o2, vld1q_f32(vt + 8), scores[t]);
            o3 = vfmaq_n_f32(o3, vld1q_f32(vt + 12), scores[t]);
        }
        vst1q_f32(out + i, o0);
        vst1q_f32(out + i + 4, o1);
        vst1q_f32(out + i + 8, o2);
        vst1q_f32(out + i + 12, o3);
    }
    for (; i + 4 <= hd; i += 4) {
        float32x4_t o0 = vdupq_n_f32(0.0f);
        for (uint32_t t = 0; t < n_keys; t++) o0 = vfmaq_n_f32(o0, vld1q_f32(v + (uint64_t)t * hd + i), scores[t]);
        vst1q_f32(out + i, o0);
    }
    for (; i < hd; i++) {
        float o = 0;
        for (uint32_t t = 0; t < n_keys; t++) o += scores[t] * v[(uint64_t)t * hd + i];
        out[i] = o;
    }
#else
    for (uint32_t i = 0; i < hd; i++) out[i] = 0;
    for (uint32_t t = 0; t < n_keys; t++) {
        const float p = scores[t] * inv;
        const float *vt = v + (uint64_t)t * hd;
        for (uint32_t i = 0; i < hd; i++) out[i] += p * vt[i];
    }
#endif
}

} // namespace gpt::cpu
