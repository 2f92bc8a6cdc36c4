// text.h - Python's str operations on UTF-8: strings in a template are sequences of code
// points (len, indexing, slicing count characters, not bytes), and strip()/split() with no
// argument use Python's notion of whitespace, which includes Unicode spaces.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpt::chat {

bool valid_utf8(std::string_view s);
// Byte offset of every code point, plus s.size() at the end (s must be valid UTF-8).
std::vector<size_t> code_point_offsets(std::string_view s);
size_t code_point_count(std::string_view s);
// Appends the UTF-8 encoding of cp.
void append_utf8(std::string &out, uint32_t cp);
// Decodes the code point at s[*pos] and advances *pos (s valid UTF-8).
uint32_t next_code_point(std::string_view s, size_t *pos);
// Python's str.isspace() for one code point.
bool is_py_space(uint32_t cp);

enum class StripSide { Both, Left, Right };
// str.strip() with no argument (Python whitespace) or with a set of characters.
std::string py_strip(std::string_view s, StripSide side, const std::string *chars);
// str.split() with no argument (runs of whitespace) or with a separator; maxsplit < 0: no
// limit. Throws GPT_ERR_UNSUPPORTED past max_parts parts.
std::vector<std::string> py_split(std::string_view s, const std::string *sep, int64_t maxsplit, size_t max_parts);
// ASCII case mapping; false when s holds non-ASCII text, whose Unicode case mapping this
// library does not carry (the caller reports it unsupported).
bool ascii_upper(std::string_view s, std::string &out);
bool ascii_lower(std::string_view s, std::string &out);
// str.title() and str.capitalize() (ASCII, same rule as above).
bool py_title(std::string_view s, std::string &out);
bool py_capitalize(std::string_view s, std::string &out);
// str.replace(old, new, count); count < 0: all.
// Throws GPT_ERR_UNSUPPORTED (naming the limit) when the result would exceed max_bytes.
std::string py_replace(std::string_view s, std::string_view from, std::string_view to, int64_t count, size_t max_bytes);

} // namespace gpt::chat
