// test_quant_mma.cpp - the tensor-core GEMV's fragment helpers (cuda/quant_dot.cuh, compiled
// for the host): the k slots that the unpacked weights of one lane and x's B registers put in
// each mma.sync m16n8k16 must hold the same chunk element, and the unpacked values must be
// exactly q - 8 (q4) or q (q8). The fragment layout (which lane and register half holds which
// k slot) is written here from the PTX ISA, apart from the kernel's comments, and one mma is
// emulated on it: the sum over a chunk must equal the chunk's dot product. And the word swaps
// among the 4 lanes of a row (mma_word_place) keep each mma within one group. Runs without a GPU.
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

// The word swaps of a step (gemv_quant_mma.cu: across tid ^ 2, then tid ^ 1), replayed here on
// 4 lanes' chunks (lane tid loaded chunk tid: word w = 4 chunk + w), must leave position p of
// lane tid where mma_word_place says, every position's 4 words in one group and every word
// of the quad exactly once.
void test_word_places(void **) {
    for (uint32_t cpg : {1u, 2u, 4u, 8u}) {
        uint32_t v[4][4];
        for (uint32_t t = 0; t < 4; t++)
            for (uint32_t w = 0; w < 4; w++) v[t][w] = 4 * t + w;
        if (cpg <= 2) { // the off-diagonal 2 x 2 blocks: lanes 0-1 words 2-3 <-> lanes 2-3 words 0-1
            uint32_t n[4][4];
            std::memcpy(n, v, sizeof v);
            for (uint32_t t = 0; t < 4; t++)
                for (uint32_t i = 0; i < 2; i++) {
                    if (t & 2) n[t][i] = v[t ^ 2][2 + i];
                    else n[t][2 + i] = v[t ^ 2][i];
                }
            std::memcpy(v, n, sizeof v);
        }
        if (cpg == 1) { // the off-diagonal words of each block: odd lanes' 0, 2 <-> even lanes' 1, 3
            uint32_t n[4][4];
            std::memcpy(n, v, sizeof v);
            for (uint32_t t = 0; t < 4; t++)
                for (uint32_t i = 0; i < 2; i++) {
                    if (t & 1) n[t][2 * i] = v[t ^ 1][2 * i + 1];
                    else n[t][2 * i + 1] = v[t ^ 1][2 * i];
                }
            std::memcpy(v, n, sizeof v);
        }
        bool seen[16] = {};
        for (uint32_t p = 0; p < 4; p++) {
            uint32_t group = 0;
            for (uint32_t t = 0; t < 4; t++) {
                uint32_t chunk = 99, word = 99;
                gpt_cuda::mma_word_place(cpg, t, p, &chunk, &word);
                if (chunk > 3 || word > 3 || v[t][p] != 4 * chunk + word)
                    fail_msg("cpg %u lane %u position %u: holds chunk %u word %u, mma_word_place says %u, %u", cpg, t, p, v[t][p] / 4,
                             v[t][p] % 4, chunk, word);
                if (seen[v[t][p]]) fail_msg("cpg %u: chunk %u word %u twice", cpg, v[t][p] / 4, v[t][p] % 4);
                seen[v[t][p]] = true;
                if (t == 0) group = chunk / cpg;
                else if (chunk / cpg != group) fail_msg("cpg %u position %u: chunks of two groups", cpg, p);
            }
        }
    }
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q4_fragments),
        cmocka_unit_test(test_q8_fragments),
        cmocka_unit_test(test_word_places),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
