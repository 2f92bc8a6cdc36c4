// unicode_tables.h - the character classes of the pre-tokenization regexes: \p{L}, \p{N},
// \s (White_Space) and the letter-case sets of the o200k regex, exact for every code point of the Unicode version the tables were
// generated from (tools/gen_unicode_tables.py writes unicode_tables.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpt::unicode {

// OTHER is everything else, unassigned code points included (and, in the tokenizer, each
// byte of invalid UTF-8).
enum CharClass : uint8_t { CC_OTHER = 0, CC_LETTER = 1, CC_NUMBER = 2, CC_SPACE = 3 };

struct ClassRange {
    uint32_t lo, hi;  // inclusive
    CharClass cls;
};
// The two letter sets of the o200k regex (Phi-4-mini): bit CASE_UPPER = in
// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], bit CASE_LOWER = in [\p{Ll}\p{Lm}\p{Lo}\p{M}].
enum CaseClass : uint8_t { CASE_NONE = 0, CASE_UPPER = 1, CASE_LOWER = 2, CASE_EITHER = 3 };

struct CaseRange {
    uint32_t lo, hi;  // inclusive
    CaseClass cls;
};
struct FoldEntry {
    uint32_t cp;   // a non-ASCII code point ...
    char ascii;    // ... whose simple case folding is this lower-case ASCII letter
};

// Normalization form C (unicode_nfc_tables.cpp): non-zero canonical combining classes,
// single-level canonical decompositions (second 0 for a singleton; Hangul syllables are
// algorithmic and absent), primary composites sorted by (first, second).
struct CombiningRange {
    uint32_t lo, hi;  // inclusive
    uint8_t ccc;
};
struct Decomposition {
    uint32_t cp, first, second;
};
struct Composition {
    uint32_t first, second, composite;
};

extern const char *const kUnicodeVersion;
extern const CombiningRange kCombiningRanges[];
extern const size_t kCombiningRangeCount;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionCount;
extern const Composition kCompositions[];
extern const size_t kCompositionCount;
extern const ClassRange kCharClassRanges[];
extern const size_t kCharClassRangeCount;
extern const CaseRange kCaseRanges[];
extern const size_t kCaseRangeCount;
extern const FoldEntry kFoldEntries[];
extern const size_t kFoldEntryCount;

// Binary search over kCharClassRanges (ASCII answered from a small table).
CharClass char_class(uint32_t cp);

// The lower-case ASCII letter cp matches under simple case folding when it is one of the
// contraction letters (s t r v e m l d) or folds onto one, else 0. Used by Llama-3's
// case-insensitive (?i:'s|'t|'re|'ve|'m|'ll|'d).
char fold_contraction_letter(uint32_t cp);

// Binary search over kCaseRanges; CASE_NONE outside them.
CaseClass case_class(uint32_t cp);

} // namespace gpt::unicode
