// nfc.cpp - normalization form C as UAX #15 specifies it: decompose each code point fully
// (recursively through the single-level table, Hangul syllables arithmetically), sort each run
// of combining marks by combining class (stable), then compose each mark with the last
// starter unless a mark of the same or higher class stands between them.
#include "tokenizer/nfc.h"

#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gpt {

namespace {

using unicode::kCombiningRangeCount;
using unicode::kCombiningRanges;
using unicode::kCompositionCount;
using unicode::kCompositions;
using unicode::kDecompositionCount;
using unicode::kDecompositions;

// An invalid byte travels as this bit plus its value: a starter nothing composes with.
constexpr uint32_t kRawByte = 0x80000000u;

// Hangul syllable arithmetic (Unicode chapter 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t combining_class(uint32_t cp) {
    if (cp < 0x300 || (cp & kRawByte)) return 0;
    size_t lo = 0, hi = kCombiningRangeCount;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (kCombiningRanges[mid].hi < cp) lo = mid + 1;
        else hi = mid;
    }
    return lo < kCombiningRangeCount && kCombiningRanges[lo].lo <= cp ? kCombiningRanges[lo].ccc : 0;
}

const unicode::Decomposition *find_decomposition(uint32_t cp) {
    const auto *end = kDecompositions + kDecompositionCount;
    const auto *it = std::lower_bound(kDecompositions, end, cp, [](const unicode::Decomposition &d, uint32_t c) { return d.cp < c; });
    return it != end && it->cp == cp ? it : nullptr;
}

void decompose(uint32_t cp, std::vector<uint32_t> &out) {
    if (cp >= kSBase && cp < kSBase + kSCount) {
        uint32_t s = cp - kSBase;
        out.push_back(kLBase + s / kNCount);
        out.push_back(kVBase + (s % kNCount) / kTCount);
        if (s % kTCount) out.push_back(kTBase + s % kTCount);
        return;
    }
    // The table's entries decompose to strictly earlier forms, so this ends (depth <= 4).
    if (const auto *d = (cp < 0xC0 || (cp & kRawByte)) ? nullptr : find_decomposition(cp)) {
        decompose(d->first, out);
        if (d->second) decompose(d->second, out);
        return;
    }
    out.push_back(cp);
}

// The primary composite of (a, b), or 0.
uint32_t compose(uint32_t a, uint32_t b) {
    if ((a | b) & kRawByte) return 0;
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
        return a + (b - kTBase);
    const auto *end = kCompositions + kCompositionCount;
    const auto *it = std::lower_bound(kCompositions, end, std::make_pair(a, b), [](const unicode::Composition &c, std::pair<uint32_t, uint32_t> k) {
        return c.first != k.first ? c.first < k.first : c.second < k.second;
    });
    return it != end && it->first == a && it->second == b ? it->composite : 0;
}

void append_utf8(std::string &out, uint32_t cp) {
    if (cp & kRawByte) {
        out += (char)(cp & 0xFF);
    } else if (cp < 0x80) {
        out += (char)cp;
    } else if (cp < 0x800) {
        out += (char)(0xC0 | (cp >> 6));
        out += (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += (char)(0xE0 | (cp >> 12));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    } else {
        out += (char)(0xF0 | (cp >> 18));
        out += (char)(0x80 | ((cp >> 12) & 0x3F));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    }
}

} // namespace

bool may_change_under_nfc(std::string_view text) {
    // U+0300 is the first code point of three UTF-8 bytes or of two with a lead byte >= 0xCC.
    for (unsigned char c : text)
        if (c >= 0xCC) return true;
    return false;
}

std::string nfc(std::string_view text) {
    if (!may_change_under_nfc(text)) return std::string(text);
    std::vector<uint32_t> cps;
    cps.reserve(text.size());
    const auto *s = reinterpret_cast<const unsigned char *>(text.data());
    for (size_t pos = 0; pos < text.size();) {
        utf8::Unit u = utf8::decode(s + pos, text.size() - pos);
        if (u.cp == utf8::kInvalid) {
            for (uint32_t k = 0; k < u.len; ++k) cps.push_back(kRawByte | s[pos + k]);
        } else {
            decompose(u.cp, cps);
        }
        pos += u.len;
    }
    // Canonical ordering: each maximal run of non-starters, stably by class.
    for (size_t i = 0; i < cps.size();) {
        if (combining_class(cps[i]) == 0) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
        if (j - i > 1)
            std::stable_sort(cps.begin() + (long)i, cps.begin() + (long)j,
                             [](uint32_t a, uint32_t b) { return combining_class(a) < combining_class(b); });
        i = j;
    }
    // Canonical composition, as UAX #15's reference code: a code point joins the last starter
    // when they have a primary composite and nothing between them blocks it (the last code
    // point kept since the starter is the starter itself, or of a lower class).
    if (cps.empty()) return std::string();
    size_t starter = 0, kept = 1;
    int last_class = combining_class(cps[0]) == 0 ? 0 : 256;  // a leading mark has no starter
    for (size_t i = 1; i < cps.size(); ++i) {
        const uint32_t cp = cps[i];
        const int cls = combining_class(cp);
        const uint32_t composite = compose(cps[starter], cp);
        if (composite && (last_class < cls || last_class == 0)) {
            cps[starter] = composite;
            continue;
        }
        if (cls == 0) starter = kept;
        last_class = cls;
        cps[kept++] = cp;
    }
    cps.resize(kept);
    std::string out;
    out.reserve(text.size());
    for (uint32_t cp : cps) append_utf8(out, cp);
    return out;
}

} // namespace gpt
