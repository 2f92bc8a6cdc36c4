// writer.h - builds weight file v1: the reader's spec in reverse.
// Tensors are added with their bytes or with a function that produces them when written,
// so a converter can stream a large model without holding it in memory. write_file() is
// atomic: a staged file beside the target, fsynced and renamed into place (core/staged_file.h),
// so a reader sees the old file or the complete new one, never a partial one.
#pragma once

#include "format/metadata.h"
#include "format/spec.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gpt::format {

class Writer {
public:
    // Fills exactly nbytes at dst. May throw gpt::Error.
    using Fill = std::function<void(uint8_t *dst, uint64_t nbytes)>;
    // Called after each tensor is written: (tensors done, total tensors, bytes done, total bytes).
    using Progress = std::function<void(size_t, size_t, uint64_t, uint64_t)>;

    Metadata &metadata() { return meta_; }

    void add_tensor(const std::string &name, DType dtype, const std::vector<uint64_t> &dims, Fill fill);
    // A quantized matrix (Q8, Q4; dims [rows, cols]) with `group` columns per scale
    // (core/quant.h); fill writes its tensor_bytes.
    void add_quantized(const std::string &name, DType dtype, const std::vector<uint64_t> &dims, uint32_t group, Fill fill);
    // Copies the bytes now.
    void add_tensor(const std::string &name, DType dtype, const std::vector<uint64_t> &dims, const void *data,
                    uint64_t nbytes);

    struct FileOptions {
        bool overwrite = false; // replace an existing file (otherwise GPT_ERR_IO naming it)
        Progress progress;
    };
    // Atomic (core/staged_file.h): a reader sees the old file or the complete new one.
    void write_file(const std::string &path, const FileOptions &opt) const;
    // Writes the whole file into fd (an empty file; `shown` names it in messages), for a
    // caller that stages and publishes it itself.
    void write_to(int fd, const std::string &shown, const Progress &progress) const;
    // tensor_checksums = false writes 0 as each tensor's crc32 (for synthetic benchmark
    // models loaded with GPT_MODEL_SKIP_CHECKSUMS; the header, metadata and table keep theirs).
    std::vector<uint8_t> write_memory(bool tensor_checksums = true) const;
    // The same into out[0, file_size()) (e.g. a 64-byte aligned buffer that a load borrows
    // instead of copying); every byte is written, padding included.
    void write_memory_into(uint8_t *out, uint64_t size, bool tensor_checksums) const;
    uint64_t file_size() const;

private:
    struct Pending {
        std::string name;
        DType dtype;
        std::vector<uint64_t> dims;
        uint64_t nbytes;
        Fill fill;
        uint32_t group; // quantized dtypes; 0 otherwise
    };
    struct Layout {
        std::vector<uint8_t> meta;
        uint64_t meta_off, table_off, table_size, data_off, file_size;
        std::vector<uint64_t> rel_offsets;
    };
    Layout layout() const;
    std::vector<uint8_t> encode_table(const Layout &l, const std::vector<uint32_t> &crcs) const;
    std::vector<uint8_t> encode_header(const Layout &l, uint32_t meta_crc, uint32_t table_crc) const;

    Metadata meta_;
    std::vector<Pending> tensors_;
};

} // namespace gpt::format
