// interpreter.cpp - executes statements and evaluates expressions (see interpreter.h).
// Scopes follow jinja2: a for loop and a macro call open one (a {% set %} inside does not
// change the variable outside, which is what namespace() is for); if blocks do not.
#include "chat/interpreter.h"

#include "chat/builtins.h"
#include "chat/runtime.h"
#include "core/error.h"

#include <cmath>
#include <locale.h>
#include <time.h>
#include <memory>
#include <unordered_map>

namespace gpt::chat {

namespace {

struct Scope {
    std::unordered_map<std::string, Value> vars;
    std::shared_ptr<Scope> parent;
};
using ScopePtr = std::shared_ptr<Scope>;

enum class Flow { Normal, Break, Continue };

bool is_intlike(const Value &v) { return v.kind == Kind::Int || v.kind == Kind::Bool; }
int64_t int_of(const Value &v) { return v.kind == Kind::Int ? v.i : v.b; }
double num_of(const Value &v) { return v.kind == Kind::Float ? v.f : (double)int_of(v); }

[[noreturn]] void operand_error(const std::string &op, const Value &a, const Value &b) {
    if (a.is_undefined() || b.is_undefined()) {
        const Value &u = a.is_undefined() ? a : b;
        if (u.s) fail(GPT_ERR_FORMAT, "'%s' is undefined", u.s->c_str());
        fail(GPT_ERR_FORMAT, "an undefined value in '%s'", op.c_str());
    }
    fail(GPT_ERR_FORMAT, "unsupported operand type(s) for %s: '%s' and '%s'", op.c_str(), type_name(a), type_name(b));
}

[[noreturn]] void overflow() { fail(GPT_ERR_UNSUPPORTED, "an integer past 64 bits (Python's integers are unbounded; this renderer's are not)"); }

class Interpreter final : public Runtime {
public:
    Interpreter(const Dict &globals, const Limits &limits, std::time_t now) : limits_(limits), now_(now) {
        globals_ = std::make_shared<Scope>();
        for (const auto &kv : globals) globals_->vars[kv.first] = kv.second;
    }

    // Every namespace still alive is held here first, then emptied: nothing is destroyed
    // while emptying, so a chain of namespaces a million long is freed one by one, not by
    // recursion, and cycles are broken. Runs before the scopes holding them go.
    void release_namespaces() noexcept {
        std::vector<std::shared_ptr<Namespace>> alive;
        try {
            alive.reserve(namespaces_.size());
        } catch (...) {
            return; // out of memory: leak rather than recurse (never reached in practice)
        }
        for (const auto &w : namespaces_)
            if (auto ns = w.lock()) alive.push_back(std::move(ns));
        for (const auto &ns : alive) ns->attrs.clear();
        namespaces_.clear();
    }

    std::string run(const Body &program) {
        std::string out;
        out_ = &out;
        auto root = std::make_shared<Scope>();
        root->parent = globals_;
        struct Release { // declared after root, so it runs first
            Interpreter &in;
            ~Release() { in.release_namespaces(); }
        } release{*this};
        try {
            exec(program, root);
        } catch (const Error &e) {
            const std::string m = e.what();
            if (m.rfind("chat template line", 0) == 0) throw;
            fail(e.status(), "chat template line %u: %s", line_, m.c_str());
        }
        return out;
    }

    // Runtime
    void charge(uint64_t n) override {
        steps_ += n;
        if (steps_ > limits_.max_steps)
            fail(GPT_ERR_UNSUPPORTED, "the template ran over %llu steps (the renderer's limit)", (unsigned long long)limits_.max_steps);
    }
    void track(const std::shared_ptr<Namespace> &ns) override {
        charge(kStepsPerIteration);
        namespaces_.push_back(ns);
    }
    size_t max_bytes() const override { return limits_.max_bytes; }
    size_t max_items() const override { return limits_.max_items; }
    std::string now(const std::string &format) override {
        if (format.size() > 256) fail(GPT_ERR_UNSUPPORTED, "a strftime_now format over 256 bytes");
        std::tm tm{};
        localtime_r(&now_, &tm);
        std::string buf(64 + format.size() * 16, '\0');
        // In the C locale, as Python formats it ("Nov", not the host program's LC_TIME).
        static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        const size_t n = c_locale ? strftime_l(&buf[0], buf.size(), format.c_str(), &tm, c_locale)
                                  : std::strftime(&buf[0], buf.size(), format.c_str(), &tm);
        buf.resize(n);
        return buf;
    }

private:
    struct DepthGuard {
        Interpreter &in;
        explicit DepthGuard(Interpreter &i) : in(i) {
            if (++in.depth_ > in.limits_.max_depth)
                fail(GPT_ERR_UNSUPPORTED, "evaluation nested over %d deep (the renderer's limit; a recursive macro?)", in.limits_.max_depth);
        }
        ~DepthGuard() { in.depth_--; }
    };

