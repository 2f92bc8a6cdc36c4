// pickle_vm.cpp - the allowlist pickle interpreter (see pickle_vm.h).
#include "convert/pickle_vm.h"

#include "core/error.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace gpt::convert::pickle {

namespace {

constexpr size_t kMaxValues = 1u << 22;   // values created (each opcode makes at most one)
constexpr size_t kMaxStack = 1u << 20;
constexpr size_t kMaxMarks = 256;
constexpr size_t kMaxMemo = 1u << 20;
constexpr uint32_t kMaxDepth = 64;       // nesting of containers
constexpr size_t kMaxItems = 1u << 24;   // elements of one container
constexpr size_t kMaxKeyBytes = 4096;    // a dict key (keeps hashing linear)
constexpr size_t kMaxDims = 16;
constexpr uint64_t kMaxDimSize = 1ull << 40;

// What each allowed global means. Anything not listed is refused at the GLOBAL opcode.
enum class Global { ORDERED_DICT, REBUILD_TENSOR_V2, REBUILD_PARAMETER, REBUILD_PARAMETER_WITH_STATE, REBUILD_FROM_TYPE_V2,
                    SIZE, DEVICE, TYPE_MARKER, STORAGE_TYPE };

struct GlobalInfo {
    const char *name;
    Global meaning;
    StorageType storage;
};

const GlobalInfo kGlobals[] = {
    {"collections.OrderedDict", Global::ORDERED_DICT, StorageType::F32},
    {"torch._utils._rebuild_tensor_v2", Global::REBUILD_TENSOR_V2, StorageType::F32},
    {"torch._utils._rebuild_parameter", Global::REBUILD_PARAMETER, StorageType::F32},
    {"torch._utils._rebuild_parameter_with_state", Global::REBUILD_PARAMETER_WITH_STATE, StorageType::F32},
    {"torch._tensor._rebuild_from_type_v2", Global::REBUILD_FROM_TYPE_V2, StorageType::F32},
    {"torch.Size", Global::SIZE, StorageType::F32},
    {"torch.device", Global::DEVICE, StorageType::F32},
    {"torch.nn.parameter.Parameter", Global::TYPE_MARKER, StorageType::F32},
    {"torch.Tensor", Global::TYPE_MARKER, StorageType::F32},
    {"torch.DoubleStorage", Global::STORAGE_TYPE, StorageType::F64},
    {"torch.FloatStorage", Global::STORAGE_TYPE, StorageType::F32},
    {"torch.HalfStorage", Global::STORAGE_TYPE, StorageType::F16},
    {"torch.BFloat16Storage", Global::STORAGE_TYPE, StorageType::BF16},
    {"torch.LongStorage", Global::STORAGE_TYPE, StorageType::I64},
    {"torch.IntStorage", Global::STORAGE_TYPE, StorageType::I32},
    {"torch.ShortStorage", Global::STORAGE_TYPE, StorageType::I16},
    {"torch.CharStorage", Global::STORAGE_TYPE, StorageType::I8},
    {"torch.ByteStorage", Global::STORAGE_TYPE, StorageType::U8},
    {"torch.BoolStorage", Global::STORAGE_TYPE, StorageType::BOOL},
};

const GlobalInfo *find_global(const std::string &name) {
    for (const GlobalInfo &g : kGlobals)
        if (name == g.name) return &g;
    return nullptr;
}

const char *opcode_name(uint8_t op) {
    switch (op) {
    case 'c': return "GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 'P': return "PERSID";
    case 0x82: case 0x83: case 0x84: return "EXT";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return nullptr;
    }
}

class Machine {
public:
    Machine(const uint8_t *data, uint64_t size, const std::string &source, const PersistentLoad &pl)
        : p_(data), size_(size), src_(source), pl_(pl), arena_(std::make_unique<Arena>()) {}

