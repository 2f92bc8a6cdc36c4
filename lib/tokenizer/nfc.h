// nfc.h - Unicode normalization form C (UAX #15), the NFC normalizer of Qwen2.5/Qwen3's
// tokenizer.json: canonical decomposition, canonical ordering of combining marks, canonical
// composition, over the tables of unicode_nfc_tables.cpp. Bytes that are not valid UTF-8 pass
// through unchanged and block composition across them.
#pragma once

#include <string>
#include <string_view>

namespace gpt {

// Whether text could change under NFC: false when no code point is U+0300 or above (text
// below it is always NFC: no combining marks, every composite there is primary).
bool may_change_under_nfc(std::string_view text);

// text in normalization form C. O(n log n) in the worst case (a long run of combining marks
// is sorted), linear otherwise.
std::string nfc(std::string_view text);

} // namespace gpt
