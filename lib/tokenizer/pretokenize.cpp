// pretokenize.cpp - the three split regexes, each alternative coded as the regex engine
// would try it at a position (first alternative that matches wins; greedy quantifiers
// backtrack where a later part fails). The patterns, verbatim from the tokenizer.json files:
//   GPT2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   LLAMA3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   QWEN2:  as LLAMA3 with \p{N} in place of \p{N}{1,3}
#include "tokenizer/pretokenize.h"

#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"

namespace gpt {

namespace {

using unicode::CharClass;
using unicode::CC_LETTER;
using unicode::CC_NUMBER;
using unicode::CC_OTHER;
using unicode::CC_SPACE;

struct Units {
    std::vector<uint32_t> cp;      // utf8::kInvalid for an invalid byte
    std::vector<CharClass> cls;
    std::vector<size_t> offset;    // [n + 1] byte offset of each unit
    size_t n = 0;

    explicit Units(std::string_view text) {
        const auto *s = reinterpret_cast<const unsigned char *>(text.data());
        size_t pos = 0;
        while (pos < text.size()) {
            utf8::Unit u = utf8::decode(s + pos, text.size() - pos);
            cp.push_back(u.cp);
            cls.push_back(u.cp == utf8::kInvalid ? CC_OTHER : unicode::char_class(u.cp));
            offset.push_back(pos);
            pos += u.len;
        }
        offset.push_back(pos);
        n = cp.size();
    }

    bool is(size_t i, uint32_t c) const { return i < n && cp[i] == c; }
    bool of(size_t i, CharClass c) const { return i < n && cls[i] == c; }
    bool crlf(size_t i) const { return i < n && (cp[i] == '\r' || cp[i] == '\n'); }
    size_t run(size_t i, CharClass c) const {   // end of the run of class c starting at i
        while (i < n && cls[i] == c) ++i;
        return i;
    }
    // The same, looking at no more than max units: a pattern that takes a bounded piece of
    // a run must not scan the rest of it (that made a run of digits quadratic).
    size_t run_upto(size_t i, CharClass c, size_t max) const {
        const size_t end = max < n - i ? i + max : n;
        while (i < end && cls[i] == c) ++i;
        return i;
    }
};

// 's|'t|'re|'ve|'m|'ll|'d, case-sensitively or under simple case folding; 0 = no match.
size_t match_contraction(const Units &u, size_t i, bool fold) {
    if (!u.is(i, '\'') || i + 1 >= u.n) return 0;
    auto letter = [&](size_t k) -> char {
        if (k >= u.n || u.cp[k] == utf8::kInvalid) return 0;
        if (fold) return unicode::fold_contraction_letter(u.cp[k]);
        uint32_t c = u.cp[k];
        return (c == 's' || c == 't' || c == 'r' || c == 'v' || c == 'e' || c == 'm' || c == 'l' || c == 'd') ? (char)c : 0;
    };
    char a = letter(i + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    char b = letter(i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return 0;
}

// " ?X+" for a class X that never holds the space: 0 = no match.
size_t match_opt_space_run(const Units &u, size_t i, CharClass c) {
    if (u.is(i, ' ') && u.of(i + 1, c)) return u.run(i + 1, c);
    if (u.of(i, c)) return u.run(i, c);
    return 0;
}

// \s+(?!\S)|\s+ at a whitespace unit: the run, less its last unit when a non-space follows
// and the run is longer than one (the lookahead backtracks by one).
size_t match_space_tail(const Units &u, size_t i) {
    size_t k = u.run(i, CC_SPACE);
    return (k < u.n && k - i >= 2) ? k - 1 : k;
}

size_t match_gpt2(const Units &u, size_t i) {
    if (size_t e = match_contraction(u, i, false)) return e;
    if (size_t e = match_opt_space_run(u, i, CC_LETTER)) return e;
    if (size_t e = match_opt_space_run(u, i, CC_NUMBER)) return e;
    if (size_t e = match_opt_space_run(u, i, CC_OTHER)) return e;
    if (u.of(i, CC_SPACE)) return match_space_tail(u, i);
    return i + 1;  // unreachable: every unit is a letter, number, space or other
}

size_t match_llama3(const Units &u, size_t i, size_t max_digits) {
    if (size_t e = match_contraction(u, i, true)) return e;
    // [^\r\n\p{L}\p{N}]?\p{L}+ : the optional unit is tried first (greedy).
    if (u.of(i, CC_LETTER)) return u.run(i, CC_LETTER);
    if (!u.crlf(i) && !u.of(i, CC_NUMBER) && u.of(i + 1, CC_LETTER)) return u.run(i + 1, CC_LETTER);
    // \p{N}{1,3} or \p{N}
    if (u.of(i, CC_NUMBER)) return u.run_upto(i, CC_NUMBER, max_digits);
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    if (size_t e = match_opt_space_run(u, i, CC_OTHER)) {
        while (u.crlf(e)) ++e;
        return e;
    }
    if (u.of(i, CC_SPACE)) {
        // \s*[\r\n]+ : \s* backs off until [\r\n]+ can match, i.e. the match ends just
        // after the last CR/LF of the whitespace run.
        size_t k = u.run(i, CC_SPACE);
        for (size_t p = k; p > i; --p)
            if (u.crlf(p - 1)) return p;
        return match_space_tail(u, i);
    }
    return i + 1;  // unreachable
}

} // namespace

void pretokenize(PreTokenizer kind, std::string_view text, std::vector<TextSpan> &out) {
    if (text.empty()) return;
    Units u(text);
    size_t i = 0;
    while (i < u.n) {
        size_t e;
        switch (kind) {
        case PreTokenizer::LLAMA3: e = match_llama3(u, i, 3); break;
        case PreTokenizer::QWEN2: e = match_llama3(u, i, 1); break;
        default: e = match_gpt2(u, i); break;
        }
        if (e <= i) e = i + 1;  // defensive: always make progress
        out.push_back({u.offset[i], u.offset[e]});
        i = e;
    }
}

} // namespace gpt