    Unpickled run() {
        while (true) {
            if (pos_ >= size_) bad("ends without STOP (truncated)");
            op_pos_ = pos_;
            const uint8_t op = p_[pos_++];
            if (op == '.') break;
            step(op);
        }
        if (stack_.size() != 1 || !marks_.empty()) bad("STOP with %zu values and %zu marks on the stack (expected one value)", stack_.size(), marks_.size());
        Unpickled u;
        u.root = stack_.back();
        u.arena = std::move(arena_);
        return u;
    }

private:
    [[noreturn]] void bad(const char *fmt, ...) __attribute__((format(printf, 2, 3))) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        fail(GPT_ERR_FORMAT, "%s: pickle byte %llu: %s", src_.c_str(), (unsigned long long)op_pos_, buf);
    }

    const uint8_t *need(uint64_t n) {
        if (n > size_ - pos_) bad("truncated (an operand needs %llu bytes, %llu remain)", (unsigned long long)n, (unsigned long long)(size_ - pos_));
        const uint8_t *q = p_ + pos_;
        pos_ += n;
        return q;
    }
    uint64_t le(int n) {
        const uint8_t *q = need(n);
        uint64_t v = 0;
        for (int i = n - 1; i >= 0; i--) v = v << 8 | q[i];
        return v;
    }
    std::string line() {
        // GLOBAL's text operands: short, newline-terminated.
        for (uint64_t i = pos_; i < size_ && i - pos_ < 256; i++)
            if (p_[i] == '\n') {
                std::string s((const char *)p_ + pos_, i - pos_);
                pos_ = i + 1;
                return s;
            }
        bad("GLOBAL operand is not a short newline-terminated name");
    }

    Value *make(Kind k) {
        if (arena_->size() >= kMaxValues) bad("more than %zu values", kMaxValues);
        return arena_->make(k);
    }
    void push(Value *v) {
        if (stack_.size() >= kMaxStack) bad("the stack exceeds %zu values", kMaxStack);
        stack_.push_back(v);
    }
    size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
    Value *pop() {
        if (stack_.size() <= floor()) bad("pops an empty stack (or past a MARK)");
        Value *v = stack_.back();
        stack_.pop_back();
        return v;
    }
    Value *top() {
        if (stack_.size() <= floor()) bad("reads an empty stack (or past a MARK)");
        return stack_.back();
    }
    // The values since the last MARK, removed with the mark.
    std::vector<Value *> pop_mark() {
        if (marks_.empty()) bad("no MARK to pop to");
        const size_t m = marks_.back();
        marks_.pop_back();
        std::vector<Value *> v(stack_.begin() + (ptrdiff_t)m, stack_.end());
        stack_.resize(m);
        return v;
    }
    void deepen(Value *container, const Value *item) {
        container->depth = std::max(container->depth, item->depth + 1);
        if (container->depth > kMaxDepth) bad("containers nested deeper than %u", kMaxDepth);
    }
    Value *seq(Kind k, std::vector<Value *> items) {
        if (items.size() > kMaxItems) bad("a %s of more than %zu items", kind_name(k), kMaxItems);
        Value *v = make(k);
        v->depth = 1;
        for (const Value *x : items) deepen(v, x);
        v->items = std::move(items);
        return v;
    }
    Value *str(Kind k, uint64_t n) {
        const uint8_t *q = need(n);
        Value *v = make(k);
        v->s.assign((const char *)q, (size_t)n);
        return v;
    }
    Value *integer(int64_t i) {
        Value *v = make(Kind::INT);
        v->i = i;
        return v;
    }

