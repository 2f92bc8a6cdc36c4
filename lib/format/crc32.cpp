// crc32.cpp - see crc32.h.
//
// The x86-64 kernel folds the message with carry-less multiplies. In the reflected bit order
// zlib uses, a 16-byte block loaded little-endian is a polynomial of degree < 128 whose bit j
// is the coefficient of x^(127 - j); its low 8 bytes hold the upper half. Appending 16T bytes
// to a block A multiplies A by x^(128T); the fold replaces A by something congruent to that
// product modulo P, small enough to stay in 128 bits: each 64-bit half times the 32-bit
// remainder x^e mod P of its power (two reflected 64-bit operands multiply, read as a 128-bit
// one, to their product times x, so each e is one less). The 128-bit remainder left at the end
// has the message's crc, which zlib computes from its 16 bytes.
#include "format/crc32.h"

#include <cstring>
#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GPT_CRC32_CLMUL 1
#elif defined(__aarch64__) && defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__linux__)
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#define GPT_CRC32_ARM 1
#endif

namespace gpt::format {

namespace {

uint32_t crc32_zlib(uint32_t crc, const uint8_t *p, uint64_t n) {
    uLong c = crc;
    while (n > 0) { // zlib takes a uInt length
        const uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}

#if GPT_CRC32_CLMUL

// x^e mod P (P = x^32 + 0x04C11DB7), as the reflected 64-bit operand of a carry-less multiply:
// the coefficient of x^i at bit 63 - i.
constexpr uint64_t xpow_mod_p(unsigned e) {
    uint64_t r = 1;
    for (unsigned i = 0; i < e; i++) {
        r <<= 1;
        if (r >> 32) r ^= 0x104C11DB7ull;
    }
    uint64_t reflected = 0;
    for (unsigned i = 0; i < 32; i++)
        if ((r >> i) & 1) reflected |= 1ull << (63 - i);
    return reflected;
}

// The constants that move a block `bits` further: the low half's x^(bits + 64) and the high
// half's x^bits, each one degree lower (see the top of the file).
template <unsigned bits>
struct FoldBy {
    static constexpr uint64_t low = xpow_mod_p(bits + 63), high = xpow_mod_p(bits - 1);
};

#define GPT_CLMUL __attribute__((target("pclmul,sse2")))

template <unsigned bits>
GPT_CLMUL inline __m128i fold(__m128i a, __m128i next) {
    const __m128i k = _mm_set_epi64x((long long)FoldBy<bits>::high, (long long)FoldBy<bits>::low);
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11)), next);
}

GPT_CLMUL inline __m128i load16(const uint8_t *p) { return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p)); }

// Four blocks in flight (64 bytes a step, each folded 512 bits on), then folded into one.
GPT_CLMUL uint32_t crc32_accelerated(uint32_t crc, const uint8_t *p, uint64_t n) {
    if (n < 64) return crc32_zlib(crc, p, n);
    // zlib's running value enters inverted, as if XORed into the first four bytes.
    __m128i x0 = _mm_xor_si128(load16(p), _mm_cvtsi32_si128((int)~crc)), x1 = load16(p + 16), x2 = load16(p + 32),
            x3 = load16(p + 48);
    p += 64, n -= 64;
    for (; n >= 64; p += 64, n -= 64) {
        x0 = fold<512>(x0, load16(p));
        x1 = fold<512>(x1, load16(p + 16));
        x2 = fold<512>(x2, load16(p + 32));
        x3 = fold<512>(x3, load16(p + 48));
    }
    __m128i x = fold<128>(fold<128>(fold<128>(x0, x1), x2), x3);
    for (; n >= 16; p += 16, n -= 16) x = fold<128>(x, load16(p));
    uint8_t rest[16];
    _mm_storeu_si128(reinterpret_cast<__m128i *>(rest), x);
    // The remainder as a message of its own from a zero state: zlib's ~0 start undone.
    return crc32_zlib(crc32_zlib(0xffffffffu, rest, 16), p, n);
}

bool accelerated_available() {
    static const bool yes = __builtin_cpu_supports("pclmul"); // SSE2 is part of x86-64
    return yes;
}

#elif GPT_CRC32_ARM

// The CRC instructions in a function built for them: GCC's arm_acle.h declares its intrinsics
// for any target; clang's only when the whole file is built with +crc, so clang uses its builtins.
#if defined(__clang__)
#define GPT_CRC_TARGET __attribute__((target("crc")))
#define GPT_CRC32B __builtin_arm_crc32b
#define GPT_CRC32D __builtin_arm_crc32d
#else
#define GPT_CRC_TARGET __attribute__((target("+crc")))
#define GPT_CRC32B __crc32b
#define GPT_CRC32D __crc32d
#endif

// ARMv8's CRC32X computes zlib's polynomial 8 bytes at a time (without the inversions).
GPT_CRC_TARGET uint32_t crc32_accelerated(uint32_t crc, const uint8_t *p, uint64_t n) {
    uint32_t c = ~crc;
    for (; n > 0 && (reinterpret_cast<uintptr_t>(p) & 7); p++, n--) c = GPT_CRC32B(c, *p);
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        c = GPT_CRC32D(c, v);
    }
    for (; n > 0; p++, n--) c = GPT_CRC32B(c, *p);
    return ~c;
}

bool accelerated_available() {
    static const bool yes = (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
    return yes;
}

#else

uint32_t crc32_accelerated(uint32_t crc, const uint8_t *p, uint64_t n) { return crc32_zlib(crc, p, n); }
bool accelerated_available() { return false; }

#endif

} // namespace

bool crc32_kernel_available(Crc32Kernel k) { return k == Crc32Kernel::Zlib || accelerated_available(); }

uint32_t crc32_extend_with(Crc32Kernel k, uint32_t crc, const uint8_t *data, uint64_t n) {
    return k == Crc32Kernel::Accelerated && accelerated_available() ? crc32_accelerated(crc, data, n) : crc32_zlib(crc, data, n);
}

uint32_t crc32_extend(uint32_t crc, const uint8_t *data, uint64_t n) {
    return crc32_extend_with(Crc32Kernel::Accelerated, crc, data, n); // zlib where there is none
}

} // namespace gpt::format
