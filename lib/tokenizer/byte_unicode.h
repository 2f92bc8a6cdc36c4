// byte_unicode.h - GPT-2's bytes_to_unicode: the reversible byte <-> character mapping that
// byte-level BPE vocabularies are spelled in (printable Latin-1 bytes map to themselves,
// the other 68 bytes to U+0100.. in byte order; space becomes "Ġ", newline "Ċ").
#pragma once

#include <cstdint>
#include <string>

namespace gpt {

// The code point byte b is spelled as.
uint32_t byte_to_codepoint(uint8_t b);
// The UTF-8 spelling of byte b (1 or 2 bytes).
const std::string &byte_to_utf8(uint8_t b);
// The byte code point cp stands for, or -1 when cp is not in the mapping's image.
int codepoint_to_byte(uint32_t cp);

} // namespace gpt