    std::string dict_key(const Value *k) {
        switch (k->kind) {
        case Kind::STR:
            if (k->s.size() > kMaxKeyBytes) bad("a dict key of %zu bytes (at most %zu)", k->s.size(), kMaxKeyBytes);
            return "s" + k->s;
        case Kind::INT: case Kind::BOOL: return "i" + std::to_string(k->i);
        case Kind::NONE: return "n";
        case Kind::FLOAT: {
            if (k->f == std::floor(k->f) && std::fabs(k->f) < 9e18) return "i" + std::to_string((int64_t)k->f);
            uint64_t bits;
            std::memcpy(&bits, &k->f, 8);
            return "f" + std::to_string(bits);
        }
        default: bad("a dict key of type %s (only str, int, float, bool and None keys are read)", kind_name(k->kind));
        }
    }
    void set_item(Value *d, Value *k, Value *v) {
        if (!d->is(Kind::DICT)) bad("SETITEM on a %s (only dicts take items)", kind_name(d->kind));
        DictData &dd = *d->dict;
        auto [it, fresh] = dd.index.emplace(dict_key(k), dd.entries.size());
        if (fresh) {
            if (dd.entries.size() >= kMaxItems) bad("a dict of more than %zu items", kMaxItems);
            dd.entries.emplace_back(k, v);
        } else {
            dd.entries[it->second].second = v;
        }
        deepen(d, v);
    }
    void append(Value *l, Value *v) {
        if (!l->is(Kind::LIST)) bad("APPEND on a %s (only lists take appends)", kind_name(l->kind));
        if (l->items.size() >= kMaxItems) bad("a list of more than %zu items", kMaxItems);
        l->items.push_back(v);
        deepen(l, v);
    }
    void memo_put(uint64_t id) {
        if (memo_.size() >= kMaxMemo && !memo_.count(id)) bad("the memo exceeds %zu entries", kMaxMemo);
        memo_[id] = top();
    }
    void memo_get(uint64_t id) {
        auto it = memo_.find(id);
        if (it == memo_.end()) bad("memo entry %llu was never stored", (unsigned long long)id);
        push(it->second);
    }

    Value *global(const std::string &module, const std::string &name) {
        const std::string full = module + "." + name;
        if (!find_global(full))
            fail(GPT_ERR_UNSUPPORTED, "%s: pickle byte %llu: refuses global '%s' (a weights file needs only torch's tensor "
                 "rebuilders, storage types, collections.OrderedDict, torch.Size and torch.device; nothing is executed)",
                 src_.c_str(), (unsigned long long)op_pos_, full.c_str());
        Value *v = make(Kind::GLOBAL);
        v->s = full;
        return v;
    }

    uint64_t as_count(const Value *v, const char *what) {
        if (!v->is(Kind::INT) || v->i < 0 || (uint64_t)v->i > kMaxDimSize) bad("%s is not a size (a %s)", what, kind_name(v->kind));
        return (uint64_t)v->i;
    }
    const Value *arg(const Value *args, size_t i, const char *fn) {
        if (!args->is(Kind::TUPLE)) bad("%s applied to a %s, not a tuple", fn, kind_name(args->kind));
        if (i >= args->items.size()) bad("%s needs more than %zu arguments", fn, args->items.size());
        return args->items[i];
    }

    Value *rebuild_tensor(const Value *args) {
        const char *fn = "_rebuild_tensor_v2";
        const Value *st = arg(args, 0, fn), *off = arg(args, 1, fn), *size = arg(args, 2, fn), *stride = arg(args, 3, fn);
        if (!st->is(Kind::STORAGE)) bad("%s: the first argument is a %s, not a storage", fn, kind_name(st->kind));
        if (!size->is(Kind::TUPLE) || !stride->is(Kind::TUPLE) || size->items.size() != stride->items.size() || size->items.size() > kMaxDims)
            bad("%s: size and stride are not tuples of the same length (at most %zu)", fn, kMaxDims);
        Value *v = make(Kind::TENSOR);
        v->tensor = std::make_unique<TensorData>();
        TensorData &t = *v->tensor;
        t.storage = st;
        t.offset = as_count(off, "the storage offset");
        for (size_t i = 0; i < size->items.size(); i++) {
            t.shape.push_back(as_count(size->items[i], "a dimension"));
            t.stride.push_back(as_count(stride->items[i], "a stride"));
        }
        check_tensor_extent(t, src_ + ": pickle byte " + std::to_string(op_pos_) + ": tensor on storage '" + st->storage->key + "'");
        return v;
    }

