// cpu_ops.cpp - plain loops; the hot dot product is compiled twice on x86-64 (AVX2+FMA and
// baseline) and picked at load time, so one binary runs everywhere and fast where it can.
#include "backend/cpu/cpu_ops.h"

#include "core/half.h"

#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define GPT_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GPT_MULTIVERSION
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define GPT_X86_SIMD 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace gpt::cpu {

void widen(const void *src, DType dtype, uint64_t n, float *dst) {
    switch (dtype) {
    case DType::F32: std::memcpy(dst, src, n * sizeof(float)); break;
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
    }
}

// 32 independent partial sums (four AVX2 registers) hide the FMA and load latency; they are
// added as a tree, which keeps a fixed order (no -ffast-math) yet vectorises. Inlined into
// the multiversioned callers below, so it is compiled for each of their targets.
static inline __attribute__((always_inline)) float dot_inline(const float *a, const float *b, uint64_t n) {
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

GPT_MULTIVERSION float dot(const float *a, const float *b, uint64_t n) { return dot_inline(a, b, n); }

// y[r][o] = x[r] . w[o] for o < n_out: one call per block of outputs rather than one
// (indirect, multiversioned) call per dot product, which cost ~4% of a small model's decode.
GPT_MULTIVERSION static void dot_rows(const float *x, uint32_t n_rows, const float *w, uint64_t k, uint64_t n_out,
                                      float *y, uint64_t y_stride) {
    for (uint64_t o = 0; o < n_out; o++)
        for (uint32_t r = 0; r < n_rows; r++) y[r * y_stride + o] = dot_inline(x + (uint64_t)r * k, w + o * k, k);
}

#if GPT_X86_SIMD
// 16-bit weights straight from memory: F16C converts eight halves per instruction, bf16 is a
// 16-bit shift. Used when the CPU has AVX2, FMA and F16C (checked once at run time).
__attribute__((target("avx2,fma,f16c"))) static float dot_16_avx2(const float *a, const uint16_t *b, uint64_t n,
                                                                  bool bf16) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m128i h0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + i));
        const __m128i h1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + i + 8));
        __m256 w0, w1;
        if (bf16) {
            w0 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h0), 16));
            w1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h1), 16));
        } else {
            w0 = _mm256_cvtph_ps(h0);
            w1 = _mm256_cvtph_ps(h1);
        }
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), w0, acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), w1, acc1);
    }
    __m256 acc = _mm256_add_ps(acc0, acc1);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    s4 = _mm_hadd_ps(s4, s4);
    s4 = _mm_hadd_ps(s4, s4);
    float s = _mm_cvtss_f32(s4);
    for (; i < n; i++) s += a[i] * (bf16 ? bf16_to_f32(b[i]) : f16_to_f32(b[i]));
    return s;
}

static bool have_avx2_f16c() {
    // F16C from CPUID leaf 1 (ECX bit 29): clang (14) has no "f16c" for __builtin_cpu_supports.
    static const bool yes = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && ((ecx >> 29) & 1u);
        return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }();
    return yes;
}
#endif

void matmul_block(const float *x, uint32_t n_rows, const Weight &w, const float *bias, uint64_t o_begin,
                  uint64_t o_end, float *y, uint64_t y_stride, float *scratch) {
    const uint64_t k = w.cols;
#if GPT_X86_SIMD
    // Few rows (decode): dot products on the 16-bit weights directly, no widening pass.
    if (w.dtype != DType::F32 && n_rows <= 4 && have_avx2_f16c()) {
        const uint16_t *base = static_cast<const uint16_t *>(w.data);
        for (uint64_t o = o_begin; o < o_end; o++) {
            const float b = bias ? bias[o] : 0.0f;
            for (uint32_t r = 0; r < n_rows; r++)
                y[r * y_stride + o] = dot_16_avx2(x + (uint64_t)r * k, base + o * k, k, w.dtype == DType::BF16) + b;
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

float silu(float x) { return x / (1.0f + std::exp(-x)); }

void rope_rotate_half(float *v, uint32_t head_dim, const float *cos, const float *sin) {
    const uint32_t half = head_dim / 2;
    for (uint32_t i = 0; i < half; i++) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cos[i] - b * sin[i];
        v[i + half] = b * cos[i] + a * sin[i];
    }
}

// Multiversioned like dot_rows: the score dot products are inlined and the value sum vectorised.
GPT_MULTIVERSION void attend(const float *q, const float *k, const float *v, uint32_t n_keys, uint32_t hd, float scale,
                             float *scores, float *out) {
    float mx = -INFINITY;
    for (uint32_t t = 0; t < n_keys; t++) {
        scores[t] = dot_inline(q, k + (uint64_t)t * hd, hd) * scale;
        if (scores[t] > mx) mx = scores[t];
    }
    float sum = 0;
    for (uint32_t t = 0; t < n_keys; t++) {
        scores[t] = std::exp(scores[t] - mx);
        sum += scores[t];
    }
    const float inv = 1.0f / sum;
    for (uint32_t i = 0; i < hd; i++) out[i] = 0;
    for (uint32_t t = 0; t < n_keys; t++) {
        const float p = scores[t] * inv;
        const float *vt = v + (uint64_t)t * hd;
        for (uint32_t i = 0; i < hd; i++) out[i] += p * vt[i];
    }
}

} // namespace gpt::cpu
