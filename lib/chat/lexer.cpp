// lexer.cpp - template source -> tokens (see lexer.h). Whitespace rules, as jinja2 applies them:
//   {%- / {{- / {#-  strip all whitespace before the tag; -%} / -}} / -#} all after it;
//   trim_blocks      a block or comment tag eats one newline after it (not with +%});
//   lstrip_blocks    spaces and tabs from the line's start to a block or comment tag are removed
//                    (not with {%+), when nothing else precedes the tag on that line;
//   the source's newlines become \n and a single trailing newline is dropped.
#include "chat/lexer.h"

#include "chat/text.h"
#include "core/error.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace gpt::chat {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

std::string normalize_newlines(std::string_view src) {
    std::string out;
    out.reserve(src.size());
    for (size_t k = 0; k < src.size(); k++) {
        if (src[k] == '\r') {
            out += '\n';
            if (k + 1 < src.size() && src[k + 1] == '\n') k++;
        } else {
            out += src[k];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back(); // keep_trailing_newline=False
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string_view src) : s_(normalize_newlines(src)) {}

    std::vector<Token> run() {
        bool line_starting = true; // the previous tag's match ended with a newline (or none yet)
        while (pos_ < s_.size()) {
            const size_t tag = find_tag(pos_);
            std::string text = s_.substr(pos_, tag - pos_);
            if (tag == s_.size()) {
                emit_text(std::move(text));
                break;
            }
            const char kind = s_[tag + 1]; // '{', '%' or '#'
            const char mod = tag + 2 < s_.size() ? s_[tag + 2] : '\0';
            if (mod == '-') {
                while (!text.empty() && is_space(text.back())) text.pop_back();
            } else if (mod != '+' && kind != '{') {
                lstrip_line(text, line_starting);
            }
            emit_text(std::move(text));
            advance_to(tag);
            const size_t open_len = (mod == '-' || (mod == '+' && kind != '{')) ? 3 : 2;
            if (kind == '#') comment(open_len);
            else tag_body(kind, open_len);
            line_starting = pos_ > 0 && s_[pos_ - 1] == '\n';
        }
        Token end{Tok::End, "", 0, 0, line_, col_};
        out_.push_back(end);
        return std::move(out_);
    }

private:
    // The next "{{", "{%" or "{#" at or after from; s_.size() when none.
    size_t find_tag(size_t from) const {
        for (size_t k = s_.find('{', from); k != std::string::npos; k = s_.find('{', k + 1))
            if (k + 1 < s_.size() && (s_[k + 1] == '{' || s_[k + 1] == '%' || s_[k + 1] == '#')) return k;
        return s_.size();
    }

    // lstrip_blocks: drop the spaces and tabs that start the tag's line.
    static void lstrip_line(std::string &text, bool line_starting) {
        const size_t nl = text.rfind('\n');
        const size_t start = nl == std::string::npos ? 0 : nl + 1;
        if (nl == std::string::npos && !line_starting) return;
        for (size_t k = start; k < text.size(); k++)
            if (!is_space(text[k])) return;
        text.resize(start);
    }

    void emit_text(std::string text) {
        if (text.empty()) return;
        Token t{Tok::Text, std::move(text), 0, 0, line_, col_};
        out_.push_back(std::move(t));
    }

    // Moves pos_ to p, keeping line and column.
    void advance_to(size_t p) {
        for (; pos_ < p; pos_++) {
            if (s_[pos_] == '\n') {
                line_++;
                col_ = 1;
            } else {
                col_++;
            }
        }
    }

    [[noreturn]] void error(const char *what) const {
        fail(GPT_ERR_FORMAT, "chat template line %u column %u: %s", line_, col_, what);
    }

    // After a closing tag: "-" strips all following whitespace; trim_blocks one newline.
    void after_close(bool minus, bool plus, bool block_like) {
        if (minus) {
            size_t p = pos_;
            while (p < s_.size() && is_space(s_[p])) p++;
            advance_to(p);
        } else if (block_like && !plus && pos_ < s_.size() && s_[pos_] == '\n') {
            advance_to(pos_ + 1);
        }
    }

    void comment(size_t open_len) {
        const size_t close = s_.find("#}", pos_ + open_len);
        if (close == std::string::npos) error("unterminated comment {# ... #}");
        const bool minus = close > pos_ + open_len && s_[close - 1] == '-';
        const bool plus = close > pos_ + open_len && s_[close - 1] == '+';
        advance_to(close + 2);
        after_close(minus, plus, true);
    }

    void tag_body(char kind, size_t open_len) {
        const bool block = kind == '%';
        out_.push_back(Token{block ? Tok::BlockBegin : Tok::VarBegin, "", 0, 0, line_, col_});
        advance_to(pos_ + open_len);
        int depth = 0; // open brackets: a "}}" inside {...} is two braces, not the tag's end
        while (true) {
            while (pos_ < s_.size() && is_space(s_[pos_])) advance_to(pos_ + 1);
            if (pos_ >= s_.size()) error(block ? "unterminated tag {% ... %}" : "unterminated tag {{ ... }}");
            if (depth == 0) {
                const char *close = block ? "%}" : "}}";
                const bool minus = s_.compare(pos_, 3, std::string("-") + close) == 0;
                const bool plus = block && s_.compare(pos_, 3, std::string("+") + close) == 0;
                if (minus || plus || s_.compare(pos_, 2, close) == 0) {
                    out_.push_back(Token{block ? Tok::BlockEnd : Tok::VarEnd, "", 0, 0, line_, col_});
                    advance_to(pos_ + (minus || plus ? 3 : 2));
                    after_close(minus, plus, block);
                    return;
                }
            }
            token(depth);
        }
    }

    void token(int &depth) {
        const char c = s_[pos_];
        const uint32_t line = line_, col = col_;
        if (is_name_start(c)) {
            size_t e = pos_;
            while (e < s_.size() && is_name_char(s_[e])) e++;
            out_.push_back(Token{Tok::Name, s_.substr(pos_, e - pos_), 0, 0, line, col});
            advance_to(e);
        } else if (is_digit(c)) {
            number(line, col);
        } else if (c == '\'' || c == '"') {
            string_literal(line, col);
        } else {
            static const char *const ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                              "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|", ";"};
            for (const char *op : ops) {
                const size_t n = std::char_traits<char>::length(op);
                if (s_.compare(pos_, n, op) != 0) continue;
                if (op[0] == '(' || op[0] == '[' || op[0] == '{') depth++;
                if ((op[0] == ')' || op[0] == ']' || op[0] == '}') && depth > 0) depth--;
                out_.push_back(Token{Tok::Op, op, 0, 0, line, col});
                advance_to(pos_ + n);
                return;
            }
            error("unexpected character in a tag");
        }
    }

    void number(uint32_t line, uint32_t col) {
        // After "." only an integer (foo.0 is an item access, not a float).
        const bool after_dot = !out_.empty() && out_.back().kind == Tok::Op && out_.back().text == ".";
        size_t e = pos_;
        auto digits = [&] {
            while (e < s_.size() && (is_digit(s_[e]) || (s_[e] == '_' && e + 1 < s_.size() && is_digit(s_[e + 1])))) e++;
        };
        digits();
        bool is_float = false;
        if (!after_dot && e + 1 < s_.size() && s_[e] == '.' && is_digit(s_[e + 1])) {
            e++;
            digits();
            is_float = true;
        }
        if (!after_dot && e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
            size_t x = e + 1;
            if (x < s_.size() && (s_[x] == '+' || s_[x] == '-')) x++;
            if (x < s_.size() && is_digit(s_[x])) {
                e = x;
                digits();
                is_float = true;
            }
        }
        std::string lit;
        for (size_t k = pos_; k < e; k++)
            if (s_[k] != '_') lit += s_[k];
        Token t{is_float ? Tok::Float : Tok::Int, lit, 0, 0, line, col};
        if (is_float) {
            t.f = std::strtod(lit.c_str(), nullptr);
        } else {
            errno = 0;
            char *end = nullptr;
            const unsigned long long v = std::strtoull(lit.c_str(), &end, 10);
            if (errno == ERANGE || v > (unsigned long long)INT64_MAX) error("integer literal too large (this renderer keeps 64 bits)");
            t.i = (int64_t)v;
        }
        out_.push_back(std::move(t));
        advance_to(e);
    }

    // Python's unicode-escape decoding of the literal's body.
    void string_literal(uint32_t line, uint32_t col) {
        const char q = s_[pos_];
        size_t e = pos_ + 1;
        std::string val;
        while (true) {
            if (e >= s_.size()) error("unterminated string literal");
            const char c = s_[e];
            if (c == q) break;
            if (c != '\\') {
                val += c;
                e++;
                continue;
            }
            if (e + 1 >= s_.size()) error("unterminated string literal");
            const char x = s_[e + 1];
            e += 2;
            switch (x) {
            case '\n': break; // line continuation
            case '\\': val += '\\'; break;
            case '\'': val += '\''; break;
            case '"': val += '"'; break;
            case 'a': val += '\a'; break;
            case 'b': val += '\b'; break;
            case 'f': val += '\f'; break;
            case 'n': val += '\n'; break;
            case 'r': val += '\r'; break;
            case 't': val += '\t'; break;
            case 'v': val += '\v'; break;
            case 'x': case 'u': case 'U': {
                const size_t n = x == 'x' ? 2 : x == 'u' ? 4 : 8;
                uint32_t cp = 0;
                for (size_t k = 0; k < n; k++, e++) {
                    if (e >= s_.size() || !std::isxdigit((unsigned char)s_[e])) error("truncated \\x, \\u or \\U escape in a string");
                    const char h = s_[e];
                    cp = cp * 16 + (uint32_t)(is_digit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
                }
                if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) error("escape names no Unicode scalar value");
                append_utf8(val, cp);
                break;
            }
            case 'N': error("\\N{...} escapes are not supported");
            default:
                if (x >= '0' && x <= '7') { // up to three octal digits
                    uint32_t cp = (uint32_t)(x - '0');
                    for (int k = 0; k < 2 && e < s_.size() && s_[e] >= '0' && s_[e] <= '7'; k++, e++) cp = cp * 8 + (uint32_t)(s_[e] - '0');
                    append_utf8(val, cp);
                } else { // unknown escapes keep their backslash
                    val += '\\';
                    e--; // re-read x as a plain character (it may start a UTF-8 sequence)
                }
            }
        }
        out_.push_back(Token{Tok::String, std::move(val), 0, 0, line, col});
        advance_to(e + 1);
    }

    std::string s_;
    size_t pos_ = 0;
    uint32_t line_ = 1, col_ = 1;
    std::vector<Token> out_;
};

} // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

} // namespace gpt::chat