    Value *call(const Value *fn, const Value *args) {
        if (!fn->is(Kind::GLOBAL)) bad("REDUCE calls a %s", kind_name(fn->kind));
        const GlobalInfo *g = find_global(fn->s);
        switch (g->meaning) {
        case Global::ORDERED_DICT: {
            if (!args->is(Kind::TUPLE) || !args->items.empty()) bad("OrderedDict called with arguments");
            Value *d = make(Kind::DICT);
            d->depth = 1;
            d->dict = std::make_unique<DictData>();
            return d;
        }
        case Global::REBUILD_TENSOR_V2: return rebuild_tensor(args);
        case Global::REBUILD_PARAMETER:
        case Global::REBUILD_PARAMETER_WITH_STATE: {
            const Value *t = arg(args, 0, fn->s.c_str());
            if (!t->is(Kind::TENSOR)) bad("%s of a %s", fn->s.c_str(), kind_name(t->kind));
            return const_cast<Value *>(t);
        }
        case Global::REBUILD_FROM_TYPE_V2: {
            const Value *inner = arg(args, 0, fn->s.c_str()), *inner_args = arg(args, 2, fn->s.c_str());
            if (!inner->is(Kind::GLOBAL) || find_global(inner->s)->meaning != Global::REBUILD_TENSOR_V2)
                bad("_rebuild_from_type_v2 of something other than _rebuild_tensor_v2");
            return rebuild_tensor(inner_args);
        }
        case Global::SIZE: {
            const Value *t = arg(args, 0, "torch.Size");
            if (!t->is(Kind::TUPLE)) bad("torch.Size of a %s", kind_name(t->kind));
            return const_cast<Value *>(t);
        }
        case Global::DEVICE: {
            const Value *t = arg(args, 0, "torch.device");
            if (!t->is(Kind::STR)) bad("torch.device of a %s", kind_name(t->kind));
            return const_cast<Value *>(t);
        }
        case Global::TYPE_MARKER:
        case Global::STORAGE_TYPE: break;
        }
        fail(GPT_ERR_UNSUPPORTED, "%s: pickle byte %llu: refuses to call '%s'", src_.c_str(), (unsigned long long)op_pos_, fn->s.c_str());
    }