    void emit(const std::string &s) {
        charge(1 + s.size() / 64); // an append: cheaper per byte than building a string
        if (s.size() > limits_.max_bytes - out_->size())
            fail(GPT_ERR_UNSUPPORTED, "output over %zu bytes (the renderer's limit)", limits_.max_bytes);
        out_->append(s);
    }

    // -------------------------------------------------------------- variables

    Value lookup(const std::string &name, const ScopePtr &scope) {
        for (const Scope *s = scope.get(); s; s = s->parent.get()) {
            auto it = s->vars.find(name);
            if (it != s->vars.end()) return it->second;
        }
        return global_function(*this, name);
    }

    void assign(const std::vector<std::string> &targets, const Value &v, Scope &scope) {
        if (targets.size() == 1) {
            scope.vars[targets[0]] = v;
            return;
        }
        const List items = iterate(*this, v);
        if (items.size() != targets.size())
            fail(GPT_ERR_FORMAT, "cannot unpack %zu values into %zu names", items.size(), targets.size());
        for (size_t k = 0; k < targets.size(); k++) scope.vars[targets[k]] = items[k];
    }

    // -------------------------------------------------------------- statements

    Flow exec(const Body &body, const ScopePtr &scope) {
        for (const Stmt &s : body) {
            const Flow f = exec(s, scope);
            if (f != Flow::Normal) return f;
        }
        return Flow::Normal;
    }

    Flow exec(const Stmt &s, const ScopePtr &scope) {
        DepthGuard g(*this);
        line_ = s.line;
        charge(1);
        switch (s.type) {
        case StmtType::Text: emit(s.text); return Flow::Normal;
        case StmtType::Output: emit(to_str(eval(*s.expr, scope))); return Flow::Normal;
        case StmtType::If: return truthy(eval(*s.expr, scope)) ? exec(s.body, scope) : exec(s.else_body, scope);
        case StmtType::For: return exec_for(s, scope);
        case StmtType::Set: {
            const Value v = eval(*s.expr, scope);
            line_ = s.line;
            if (s.attr.empty()) {
                assign(s.targets, v, *scope);
                return Flow::Normal;
            }
            const Value target = lookup(s.targets[0], scope);
            if (target.kind != Kind::Namespace) fail(GPT_ERR_FORMAT, "cannot assign attribute on non-namespace object '%s'", s.targets[0].c_str());
            for (auto &kv : target.ns->attrs)
                if (kv.first == s.attr) {
                    kv.second = v;
                    return Flow::Normal;
                }
            target.ns->attrs.emplace_back(s.attr, v);
            return Flow::Normal;
        }
        case StmtType::SetBlock: scope->vars[s.targets[0]] = make_str(capture(s.body, scope)); return Flow::Normal;
        case StmtType::Macro: scope->vars[s.text] = make_macro(s, scope); return Flow::Normal;
        case StmtType::FilterBlock: {
            const Value body = make_str(capture(s.body, scope));
            emit(to_str(eval_filters(*s.expr, scope, &body)));
            return Flow::Normal;
        }
        case StmtType::Generation: return exec(s.body, scope);
        case StmtType::Break: return Flow::Break;
        case StmtType::Continue: return Flow::Continue;
        }
        return Flow::Normal;
    }

    // The text a body prints, without printing it (set blocks, filter blocks, macros).
    std::string capture(const Body &body, const ScopePtr &scope) {
        std::string buf;
        std::string *saved = out_;
        out_ = &buf;
        try {
            exec(body, scope);
        } catch (...) {
            out_ = saved;
            throw;
        }
        out_ = saved;
        return buf;
    }

