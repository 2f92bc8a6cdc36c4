// weight_source.cpp - see weight_source.h.
#include "runtime/weight_source.h"

#include "core/error.h"

namespace gpt {

FileWeightSource::FileWeightSource(const format::WeightFile &file, std::vector<const format::TensorEntry *> entries,
                                   bool check_tensors, bool check_finite)
    : file_(file), entries_(std::move(entries)), check_tensors_(check_tensors), check_finite_(check_finite),
      done_(entries_.size(), !check_tensors) {}

const format::TensorEntry &FileWeightSource::entry(size_t i) const {
    if (i >= entries_.size())
        fail(GPT_ERR_INTERNAL, "%s: weight %zu of %zu asked of the file", file_.source().c_str(), i, entries_.size());
    return *entries_[i];
}

void FileWeightSource::check(size_t i, uint64_t len) {
    const format::TensorEntry &e = entry(i);
    if (!check_tensors_ || done_[i]) return;
    if (current_ != i) {
        if (check_) // a device moved on with a tensor half checked: a bug, never silently skipped
            fail(GPT_ERR_INTERNAL, "%s: tensor '%s' left half checked", file_.source().c_str(), entries_[current_]->name.c_str());
        check_.reset(new format::TensorCheck(file_.source(), e, file_.data(e), check_finite_));
        current_ = i;
    }
    check_->add(len);
    if (check_->checked() == e.nbytes) {
        check_->finish();
        check_.reset();
        current_ = SIZE_MAX;
        done_[i] = true;
    }
}

void FileWeightSource::check_all() {
    if (!check_tensors_) return;
    bool some_done = false;
    for (bool d : done_) some_done = some_done || d;
    if (!some_done) {
        file_.verify_checksums(check_finite_); // threads across the whole file
    } else { // some were checked ahead (Model::load, while the GPU's context was made)
        for (size_t i = 0; i < entries_.size(); i++)
            if (!done_[i]) check(i, entries_[i]->nbytes);
    }
    done_.assign(done_.size(), true);
}

void FileWeightSource::release(size_t i, uint64_t offset, uint64_t len) {
    const format::TensorEntry &e = entry(i);
    if (offset > e.nbytes || len > e.nbytes - offset) return;
    file_.drop_pages(e.offset + offset, len);
}

bool FileWeightSource::all_checked() const {
    for (bool d : done_)
        if (!d) return false;
    return true;
}

} // namespace gpt
