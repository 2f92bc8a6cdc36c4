// tensor_check.h - a tensor's crc32 and NaN/Inf scan. The reader checks the whole file at once
// this way (WeightFile::verify_checksums); a loader that copies the weights elsewhere checks
// each tensor piece by piece just before it copies the piece (TensorCheck), so the file's
// pages can go right after instead of all being resident first. The messages are the same.
#pragma once

#include "format/reader.h"

#include <cstdint>
#include <string>

namespace gpt::format {

// The crc32 of bytes [off, off + len) of tensor e (data: its first byte), and the offset in
// the tensor of the first 256 KiB step holding a non-finite float (UINT64_MAX: none, or not
// checked). off must be a multiple of 16 (pieces are cut so).
struct PieceScan {
    uint32_t crc = 0;
    uint64_t bad_at = UINT64_MAX;
};
PieceScan scan_piece(const TensorEntry &e, const uint8_t *data, uint64_t off, uint64_t len, bool check_finite);

// Throws what a tensor with this whole-tensor crc and first bad step deserves (nothing when
// both are fine): GPT_ERR_CHECKSUM "tensor 'x' checksum mismatch", else GPT_ERR_FORMAT "tensor
// 'x' holds a non-finite value (NaN at element N)" (a scale, at row and group, when quantized).
void check_scan_result(const std::string &source, const TensorEntry &e, const uint8_t *data, uint32_t crc, uint64_t bad_at);

// Checks one tensor fed in consecutive pieces. A large piece is shared among threads
// (pieces of 1 MiB combined with crc32_combine), so checking just before each upload costs
// no more time than the whole-file pass did.
class TensorCheck {
public:
    TensorCheck(const std::string &source, const TensorEntry &e, const uint8_t *data, bool check_finite);
    uint64_t checked() const { return done_; } // bytes fed so far
    // Checks the next len bytes (from checked()). Throws GPT_ERR_INTERNAL past the tensor's end.
    void add(uint64_t len);
    // After the last piece (checked() == e.nbytes): throws as check_scan_result does.
    void finish() const;

private:
    const std::string &source_;
    const TensorEntry &e_;
    const uint8_t *data_;
    bool check_finite_;
    uint64_t done_ = 0;
    uint32_t crc_;
    uint64_t bad_at_ = UINT64_MAX;
};

} // namespace gpt::format
