// quant_dot.cuh - device helpers for kernels that read weight-only quantized matrices (Q8, Q4:
// lib/core/quant.h's layout, 16-byte chunks of 16 q8 or 32 q4 values, one group each):
// exact dequantization into f32 registers with one FFMA per element, the chunk walk, the
// tensor-core fragments, and x staged as int8 for integer dot products (DP4A).
//
// The trick (no I2F, a quarter-rate instruction): a bit field n placed at mantissa bit p of a
// float whose exponent is 23 - p reads as f = 2^(23 - p) + n. Then
//     fma(f, s, -(2^(23 - p) + z) * s) == (n - z) * s     exactly,
// because the constant (2^(23 - p) + z) * s fits a float's 24 bits (it spans 21 - p bits for
// z = 8 and 17 - p bits for z = 128, times the 11 bits of an f16 scale: p >= 8 for q4, p = 8
// for q8) and FMA rounds once, the exact result (n - z) * s fitting too. So each element costs
// a LOP3 (or PRMT) and one FFMA, with the scale applied: q * scale exactly as the CPU's
// dequantize_row gives it.
//
// The element helpers compile for the host too (GPT_QUANT_HD), so tests check them
// exhaustively without a GPU; the chunk-level ones are CUDA only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include "cluster.cuh"
#include "common.cuh"
#define GPT_QUANT_HD __host__ __device__ __forceinline__
#else
#define GPT_QUANT_HD inline
#endif

namespace gpt_cuda {

GPT_QUANT_HD float quant_bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}
// PRMT: byte i of the result is byte (sel >> 4i) & 7 of the pair {x (bytes 0-3), y (4-7)}.
GPT_QUANT_HD uint32_t quant_byte_perm(uint32_t x, uint32_t y, uint32_t sel) {
#ifdef __CUDA_ARCH__
    return __byte_perm(x, y, sel);
#else
    const uint64_t both = (uint64_t)y << 32 | x;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) r |= (uint32_t)(both >> (8 * ((sel >> (4 * i)) & 7)) & 0xFF) << (8 * i);
    return r;
#endif
}

// A group's scale s and the FFMA constants for its positions: q4 at bits 8, 12 and 16
// (-(2^15 + 8) s, -(2^11 + 8) s, -(2^7 + 8) s), q8 at bit 8 (-(2^15 + 128) s in c8).
struct QuantScale {
    float s, c8, c12, c16;
};
GPT_QUANT_HD QuantScale quant_scale(float s, bool q4) {
    return {s, (q4 ? -32776.0f : -32896.0f) * s, -2056.0f * s, -136.0f * s};
}
// Elements 0..7 of a q4 word (element e in bits 4e .. 4e + 3, stored as q + 8), times the scale.
GPT_QUANT_HD void q4_word(uint32_t w, const QuantScale &k, float *out) {
    const uint32_t hi = w >> 12, lo = w << 12; // elements 5-7 and 0-1 moved into bits 8-19
    auto at8 = [&](uint32_t v) { return fmaf(quant_bits_float(0x47000000u | (v & 0x00000F00u)), k.s, k.c8); };
    auto at12 = [&](uint32_t v) { return fmaf(quant_bits_float(0x45000000u | (v & 0x0000F000u)), k.s, k.c12); };
    auto at16 = [&](uint32_t v) { return fmaf(quant_bits_float(0x43000000u | (v & 0x000F0000u)), k.s, k.c16); };
    out[0] = at12(lo);
    out[1] = at16(lo);
    out[2] = at8(w);
    out[3] = at12(w);
    out[4] = at16(w);
    out[5] = at8(hi);
    out[6] = at12(hi);
    out[7] = at16(hi);
}
// Elements 0..3 of a q8 word (byte e = element e, an int8), times the scale.
GPT_QUANT_HD void q8_word(uint32_t w, const QuantScale &k, float *out) {
    const uint32_t f = w ^ 0x80808080u; // q + 128, unsigned
    // PRMT builds the bytes [0, byte e of f, 0, 0x47]: the float 2^15 + (q + 128).
    out[0] = fmaf(quant_bits_float(quant_byte_perm(f, 0x47000000u, 0x7404)), k.s, k.c8);
    out[1] = fmaf(quant_bits_float(quant_byte_perm(f, 0x47000000u, 0x7414)), k.s, k.c8);
    out[2] = fmaf(quant_bits_float(quant_byte_perm(f, 0x47000000u, 0x7424)), k.s, k.c8);
    out[3] = fmaf(quant_bits_float(quant_byte_perm(f, 0x47000000u, 0x7434)), k.s, k.c8);
}

