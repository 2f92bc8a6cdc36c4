// builtins_globals.cpp - the global functions of transformers' environment: jinja2's range,
// namespace and dict, and transformers' raise_exception and strftime_now (see builtins.h).
#include "chat/builtins.h"

#include "core/error.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace gpt::chat {

Value global_function(Runtime &rt, const std::string &name) {
    auto fn = [](std::string n, std::function<Value(CallArgs &)> f) {
        Value v;
        v.kind = Kind::Callable;
        v.fn = std::make_shared<const Callable>(Callable{std::move(n), std::move(f)});
        return v;
    };
    if (name == "range") {
        return fn("range", [&rt](CallArgs &a) {
            int64_t v[3] = {0, 0, 1};
            const size_t n = a.positional.size();
            if (n < 1 || n > 3 || !a.keyword.empty()) fail(GPT_ERR_FORMAT, "range expects 1 to 3 integer arguments");
            for (size_t k = 0; k < n; k++) {
                const Value &x = a.positional[k];
                if (x.kind != Kind::Int && x.kind != Kind::Bool) fail(GPT_ERR_FORMAT, "range: '%s' object cannot be interpreted as an integer", type_name(x));
                v[n == 1 ? 1 : k] = x.kind == Kind::Int ? x.i : x.b;
            }
            const int64_t start = v[0], stop = v[1], step = v[2];
            if (step == 0) fail(GPT_ERR_FORMAT, "range() arg 3 must not be zero");
            const long double count_ld = step > 0 ? (stop > start ? ((long double)stop - start + step - 1) / step : 0)
                                                  : (start > stop ? ((long double)start - stop - step - 1) / -step : 0);
            rt.check_items((size_t)std::min<long double>(count_ld, (long double)SIZE_MAX / 2));
            const int64_t count = (int64_t)count_ld;
            rt.charge((uint64_t)count);
            List out;
            out.reserve((size_t)count);
            for (int64_t k = 0; k < count; k++) out.push_back(Value::integer(start + k * step));
            return Value::list(std::move(out));
        });
    }
    if (name == "namespace") {
        return fn("namespace", [&rt](CallArgs &a) {
            Value v;
            v.kind = Kind::Namespace;
            v.ns = std::make_shared<Namespace>();
            rt.track(v.ns);
            for (const Value &p : a.positional) {
                if (p.kind != Kind::Dict) fail(GPT_ERR_FORMAT, "namespace() takes keyword arguments or a dict");
                v.ns->attrs = *p.d;
            }
            for (auto &kv : a.keyword) {
                bool set = false;
                for (auto &e : v.ns->attrs)
                    if (e.first == kv.first) e.second = kv.second, set = true;
                if (!set) v.ns->attrs.push_back(kv);
            }
            return v;
        });
    }
    if (name == "dict") {
        return fn("dict", [](CallArgs &a) {
            if (!a.positional.empty()) fail(GPT_ERR_UNSUPPORTED, "dict() with positional arguments");
            return Value::dict(a.keyword);
        });
    }
    if (name == "raise_exception") {
        return fn("raise_exception", [](CallArgs &a) -> Value {
            const std::string msg = a.positional.empty() ? std::string() : to_str(a.positional[0]);
            fail(GPT_ERR_INVALID_ARG, "the chat template refused the conversation: %s", msg.c_str());
        });
    }
    if (name == "strftime_now") {
        return fn("strftime_now", [&rt](CallArgs &a) {
            if (a.positional.size() != 1 || !a.positional[0].is_str()) fail(GPT_ERR_FORMAT, "strftime_now takes one format string");
            return rt.make_str(rt.now(a.positional[0].text()));
        });
    }
    if (name == "lipsum" || name == "cycler" || name == "joiner")
        return fn(name, [name](CallArgs &) -> Value { fail(GPT_ERR_UNSUPPORTED, "the global function %s()", name.c_str()); });
    return Value::undefined(name);
}

} // namespace gpt::chat
