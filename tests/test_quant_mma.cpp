// test_quant_mma.cpp - the tensor-core GEMV's fragment helpers (cuda/quant_dot.cuh, compiled
// for the host): the k slots that the unpacked weights of one lane and x's B registers put in
// each mma.sync m16n8k16 must hold the same chunk element, and the unpacked values must be
// exactly q - 8 (q4) or q (q8). The fragment layout (which lane and register half holds which
// k slot) is written here from the PTX ISA, apart from the kernel's comments, and one mma is
// emulated on it: the sum over a chunk must equal the chunk's dot product. And the transpose
// of a row's 4 chunks through shared memory (ldmatrix, replayed) puts each mma's words in one
// group, without bank conflicts. Runs without a GPU.
#include "core/half.h"
#include "quant_dot.cuh"

#include <cstdint>
#include <cstring>
#include <random>

// cmocka last: it defines a fail() macro.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

std::mt19937 g_rng(20261126);

// Half `h` (0 low, 1 high) of an f16x2 register as a float.
float half_of(uint32_t reg, int h) { return gpt::f16_to_f32((uint16_t)(reg >> (16 * h))); }

// PTX m16n8k16 (.f16 A and B): k slot s of a row of A (and of a column of B) is held by the
// lane with tid = (s % 8) / 2, in register half s % 2 of A register 2 (s / 8) (+1 for rows 8-15)
// and of B register s / 8.
struct Slot {
    int tid, a_reg, b_reg, half;
};
Slot slot_of(int s) { return {(s % 8) / 2, 2 * (s / 8), s / 8, s % 2}; }

uint32_t pack_halves(float lo, float hi) { return gpt::f32_to_f16(lo) | (uint32_t)gpt::f32_to_f16(hi) << 16; }

// The f16x2 constants the kernel unpacks with: both halves the documented value.
void test_constants(void **) {
    const struct {
        uint32_t bits;
        float want;
    } cases[] = {{gpt_cuda::kMmaHalf1032, 1032.0f}, {gpt_cuda::kMmaHalfSixteenth, 0.0625f}, {gpt_cuda::kMmaHalfMinus72, -72.0f},
                 {gpt_cuda::kMmaHalf1152, 1152.0f}};
    for (const auto &c : cases)
        for (int h = 0; h < 2; h++)
            if (half_of(c.bits, h) != c.want) fail_msg("constant %08x half %d: %g, want %g", c.bits, h, half_of(c.bits, h), c.want);
}

// q4: a chunk of 32 nibbles (4 words, word tid in lane tid) and x = the element indexes, so
// every B slot names the element it carries; the A slot beside it must hold that element's q - 8.
void test_q4_fragments(void **) {
    for (int trial = 0; trial < 2000; trial++) {
        uint32_t words[4];
        for (uint32_t &w : words) w = (uint32_t)g_rng();
        float xval[32];
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (float &v : xval) v = gpt::f16_to_f32(gpt::f32_to_f16(nd(g_rng)));
        for (int pass = 0; pass < 2; pass++) { // 0: x = element index, 1: random x (the dot)
            uint32_t a[4][4], b[4][4];           // per lane tid: A patterns / B registers (mma j: [2j], [2j + 1])
            for (int t = 0; t < 4; t++) {
                gpt_cuda::q4_mma_bits(words[t], a[t]);
                uint32_t u[4];
                for (int i = 0; i < 4; i++) {
                    const int e = 8 * t + 2 * i;
                    u[i] = pass == 0 ? pack_halves((float)e, (float)(e + 1)) : pack_halves(xval[e], xval[e + 1]);
                }
                gpt_cuda::q4_mma_x(u, b[t]);
            }
            double dot = 0, want = 0;
            for (int e = 0; e < 32; e++) want += (double)((int)(words[e / 8] >> (4 * (e % 8)) & 15) - 8) * xval[e];
            for (int j = 0; j < 2; j++)
                for (int s = 0; s < 16; s++) {
                    const Slot sl = slot_of(s);
                    const int reg = 2 * j + sl.a_reg / 2; // the pattern index of A register a_reg in mma j
                    const float p = half_of(a[sl.tid][reg], sl.half);
                    const float q = reg % 2 == 0 ? p - 1032.0f : p / 16.0f - 72.0f; // the documented offsets
                    const float x = half_of(b[sl.tid][2 * j + sl.b_reg], sl.half);
                    if (pass == 0) {
                        const int e = (int)x;
                        if (e < 8 * sl.tid || e >= 8 * sl.tid + 8) fail_msg("q4 mma %d slot %d: x element %d is not lane %d's", j, s, e, sl.tid);
                        const int want_q = (int)(words[e / 8] >> (4 * (e % 8)) & 15) - 8;
                        if (q != (float)want_q) fail_msg("q4 word %08x mma %d slot %d (element %d): %g, want %d", words[e / 8], j, s, e, q, want_q);
                    }
                    dot += (double)q * x;
                }
            if (pass == 1 && dot != want) fail_msg("q4 chunk dot through the fragments: %.17g, want %.17g", dot, want);
        }
    }
}