// ---- Tensor-core fragments (gemv_quant_mma.cu): mma.sync m16n8k16, f16 inputs, f32 sums.
// The PTX ISA's fragment layout (lane = 4 gid + tid): A (16 x 16, row-major) register i of a
// lane holds row gid + 8 (i & 1), k slots 2 tid + 8 (i >> 1) and + 1 (low, high half); B
// (16 x 8) register i holds column gid, k slots 2 tid + 8 i and + 1; D holds row gid + 8 (i >> 1),
// column 2 tid + (i & 1). Here A = 16 weight rows, B = up to 4 rows of x (columns 0-3).
// The k slots of one weight row come from the 4 lanes of its gid, so lane tid brings word
// tid of a 16-byte chunk (one group: exactness needs one scale per mma). Which element of
// the word sits in which slot is free as long as x follows it; the choice below makes each
// unpack one LOP3 (plus a shift for half of them):
//   q4, word tid (chunk elements 8 tid .. 8 tid + 7), mma j of 2: register pair (0 | 2) =
//   elements (8 tid + 2 j, 8 tid + 2 j + 4) | (8 tid + 2 j + 1, 8 tid + 2 j + 5);
//   q8, word tid (chunk elements 4 tid .. 4 tid + 3), one mma: (4 tid, 4 tid + 1) | (4 tid + 2, 4 tid + 3).
// The unpacked halves are exact integers offset into f16's [1024, 2048) binade (0x64xx):
// q4_mma_bits gives, per word, the raw f16x2 bit patterns P[0..3] for (j 0 reg 0, j 0 reg 2,
// j 1 reg 0, j 1 reg 2); the value q - 8 is P - 1032 for P[0], P[2] and P / 16 - 72 for P[1],
// P[3] (the nibble sits 4 bits up: 1024 + 16 n), each one exact f16 operation.
GPT_QUANT_HD void q4_mma_bits(uint32_t w, uint32_t *p) {
    const uint32_t hi = w >> 8;
    p[0] = (w & 0x000F000Fu) | 0x64006400u;  // elements 0, 4
    p[1] = (w & 0x00F000F0u) | 0x64006400u;  // elements 1, 5 (times 16)
    p[2] = (hi & 0x000F000Fu) | 0x64006400u; // elements 2, 6
    p[3] = (hi & 0x00F000F0u) | 0x64006400u; // elements 3, 7 (times 16)
}
// The f16x2 constants of those operations (both halves alike): 1032, 1 / 16, -72, 1152.
constexpr uint32_t kMmaHalf1032 = 0x64086408u, kMmaHalfSixteenth = 0x2C002C00u, kMmaHalfMinus72 = 0xD480D480u, kMmaHalf1152 = 0x64806480u;
// q8: the patterns of (element 0, 1) and (2, 3): 1024 + (q + 128); q = P - 1152.
GPT_QUANT_HD void q8_mma_bits(uint32_t w, uint32_t *p) {
    const uint32_t f = w ^ 0x80808080u;
    p[0] = quant_byte_perm(f, 0x64646464u, 0x4140);
    p[1] = quant_byte_perm(f, 0x64646464u, 0x4342);
}
// x's B registers for a q4 chunk: lane tid holds x elements 8 tid .. 8 tid + 7 of the chunk
// as four f16x2 words u[0..3] (memory order); b[2 j + i] is register i of mma j.
GPT_QUANT_HD void q4_mma_x(const uint32_t *u, uint32_t *b) {
    b[0] = quant_byte_perm(u[0], u[2], 0x5410); // elements 0, 4
    b[1] = quant_byte_perm(u[0], u[2], 0x7632); // 1, 5
    b[2] = quant_byte_perm(u[1], u[3], 0x5410); // 2, 6
    b[3] = quant_byte_perm(u[1], u[3], 0x7632); // 3, 7
}
// (q8: lane tid's x elements 4 tid .. 4 tid + 3, two f16x2 words in memory order, are its B
// registers as they are.)
//
// A step: the 4 lanes of a gid load chunks 0-3 of a quad (4 aligned chunks of their row), one
// each (16 bytes: words 0-3). Each position p (0-3) of the 4 lanes' words must lie in one
// group: with cpg (chunks a group) 4 or more the quad is one group, so lane tid keeps chunk
// tid; with 1 or 2 the quad is transposed through shared memory (ldmatrix), so position p is
// chunk p. Where position p of lane tid lies:
GPT_QUANT_HD void mma_word_place(uint32_t cpg, uint32_t tid, uint32_t p, uint32_t *chunk, uint32_t *word) {
    *chunk = cpg >= 4 ? tid : p;
    *word = cpg >= 4 ? p : tid;
}
// The transpose: lane (gid, tid) stores its chunk in 16-byte slot mma_stage_slot(gid, tid) of
// its warp's 32; ldmatrix .x4 (lane l gives the address of row l % 8 of matrix l / 8, and gets
// word l % 4 of row l / 4 of each matrix i in register i) then reads matrix j row g = chunk j
// of gid g. The xor puts the 8 slots of each 8-lane phase (of the store and of each matrix)
// on 8 different 16-byte bank groups.
GPT_QUANT_HD uint32_t mma_stage_slot(uint32_t gid, uint32_t tid) { return 4 * gid + (tid ^ (gid >> 1)); }
GPT_QUANT_HD uint32_t mma_ldmatrix_slot(uint32_t lane) { return mma_stage_slot(lane & 7, lane >> 3); }

