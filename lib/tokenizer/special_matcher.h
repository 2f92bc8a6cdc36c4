// special_matcher.h - finds special/added token strings in text: a byte trie answering
// "the longest token string starting here" (so leftmost-longest when scanned left to
// right, as Hugging Face's added-token splitting does). Immutable once built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace gpt {

class SpecialMatcher {
public:
    SpecialMatcher();
    // Adds a non-empty string; a string added twice keeps its first id.
    void add(std::string_view s, int32_t id);
    bool empty() const { return nodes_.size() == 1; }
    // Length of the longest added string that text[pos..] starts with (0 for none); its id
    // goes to *id.
    size_t match(std::string_view text, size_t pos, int32_t *id) const;

private:
    struct Node {
        int32_t id = -1;
        std::vector<std::pair<uint8_t, int32_t>> kids;  // sorted by byte
    };
    int32_t child(int32_t node, uint8_t b) const;
    std::vector<Node> nodes_;
    bool first_[256];
};

} // namespace gpt
