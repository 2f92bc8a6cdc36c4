// pt_file.h - a torch.save file opened safely: the zip container (pt_zip.h), the pickle in
// data.pkl interpreted by the allowlist machine (pickle_vm.h), each storage bound to its
// data/<key> record (checked to hold every element it claims). Nothing is read from the
// records here: tensors point into the mapping. The legacy (pre-1.6) format and torch's
// early "PYTORCH1" preview are refused with a message that names them.
#pragma once

#include "convert/fs_util.h"
#include "convert/pickle_vm.h"
#include "convert/pt_zip.h"

#include <memory>
#include <string>

namespace gpt::convert {

struct PtFile {
    std::shared_ptr<MappedFile> file; // keeps the records mapped (may be null for an in-memory image)
    PtZip zip;
    pickle::Unpickled pickle;
    const pickle::Value *root() const { return pickle.root; }
};

// Parses an image of a whole .pt file; throws gpt::Error naming `source`. The fuzz entry.
PtFile parse_pt(const uint8_t *data, uint64_t size, const std::string &source);

// Maps and parses a file.
PtFile open_pt(const std::string &path);

// Whether the bytes begin like a torch.save file (zip, legacy pickle or preview).
bool looks_like_pt(const uint8_t *p, uint64_t size);

} // namespace gpt::convert
