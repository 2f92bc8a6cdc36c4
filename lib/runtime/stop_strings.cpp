// stop_strings.cpp - see stop_strings.h.
#include "runtime/stop_strings.h"

#include <algorithm>
#include <cstring>

namespace gpt {

StopMatcher::StopMatcher(const Tokenizer &tokenizer, const char *const *strings, uint32_t n)
    : detok_(tokenizer, /*render_special=*/false, /*continues=*/true) {
    for (uint32_t i = 0; i < n; i++) stops_.emplace_back(strings[i], std::strlen(strings[i]));
}

StopMatcher::Verdict StopMatcher::push(int32_t token) {
    tail_ += detok_.push(token);
    const uint64_t decoded_end = base_ + tail_.size();
    // Bytes of an incomplete UTF-8 character are not in tail_ yet: the token ends past them.
    ends_.push_back(decoded_end + detok_.pending());

    // How many held tokens end at or before offset `at` of the decoded text (ends_ ascend).
    auto deliverable_before = [&](uint64_t at) {
        return (uint32_t)(std::upper_bound(ends_.begin() + head_, ends_.end(), at) - (ends_.begin() + head_));
    };

    // A match can only start in tail_: anything before it was shown because no stop string
    // could begin there.
    size_t first = std::string::npos;
    for (std::string_view s : stops_) first = std::min(first, std::string_view(tail_).find(s));
    if (first != std::string::npos) return Verdict{released_ + deliverable_before(base_ + first), true};

    // The longest tail of the text that is a proper prefix of some stop string stays held.
    size_t keep = 0;
    for (std::string_view s : stops_)
        for (size_t len = std::min(s.size() - 1, tail_.size()); len > keep; len--)
            if (std::memcmp(tail_.data() + tail_.size() - len, s.data(), len) == 0) {
                keep = len;
                break;
            }
    const uint64_t hold_from = decoded_end - keep;
    const uint32_t n = deliverable_before(hold_from);
    head_ += n; // dropped in bulk, so releasing one of many held tokens costs O(1)
    if (head_ * 2 >= ends_.size()) { // amortised O(1): moves fewer than were dropped
        ends_.erase(ends_.begin(), ends_.begin() + head_);
        head_ = 0;
    }
    released_ += n;
    tail_.erase(0, tail_.size() - keep);
    base_ = hold_from;
    return Verdict{released_, false};
}

} // namespace gpt
