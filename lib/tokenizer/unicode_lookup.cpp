// unicode_lookup.cpp - lookups into the generated tables (unicode_tables.cpp): binary search
// over sorted ranges, with ASCII answered from a 128-entry table built at compile time.
#include "tokenizer/unicode_tables.h"

#include <array>

namespace gpt::unicode {

namespace {

constexpr std::array<CharClass, 128> ascii_classes() {
    std::array<CharClass, 128> t{};
    for (int c = 0; c < 128; ++c) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) t[c] = CC_LETTER;
        else if (c >= '0' && c <= '9') t[c] = CC_NUMBER;
        else if (c == ' ' || (c >= 0x09 && c <= 0x0D)) t[c] = CC_SPACE;
        else t[c] = CC_OTHER;
    }
    return t;
}
constexpr std::array<CharClass, 128> kAscii = ascii_classes();

} // namespace

CharClass char_class(uint32_t cp) {
    if (cp < 128) return kAscii[cp];
    size_t lo = 0, hi = kCharClassRangeCount;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (kCharClassRanges[mid].hi < cp) lo = mid + 1;
        else hi = mid;
    }
    if (lo < kCharClassRangeCount && kCharClassRanges[lo].lo <= cp) return kCharClassRanges[lo].cls;
    return CC_OTHER;
}

CaseClass case_class(uint32_t cp) {
    if (cp < 128) {
        if (cp >= 'A' && cp <= 'Z') return CASE_UPPER;
        if (cp >= 'a' && cp <= 'z') return CASE_LOWER;
        return CASE_NONE;
    }
    size_t lo = 0, hi = kCaseRangeCount;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (kCaseRanges[mid].hi < cp) lo = mid + 1;
        else hi = mid;
    }
    if (lo < kCaseRangeCount && kCaseRanges[lo].lo <= cp) return kCaseRanges[lo].cls;
    return CASE_NONE;
}

char fold_contraction_letter(uint32_t cp) {
    if (cp < 128) {
        char c = (char)cp;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        switch (c) {
        case 's': case 't': case 'r': case 'v': case 'e': case 'm': case 'l': case 'd': return c;
        default: return 0;
        }
    }
    for (size_t i = 0; i < kFoldEntryCount; ++i)
        if (kFoldEntries[i].cp == cp) return kFoldEntries[i].ascii;
    return 0;
}

} // namespace gpt::unicode
