// lexer.h - a chat template's source into tokens, with jinja2's whitespace rules as
// transformers configures them (trim_blocks, lstrip_blocks, keep_trailing_newline off):
// text between tags arrives already trimmed, comments are gone.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpt::chat {

enum class Tok : uint8_t {
    Text,       // literal output
    VarBegin,   // {{
    VarEnd,     // }}
    BlockBegin, // {%
    BlockEnd,   // %}
    Name,
    String, // text: the unescaped value
    Int,
    Float,
    Op, // text: the operator ("(", "==", "//", ...)
    End,
};

struct Token {
    Tok kind;
    std::string text;
    int64_t i = 0;
    double f = 0;
    uint32_t line = 1, column = 1;
};

// Throws gpt::Error GPT_ERR_FORMAT naming line and column for an unterminated tag, comment or
// string, or a character no token starts with. Linear in the source size.
std::vector<Token> tokenize(std::string_view source);

} // namespace gpt::chat
