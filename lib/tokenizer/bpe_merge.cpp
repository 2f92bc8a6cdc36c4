// bpe_merge.cpp - heap-driven BPE merging over a doubly linked list of symbols. Heap entries
// remember the ids they were computed for; an entry whose left or right symbol has changed
// since is stale and skipped (a merge never reproduces an id it consumed, since the merged
// string is strictly longer than either part).
#include "tokenizer/bpe_merge.h"

#include <cstddef>
#include <queue>

namespace gpt {

namespace {

struct Candidate {
    double priority;
    int32_t left;          // symbol index of the left part (text order, so ties go leftmost)
    int32_t right;
    int32_t left_id, right_id, merged;
};

struct Worse {
    bool operator()(const Candidate &a, const Candidate &b) const {
        if (a.priority != b.priority) return a.priority > b.priority;
        return a.left > b.left;
    }
};

} // namespace

void bpe_merge(std::vector<int32_t> &ids, const PairRanker &ranker) {
    const int32_t n = (int32_t)ids.size();
    if (n < 2) return;
    std::vector<int32_t> prev(n), next(n);
    for (int32_t i = 0; i < n; ++i) {
        prev[i] = i - 1;
        next[i] = i + 1 < n ? i + 1 : -1;
    }
    std::vector<bool> alive(n, true);
    std::priority_queue<Candidate, std::vector<Candidate>, Worse> heap;
    auto consider = [&](int32_t l, int32_t r) {
        PairMerge m;
        if (l >= 0 && r >= 0 && ranker.rank(ids[l], ids[r], &m)) heap.push({m.priority, l, r, ids[l], ids[r], m.merged});
    };
    for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);

    while (!heap.empty()) {
        Candidate c = heap.top();
        heap.pop();
        if (!alive[c.left] || !alive[c.right] || next[c.left] != c.right || ids[c.left] != c.left_id || ids[c.right] != c.right_id)
            continue;
        ids[c.left] = c.merged;
        alive[c.right] = false;
        next[c.left] = next[c.right];
        if (next[c.right] >= 0) prev[next[c.right]] = c.left;
        consider(prev[c.left], c.left);
        consider(c.left, next[c.left]);
    }
    size_t w = 0;
    for (int32_t i = 0; i < n; ++i)
        if (alive[i]) ids[w++] = ids[i];
    ids.resize(w);
}

} // namespace gpt