    void step(uint8_t op) {
        switch (op) {
        case 0x80: { // PROTO
            const uint8_t v = *need(1);
            if (v < 2 || v > 5) bad("pickle protocol %u (2 to 5 are read)", v);
            return;
        }
        case 0x95: need(8); return; // FRAME: a length hint only
        case '(':
            if (marks_.size() >= kMaxMarks) bad("more than %zu nested MARKs", kMaxMarks);
            marks_.push_back(stack_.size());
            return;
        case '0': pop(); return;
        case '1': pop_mark(); return;
        case '2': push(top()); return;
        case 'N': push(make(Kind::NONE)); return;
        case 0x88: case 0x89: {
            Value *v = make(Kind::BOOL);
            v->i = op == 0x88;
            push(v);
            return;
        }
        case 'J': push(integer((int32_t)(uint32_t)le(4))); return;
        case 'K': push(integer((int64_t)le(1))); return;
        case 'M': push(integer((int64_t)le(2))); return;
        case 0x8a: case 0x8b: { // LONG1, LONG4: little-endian two's complement
            const uint64_t n = op == 0x8a ? le(1) : le(4);
            if (n > 8) bad("an integer of %llu bytes (at most 8 are read)", (unsigned long long)n);
            const uint8_t *q = need(n);
            uint64_t u = 0;
            for (uint64_t i = n; i-- > 0;) u = u << 8 | q[i];
            if (n > 0 && n < 8 && (q[n - 1] & 0x80)) u |= ~0ull << (8 * n);
            push(integer((int64_t)u));
            return;
        }
        case 'G': { // BINFLOAT, big-endian
            const uint8_t *q = need(8);
            uint64_t u = 0;
            for (int i = 0; i < 8; i++) u = u << 8 | q[i];
            Value *v = make(Kind::FLOAT);
            std::memcpy(&v->f, &u, 8);
            push(v);
            return;
        }
        case 0x8c: push(str(Kind::STR, le(1))); return; // SHORT_BINUNICODE
        case 'X': push(str(Kind::STR, le(4))); return;  // BINUNICODE
        case 0x8d: push(str(Kind::STR, le(8))); return; // BINUNICODE8
        case 'U': push(str(Kind::STR, le(1))); return;  // SHORT_BINSTRING (Python 2 str)
        case 'T': push(str(Kind::STR, le(4))); return;  // BINSTRING
        case 'C': push(str(Kind::BYTES, le(1))); return; // SHORT_BINBYTES
        case 'B': push(str(Kind::BYTES, le(4))); return;
        case 0x8e: push(str(Kind::BYTES, le(8))); return;
        case ')': push(seq(Kind::TUPLE, {})); return;
        case 't': push(seq(Kind::TUPLE, pop_mark())); return;
        case 0x85: { Value *a = pop(); push(seq(Kind::TUPLE, {a})); return; }
        case 0x86: { Value *b = pop(), *a = pop(); push(seq(Kind::TUPLE, {a, b})); return; }
        case 0x87: { Value *c = pop(), *b = pop(), *a = pop(); push(seq(Kind::TUPLE, {a, b, c})); return; }
        case ']': push(seq(Kind::LIST, {})); return;
        case 'l': push(seq(Kind::LIST, pop_mark())); return;
        case 'a': { Value *v = pop(); append(top(), v); return; }
        case 'e': {
            std::vector<Value *> items = pop_mark();
            Value *l = top();
            for (Value *v : items) append(l, v);
            return;
        }
        case '}': case 'd': {
            Value *d = make(Kind::DICT);
            d->depth = 1;
            d->dict = std::make_unique<DictData>();
            if (op == 'd') {
                std::vector<Value *> items = pop_mark();
                if (items.size() % 2) bad("DICT with an odd number of items");
                for (size_t i = 0; i < items.size(); i += 2) set_item(d, items[i], items[i + 1]);
            }
            push(d);
            return;
        }
        case 's': { Value *v = pop(), *k = pop(); set_item(top(), k, v); return; }
        case 'u': {
            std::vector<Value *> items = pop_mark();
            if (items.size() % 2) bad("SETITEMS with an odd number of items");
            Value *d = top();
            for (size_t i = 0; i < items.size(); i += 2) set_item(d, items[i], items[i + 1]);
            return;
        }
        case 'c': {
            const std::string module = line(), name = line();
            push(global(module, name));
            return;
        }
        case 0x93: { // STACK_GLOBAL
            Value *name = pop(), *module = pop();
            if (!name->is(Kind::STR) || !module->is(Kind::STR)) bad("STACK_GLOBAL of non-strings");
            push(global(module->s, name->s));
            return;
        }
        case 'R': { Value *args = pop(), *fn = pop(); push(call(fn, args)); return; }
        case 'b': { // BUILD: state-dict metadata, tensor state; carries nothing needed
            Value *state = pop();
            Value *target = top();
            if (!target->is(Kind::DICT) && !target->is(Kind::TENSOR)) bad("BUILD on a %s", kind_name(target->kind));
            (void)state;
            return;
        }
        case 'Q': { // BINPERSID
            Value *pid = pop();
            if (!pl_) bad("a persistent id (this file must be a plain pickle)");
            push(pl_(*arena_, *pid));
            return;
        }
        case 'q': memo_put(le(1)); return;
        case 'r': memo_put(le(4)); return;
        case 0x94: memo_put(memo_.size()); return;
        case 'h': memo_get(le(1)); return;
        case 'j': memo_get(le(4)); return;
        default: {
            const char *name = opcode_name(op);
            if (name)
                fail(GPT_ERR_UNSUPPORTED, "%s: pickle byte %llu: refuses opcode %s (0x%02x)", src_.c_str(), (unsigned long long)op_pos_, name, op);
            bad("unknown or unsupported opcode 0x%02x", op);
        }
        }
    }

