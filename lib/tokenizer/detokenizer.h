// detokenizer.h - streaming decoding: feed generated ids one at a time and get back only
// bytes that form complete UTF-8 (an incomplete trailing sequence is held until the next
// token completes it). The concatenation of every push() and the final flush() equals
// Tokenizer::decode() of the same ids, byte for byte. Holds a reference to the tokenizer,
// which must outlive it; one Detokenizer per stream (it is not thread-safe itself).
#pragma once

#include "tokenizer/tokenizer.h"

#include <cstdint>
#include <string>
#include <utility>

namespace gpt {

class Detokenizer {
public:
    // continues: the ids continue earlier text, so the leading-space rule never applies.
    Detokenizer(const Tokenizer &tokenizer, bool render_special, bool continues = false)
        : tok_(tokenizer), render_special_(render_special), continues_(continues), started_(continues) {}

    // Appends token id's bytes; returns those now complete. Throws GPT_ERR_INVALID_ARG for an
    // id out of range (and then changes nothing).
    std::string push(int32_t id);
    // Returns whatever is held back (an incomplete or invalid sequence, as-is) and starts a
    // new stream (the leading-space rule applies again, unless the detokenizer continues text).
    std::string flush();
    // Drops anything held and starts a new stream.
    void reset();
    size_t pending() const { return held_.size(); }

    // The stream state, so a caller can undo a push whose output it could not take.
    struct State {
        bool started;
        std::string held;
    };
    State state() const { return State{started_, held_}; }
    void restore(State &&s) noexcept { // moves: cannot fail, so it can undo a failed push
        started_ = s.started;
        held_ = std::move(s.held);
    }

private:
    const Tokenizer &tok_;
    bool render_special_;
    bool continues_;
    bool started_;  // a byte has been produced, or the text continues (the leading-space rule is spent)
    std::string held_;
};

} // namespace gpt
