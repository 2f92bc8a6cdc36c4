// parser.h - tokens into statements (ast.h), jinja2's grammar for the constructs chat
// templates use. Syntax errors are GPT_ERR_FORMAT naming line and column; a construct this
// renderer does not implement ({% include %}, {% call %}, recursive loops, ...) is
// GPT_ERR_UNSUPPORTED naming it and its line. Nesting deeper than kMaxParseDepth is refused,
// so hostile input cannot exhaust the stack.
#pragma once

#include "chat/ast.h"
#include "chat/lexer.h"

namespace gpt::chat {

inline constexpr int kMaxParseDepth = 128; // nested blocks and parenthesised expressions
inline constexpr int kMaxExprDepth = 256;  // an expression tree's height (a+b+c+... counts each +)

Body parse(const std::vector<Token> &tokens);

} // namespace gpt::chat
