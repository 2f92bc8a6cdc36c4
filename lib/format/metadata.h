// metadata.h - the typed key/value section of a weight file, in memory.
// Keys keep their file order; lookups by name (hashed: O(1), so a file of many keys loads
// in linear time); typed getters fail with GPT_ERR_FORMAT
// naming the key when the stored type is not the one asked for.
#pragma once

#include "format/spec.h"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace gpt::format {

struct MetaValue {
    MetaType type = MetaType::U32;
    uint64_t u = 0;                 // U32, U64
    int64_t i = 0;                  // I32
    float f = 0;                    // F32
    std::string str;                // STR
    std::vector<int32_t> i32s;      // I32_ARRAY
    std::vector<float> f32s;        // F32_ARRAY
    std::vector<std::string> strs;  // STR_ARRAY

    static MetaValue of_u32(uint32_t v) { MetaValue m; m.type = MetaType::U32; m.u = v; return m; }
    static MetaValue of_u64(uint64_t v) { MetaValue m; m.type = MetaType::U64; m.u = v; return m; }
    static MetaValue of_i32(int32_t v) { MetaValue m; m.type = MetaType::I32; m.i = v; return m; }
    static MetaValue of_f32(float v) { MetaValue m; m.type = MetaType::F32; m.f = v; return m; }
    static MetaValue of_str(std::string v) { MetaValue m; m.type = MetaType::STR; m.str = std::move(v); return m; }
    static MetaValue of_i32s(std::vector<int32_t> v) { MetaValue m; m.type = MetaType::I32_ARRAY; m.i32s = std::move(v); return m; }
    static MetaValue of_f32s(std::vector<float> v) { MetaValue m; m.type = MetaType::F32_ARRAY; m.f32s = std::move(v); return m; }
    static MetaValue of_strs(std::vector<std::string> v) { MetaValue m; m.type = MetaType::STR_ARRAY; m.strs = std::move(v); return m; }
};

const char *meta_type_name(MetaType t);

class Metadata {
public:
    // Adds or replaces a key.
    void set(const std::string &key, MetaValue value);
    const MetaValue *find(const std::string &key) const;
    bool has(const std::string &key) const { return find(key) != nullptr; }
    const std::vector<std::pair<std::string, MetaValue>> &entries() const { return entries_; }

    // Each returns false when the key is absent and throws when it has another type.
    bool get_u32(const std::string &key, uint32_t *out) const;
    bool get_i32(const std::string &key, int32_t *out) const;
    bool get_f32(const std::string &key, float *out) const;
    bool get_str(const std::string &key, std::string *out) const;
    const std::vector<std::string> *get_strs(const std::string &key) const;
    const std::vector<float> *get_f32s(const std::string &key) const;
    const std::vector<int32_t> *get_i32s(const std::string &key) const;

    // Like the getters, but a missing key is an error too.
    uint32_t require_u32(const std::string &key) const;
    float require_f32(const std::string &key) const;
    std::string require_str(const std::string &key) const;

private:
    const MetaValue *typed(const std::string &key, MetaType want) const;
    std::vector<std::pair<std::string, MetaValue>> entries_;
    std::unordered_map<std::string, size_t> index_; // key -> position in entries_
};

} // namespace gpt::format