    // Each iteration runs in a fresh scope over the enclosing one: as in jinja2, a {% set %}
    // in the body lasts until the end of its iteration only.
    Flow exec_for(const Stmt &s, const ScopePtr &scope) {
        const List all = iterate(*this, eval(*s.expr, scope));
        List items;
        if (s.cond) {
            auto probe = std::make_shared<Scope>();
            probe->parent = scope;
            for (const Value &v : all) {
                assign(s.targets, v, *probe);
                if (truthy(eval(*s.cond, probe))) items.push_back(v);
            }
        } else {
            items = all;
        }
        if (items.empty()) return exec(s.else_body, scope);
        const int64_t n = (int64_t)items.size();
        for (int64_t k = 0; k < n; k++) {
            charge(kStepsPerIteration);
            auto inner = std::make_shared<Scope>();
            inner->parent = scope;
            assign(s.targets, items[(size_t)k], *inner);
            Dict loop = {{"index", Value::integer(k + 1)},      {"index0", Value::integer(k)},
                         {"revindex", Value::integer(n - k)},   {"revindex0", Value::integer(n - k - 1)},
                         {"first", Value::boolean(k == 0)},     {"last", Value::boolean(k == n - 1)},
                         {"length", Value::integer(n)},         {"depth", Value::integer(1)},
                         {"depth0", Value::integer(0)}};
            if (k > 0) loop.emplace_back("previtem", items[(size_t)k - 1]);
            if (k + 1 < n) loop.emplace_back("nextitem", items[(size_t)k + 1]);
            inner->vars["loop"] = Value::dict(std::move(loop));
            if (exec(s.body, inner) == Flow::Break) break;
        }
        return Flow::Normal;
    }

    Value make_macro(const Stmt &s, const ScopePtr &scope) {
        std::weak_ptr<Scope> home = scope; // weak: a macro stored in its own scope must not keep it alive
        const Stmt *def = &s;
        Value v;
        v.kind = Kind::Callable;
        v.fn = std::make_shared<const Callable>(Callable{"macro " + s.text, [this, def, home](CallArgs &a) {
            ScopePtr parent = home.lock();
            if (!parent) fail(GPT_ERR_UNSUPPORTED, "calling macro %s outside the block that defined it", def->text.c_str());
            if (a.positional.size() > def->params.size())
                fail(GPT_ERR_FORMAT, "macro '%s' takes not more than %zu argument(s)", def->text.c_str(), def->params.size());
            auto local = std::make_shared<Scope>();
            local->parent = parent;
            for (size_t k = 0; k < def->params.size(); k++) {
                const auto &p = def->params[k];
                if (k < a.positional.size()) local->vars[p.first] = a.positional[k];
                else if (const Value *kw = dict_find(a.keyword, p.first)) local->vars[p.first] = *kw;
                else local->vars[p.first] = p.second ? eval(*p.second, local) : Value::undefined(p.first);
            }
            for (const auto &kw : a.keyword) {
                bool known = false;
                for (const auto &p : def->params) known = known || p.first == kw.first;
                if (!known) fail(GPT_ERR_FORMAT, "macro '%s' takes no keyword argument '%s'", def->text.c_str(), kw.first.c_str());
            }
            const uint32_t saved_line = line_;
            Value out = make_str(capture(def->body, local));
            line_ = saved_line;
            return out;
        }});
        return v;
    }

    // -------------------------------------------------------------- expressions

    CallArgs eval_args(const Expr &e, const ScopePtr &scope) {
        CallArgs a;
        for (const auto &x : e.args) a.positional.push_back(eval(*x, scope));
        for (const auto &kw : e.kwargs) {
            Value v = eval(*kw.second, scope);
            charge(a.keyword.size()); // the duplicate check
            bool dup = false;
            for (auto &k : a.keyword) dup = dup || k.first == kw.first;
            if (dup) fail(GPT_ERR_FORMAT, "keyword argument '%s' repeated", kw.first.c_str());
            a.keyword.emplace_back(kw.first, std::move(v));
        }
        return a;
    }

    // A filter chain; its innermost input is pipe when the chain has none ({% filter %}).
    Value eval_filters(const Expr &e, const ScopePtr &scope, const Value *pipe) {
        const Value in = e.a ? (e.a->type == ExprType::Filter ? eval_filters(*e.a, scope, pipe) : eval(*e.a, scope)) : *pipe;
        CallArgs a = eval_args(e, scope);
        line_ = e.line;
        return apply_filter(*this, e.name, in, a);
    }

