// safetensors.cpp - header parsing and validation, file mapping, sharded directories.
#include "convert/safetensors.h"

#include "convert/fs_util.h"
#include "convert/json_excerpt.h"
#include "core/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <unordered_set>

namespace gpt::convert {

using nlohmann::json;

namespace {

// The reference implementation's limit; a larger header is a corrupt length field.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr size_t kMaxDims = 8;

struct DTypeInfo {
    StDType t;
    const char *name;
    size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {StDType::F64, "F64", 8},  {StDType::F32, "F32", 4},   {StDType::F16, "F16", 2},         {StDType::BF16, "BF16", 2},
    {StDType::I64, "I64", 8},  {StDType::I32, "I32", 4},   {StDType::I16, "I16", 2},         {StDType::I8, "I8", 1},
    {StDType::U64, "U64", 8},  {StDType::U32, "U32", 4},   {StDType::U16, "U16", 2},         {StDType::U8, "U8", 1},
    {StDType::BOOL, "BOOL", 1}, {StDType::F8_E4M3, "F8_E4M3", 1}, {StDType::F8_E5M2, "F8_E5M2", 1},
};

bool as_u64(const json &j, uint64_t *out) {
    if (!j.is_number_unsigned()) return false;
    *out = j.get<uint64_t>();
    return true;
}

} // namespace

const char *st_dtype_name(StDType t) {
    for (const auto &d : kDTypes)
        if (d.t == t) return d.name;
    return "?";
}

size_t st_dtype_size(StDType t) {
    for (const auto &d : kDTypes)
        if (d.t == t) return d.size;
    return 0;
}

bool st_dtype_from_name(const std::string &name, StDType *out) {
    for (const auto &d : kDTypes)
        if (name == d.name) {
            *out = d.t;
            return true;
        }
    return false;
}

uint64_t StTensor::numel() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d; // validated not to overflow when parsed
    return n;
}

std::string StTensor::shape_str() const {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

StHeader parse_safetensors_header(const uint8_t *bytes, size_t json_len, uint64_t data_size, const std::string &source) {
    const char *src = source.c_str();
    json root;
    try {
        root = json::parse(bytes, bytes + json_len);
    } catch (const json::exception &e) {
        fail(GPT_ERR_FORMAT, "%s: malformed JSON header: %s", src, e.what());
    }
    if (!root.is_object()) fail(GPT_ERR_FORMAT, "%s: the JSON header is not an object", src);

    StHeader h;
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string &name = it.key();
        const json &v = it.value();
        const char *n = name.c_str();
        if (name == "__metadata__") {
            if (!v.is_object()) fail(GPT_ERR_FORMAT, "%s: __metadata__ is not an object", src);
            for (auto m = v.begin(); m != v.end(); ++m)
                if (m.value().is_string()) h.metadata[m.key()] = m.value().get<std::string>();
            continue;
        }
        if (name.empty()) fail(GPT_ERR_FORMAT, "%s: a tensor has an empty name", src);
        if (!v.is_object()) fail(GPT_ERR_FORMAT, "%s: tensor '%s': entry is not an object", src, n);
        StTensor t;
        t.name = name;
        t.file = source;

        auto dt = v.find("dtype");
        if (dt == v.end() || !dt->is_string()) fail(GPT_ERR_FORMAT, "%s: tensor '%s': no \"dtype\" string", src, n);
        const std::string dname = dt->get<std::string>();
        if (!st_dtype_from_name(dname, &t.dtype))
            fail(GPT_ERR_UNSUPPORTED, "%s: tensor '%s': unknown dtype '%s'", src, n, dname.c_str());

        auto sh = v.find("shape");
        if (sh == v.end() || !sh->is_array()) fail(GPT_ERR_FORMAT, "%s: tensor '%s': no \"shape\" array", src, n);
        if (sh->size() > kMaxDims) fail(GPT_ERR_FORMAT, "%s: tensor '%s': %zu dimensions", src, n, sh->size());
        uint64_t nbytes = st_dtype_size(t.dtype);
        for (const json &d : *sh) {
            uint64_t x;
            if (!as_u64(d, &x)) fail(GPT_ERR_FORMAT, "%s: tensor '%s': shape %s is not a list of non-negative integers", src, n, json_excerpt(*sh).c_str());
            if (mul_overflows(nbytes, x, &nbytes)) fail(GPT_ERR_FORMAT, "%s: tensor '%s': shape %s overflows", src, n, json_excerpt(*sh).c_str());
            t.shape.push_back(x);
        }

        auto off = v.find("data_offsets");
        if (off == v.end() || !off->is_array() || off->size() != 2 || !as_u64((*off)[0], &t.begin) || !as_u64((*off)[1], &t.end))
            fail(GPT_ERR_FORMAT, "%s: tensor '%s': \"data_offsets\" must be [begin, end] non-negative integers", src, n);
        if (t.begin > t.end)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", src, n,
                 (unsigned long long)t.begin, (unsigned long long)t.end);
        if (t.end > data_size)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the data (%llu bytes; truncated file?)",
                 src, n, (unsigned long long)t.begin, (unsigned long long)t.end, (unsigned long long)data_size);
        if (t.end - t.begin != nbytes)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes but %s %s needs %llu", src, n,
                 (unsigned long long)t.begin, (unsigned long long)t.end, (unsigned long long)(t.end - t.begin),
                 dname.c_str(), t.shape_str().c_str(), (unsigned long long)nbytes);
        h.tensors.push_back(std::move(t));
    }

    // No two tensors may share bytes.
    std::vector<const StTensor *> order;
    for (const auto &t : h.tensors)
        if (t.end > t.begin) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const StTensor *a, const StTensor *b) { return a->begin < b->begin; });
    for (size_t i = 1; i < order.size(); i++)
        if (order[i]->begin < order[i - 1]->end)
            fail(GPT_ERR_FORMAT, "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap", src, order[i - 1]->name.c_str(),
                 (unsigned long long)order[i - 1]->begin, (unsigned long long)order[i - 1]->end, order[i]->name.c_str(),
                 (unsigned long long)order[i]->begin, (unsigned long long)order[i]->end);
    return h;
}