#ifdef __CUDACC__
// The next 8 elements of a chunk held in c (q4: word c.x; q8: words c.x and c.y), times the
// scale, with c shifted down so the following 8 come next.
__device__ __forceinline__ void quant_next8(uint4 &c, const QuantScale &k, bool q4, float *out) {
    if (q4) {
        q4_word(c.x, k, out);
        c = make_uint4(c.y, c.z, c.w, 0u);
    } else {
        q8_word(c.x, k, out);
        q8_word(c.y, k, out + 4);
        c = make_uint4(c.z, c.w, 0u, 0u);
    }
}

// log2 of the group size (32, 64 or 128) and of the elements in a chunk: chunk i holds
// elements i << chunk_shift .. and uses scale (i << chunk_shift) >> group_shift of its row.
__device__ __forceinline__ uint32_t group_shift(uint32_t group) { return group == 32 ? 5 : group == 64 ? 6 : 7; }
__device__ __forceinline__ uint32_t chunk_shift(bool q4) { return q4 ? 5 : 4; }

#endif // __CUDACC__

// ---- x as int8 for DP4A (gemv_quant.cu's stream-i8). Per block of 32 elements of x with
// t = x * 127 / m (m the block's largest magnitude), two int8 values an element: hi = round(t)
// and lo = round((t - hi) * 254), so x = m / (127 * 254) * (254 hi + lo) to ~2^-16 of m (x is
// f16 itself: this adds about one more f16 rounding). Staged in shared memory as four arrays of
// k / 32 int4 - hi words 0-3, hi words 4-7, lo words 0-3, lo words 4-7 of each block, so a
// warp reading consecutive blocks reads consecutive 16 bytes - then a float2 a block: m /
// (127 * 254 * 16) and, as an int, -8 (254 sum hi + sum lo). Word 2j holds elements 8j, 8j + 2,
// 8j + 4, 8j + 6 (a byte each) and word 2j + 1 the odd ones: the order in which a q4 word's
// low and high nibbles come out of two masks; q8 words are regrouped to match (two PRMT).
GPT_QUANT_HD uint64_t i8_staged_bytes(uint32_t k) { return 2ull * k + 8ull * (k / 32); }

