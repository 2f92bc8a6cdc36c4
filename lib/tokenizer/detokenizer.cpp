// detokenizer.cpp - Detokenizer: pieces are appended to a small hold buffer; everything up
// to an incomplete trailing UTF-8 sequence is released. The leading-space rule of decode()
// (SPM drops one space before the first byte of output) is applied to the first byte.
#include "tokenizer/detokenizer.h"

#include "tokenizer/utf8.h"

namespace gpt {

std::string Detokenizer::push(int32_t id) {
    std::string p = tok_.piece(id, render_special_);
    if (p.empty()) return std::string();
    if (!started_) {
        started_ = true;
        if (tok_.strips_leading_space() && p[0] == ' ') p.erase(0, 1);
    }
    held_ += p;
    size_t n = utf8::complete_prefix(reinterpret_cast<const unsigned char *>(held_.data()), held_.size());
    std::string out = held_.substr(0, n);
    held_.erase(0, n);
    return out;
}

std::string Detokenizer::flush() {
    std::string out;
    out.swap(held_);
    started_ = continues_;
    return out;
}

void Detokenizer::reset() {
    held_.clear();
    started_ = continues_;
}

} // namespace gpt