// q8: a chunk of 16 bytes (word tid in lane tid); B registers are x's words as they lie.
void test_q8_fragments(void **) {
    for (int trial = 0; trial < 2000; trial++) {
        uint32_t words[4];
        for (uint32_t &w : words) w = (uint32_t)g_rng();
        if (trial == 0) words[0] = 0x807F00FFu; // -128, 127, 0, -1
        for (int t = 0; t < 4; t++) {
            uint32_t a[2];
            gpt_cuda::q8_mma_bits(words[t], a);
            // x element 4 tid + i sits in half i % 2 of B register i / 2: slot 2 tid + i % 2 + 8 (i / 2).
            for (int s = 0; s < 16; s++) {
                const Slot sl = slot_of(s);
                if (sl.tid != t) continue;
                const int e = 4 * t + 2 * sl.b_reg + sl.half; // the element x's B slot carries
                const float q = half_of(a[sl.a_reg / 2], sl.half) - 1152.0f;
                const int want = (int8_t)(words[e / 4] >> (8 * (e % 4)) & 0xFF);
                if (q != (float)want) fail_msg("q8 word %08x slot %d (element %d): %g, want %d", words[t], s, e, q, want);
            }
        }
    }
}

// A step's words as the kernel places them (gemv_quant_mma.cu), ldmatrix replayed here from
// the PTX ISA where the quad is transposed: position p of lane tid must hold what
// mma_word_place says, each position's 4 words must lie in one group and every word of the
// quad must appear once; the store and each matrix's 8 row reads must touch 8 different
// 16-byte bank groups (no bank conflicts).
void test_word_places(void **) {
    for (uint32_t cpg : {1u, 2u, 4u, 8u}) {
        // lane (gid, tid) loaded chunk tid of its gid's row: word w is 16 gid + 4 tid + w
        uint32_t v[32][4];
        for (uint32_t l = 0; l < 32; l++)
            for (uint32_t w = 0; w < 4; w++) v[l][w] = 16 * (l / 4) + 4 * (l % 4) + w;
        if (cpg < 4) {
            uint32_t slots[32][4];
            bool used[32] = {};
            for (uint32_t l = 0; l < 32; l++) {
                const uint32_t s = gpt_cuda::mma_stage_slot(l / 4, l % 4);
                if (s >= 32 || used[s]) fail_msg("lane %u: stage slot %u out of range or taken", l, s);
                used[s] = true;
                std::memcpy(slots[s], v[l], 16);
            }
            for (uint32_t phase = 0; phase < 4; phase++) { // 128-bit stores: 8 lanes a phase
                uint32_t banks = 0;
                for (uint32_t l = 8 * phase; l < 8 * phase + 8; l++) banks |= 1u << (gpt_cuda::mma_stage_slot(l / 4, l % 4) % 8);
                if (banks != 0xFF) fail_msg("store phase %u: bank conflict", phase);
            }
            uint32_t n[32][4];
            for (uint32_t i = 0; i < 4; i++) { // matrix i: rows from lanes 8 i .. 8 i + 7
                uint32_t banks = 0;
                for (uint32_t r = 0; r < 8; r++) banks |= 1u << (gpt_cuda::mma_ldmatrix_slot(8 * i + r) % 8);
                if (banks != 0xFF) fail_msg("ldmatrix matrix %u: bank conflict", i);
                for (uint32_t l = 0; l < 32; l++) n[l][i] = slots[gpt_cuda::mma_ldmatrix_slot(8 * i + l / 4)][l % 4];
            }
            std::memcpy(v, n, sizeof v);
        }
        for (uint32_t g = 0; g < 8; g++) {
            bool seen[16] = {};
            for (uint32_t p = 0; p < 4; p++) {
                uint32_t group = 0;
                for (uint32_t t = 0; t < 4; t++) {
                    const uint32_t got = v[4 * g + t][p];
                    uint32_t chunk = 99, word = 99;
                    gpt_cuda::mma_word_place(cpg, t, p, &chunk, &word);
                    if (got / 16 != g || chunk > 3 || word > 3 || got % 16 != 4 * chunk + word)
                        fail_msg("cpg %u lane %u position %u: holds gid %u chunk %u word %u, mma_word_place says chunk %u word %u", cpg,
                                 4 * g + t, p, got / 16, got % 16 / 4, got % 4, chunk, word);
                    if (seen[got % 16]) fail_msg("cpg %u gid %u: chunk %u word %u twice", cpg, g, got % 16 / 4, got % 4);
                    seen[got % 16] = true;
                    if (t == 0) group = chunk / cpg;
                    else if (chunk / cpg != group) fail_msg("cpg %u position %u: chunks of two groups", cpg, p);
                }
            }
        }
    }
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constants),
        cmocka_unit_test(test_q4_fragments),
        cmocka_unit_test(test_q8_fragments),
        cmocka_unit_test(test_word_places),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