#ifdef __CUDACC__
// a . b over 4 byte lanes plus c: a's bytes unsigned, b's signed.
__device__ __forceinline__ int dp4a_us(uint32_t a, int b, int c) {
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}
// Bytes 0-3 of the result: the low bytes of a, b, c, d.
__device__ __forceinline__ int pack_bytes(int a, int b, int c, int d) {
    return (int)__byte_perm(__byte_perm((uint32_t)a, (uint32_t)b, 0x0040), __byte_perm((uint32_t)c, (uint32_t)d, 0x0040), 0x5410);
}

// Rounding to the nearest integer (ties to even, |t| < 2^22) by the float adder: r = t + 1.5 x
// 2^23 has a unit last place, so the addition rounds t, and r holds the result in its low
// mantissa bits (magic_to_int) or, less the constant, as a float (magic_to_float, exact). The
// staging's rint and two float-to-int conversions an element ran on the quarter-rate
// conversion pipe (24 a thread a round); these are full-rate adds, with the same results. The
// _rn intrinsics keep the compiler from fusing the multiply before an add into an FMA (one
// rounding, not the rounded product's rint).
constexpr float kRoundMagic = 12582912.0f; // 1.5 x 2^23
__device__ __forceinline__ float add_round_magic(float t) { return __fadd_rn(t, kRoundMagic); }
__device__ __forceinline__ int magic_to_int(float r) { return __float_as_int(r) - 0x4B400000; } // the bits of 1.5 x 2^23
__device__ __forceinline__ float magic_to_float(float r) { return __fsub_rn(r, kRoundMagic); }  // exact