    const uint8_t *p_;
    uint64_t size_, pos_ = 0, op_pos_ = 0;
    const std::string &src_;
    const PersistentLoad &pl_;
    std::unique_ptr<Arena> arena_;
    std::vector<Value *> stack_;
    std::vector<size_t> marks_;
    std::unordered_map<uint64_t, Value *> memo_;
};

} // namespace

const char *kind_name(Kind k) {
    switch (k) {
    case Kind::NONE: return "None";
    case Kind::BOOL: return "bool";
    case Kind::INT: return "int";
    case Kind::FLOAT: return "float";
    case Kind::STR: return "str";
    case Kind::BYTES: return "bytes";
    case Kind::TUPLE: return "tuple";
    case Kind::LIST: return "list";
    case Kind::DICT: return "dict";
    case Kind::GLOBAL: return "global";
    case Kind::STORAGE: return "storage";
    case Kind::TENSOR: return "tensor";
    }
    return "?";
}

const char *storage_type_name(StorageType t) {
    for (const GlobalInfo &g : kGlobals)
        if (g.meaning == Global::STORAGE_TYPE && g.storage == t) return g.name + 6; // past "torch."
    return "?";
}

uint32_t storage_type_bytes(StorageType t) {
    switch (t) {
    case StorageType::F64: case StorageType::I64: return 8;
    case StorageType::F32: case StorageType::I32: return 4;
    case StorageType::F16: case StorageType::BF16: case StorageType::I16: return 2;
    case StorageType::I8: case StorageType::U8: case StorageType::BOOL: return 1;
    }
    return 1;
}

bool storage_type_of_global(const std::string &name, StorageType *out) {
    const GlobalInfo *g = find_global(name);
    if (!g || g->meaning != Global::STORAGE_TYPE) return false;
    *out = g->storage;
    return true;
}

Value *Arena::make(Kind k) {
    values_.push_back(std::make_unique<Value>());
    values_.back()->kind = k;
    return values_.back().get();
}

const Value *Value::get(const std::string &key) const {
    if (kind != Kind::DICT) return nullptr;
    auto it = dict->index.find("s" + key);
    return it == dict->index.end() ? nullptr : dict->entries[it->second].second;
}

uint64_t TensorData::numel() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d; // each <= 2^40 and the product checked in check_tensor_extent
    return n;
}

void check_tensor_extent(const TensorData &t, const std::string &what) {
    uint64_t n = 1, last = t.offset;
    bool empty = false;
    for (size_t i = 0; i < t.shape.size(); i++) {
        if (mul_overflows(n, t.shape[i], &n)) fail(GPT_ERR_FORMAT, "%s: its element count overflows", what.c_str());
        if (t.shape[i] == 0) empty = true;
        uint64_t reach;
        if (t.shape[i] && (mul_overflows(t.shape[i] - 1, t.stride[i], &reach) || add_overflows(last, reach, &last)))
            fail(GPT_ERR_FORMAT, "%s: its strides overflow", what.c_str());
    }
    const uint64_t have = t.storage->storage->numel;
    if (!empty && last >= have)
        fail(GPT_ERR_FORMAT, "%s: reaches element %llu but the storage holds %llu (a storage smaller than its tensor)", what.c_str(),
             (unsigned long long)last, (unsigned long long)have);
}

Unpickled unpickle(const uint8_t *data, uint64_t size, const std::string &source, const PersistentLoad &persistent_load) {
    Machine m(data, size, source, persistent_load);
    return m.run();
}

} // namespace gpt::convert::pickle
