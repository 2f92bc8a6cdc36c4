// metadata.cpp - typed access to weight file metadata.
#include "format/metadata.h"

#include "core/error.h"

namespace gpt::format {

const char *meta_type_name(MetaType t) {
    switch (t) {
    case MetaType::U32: return "u32";
    case MetaType::I32: return "i32";
    case MetaType::F32: return "f32";
    case MetaType::U64: return "u64";
    case MetaType::STR: return "str";
    case MetaType::I32_ARRAY: return "i32[]";
    case MetaType::F32_ARRAY: return "f32[]";
    case MetaType::STR_ARRAY: return "str[]";
    }
    return "?";
}

void Metadata::set(const std::string &key, MetaValue value) {
    auto [it, inserted] = index_.emplace(key, entries_.size());
    if (!inserted) {
        entries_[it->second].second = std::move(value);
        return;
    }
    try {
        entries_.emplace_back(key, std::move(value));
    } catch (...) {
        index_.erase(it);
        throw;
    }
}

const MetaValue *Metadata::find(const std::string &key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const MetaValue *Metadata::typed(const std::string &key, MetaType want) const {
    const MetaValue *v = find(key);
    if (v && v->type != want)
        fail(GPT_ERR_FORMAT, "metadata key '%s' has type %s, expected %s", key.c_str(), meta_type_name(v->type),
             meta_type_name(want));
    return v;
}

bool Metadata::get_u32(const std::string &key, uint32_t *out) const {
    const MetaValue *v = typed(key, MetaType::U32);
    if (v) *out = (uint32_t)v->u;
    return v != nullptr;
}
bool Metadata::get_i32(const std::string &key, int32_t *out) const {
    const MetaValue *v = typed(key, MetaType::I32);
    if (v) *out = (int32_t)v->i;
    return v != nullptr;
}
bool Metadata::get_f32(const std::string &key, float *out) const {
    const MetaValue *v = typed(key, MetaType::F32);
    if (v) *out = v->f;
    return v != nullptr;
}
bool Metadata::get_str(const std::string &key, std::string *out) const {
    const MetaValue *v = typed(key, MetaType::STR);
    if (v) *out = v->str;
    return v != nullptr;
}
const std::vector<std::string> *Metadata::get_strs(const std::string &key) const {
    const MetaValue *v = typed(key, MetaType::STR_ARRAY);
    return v ? &v->strs : nullptr;
}
const std::vector<float> *Metadata::get_f32s(const std::string &key) const {
    const MetaValue *v = typed(key, MetaType::F32_ARRAY);
    return v ? &v->f32s : nullptr;
}
const std::vector<int32_t> *Metadata::get_i32s(const std::string &key) const {
    const MetaValue *v = typed(key, MetaType::I32_ARRAY);
    return v ? &v->i32s : nullptr;
}

uint32_t Metadata::require_u32(const std::string &key) const {
    uint32_t v;
    if (!get_u32(key, &v)) fail(GPT_ERR_FORMAT, "metadata key '%s' (u32) is missing", key.c_str());
    return v;
}
float Metadata::require_f32(const std::string &key) const {
    float v;
    if (!get_f32(key, &v)) fail(GPT_ERR_FORMAT, "metadata key '%s' (f32) is missing", key.c_str());
    return v;
}
std::string Metadata::require_str(const std::string &key) const {
    std::string v;
    if (!get_str(key, &v)) fail(GPT_ERR_FORMAT, "metadata key '%s' (str) is missing", key.c_str());
    return v;
}

} // namespace gpt::format
