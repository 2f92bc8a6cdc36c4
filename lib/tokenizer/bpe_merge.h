// bpe_merge.h - the BPE merge loop shared by both tokenizer families: repeatedly merge the
// adjacent pair with the best priority (lowest value; leftmost on ties), as Hugging Face's
// Word::merge_all and llama2.c / SentencePiece do. A heap with lazy invalidation makes it
// O(n log n) in the number of initial symbols.
#pragma once

#include <cstdint>
#include <vector>

namespace gpt {

// How a pair of adjacent token ids may merge: into merged, at priority (lower first).
struct PairMerge {
    double priority;
    int32_t merged;
};

class PairRanker {
public:
    virtual ~PairRanker() = default;
    // Whether (left, right) merges; fills *m when it does.
    virtual bool rank(int32_t left, int32_t right, PairMerge *m) const = 0;
};

// Merges ids in place (ids are the initial symbols, in text order).
void bpe_merge(std::vector<int32_t> &ids, const PairRanker &ranker);

} // namespace gpt
