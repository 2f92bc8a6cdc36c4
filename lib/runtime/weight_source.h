// weight_source.h - the weight file as a device's WeightSource: checks each tensor (crc32,
// NaN/Inf) when the device reaches it and lets a mapped file's pages go once copied.
#pragma once

#include "backend/backend.h"
#include "format/reader.h"
#include "format/tensor_check.h"

#include <memory>
#include <vector>

namespace gpt {

class FileWeightSource final : public WeightSource {
public:
    // entries[i]: the file's tensor behind weight i. check_tensors false: checks do nothing
    // (GPT_MODEL_SKIP_CHECKSUMS).
    FileWeightSource(const format::WeightFile &file, std::vector<const format::TensorEntry *> entries, bool check_tensors,
                     bool check_finite);

    void check(size_t i, uint64_t len) override;
    // Bytes weight i takes in the file (what check and release count in).
    uint64_t stored_bytes(size_t i) const { return entry(i).nbytes; }
    void check_all() override;
    void release(size_t i, uint64_t offset, uint64_t len) override;
    bool read_only_mapping() const override { return file_.mapped(); }

    // Whether every tensor has been checked (or checks were off): the load then may finish.
    bool all_checked() const;

private:
    const format::TensorEntry &entry(size_t i) const;

    const format::WeightFile &file_;
    std::vector<const format::TensorEntry *> entries_;
    const bool check_tensors_, check_finite_;
    std::vector<bool> done_;
    size_t current_ = SIZE_MAX; // the weight being checked piece by piece
    std::unique_ptr<format::TensorCheck> check_;
};

} // namespace gpt