StHeader parse_safetensors(const uint8_t *file, uint64_t file_size, const std::string &source) {
    const char *src = source.c_str();
    if (file_size < 8) fail(GPT_ERR_FORMAT, "%s: %llu bytes is too short for a safetensors file (truncated?)", src, (unsigned long long)file_size);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++) n |= (uint64_t)file[i] << (8 * i);
    if (n > file_size - 8)
        fail(GPT_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%llu bytes; truncated or not safetensors)", src,
             (unsigned long long)n, (unsigned long long)file_size);
    if (n > kMaxHeaderBytes) fail(GPT_ERR_FORMAT, "%s: header length %llu is implausibly large", src, (unsigned long long)n);
    if (n < 2) fail(GPT_ERR_FORMAT, "%s: header length %llu is too short for a JSON object", src, (unsigned long long)n);
    StHeader h = parse_safetensors_header(file + 8, (size_t)n, file_size - 8 - n, source);
    for (auto &t : h.tensors) t.data = file + 8 + n + t.begin;
    return h;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string &path) {
    std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
    f->file_ = MappedFile::open(path);
    f->header_ = parse_safetensors(f->file_->data(), f->file_->size(), path);
    for (size_t i = 0; i < f->header_.tensors.size(); i++) f->index_[f->header_.tensors[i].name] = i;
    return f;
}

const StTensor *SafetensorsFile::find(const std::string &name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

std::unique_ptr<SafetensorsSet> SafetensorsSet::open_dir(const std::string &dir) {
    auto set = std::make_unique<SafetensorsSet>();
    const std::string index_path = join_path(dir, "model.safetensors.index.json");
    const std::string single = join_path(dir, "model.safetensors");
    if (is_regular_file(index_path)) {
        const std::string text = read_text_file(index_path);
        json idx;
        try {
            idx = json::parse(text);
        } catch (const json::exception &e) {
            fail(GPT_ERR_FORMAT, "%s: malformed JSON: %s", index_path.c_str(), e.what());
        }
        if (!idx.is_object() || !idx.contains("weight_map") || !idx["weight_map"].is_object())
            fail(GPT_ERR_FORMAT, "%s: no \"weight_map\" object", index_path.c_str());
        const json &wm = idx["weight_map"];
        std::map<std::string, std::string> where; // tensor -> shard file name
        std::vector<std::string> shards;          // in first-mention order
        std::unordered_set<std::string> seen;     // the same, to test membership in O(1)
        for (auto it = wm.begin(); it != wm.end(); ++it) {
            if (!it.value().is_string())
                fail(GPT_ERR_FORMAT, "%s: weight_map entry '%s' is not a file name", index_path.c_str(), it.key().c_str());
            const std::string shard = it.value().get<std::string>();
            if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..")
                fail(GPT_ERR_FORMAT, "%s: weight_map entry '%s' names '%s', not a file in the directory", index_path.c_str(),
                     it.key().c_str(), shard.c_str());
            where[it.key()] = shard;
            if (seen.insert(shard).second) shards.push_back(shard);
        }
        if (shards.empty()) fail(GPT_ERR_FORMAT, "%s: weight_map is empty", index_path.c_str());
        for (const auto &s : shards) {
            const std::string p = join_path(dir, s);
            if (!path_exists(p))
                fail(GPT_ERR_IO, "%s: shard '%s' named by %s is missing", p.c_str(), s.c_str(), base_name(index_path).c_str());
            set->files_.push_back(SafetensorsFile::open(p));
        }
        for (const auto &f : set->files_)
            for (const auto &t : f->header().tensors) {
                auto w = where.find(t.name);
                if (w == where.end()) continue; // not in the index: the index is authoritative
                if (w->second != base_name(f->path())) continue;
                set->by_name_[t.name] = &t;
            }
        for (const auto &[name, shard] : where)
            if (!set->by_name_.count(name))
                fail(GPT_ERR_FORMAT, "%s: tensor '%s' is listed in %s but the shard does not contain it", join_path(dir, shard).c_str(),
                     name.c_str(), base_name(index_path).c_str());
        set->description_ = base_name(index_path) + " (" + std::to_string(shards.size()) + " shard" + (shards.size() == 1 ? "" : "s") + ")";
        return set;
    }
    if (is_regular_file(single)) {
        set->files_.push_back(SafetensorsFile::open(single));
        for (const auto &t : set->files_[0]->header().tensors) set->by_name_[t.name] = &t;
        set->description_ = "model.safetensors";
        return set;
    }
    if (is_regular_file(join_path(dir, "pytorch_model.bin")) || is_regular_file(join_path(dir, "pytorch_model.bin.index.json")))
        fail(GPT_ERR_UNSUPPORTED, "%s: only pytorch_model.bin found; re-save the model as safetensors (save_pretrained(safe_serialization=True))",
             dir.c_str());
    fail(GPT_ERR_IO, "%s: no model.safetensors or model.safetensors.index.json", dir.c_str());
}

const StTensor *SafetensorsSet::find(const std::string &name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> SafetensorsSet::names() const {
    std::vector<std::string> out;
    for (const auto &kv : by_name_) out.push_back(kv.first);
    return out;
}

} // namespace gpt::convert
