// format_decoder.h - weight files (docs/FORMAT.md) decoded here independently of lib/format,
// with literal offsets: header fields, metadata entries and tensor table entries with where
// each field lies, and what a test needs to damage a file and still reach a check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace format_decoder {

using Bytes = std::vector<uint8_t>;

// Little-endian fields.
uint16_t get16(const Bytes &b, size_t at);
uint32_t get32(const Bytes &b, size_t at);
uint64_t get64(const Bytes &b, size_t at);
void put16(Bytes &b, size_t at, uint16_t v);
void put32(Bytes &b, size_t at, uint32_t v);
void put64(Bytes &b, size_t at, uint64_t v);
uint32_t zcrc(const uint8_t *p, size_t n); // zlib's crc32

// Header field offsets, written out here from docs/FORMAT.md (not taken from spec.h).
enum : size_t {
    H_MAGIC = 0, H_VERSION = 8, H_HEADER_SIZE = 12, H_FILE_SIZE = 16, H_META_OFF = 24, H_META_SIZE = 32,
    H_TABLE_OFF = 40, H_TABLE_SIZE = 48, H_DATA_OFF = 56, H_N_TENSORS = 64, H_ALIGNMENT = 68, H_META_CRC = 72,
    H_TABLE_CRC = 76, H_RESERVED = 80, H_HEADER_CRC = 124, HEADER_SIZE = 128
};
extern const uint8_t kMagicBytes[8];

struct Header {
    uint64_t file_size, meta_off, meta_size, table_off, table_size, data_off;
    uint32_t n_tensors;
};
Header header_of(const Bytes &b);

// [off, off + len) lies inside a file of `size` bytes (no overflow).
bool inside(uint64_t off, uint64_t len, uint64_t size);

// Recomputes the metadata and table crcs (where their ranges lie inside the file) and then
// the header crc, so a patch reaches the checks behind them.
void fix_crcs(Bytes &b);
// The same, after recomputing every tensor's crc (where its data lies inside the file).
void fix_all_crcs(Bytes &b);

// One metadata entry and where its fields are.
struct MetaPos {
    std::string key;
    size_t key_len_at, type_at, value_at, end;
    uint8_t type;
};
// Every entry, in file order (the file's metadata must be well formed: a cmocka failure
// otherwise).
std::vector<MetaPos> meta_entries(const Bytes &b);
const MetaPos &meta_entry(const std::vector<MetaPos> &v, const std::string &key);

// One tensor table entry and where its fields are; rel is relative to the data offset.
struct TensorPos {
    std::string name;
    size_t name_len_at, dtype_at, ndim_at, reserved_at, dims_at, rel_at, nbytes_at, crc_at;
    uint8_t dtype, ndim;
    uint64_t dims[4], rel, nbytes;
    uint32_t crc;
};
// Every entry, in file order (the table must be well formed: a cmocka failure otherwise).
std::vector<TensorPos> table_entries(const Bytes &b);
const TensorPos &table_entry(const std::vector<TensorPos> &v, const std::string &name);

} // namespace format_decoder
