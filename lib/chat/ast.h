// ast.h - the parsed template: statements (text, {{ }}, {% %} blocks) and expressions. One
// generic node type each keeps the parser and the interpreter short; the fields a node uses
// depend on its type (noted per type).
#pragma once

#include "chat/value.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gpt::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprType : uint8_t {
    Literal, // value
    Name,    // name
    List,    // args (tuple: literal.tuple)
    Dict,    // kwargs: keys are expressions in keys, values in args (same index)
    Attr,    // a.name
    Item,    // a[b]
    Slice,   // a[b:c:d] (b, c, d may be null)
    Call,    // a(args, kwargs)
    Filter,  // a | name(args, kwargs); a is null inside {% filter %}
    Test,    // a is [not] name(args, kwargs); negated
    Neg,     // -a
    Pos,     // +a
    Not,     // not a
    And,     // a and b
    Or,      // a or b
    Binary,  // a op b: + - * / // % ** ~ == != < <= > >= in, "not in"
    Cond,    // a if b else c (c may be null)
};

struct Expr {
    ExprType type;
    uint32_t line = 0;
    uint16_t depth = 1; // of the subtree, bounded by the parser (kMaxExprDepth)
    Value literal;
    std::string name; // Name, Attr, Filter, Test; Binary: the operator
    bool negated = false;
    ExprPtr a, b, c, d;
    std::vector<ExprPtr> args;
    std::vector<ExprPtr> keys;                         // Dict
    std::vector<std::pair<std::string, ExprPtr>> kwargs; // Call, Filter, Test
};

struct Stmt;
using Body = std::vector<Stmt>;

enum class StmtType : uint8_t {
    Text,       // text
    Output,     // {{ expr }}
    If,         // if expr: body, else: else_body (elif nests an If there)
    For,        // for targets in expr [if cond]: body, else: else_body
    Set,        // set targets = expr, or set targets[0].attr = expr (attr non-empty)
    SetBlock,   // set targets[0] %}body{% endset
    Macro,      // macro name(params with defaults): body
    FilterBlock,// filter: body piped through expr (a Filter chain over null)
    Generation, // generation: body (rendered as is; transformers tracks it for masks)
    Break,
    Continue,
};

struct Stmt {
    explicit Stmt(StmtType t) : type(t) {}
    StmtType type;
    uint32_t line = 0;
    std::string text;
    ExprPtr expr, cond;
    std::vector<std::string> targets;
    std::string attr;
    std::vector<std::pair<std::string, ExprPtr>> params; // Macro: name and default (may be null)
    Body body, else_body;
};

} // namespace gpt::chat
