// pretokenize.cpp - the split regexes, each alternative coded as the regex engine would try
// it at a position (first alternative that matches wins; greedy quantifiers backtrack where a
// later part fails). The patterns, verbatim from the tokenizer.json files:
//   GPT2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   LLAMA3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   QWEN2:  as LLAMA3 with \p{N} in place of \p{N}{1,3}
//   O200K:  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//           [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
//           \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   GPT2_DIGITS: Hugging Face's Digits(individual_digits=true) first (every \p{N} character
//           is a word of its own), then the GPT2 regex within each stretch between them.
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
using unicode::CaseClass;

struct Units {
    std::vector<uint32_t> cp;      // utf8::kInvalid for an invalid byte
    std::vector<CharClass> cls;
    std::vector<size_t> offset;    // [n + 1] byte offset of each unit
    std::vector<CaseClass> letter_case;  // o200k only: the letter sets of each unit
    size_t n = 0;

    explicit Units(std::string_view text, bool with_case = false) {
        const auto *s = reinterpret_cast<const unsigned char *>(text.data());
        size_t pos = 0;
        while (pos < text.size()) {
            utf8::Unit u = utf8::decode(s + pos, text.size() - pos);
            cp.push_back(u.cp);
            cls.push_back(u.cp == utf8::kInvalid ? CC_OTHER : unicode::char_class(u.cp));
            if (with_case) letter_case.push_back(u.cp == utf8::kInvalid ? unicode::CASE_NONE : unicode::case_class(u.cp));
            offset.push_back(pos);
            pos += u.len;
        }
        offset.push_back(pos);
        n = cp.size();
    }

    bool is(size_t i, uint32_t c) const { return i < n && cp[i] == c; }
    bool of(size_t i, CharClass c) const { return i < n && cls[i] == c; }
    bool crlf(size_t i) const { return i < n && (cp[i] == '\r' || cp[i] == '\n'); }
    bool upper(size_t i) const { return i < n && (letter_case[i] & unicode::CASE_UPPER); }
    bool lower(size_t i) const { return i < n && (letter_case[i] & unicode::CASE_LOWER); }
    // [^\r\n\p{L}\p{N}]: one unit that may open a word.
    bool word_opener(size_t i) const { return i < n && !crlf(i) && cls[i] != CC_LETTER && cls[i] != CC_NUMBER; }
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

// [U]*[L]+ from i (U, L the o200k letter sets), as the regex backtracks: the U run is
// given back one unit at a time until a unit of L follows, then L takes its whole run.
// 0 = no match. Each call looks at the U run once, and a failed call is followed by the
// [U]+[L]* alternative, which consumes that run: linear overall.
size_t match_upper_lower(const Units &u, size_t i) {
    size_t k = i;
    while (u.upper(k)) ++k;
    for (size_t p = k + 1; p > i; --p)
        if (u.lower(p - 1)) {
            size_t e = p - 1;
            while (u.lower(e)) ++e;
            return e;
        }
    return 0;
}

// [U]+[L]* from i; 0 = no match.
size_t match_upper_run(const Units &u, size_t i) {
    if (!u.upper(i)) return 0;
    size_t e = i;
    while (u.upper(e)) ++e;
    while (u.lower(e)) ++e;
    return e;
}

size_t with_contraction(const Units &u, size_t e) {
    size_t c = match_contraction(u, e, true);
    return c ? c : e;
}

size_t match_o200k(const Units &u, size_t i) {
    // The two word alternatives, each with the optional opener tried first.
    for (auto word : {match_upper_lower, match_upper_run}) {
        if (u.word_opener(i))
            if (size_t e = word(u, i + 1)) return with_contraction(u, e);
        if (size_t e = word(u, i)) return with_contraction(u, e);
    }
    if (u.of(i, CC_NUMBER)) return u.run_upto(i, CC_NUMBER, 3);
    //  ?[^\s\p{L}\p{N}]+[\r\n/]*
    if (size_t e = match_opt_space_run(u, i, CC_OTHER)) {
        while (u.crlf(e) || u.is(e, '/')) ++e;
        return e;
    }
    if (u.of(i, CC_SPACE)) {
        size_t k = u.run(i, CC_SPACE);
        for (size_t p = k; p > i; --p)
            if (u.crlf(p - 1)) return p;
        return match_space_tail(u, i);
    }
    return i + 1;  // unreachable
}

// One regex over the whole of text (offsets shifted by base).
void split_regex(PreTokenizer kind, std::string_view text, size_t base, std::vector<TextSpan> &out) {
    if (text.empty()) return;
    Units u(text, kind == PreTokenizer::O200K);
    size_t i = 0;
    while (i < u.n) {
        size_t e;
        switch (kind) {
        case PreTokenizer::LLAMA3: e = match_llama3(u, i, 3); break;
        case PreTokenizer::QWEN2: e = match_llama3(u, i, 1); break;
        case PreTokenizer::O200K: e = match_o200k(u, i); break;
        default: e = match_gpt2(u, i); break;
        }
        if (e <= i) e = i + 1;  // defensive: always make progress
        out.push_back({base + u.offset[i], base + u.offset[e]});
        i = e;
    }
}

// Digits(individual_digits=true): every \p{N} unit alone, the stretches between them split
// by the GPT-2 regex on their own (a space before a digit is not joined to it).
void split_digits_then_gpt2(std::string_view text, std::vector<TextSpan> &out) {
    Units u(text);
    size_t stretch = 0;  // unit index where the current non-digit stretch began
    for (size_t i = 0; i <= u.n; ++i) {
        if (i < u.n && u.cls[i] != CC_NUMBER) continue;
        split_regex(PreTokenizer::GPT2, text.substr(u.offset[stretch], u.offset[i] - u.offset[stretch]), u.offset[stretch], out);
        if (i < u.n) out.push_back({u.offset[i], u.offset[i + 1]});
        stretch = i + 1;
    }
}

} // namespace

void pretokenize(PreTokenizer kind, std::string_view text, std::vector<TextSpan> &out) {
    if (kind == PreTokenizer::GPT2_DIGITS) split_digits_then_gpt2(text, out);
    else split_regex(kind, text, 0, out);
}

} // namespace gpt
