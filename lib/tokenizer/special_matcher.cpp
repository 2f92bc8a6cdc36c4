// special_matcher.cpp - the byte trie of special token strings.
#include "tokenizer/special_matcher.h"

#include <algorithm>

namespace gpt {

SpecialMatcher::SpecialMatcher() : nodes_(1) { std::fill(first_, first_ + 256, false); }

int32_t SpecialMatcher::child(int32_t node, uint8_t b) const {
    const auto &kids = nodes_[node].kids;
    auto it = std::lower_bound(kids.begin(), kids.end(), b, [](const std::pair<uint8_t, int32_t> &k, uint8_t v) { return k.first < v; });
    return (it != kids.end() && it->first == b) ? it->second : -1;
}

void SpecialMatcher::add(std::string_view s, int32_t id) {
    if (s.empty()) return;
    first_[(uint8_t)s[0]] = true;
    int32_t node = 0;
    for (char ch : s) {
        uint8_t b = (uint8_t)ch;
        int32_t next = child(node, b);
        if (next < 0) {
            next = (int32_t)nodes_.size();
            nodes_.emplace_back();
            auto &kids = nodes_[node].kids;
            auto it = std::lower_bound(kids.begin(), kids.end(), b, [](const std::pair<uint8_t, int32_t> &k, uint8_t v) { return k.first < v; });
            kids.insert(it, {b, next});
        }
        node = next;
    }
    if (nodes_[node].id < 0) nodes_[node].id = id;
}

size_t SpecialMatcher::match(std::string_view text, size_t pos, int32_t *id) const {
    if (pos >= text.size() || !first_[(uint8_t)text[pos]]) return 0;
    size_t best = 0;
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
        node = child(node, (uint8_t)text[i]);
        if (node < 0) break;
        if (nodes_[node].id >= 0) {
            best = i + 1 - pos;
            *id = nodes_[node].id;
        }
    }
    return best;
}

} // namespace gpt
