// crc32.h - the weight file's checksum (zlib's crc32: polynomial 0x04C11DB7, reflected, ~0 in
// and out), computed with the CPU's carry-less multiply (x86-64 PCLMULQDQ) or CRC32
// instructions (ARMv8) where it has them, else by zlib. Every byte of a file is checksummed at
// load, so this runs at memory speed where it can: zlib's tables manage ~2.5 GB/s a core.
#pragma once

#include <cstdint>

namespace gpt::format {

// crc continued over data[0, n), as zlib's crc32(crc, data, n) (start from 0); any length.
uint32_t crc32_extend(uint32_t crc, const uint8_t *data, uint64_t n);

// The crc32 of data[0, n).
inline uint32_t crc32_of(const uint8_t *data, uint64_t n) { return crc32_extend(0, data, n); }

// The ways crc32_extend can compute, for tests and benchmarks; each gives zlib's value.
enum class Crc32Kernel {
    Zlib,        // zlib's tables, any CPU
    Accelerated, // PCLMULQDQ folding on x86-64, the CRC32X instruction on aarch64
};
bool crc32_kernel_available(Crc32Kernel k);
// crc32_extend with a chosen kernel (one that is available).
uint32_t crc32_extend_with(Crc32Kernel k, uint32_t crc, const uint8_t *data, uint64_t n);

} // namespace gpt::format