// Stages a row of x (k values, k a multiple of 32) in the layout above, with the whole block
// (blockDim.x a multiple of 4): 4 threads a block of 32 elements, 8 elements each. x is f16,
// or - with norm_w, an RMSNorm folded into the GEMV - the f32 residual row, staged as x *
// norm_w: the norm's other factor, rsqrt(mean(x^2) + eps), is one number a row, which the
// per-block scales make no difference to, so the caller applies it to the sums. Returns this
// thread's share of sum(x^2) with norm_w, else 0. A round is blockDim.x / 4 blocks of x; with
// share > 1 (a cluster of `share` blocks staging one x together, PERFORMANCE 61) this block
// stages rounds rank, rank + share, ... only, and copy_peer_rounds fetches the rest.
__device__ inline float stage_x_i8(const void *x, const float *norm_w, uint32_t k, void *staged, uint32_t rank = 0,
                                   uint32_t share = 1) {
    int4 *words = static_cast<int4 *>(staged);
    const uint32_t n_blocks = k / 32, part = threadIdx.x & 3, per_round = blockDim.x / 4;
    float2 *meta = reinterpret_cast<float2 *>(words + 4 * n_blocks);
    float squares = 0.0f;
    for (uint32_t first = rank * per_round; first < n_blocks; first += share * per_round) { // every thread runs every round (shuffles)
        const uint32_t blk = first + threadIdx.x / 4, at = 32 * blk + 8 * part;
        float v[8] = {};
        if (blk < n_blocks && norm_w) {
            const float4 *xv = reinterpret_cast<const float4 *>(static_cast<const float *>(x) + at);
            const float4 *wv = reinterpret_cast<const float4 *>(norm_w + at);
            const float4 x0 = xv[0], x1 = xv[1], w0 = wv[0], w1 = wv[1];
            const float xe[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
            const float we[8] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
            for (int e = 0; e < 8; e++) {
                squares = fmaf(xe[e], xe[e], squares);
                v[e] = xe[e] * we[e];
            }
        } else if (blk < n_blocks) {
            widen16(*reinterpret_cast<const uint4 *>(static_cast<const __half *>(x) + at), v, __half{});
        }
        float m = 0.0f;
#pragma unroll
        for (int e = 0; e < 8; e++) m = fmaxf(m, fabsf(v[e]));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
        const float inv = m > 0.0f ? __fdiv_rn(127.0f, m) : 0.0f;
        int hi[8], lo[8], sum = 0;
#pragma unroll
        for (int e = 0; e < 8; e++) { // |t| <= 127, |(t - h) * 254| <= 127
            const float t = __fmul_rn(v[e], inv), r = add_round_magic(t), h = magic_to_float(r);
            hi[e] = magic_to_int(r);
            lo[e] = magic_to_int(add_round_magic(__fmul_rn(__fsub_rn(t, h), 254.0f)));
            sum += 254 * hi[e] + lo[e];
        }
        sum += __shfl_xor_sync(0xffffffffu, sum, 1);
        sum += __shfl_xor_sync(0xffffffffu, sum, 2);
        if (blk >= n_blocks) continue;
        // This thread's elements are words 2 part and 2 part + 1 of the block: the int2 at
        // position part & 1 of array part >> 1 (hi) and of array 2 + (part >> 1) (lo).
        int2 *h2 = reinterpret_cast<int2 *>(words + (part >> 1) * n_blocks + blk) + (part & 1);
        int2 *l2 = reinterpret_cast<int2 *>(words + (2 + (part >> 1)) * n_blocks + blk) + (part & 1);
        *h2 = make_int2(pack_bytes(hi[0], hi[2], hi[4], hi[6]), pack_bytes(hi[1], hi[3], hi[5], hi[7]));
        *l2 = make_int2(pack_bytes(lo[0], lo[2], lo[4], lo[6]), pack_bytes(lo[1], lo[3], lo[5], lo[7]));
        if (part == 0) meta[blk] = make_float2(__fdiv_rn(m, 127.0f * 254.0f * 16.0f), __int_as_float(-8 * sum));
    }
    return squares;
}

// The rounds of a staged x that the other blocks of the cluster staged (stage_x_i8 with
// `share`), copied from their shared memory into this block's, after a cluster barrier that
// follows their staging and before one that keeps them alive until every copy is done.
__device__ inline void copy_peer_rounds(void *staged, uint32_t k, uint32_t rank, uint32_t share) {
    int4 *words = static_cast<int4 *>(staged);
    const uint32_t n_blocks = k / 32, per_round = blockDim.x / 4;
    int2 *meta = reinterpret_cast<int2 *>(words + 4 * n_blocks);
    for (uint32_t blk = threadIdx.x; blk < n_blocks; blk += blockDim.x) {
        const uint32_t owner = (blk / per_round) % share;
        if (owner == rank) continue;
        int4 v[4]; // the block's four words, loaded together
#pragma unroll
        for (int a = 0; a < 4; a++) v[a] = peer_load16(peer_addr(words + a * n_blocks + blk, owner));
        const int2 m = peer_load8(peer_addr(meta + blk, owner));
#pragma unroll
        for (int a = 0; a < 4; a++) words[a * n_blocks + blk] = v[a];
        meta[blk] = m;
    }
}

// The staged x of a row of k elements: words(a, blk) is int4 a (0-3: hi 0-3, hi 4-7, lo 0-3,
// lo 4-7) of block blk; meta the block's float2.
struct I8Staged {
    const int4 *w;
    uint32_t n_blocks;
    __device__ I8Staged(const void *staged, uint32_t k) : w(static_cast<const int4 *>(staged)), n_blocks(k / 32) {}
    __device__ int4 words(uint32_t a, uint32_t blk) const { return w[a * n_blocks + blk]; }
    __device__ float2 meta(uint32_t blk) const { return reinterpret_cast<const float2 *>(w + 4 * n_blocks)[blk]; }
};
// The x words a chunk's dot product needs, read once for all the rows that use them: q4's
// chunk is block blk (hi[0..1], lo[0..1]); q8's is half `half` of it (hi[0], lo[0]).
struct I8Words {
    int4 hi[2], lo[2];
};
__device__ __forceinline__ I8Words i8_words_q4(const I8Staged &x, uint32_t blk) {
    return {{x.words(0, blk), x.words(1, blk)}, {x.words(2, blk), x.words(3, blk)}};
}
__device__ __forceinline__ I8Words i8_words_q8(const I8Staged &x, uint32_t blk, uint32_t half) {
    return {{x.words(half, blk), {}}, {x.words(2 + half, blk), {}}};
}

// 16 x the sum over a q4 chunk (32 nibbles n = q + 8, word j elements 8j .. 8j + 7) of q x
// (x as 254 hi + lo), exact; times the weights' scale and meta.x it is the dot product. The
// low nibbles meet the even elements, the high ones (masked in place: 16 n) the odd ones;
// the offset (meta.y) takes the + 8 off.
__device__ __forceinline__ int q4_chunk_dot_i8(const uint4 &c, const I8Words &x, int offset) {
    const uint32_t w[4] = {c.x, c.y, c.z, c.w};
    const int he[4] = {x.hi[0].x, x.hi[0].z, x.hi[1].x, x.hi[1].z}, ho[4] = {x.hi[0].y, x.hi[0].w, x.hi[1].y, x.hi[1].w};
    const int le[4] = {x.lo[0].x, x.lo[0].z, x.lo[1].x, x.lo[1].z}, lo[4] = {x.lo[0].y, x.lo[0].w, x.lo[1].y, x.lo[1].w};
    int even_hi = 0, odd_hi = 0, even_lo = offset, odd_lo = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const uint32_t n_even = w[j] & 0x0F0F0F0Fu, n_odd16 = w[j] & 0xF0F0F0F0u;
        even_hi = __dp4a((int)n_even, he[j], even_hi);
        odd_hi = dp4a_us(n_odd16, ho[j], odd_hi);
        even_lo = __dp4a((int)n_even, le[j], even_lo);
        odd_lo = dp4a_us(n_odd16, lo[j], odd_lo);
    }
    return 254 * (16 * even_hi + odd_hi) + 16 * even_lo + odd_lo; // |.| < 2^28
}
// The same for a q8 chunk (16 int8 q, word j elements 4j .. 4j + 3), x from i8_words_q8.
__device__ __forceinline__ int q8_chunk_dot_i8(const uint4 &c, const I8Words &x) {
    const int4 h = x.hi[0], l = x.lo[0];
    const int e0 = (int)__byte_perm(c.x, c.y, 0x6420), o0 = (int)__byte_perm(c.x, c.y, 0x7531);
    const int e1 = (int)__byte_perm(c.z, c.w, 0x6420), o1 = (int)__byte_perm(c.z, c.w, 0x7531);
    int sum_hi = __dp4a(e0, h.x, 0), sum_lo = __dp4a(e0, l.x, 0);
    sum_hi = __dp4a(o0, h.y, sum_hi);
    sum_lo = __dp4a(o0, l.y, sum_lo);
    sum_hi = __dp4a(e1, h.z, sum_hi);
    sum_lo = __dp4a(e1, l.z, sum_lo);
    sum_hi = __dp4a(o1, h.w, sum_hi);
    sum_lo = __dp4a(o1, l.w, sum_lo);
    return 16 * (254 * sum_hi + sum_lo); // |.| < 2^31
}
#endif // __CUDACC__

} // namespace gpt_cuda
