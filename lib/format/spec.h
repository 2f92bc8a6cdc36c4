// spec.h - constants of weight file v1, the single source for reader and writer.
// docs/FORMAT.md describes the same layout byte by byte; keep the two in step.
#pragma once

#include "core/dtype.h"

#include <cstddef>
#include <cstdint>

namespace gpt::format {

// "GPTW" then CR LF SUB LF: catches text-mode transfers and truncation to the magic.
inline constexpr uint8_t kMagic[8] = {'G', 'P', 'T', 'W', '\r', '\n', 0x1a, '\n'};
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kHeaderSize = 128;
inline constexpr uint32_t kAlignment = 256; // tensor data alignment (bytes from file start)

// Header field offsets (all little-endian).
namespace hdr {
inline constexpr size_t magic = 0;          // u8[8]
inline constexpr size_t version = 8;        // u32
inline constexpr size_t header_size = 12;   // u32, 128
inline constexpr size_t file_size = 16;     // u64, total bytes
inline constexpr size_t meta_offset = 24;   // u64
inline constexpr size_t meta_size = 32;     // u64
inline constexpr size_t table_offset = 40;  // u64
inline constexpr size_t table_size = 48;    // u64
inline constexpr size_t data_offset = 56;   // u64, multiple of alignment
inline constexpr size_t n_tensors = 64;     // u32
inline constexpr size_t alignment = 68;     // u32, 256
inline constexpr size_t meta_crc = 72;      // u32, crc32 of the metadata section
inline constexpr size_t table_crc = 76;     // u32, crc32 of the tensor table
inline constexpr size_t reserved = 80;      // u8[44], zero
inline constexpr size_t header_crc = 124;   // u32, crc32 of bytes 0..123
} // namespace hdr

// Tensor element types are core/dtype.h's DType codes (1 f32, 2 f16, 3 bf16, 4 q8, 5 q4); a q8/q4
// entry's u16 after ndim is its group size (core/quant.h), 0 for the float types.

// Metadata value types.
enum class MetaType : uint8_t {
    U32 = 1,       // u32
    I32 = 2,       // i32
    F32 = 3,       // f32
    U64 = 4,       // u64
    STR = 5,       // u32 length, bytes (UTF-8, no NUL)
    I32_ARRAY = 6, // u32 count, i32[count]
    F32_ARRAY = 7, // u32 count, f32[count]
    STR_ARRAY = 8, // u32 count, then count x (u32 length, bytes)
};

inline constexpr uint32_t kMaxKeyLen = 256;
inline constexpr uint32_t kMaxNameLen = 256;
inline constexpr uint32_t kMaxDims = 4;

} // namespace gpt::format
