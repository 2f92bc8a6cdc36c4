// safetensors.h - reads Hugging Face safetensors files: one file, or the shards listed by
// model.safetensors.index.json. Everything is validated before use (header length against
// the file size, JSON shape, dtype, shape, data_offsets inside the data region, matching
// dtype x shape and not overlapping); failures throw gpt::Error naming the file and tensor.
// Layout: u64 little-endian header length N, N bytes of JSON
//   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {..}}
// then the data region; offsets are relative to its start.
#pragma once

#include "convert/fs_util.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gpt::convert {

// Every dtype the safetensors format defines. Only F32, F16 and BF16 can be converted;
// the others are parsed (so their extents are checked) and rejected where used.
enum class StDType : uint8_t { F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2 };

const char *st_dtype_name(StDType t);
size_t st_dtype_size(StDType t);
// Returns false for a name the format does not define.
bool st_dtype_from_name(const std::string &name, StDType *out);

struct StTensor {
    std::string name;
    StDType dtype = StDType::F32;
    std::vector<uint64_t> shape;
    uint64_t begin = 0, end = 0;    // offsets in the data region
    const uint8_t *data = nullptr;  // set once the bytes are mapped (begin applied)
    std::string file;               // the file it lives in (for messages)

    uint64_t numel() const;
    std::string shape_str() const;  // "[768, 2304]"
};

struct StHeader {
    std::vector<StTensor> tensors;              // sorted by name
    std::map<std::string, std::string> metadata; // "__metadata__" (string values only)
};

// Parses the JSON header (json[0..json_len), without the 8-byte length prefix) of a file
// whose data region holds data_size bytes. Validates everything that can be checked
// without the data. Throws gpt::Error (GPT_ERR_FORMAT; GPT_ERR_UNSUPPORTED for an unknown
// dtype) naming `source` and the tensor. Safe on arbitrary bytes: this is the fuzz entry.
StHeader parse_safetensors_header(const uint8_t *json, size_t json_len, uint64_t data_size, const std::string &source);

// Parses a whole file image (length prefix, header, data) and points each tensor's data
// into it.
StHeader parse_safetensors(const uint8_t *file, uint64_t file_size, const std::string &source);

// One mapped safetensors file.
class SafetensorsFile {
public:
    static std::unique_ptr<SafetensorsFile> open(const std::string &path);
    const std::string &path() const { return file_->path(); }
    const StHeader &header() const { return header_; }
    const StTensor *find(const std::string &name) const;

private:
    SafetensorsFile() = default;
    std::shared_ptr<MappedFile> file_;
    StHeader header_;
    std::map<std::string, size_t> index_;
};

// All tensors of a Hugging Face model directory: model.safetensors, or the shards named by
// model.safetensors.index.json's "weight_map" (which must agree with the shards' contents).
class SafetensorsSet {
public:
    static std::unique_ptr<SafetensorsSet> open_dir(const std::string &dir);
    const StTensor *find(const std::string &name) const;
    // Every tensor name, sorted.
    std::vector<std::string> names() const;
    // What was opened, for messages: "model.safetensors" or "model.safetensors.index.json (3 shards)".
    const std::string &description() const { return description_; }
    const std::vector<std::unique_ptr<SafetensorsFile>> &files() const { return files_; }

private:
    std::vector<std::unique_ptr<SafetensorsFile>> files_;
    std::map<std::string, const StTensor *> by_name_;
    std::string description_;
};

} // namespace gpt::convert
