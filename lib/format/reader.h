// reader.h - opens and validates a weight file (mmap, read() or a memory buffer).
// Everything is checked before use: magic, version, section bounds with overflow-safe
// arithmetic, the metadata and table encodings, tensor extents (aligned, inside the file,
// not overlapping) and, unless skipped, every tensor's crc32. Failures throw gpt::Error
// naming the file and the offending field or tensor.
#pragma once

#include "format/metadata.h"
#include "format/spec.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpt::format {

struct TensorEntry {
    std::string name;
    DType dtype = DType::F32;
    uint32_t ndim = 0;
    uint64_t dims[kMaxDims] = {0, 0, 0, 0}; // dims[0] outermost (row-major)
    uint32_t group = 0;                     // quantized dtypes: columns per scale (the table's u16); else 0
    uint64_t offset = 0;                    // absolute offset in the file
    uint64_t nbytes = 0;
    uint32_t crc32 = 0;

    uint64_t numel() const;
};

struct ReadOptions {
    bool verify_checksums = true;
    // With verify_checksums: also reject tensors holding NaN or infinity (GPT_ERR_FORMAT), in
    // the same pass as the crc32. Model loading sets it; the container format itself allows
    // any bytes.
    bool check_finite = false;
    bool use_mmap = true;
    // With verify_checksums: the tensors are not checked when the file is opened; the caller
    // checks each one (format/tensor_check.h) before it uses it. The header, metadata and
    // table checksums are always checked at once.
    bool defer_tensor_checks = false;
};

class WeightFile {
public:
    static std::unique_ptr<WeightFile> open(const std::string &path, const ReadOptions &opt);
    // Borrows data unless copy is true (or the buffer is misaligned, which forces a copy).
    static std::unique_ptr<WeightFile> from_memory(const void *data, size_t size, bool copy, const ReadOptions &opt);
    ~WeightFile();
    WeightFile(const WeightFile &) = delete;
    WeightFile &operator=(const WeightFile &) = delete;

    const std::string &source() const { return source_; }
    uint64_t size() const { return size_; }
    bool mapped() const { return map_ != nullptr; }
    bool checksums_verified() const { return checksums_verified_; }
    const Metadata &metadata() const { return meta_; }
    const std::vector<TensorEntry> &tensors() const { return tensors_; }
    const TensorEntry *find(const std::string &name) const;
    const uint8_t *data(const TensorEntry &t) const { return base_ + t.offset; }

    // Recomputes every tensor's crc32; throws GPT_ERR_CHECKSUM naming the first mismatch.
    // With check_finite it also looks for NaN and infinity in the values, in the same pass,
    // and throws GPT_ERR_FORMAT naming the first tensor holding one (a checksum cannot catch
    // weights that were written that way).
    void verify_checksums(bool check_finite = false) const;
    // Bytes [offset, offset + len) of a mapped file will not be read again: their pages leave
    // the process's resident memory (madvise MADV_DONTNEED on the whole pages inside; the page
    // cache keeps them, as reclaimable memory). Nothing for a buffer in memory.
    void drop_pages(uint64_t offset, uint64_t len) const;
    // Drops the file bytes (after weights were copied elsewhere); data() is invalid afterwards.
    void release_data();

private:
    WeightFile() = default;
    void parse(const ReadOptions &opt);
    void parse_metadata(const uint8_t *p, uint64_t n);
    void parse_table(const uint8_t *p, uint64_t n, uint32_t count, uint64_t data_offset);

    std::string source_;
    const uint8_t *base_ = nullptr;
    uint64_t size_ = 0;
    void *map_ = nullptr;        // mmap'd region, if any
    uint8_t *owned_ = nullptr;   // heap copy, if any
    bool checksums_verified_ = false;
    Metadata meta_;
    std::vector<TensorEntry> tensors_;
    std::unordered_map<std::string, size_t> by_name_; // tensor name -> position in tensors_
};

} // namespace gpt::format
