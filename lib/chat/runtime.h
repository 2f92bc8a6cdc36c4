// runtime.h - what the filters, tests and methods (builtins.cpp) need from the interpreter:
// the budget every operation is charged against, the size limits, and calling a value
// (a macro passed to map, a test name given to select).
#pragma once

#include "chat/value.h"

#include <cstdint>
#include <memory>
#include <string>

namespace gpt::chat {

class Runtime {
public:
    virtual ~Runtime() = default;
    // Counts work; throws GPT_ERR_UNSUPPORTED once the template's step budget is spent.
    virtual void charge(uint64_t steps) = 0;
    // Largest string (bytes) and list (items) an operation may build.
    virtual size_t max_bytes() const = 0;
    virtual size_t max_items() const = 0;
    // A string built by an operation: charged by size, refused past max_bytes.
    Value make_str(std::string s) {
        check_bytes(s.size());
        charge(1 + s.size() / 16);
        return Value::str(std::move(s));
    }
    void check_bytes(size_t n) const;
    // equal() and less(), charged by the elements they visit.
    bool eq(const Value &a, const Value &b) {
        uint64_t work = 0;
        const bool r = equal(a, b, &work);
        charge(work);
        return r;
    }
    bool lt(const Value &a, const Value &b) {
        uint64_t work = 0;
        const bool r = less(a, b, &work);
        charge(work);
        return r;
    }
    void check_items(size_t n) const;
    // The local time formatted as strftime does (strftime_now).
    virtual std::string now(const std::string &format) = 0;
    // Registers a namespace() object; the interpreter empties every one when rendering ends,
    // which breaks reference cycles a template can build ({% set ns.me = ns %}).
    virtual void track(const std::shared_ptr<Namespace> &ns) = 0;
};

} // namespace gpt::chat
