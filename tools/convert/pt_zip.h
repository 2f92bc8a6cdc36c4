// pt_zip.h - the zip container of PyTorch's torch.save (>= 1.6): every entry stored
// (method 0), sizes and offsets taken from the central directory (the local headers carry
// zeros under flag bit 3), ZIP64 when large, one top folder named after the saved file
// ("ckpt/", "archive/"). Entries are checked to lie inside the file, before the central
// directory, without overlapping each other; their bytes are read in place.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace gpt::convert {

struct ZipEntry {
    const uint8_t *data = nullptr; // first byte of the stored data, inside the file image
    uint64_t size = 0;
};

struct PtZip {
    std::string folder;                       // "ckpt" (no slash)
    std::map<std::string, ZipEntry> entries;  // by name below the folder: "data.pkl", "data/0"
    const ZipEntry *find(const std::string &name) const;
};

// Parses the image; throws GPT_ERR_FORMAT (GPT_ERR_UNSUPPORTED for compressed or encrypted
// entries) naming `source` and the entry. Linear in the number of entries (n log n sort).
PtZip parse_pt_zip(const uint8_t *file, uint64_t size, const std::string &source);

} // namespace gpt::convert