    Value eval(const Expr &e, const ScopePtr &scope) {
        DepthGuard g(*this);
        charge(1);
        line_ = e.line;
        switch (e.type) {
        case ExprType::Literal: return e.literal;
        case ExprType::Name: return lookup(e.name, scope);
        case ExprType::List: {
            List out;
            for (const auto &x : e.args) out.push_back(eval(*x, scope));
            return Value::list(std::move(out), e.literal.tuple);
        }
        case ExprType::Dict: {
            Dict out;
            for (size_t k = 0; k < e.keys.size(); k++) {
                const Value key = eval(*e.keys[k], scope);
                if (!key.is_str()) fail(GPT_ERR_UNSUPPORTED, "a dict key of type %s (only strings)", type_name(key));
                Value v = eval(*e.args[k], scope);
                charge(out.size()); // the duplicate-key check
                bool set = false;
                for (auto &kv : out)
                    if (kv.first == key.text()) kv.second = v, set = true;
                if (!set) out.emplace_back(key.text(), std::move(v));
            }
            return Value::dict(std::move(out));
        }
        case ExprType::Attr: return get_attr(*this, eval(*e.a, scope), e.name);
        case ExprType::Item: {
            const Value obj = eval(*e.a, scope);
            return get_item(*this, obj, eval(*e.b, scope));
        }
        case ExprType::Slice: {
            const Value obj = eval(*e.a, scope);
            Value b, c, d;
            if (e.b) b = eval(*e.b, scope);
            if (e.c) c = eval(*e.c, scope);
            if (e.d) d = eval(*e.d, scope);
            return get_slice(*this, obj, e.b ? &b : nullptr, e.c ? &c : nullptr, e.d ? &d : nullptr);
        }
        case ExprType::Call: {
            const Value fn = eval(*e.a, scope);
            CallArgs a = eval_args(e, scope);
            line_ = e.line;
            if (fn.kind == Kind::Callable) return fn.fn->call(a);
            if (fn.is_undefined()) {
                if (fn.s) fail(GPT_ERR_FORMAT, "'%s' is undefined", fn.s->c_str());
                fail(GPT_ERR_FORMAT, "calling an undefined value");
            }
            fail(GPT_ERR_FORMAT, "'%s' object is not callable", type_name(fn));
        }
        case ExprType::Filter: return eval_filters(e, scope, nullptr);
        case ExprType::Test: {
            const Value in = eval(*e.a, scope);
            CallArgs a = eval_args(e, scope);
            line_ = e.line;
            return Value::boolean(apply_test(*this, e.name, in, a) != e.negated);
        }
        case ExprType::Neg:
        case ExprType::Pos: {
            const Value v = eval(*e.a, scope);
            if (v.kind == Kind::Float) return Value::real(e.type == ExprType::Neg ? -v.f : v.f);
            if (!is_intlike(v)) fail(GPT_ERR_FORMAT, "bad operand type for unary %s: '%s'", e.type == ExprType::Neg ? "-" : "+", type_name(v));
            if (e.type == ExprType::Pos) return Value::integer(int_of(v));
            if (int_of(v) == INT64_MIN) overflow();
            return Value::integer(-int_of(v));
        }
        case ExprType::Not: return Value::boolean(!truthy(eval(*e.a, scope)));
        case ExprType::And: {
            Value a = eval(*e.a, scope);
            return truthy(a) ? eval(*e.b, scope) : a;
        }
        case ExprType::Or: {
            Value a = eval(*e.a, scope);
            return truthy(a) ? a : eval(*e.b, scope);
        }
        case ExprType::Cond:
            if (truthy(eval(*e.b, scope))) return eval(*e.a, scope);
            return e.c ? eval(*e.c, scope) : Value::undefined();
        case ExprType::Binary: {
            const Value a = eval(*e.a, scope);
            const Value b = eval(*e.b, scope);
            line_ = e.line;
            return binary(e.name, a, b);
        }
        }
        fail(GPT_ERR_INTERNAL, "unknown expression node");
    }

