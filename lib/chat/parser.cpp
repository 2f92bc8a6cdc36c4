// parser.cpp - recursive descent over jinja2's grammar (see parser.h). Operator precedence,
// loosest first: "x if c else y", or, and, not, comparisons and in, + -, ~, * / // %, **,
// unary - +, then postfix (.attr, [item], call), filters (|f) and tests (is t).
#include "chat/parser.h"

#include "core/error.h"

#include <algorithm>
#include <initializer_list>

namespace gpt::chat {

namespace {

class Parser {
public:
    explicit Parser(const std::vector<Token> &t) : t_(t) {}

    Body run() {
        std::string end;
        Body b = body({}, &end);
        if (peek().kind != Tok::End) error_at(peek(), "unexpected tag");
        return b;
    }

private:
    struct DepthGuard {
        Parser &p;
        explicit DepthGuard(Parser &pp) : p(pp) {
            if (++p.depth_ > kMaxParseDepth)
                fail(GPT_ERR_UNSUPPORTED, "chat template line %u: nested over %d deep (the renderer's limit)", p.peek().line, kMaxParseDepth);
        }
        ~DepthGuard() { p.depth_--; }
    };

    const Token &peek(size_t k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
    const Token &next() {
        const Token &x = peek();
        if (pos_ < t_.size() - 1) pos_++;
        return x;
    }
    bool is_op(const char *op, size_t k = 0) const { return peek(k).kind == Tok::Op && peek(k).text == op; }
    bool is_name(const char *n, size_t k = 0) const { return peek(k).kind == Tok::Name && peek(k).text == n; }
    bool skip_op(const char *op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(const char *n) {
        if (!is_name(n)) return false;
        next();
        return true;
    }

    [[noreturn]] void error_at(const Token &tok, const char *what) const {
        const char *got = tok.kind == Tok::End ? "end of template" : tok.kind == Tok::BlockEnd ? "%}" : tok.kind == Tok::VarEnd ? "}}" : nullptr;
        fail(GPT_ERR_FORMAT, "chat template line %u column %u: %s (at %s%s%s)", tok.line, tok.column, what, got ? "" : "'",
             got ? got : tok.text.c_str(), got ? "" : "'");
    }
    [[noreturn]] void unsupported(const Token &tok, const std::string &what) const {
        fail(GPT_ERR_UNSUPPORTED, "chat template line %u: %s is not supported by this renderer", tok.line, what.c_str());
    }
    void expect_op(const char *op) {
        if (!skip_op(op)) error_at(peek(), (std::string("expected '") + op + "'").c_str());
    }
    void expect_block_end() {
        if (peek().kind != Tok::BlockEnd) error_at(peek(), "expected %}");
        next();
    }
    std::string expect_name(const char *what) {
        if (peek().kind != Tok::Name) error_at(peek(), what);
        return next().text;
    }

    ExprPtr make(ExprType type, uint32_t line) {
        auto e = std::make_unique<Expr>();
        e->type = type;
        e->line = line;
        return e;
    }
    // Records the subtree's height; a tree past kMaxExprDepth (a+b+c+... a million times) is
    // refused here, so evaluation and destruction recurse boundedly.
    ExprPtr seal(ExprPtr e) {
        int h = 0;
        auto see = [&](const ExprPtr &c) { if (c) h = std::max(h, (int)c->depth); };
        see(e->a), see(e->b), see(e->c), see(e->d);
        for (const auto &x : e->args) see(x);
        for (const auto &x : e->keys) see(x);
        for (const auto &x : e->kwargs) see(x.second);
        if (h + 1 > kMaxExprDepth)
            fail(GPT_ERR_UNSUPPORTED, "chat template line %u: an expression nested over %d deep (the renderer's limit)", e->line, kMaxExprDepth);
        e->depth = (uint16_t)(h + 1);
        return e;
    }

    // ------------------------------------------------------------------ statements

    // Statements until a block tag named in ends; *end receives its name (consumed).
    Body body(std::initializer_list<const char *> ends, std::string *end) {
        DepthGuard g(*this);
        Body out;
        while (true) {
            const Token &tok = peek();
            if (tok.kind == Tok::End) {
                if (ends.size() == 0) return out;
                error_at(tok, (std::string("missing {% ") + *ends.begin() + " %}").c_str());
            }
            if (tok.kind == Tok::Text) {
                Stmt s{StmtType::Text};
                s.line = tok.line;
                s.text = next().text;
                out.push_back(std::move(s));
            } else if (tok.kind == Tok::VarBegin) {
                next();
                Stmt s{StmtType::Output};
                s.line = tok.line;
                s.expr = tuple_expr(true);
                if (peek().kind != Tok::VarEnd) error_at(peek(), "expected }}");
                next();
                out.push_back(std::move(s));
            } else if (tok.kind == Tok::BlockBegin) {
                next();
                const Token &name = peek();
                if (name.kind != Tok::Name) error_at(name, "expected a statement name after {%");
                for (const char *e : ends)
                    if (name.text == e) {
                        *end = next().text;
                        return out;
                    }
                out.push_back(statement());
            } else {
                error_at(tok, "unexpected token");
            }
        }
    }

    Stmt statement() {
        const Token &tok = next();
        const std::string &n = tok.text;
        Stmt s{StmtType::Text};
        s.line = tok.line;
        if (n == "if") return if_stmt(tok.line);
        if (n == "for") return for_stmt(tok.line);
        if (n == "set") return set_stmt(tok.line);
        if (n == "macro") return macro_stmt(tok.line);
        if (n == "filter") {
            s.type = StmtType::FilterBlock;
            s.expr = filters(nullptr);
            expect_block_end();
            std::string end;
            s.body = body({"endfilter"}, &end);
            expect_block_end();
            return s;
        }
        if (n == "generation") {
            s.type = StmtType::Generation;
            expect_block_end();
            std::string end;
            s.body = body({"endgeneration"}, &end);
            expect_block_end();
            return s;
        }
        if (n == "break" || n == "continue") {
            if (loops_ == 0) error_at(tok, (std::string("'") + n + "' outside a loop").c_str());
            s.type = n == "break" ? StmtType::Break : StmtType::Continue;
            expect_block_end();
            return s;
        }
        static const char *const known[] = {"include", "import", "from", "extends", "block", "call", "raw", "with",
                                            "autoescape", "do", "trans", "print"};
        for (const char *k : known)
            if (n == k) unsupported(tok, std::string("{% ") + n + " %}");
        if (n.rfind("end", 0) == 0 || n == "else" || n == "elif") error_at(tok, "unexpected end of block");
        error_at(tok, "unknown statement");
    }

    Stmt if_stmt(uint32_t line) {
        Stmt s{StmtType::If};
        s.line = line;
        s.expr = tuple_expr(false);
        expect_block_end();
        std::string end;
        s.body = body({"elif", "else", "endif"}, &end);
        if (end == "elif") {
            s.else_body.push_back(if_stmt(peek().line)); // an elif is an if inside the else
            return s;
        }
        if (end == "else") {
            expect_block_end();
            s.else_body = body({"endif"}, &end);
        }
        expect_block_end();
        return s;
    }

    Stmt for_stmt(uint32_t line) {
        Stmt s{StmtType::For};
        s.line = line;
        const bool paren = skip_op("(");
        do {
            s.targets.push_back(expect_name("expected a loop variable"));
        } while (skip_op(","));
        if (paren) expect_op(")");
        if (!skip_name("in")) error_at(peek(), "expected 'in'");
        s.expr = tuple_expr(false, /*with_cond=*/false);
        if (skip_name("if")) s.cond = expression();
        if (is_name("recursive")) unsupported(peek(), "a recursive for loop");
        expect_block_end();
        loops_++;
        std::string end;
        s.body = body({"else", "endfor"}, &end);
        loops_--;
        if (end == "else") {
            expect_block_end();
            s.else_body = body({"endfor"}, &end);
        }
        expect_block_end();
        return s;
    }

    Stmt set_stmt(uint32_t line) {
        Stmt s{StmtType::Set};
        s.line = line;
        s.targets.push_back(expect_name("expected a variable name after set"));
        if (skip_op(".")) {
            s.attr = expect_name("expected an attribute name");
        } else {
            while (skip_op(",")) s.targets.push_back(expect_name("expected a variable name"));
        }
        if (skip_op("=")) {
            s.expr = tuple_expr(true);
            expect_block_end();
            return s;
        }
        if (s.targets.size() != 1 || !s.attr.empty()) error_at(peek(), "expected '='");
        if (is_op("|")) unsupported(peek(), "a filtered {% set %} block");
        expect_block_end();
        s.type = StmtType::SetBlock;
        std::string end;
        s.body = body({"endset"}, &end);
        expect_block_end();
        return s;
    }

    Stmt macro_stmt(uint32_t line) {
        Stmt s{StmtType::Macro};
        s.line = line;
        s.text = expect_name("expected a macro name");
        expect_op("(");
        while (!is_op(")")) {
            std::string p = expect_name("expected a parameter name");
            ExprPtr dflt;
            if (skip_op("=")) dflt = expression();
            s.params.emplace_back(std::move(p), std::move(dflt));
            if (!skip_op(",")) break;
        }
        expect_op(")");
        expect_block_end();
        const int saved = loops_;
        loops_ = 0; // a macro body is not inside the caller's loop
        std::string end;
        s.body = body({"endmacro"}, &end);
        loops_ = saved;
        if (peek().kind == Tok::Name) next(); // {% endmacro name %}
        expect_block_end();
        return s;
    }

    // ------------------------------------------------------------------ expressions

    // An expression, or several separated by commas (a tuple without parentheses).
    ExprPtr tuple_expr(bool allow_tuple, bool with_cond = true) {
        const uint32_t line = peek().line;
        ExprPtr first = with_cond ? expression() : or_expr();
        if (!allow_tuple || !is_op(",")) return first;
        ExprPtr t = make(ExprType::List, line);
        t->literal.tuple = true;
        t->args.push_back(std::move(first));
        while (skip_op(",")) {
            if (peek().kind == Tok::BlockEnd || peek().kind == Tok::VarEnd) break;
            t->args.push_back(with_cond ? expression() : or_expr());
        }
        return seal(std::move(t));
    }

    ExprPtr expression() {
        DepthGuard g(*this);
        ExprPtr e = or_expr();
        while (is_name("if")) {
            const uint32_t line = next().line;
            ExprPtr c = make(ExprType::Cond, line);
            c->a = std::move(e);
            c->b = or_expr();
            if (skip_name("else")) c->c = expression();
            e = seal(std::move(c));
        }
        return e;
    }

    ExprPtr binary(ExprType type, const std::string &op, ExprPtr l, ExprPtr r, uint32_t line) {
        ExprPtr e = make(type, line);
        e->name = op;
        e->a = std::move(l);
        e->b = std::move(r);
        return seal(std::move(e));
    }

    ExprPtr or_expr() {
        ExprPtr e = and_expr();
        while (is_name("or")) {
            const uint32_t line = next().line;
            e = binary(ExprType::Or, "or", std::move(e), and_expr(), line);
        }
        return e;
    }

    ExprPtr and_expr() {
        ExprPtr e = not_expr();
        while (is_name("and")) {
            const uint32_t line = next().line;
            e = binary(ExprType::And, "and", std::move(e), not_expr(), line);
        }
        return e;
    }

    ExprPtr not_expr() {
        if (is_name("not")) {
            DepthGuard g(*this);
            ExprPtr e = make(ExprType::Not, next().line);
            e->a = not_expr();
            return seal(std::move(e));
        }
        return compare();
    }

    ExprPtr compare() {
        ExprPtr e = math1();
        int n = 0; // a chain (a < b < c, with b evaluated once) is rare in templates: refused
        while (true) {
            const Token &tok = peek();
            std::string op;
            if (tok.kind == Tok::Op && (tok.text == "==" || tok.text == "!=" || tok.text == "<" || tok.text == "<=" ||
                                        tok.text == ">" || tok.text == ">=")) {
                op = tok.text;
                next();
            } else if (is_name("in")) {
                op = "in";
                next();
            } else if (is_name("not") && is_name("in", 1)) {
                op = "not in";
                next(), next();
            } else {
                break;
            }
            if (++n > 1) unsupported(tok, "a chained comparison (a < b < c)");
            e = binary(ExprType::Binary, op, std::move(e), math1(), tok.line);
        }
        return e;
    }

    ExprPtr math1() {
        ExprPtr e = concat();
        while (is_op("+") || is_op("-")) {
            const Token &tok = next();
            e = binary(ExprType::Binary, tok.text, std::move(e), concat(), tok.line);
        }
        return e;
    }

    ExprPtr concat() {
        ExprPtr e = math2();
        while (is_op("~")) {
            const Token &tok = next();
            e = binary(ExprType::Binary, "~", std::move(e), math2(), tok.line);
        }
        return e;
    }

    ExprPtr math2() {
        ExprPtr e = power();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token &tok = next();
            e = binary(ExprType::Binary, tok.text, std::move(e), power(), tok.line);
        }
        return e;
    }

    ExprPtr power() {
        ExprPtr e = unary(true);
        while (is_op("**")) {
            const Token &tok = next();
            e = binary(ExprType::Binary, "**", std::move(e), unary(true), tok.line);
        }
        return e;
    }

    ExprPtr unary(bool with_filter) {
        DepthGuard g(*this);
        ExprPtr e;
        if (is_op("-") || is_op("+")) {
            const Token &tok = next();
            e = make(tok.text == "-" ? ExprType::Neg : ExprType::Pos, tok.line);
            e->a = unary(false);
            e = seal(std::move(e));
        } else {
            e = primary();
        }
        e = postfix(std::move(e));
        if (with_filter) e = filter_expr(std::move(e));
        return e;
    }

    ExprPtr primary() {
        const Token &tok = peek();
        if (tok.kind == Tok::Name) {
            next();
            ExprPtr e = make(ExprType::Literal, tok.line);
            const std::string &n = tok.text;
            if (n == "true" || n == "True") e->literal = Value::boolean(true);
            else if (n == "false" || n == "False") e->literal = Value::boolean(false);
            else if (n == "none" || n == "None") e->literal = Value::none();
            else {
                e->type = ExprType::Name;
                e->name = n;
            }
            return seal(std::move(e));
        }
        if (tok.kind == Tok::String) {
            std::string s;
            while (peek().kind == Tok::String) s += next().text; // "a" "b" is "ab"
            ExprPtr e = make(ExprType::Literal, tok.line);
            e->literal = Value::str(std::move(s));
            return seal(std::move(e));
        }
        if (tok.kind == Tok::Int || tok.kind == Tok::Float) {
            next();
            ExprPtr e = make(ExprType::Literal, tok.line);
            e->literal = tok.kind == Tok::Int ? Value::integer(tok.i) : Value::real(tok.f);
            return seal(std::move(e));
        }
        if (skip_op("(")) {
            if (skip_op(")")) {
                ExprPtr e = make(ExprType::List, tok.line);
                e->literal.tuple = true;
                return seal(std::move(e));
            }
            ExprPtr first = expression();
            if (skip_op(")")) return first;
            ExprPtr t = make(ExprType::List, tok.line);
            t->literal.tuple = true;
            t->args.push_back(std::move(first));
            while (skip_op(",")) {
                if (is_op(")")) break;
                t->args.push_back(expression());
            }
            expect_op(")");
            return seal(std::move(t));
        }
        if (skip_op("[")) {
            ExprPtr e = make(ExprType::List, tok.line);
            while (!is_op("]")) {
                e->args.push_back(expression());
                if (!skip_op(",")) break;
            }
            expect_op("]");
            return seal(std::move(e));
        }
        if (skip_op("{")) {
            ExprPtr e = make(ExprType::Dict, tok.line);
            while (!is_op("}")) {
                e->keys.push_back(expression());
                expect_op(":");
                e->args.push_back(expression());
                if (!skip_op(",")) break;
            }
            expect_op("}");
            return seal(std::move(e));
        }
        error_at(tok, "expected an expression");
    }

    ExprPtr postfix(ExprPtr e) {
        while (true) {
            const Token &tok = peek();
            if (skip_op(".")) {
                ExprPtr x = make(ExprType::Attr, tok.line);
                x->a = std::move(e);
                if (peek().kind == Tok::Int) { // foo.0 is foo[0]
                    x->type = ExprType::Item;
                    x->b = make(ExprType::Literal, tok.line);
                    x->b->literal = Value::integer(next().i);
                } else {
                    x->name = expect_name("expected an attribute name after '.'");
                }
                e = seal(std::move(x));
            } else if (skip_op("[")) {
                e = subscript(std::move(e), tok.line);
            } else if (is_op("(")) {
                e = call(std::move(e));
            } else {
                return e;
            }
        }
    }

    ExprPtr subscript(ExprPtr target, uint32_t line) {
        ExprPtr x = make(ExprType::Item, line);
        x->a = std::move(target);
        if (!is_op(":")) x->b = expression();
        if (skip_op(":")) {
            x->type = ExprType::Slice;
            if (!is_op(":") && !is_op("]")) x->c = expression();
            if (skip_op(":") && !is_op("]")) x->d = expression();
        } else if (is_op(",")) {
            unsupported(peek(), "a tuple subscript a[x, y]");
        }
        expect_op("]");
        return seal(std::move(x));
    }

    // (args, name=kwargs); fills e's args and kwargs.
    void call_args(Expr &e) {
        expect_op("(");
        while (!is_op(")")) {
            if (is_op("*") || is_op("**")) unsupported(peek(), "*args / **kwargs in a call");
            if (peek().kind == Tok::Name && is_op("=", 1)) {
                std::string k = next().text;
                next();
                e.kwargs.emplace_back(std::move(k), expression());
            } else {
                if (!e.kwargs.empty()) error_at(peek(), "a positional argument after a keyword argument");
                e.args.push_back(expression());
            }
            if (!skip_op(",")) break;
        }
        expect_op(")");
    }

    ExprPtr call(ExprPtr target) {
        ExprPtr x = make(ExprType::Call, peek().line);
        x->a = std::move(target);
        call_args(*x);
        return seal(std::move(x));
    }

    // | name(args) | name ...; target may be null ({% filter %}).
    ExprPtr filters(ExprPtr target) {
        do {
            const Token &tok = peek();
            ExprPtr f = make(ExprType::Filter, tok.line);
            f->a = std::move(target);
            f->name = expect_name("expected a filter name");
            while (skip_op(".")) f->name += "." + expect_name("expected a filter name");
            if (is_op("(")) call_args(*f);
            target = seal(std::move(f));
        } while (skip_op("|"));
        return target;
    }

    ExprPtr filter_expr(ExprPtr e) {
        while (true) {
            if (skip_op("|")) {
                e = filters(std::move(e));
            } else if (is_name("is")) {
                const Token &tok = next();
                ExprPtr t = make(ExprType::Test, tok.line);
                t->a = std::move(e);
                t->negated = skip_name("not");
                t->name = expect_name("expected a test name after 'is'");
                while (skip_op(".")) t->name += "." + expect_name("expected a test name");
                const Token &n = peek();
                if (is_op("(")) {
                    call_args(*t);
                } else if ((n.kind == Tok::Name || n.kind == Tok::String || n.kind == Tok::Int || n.kind == Tok::Float ||
                            is_op("[") || is_op("{")) &&
                           !is_name("else") && !is_name("or") && !is_name("and")) {
                    if (is_name("is")) error_at(n, "tests cannot be chained with 'is'");
                    t->args.push_back(postfix(primary()));
                }
                e = seal(std::move(t));
            } else if (is_op("(")) {
                e = call(std::move(e));
            } else {
                return e;
            }
        }
    }

    const std::vector<Token> &t_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loops_ = 0;
};

} // namespace

Body parse(const std::vector<Token> &tokens) { return Parser(tokens).run(); }

} // namespace gpt::chat
