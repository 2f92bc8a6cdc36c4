// stop_strings.h - finds stop strings in the text of generated tokens as they come, across
// token boundaries, and says which tokens may be shown: a token is held while its text
// reaches into a tail that could still begin a stop string (gpt.h, gpt_generate). Work per
// token is bounded by the stop strings' total length; the text kept is the held tail only.
#pragma once

#include "tokenizer/detokenizer.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpt {

class StopMatcher {
public:
    // strings: validated (non-empty, bounded); they must outlive the matcher.
    StopMatcher(const Tokenizer &tokenizer, const char *const *strings, uint32_t n);

    struct Verdict {
        uint32_t deliverable; // tokens 0 .. deliverable-1 of the stream may be shown
        bool matched;         // a stop string appeared: generation ends, the rest is dropped
    };
    // The next generated token (in the vocabulary).
    Verdict push(int32_t token);

private:
    std::vector<std::string_view> stops_;
    Detokenizer detok_;
    std::string tail_;           // decoded text from offset base_ on: what could start a match
    uint64_t base_ = 0;          // offset of tail_[0] in the whole decoded text
    std::vector<uint64_t> ends_; // from head_ on: end offsets of the held tokens (incomplete UTF-8 counted)
    size_t head_ = 0;
    uint32_t released_ = 0;      // tokens already deliverable
};

} // namespace gpt