    Value binary(const std::string &op, const Value &a, const Value &b) {
        if (op == "==") return Value::boolean(eq(a, b));
        if (op == "!=") return Value::boolean(!eq(a, b));
        if (op == "<") return Value::boolean(lt(a, b));
        if (op == ">") return Value::boolean(lt(b, a));
        if (op == "<=") return Value::boolean(!lt(b, a));
        if (op == ">=") return Value::boolean(!lt(a, b));
        if (op == "in" || op == "not in") {
            CallArgs args;
            args.positional.push_back(b);
            return Value::boolean(apply_test(*this, "in", a, args) == (op == "in"));
        }
        if (op == "~") {
            std::string s = to_str(a);
            const std::string t = to_str(b);
            check_bytes(s.size() + t.size());
            return make_str(s + t);
        }
        if (op == "+") {
            if (a.is_str() && b.is_str()) {
                check_bytes(a.text().size() + b.text().size());
                return make_str(a.text() + b.text());
            }
            if (a.kind == Kind::List && b.kind == Kind::List && a.tuple == b.tuple) {
                check_items(a.l->size() + b.l->size());
                charge(a.l->size() + b.l->size());
                List out = *a.l;
                out.insert(out.end(), b.l->begin(), b.l->end());
                return Value::list(std::move(out), a.tuple);
            }
        }
        if (op == "*") {
            const Value *seq = a.kind == Kind::Str || a.kind == Kind::List ? &a : b.kind == Kind::Str || b.kind == Kind::List ? &b : nullptr;
            const Value *times = seq == &a ? &b : &a;
            if (seq && is_intlike(*times)) {
                const int64_t n = std::max<int64_t>(0, int_of(*times));
                if (seq->is_str()) {
                    if (n > 0 && seq->text().size() > limits_.max_bytes / (uint64_t)n) check_bytes(SIZE_MAX);
                    std::string out;
                    for (int64_t k = 0; k < n; k++) out += seq->text();
                    return make_str(std::move(out));
                }
                if (n > 0 && seq->l->size() > limits_.max_items / (uint64_t)n) check_items(SIZE_MAX);
                charge((uint64_t)n * seq->l->size());
                List out;
                for (int64_t k = 0; k < n; k++) out.insert(out.end(), seq->l->begin(), seq->l->end());
                return Value::list(std::move(out), seq->tuple);
            }
        }
        if (!a.is_number() || !b.is_number()) operand_error(op, a, b);
        const bool ints = is_intlike(a) && is_intlike(b);
        const int64_t x = ints ? int_of(a) : 0, y = ints ? int_of(b) : 0;
        const double fx = num_of(a), fy = num_of(b);
        int64_t r;
        if (op == "+") {
            if (!ints) return Value::real(fx + fy);
            if (__builtin_add_overflow(x, y, &r)) overflow();
            return Value::integer(r);
        }
        if (op == "-") {
            if (!ints) return Value::real(fx - fy);
            if (__builtin_sub_overflow(x, y, &r)) overflow();
            return Value::integer(r);
        }
        if (op == "*") {
            if (!ints) return Value::real(fx * fy);
            if (__builtin_mul_overflow(x, y, &r)) overflow();
            return Value::integer(r);
        }
        if (op == "/") {
            if (fy == 0) fail(GPT_ERR_FORMAT, "division by zero");
            return Value::real(fx / fy);
        }
        if (op == "//" || op == "%") {
            if (ints ? y == 0 : fy == 0) fail(GPT_ERR_FORMAT, "integer division or modulo by zero");
            if (ints) {
                if (x == INT64_MIN && y == -1) overflow();
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) q--, m += y; // Python floors
                return Value::integer(op == "//" ? q : m);
            }
            double m = std::fmod(fx, fy);
            if (m != 0 && ((m < 0) != (fy < 0))) m += fy;
            if (op == "%") return Value::real(m);
            const double div = (fx - m) / fy; // CPython's float floor division
            double q = std::floor(div);
            if (div - q > 0.5) q += 1.0;
            return Value::real(q);
        }
        if (op == "**") {
            if (ints && y >= 0) {
                int64_t acc = 1;
                for (int64_t k = 0; k < y; k++) {
                    charge(1);
                    if (__builtin_mul_overflow(acc, x, &acc)) overflow();
                    if (acc == 0 || acc == 1) break; // 0**n, 1**n
                    if (acc == -1 && x == -1) { acc = (y % 2) ? -1 : 1; break; }
                }
                return Value::integer(acc);
            }
            return Value::real(std::pow(fx, fy));
        }
        operand_error(op, a, b);
    }

    Limits limits_;
    std::time_t now_;
    ScopePtr globals_;
    std::vector<std::weak_ptr<Namespace>> namespaces_; // emptied at the end (cycles)
    std::string *out_ = nullptr;
    uint64_t steps_ = 0;
    int depth_ = 0;
    uint32_t line_ = 0;
};

} // namespace

std::string render(const Body &program, const Dict &globals, const Limits &limits, std::time_t now) {
    Interpreter in(globals, limits, now);
    return in.run(program);
}

} // namespace gpt::chat
