// pickle_vm.h - an allowlist interpreter of Python pickles (protocols 2-5) as torch.save and
// nanoGPT's meta.pkl write them. It never executes anything: the only globals it accepts are
// the few a weights file needs (collections.OrderedDict, torch's tensor rebuilders, storage
// types, torch.Size, torch.device), each given a fixed meaning here; any other global is
// refused with a message naming it. Everything is bounded (values, memo, stack, marks,
// nesting, element and key sizes) and each opcode does work proportional to its own bytes or
// operands, so time is linear in the input. Values live in an arena owned by the result, so
// even cyclic structures built through the memo are freed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace gpt::convert::pickle {

enum class Kind : uint8_t { NONE, BOOL, INT, FLOAT, STR, BYTES, TUPLE, LIST, DICT, GLOBAL, STORAGE, TENSOR };
const char *kind_name(Kind k);

// Element types of torch's storage classes (torch.FloatStorage ...).
enum class StorageType : uint8_t { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL };
const char *storage_type_name(StorageType t); // "FloatStorage"
uint32_t storage_type_bytes(StorageType t);

struct Value;

struct DictData {
    std::vector<std::pair<Value *, Value *>> entries; // insertion order, a repeated key replaces in place
    std::unordered_map<std::string, size_t> index;    // canonical key -> entry
};

struct StorageData {
    StorageType type = StorageType::F32;
    std::string key;          // the record data/<key>
    std::string location;     // "cpu", "cuda:0"
    uint64_t numel = 0;       // elements
    const uint8_t *data = nullptr; // the record's bytes (at least numel elements), set by the loader
};

struct TensorData {
    const Value *storage = nullptr; // kind STORAGE
    uint64_t offset = 0;            // in elements
    std::vector<uint64_t> shape, stride; // strides in elements
    uint64_t numel() const;
};

struct Value {
    Kind kind = Kind::NONE;
    uint32_t depth = 0;           // nesting of containers, bounded
    int64_t i = 0;                // BOOL, INT
    double f = 0;                 // FLOAT
    std::string s;                // STR, BYTES, GLOBAL ("module.name")
    std::vector<Value *> items;   // TUPLE, LIST
    std::unique_ptr<DictData> dict;
    std::unique_ptr<StorageData> storage;
    std::unique_ptr<TensorData> tensor;

    bool is(Kind k) const { return kind == k; }
    // DICT only: the value at a string key, or nullptr.
    const Value *get(const std::string &key) const;
};

// Owns every value of one unpickling.
class Arena {
public:
    Value *make(Kind k);
    size_t size() const { return values_.size(); }

private:
    std::vector<std::unique_ptr<Value>> values_;
};

// Turns a persistent id (BINPERSID's argument) into a value; throws gpt::Error to refuse.
// Without one, BINPERSID is refused.
using PersistentLoad = std::function<Value *(Arena &, const Value &pid)>;

struct Unpickled {
    std::unique_ptr<Arena> arena;
    const Value *root = nullptr;
};

// Interprets the pickle in data[0..size); throws GPT_ERR_FORMAT (GPT_ERR_UNSUPPORTED for a
// refused global or opcode) naming `source`, the byte offset and the construct.
Unpickled unpickle(const uint8_t *data, uint64_t size, const std::string &source, const PersistentLoad &persistent_load);

// Checks a tensor's (offset, shape, stride) against its storage's element count.
void check_tensor_extent(const TensorData &t, const std::string &what);

// Whether `name` ("torch.HalfStorage") is an allowed storage type, and which.
bool storage_type_of_global(const std::string &name, StorageType *out);

} // namespace gpt::convert::pickle
