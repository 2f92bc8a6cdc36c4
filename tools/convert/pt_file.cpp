// pt_file.cpp - torch.save files (see pt_file.h).
#include "convert/pt_file.h"

#include "core/error.h"

#include <cstring>
#include <map>

namespace gpt::convert {

using pickle::Kind;
using pickle::Value;

bool looks_like_pt(const uint8_t *p, uint64_t size) {
    return (size >= 4 && !std::memcmp(p, "PK\x03\x04", 4)) || (size >= 8 && !std::memcmp(p, "PYTORCH1", 8)) ||
           (size >= 2 && p[0] == 0x80 && p[1] == 0x02);
}

PtFile parse_pt(const uint8_t *data, uint64_t size, const std::string &source) {
    const char *src = source.c_str();
    if (size >= 8 && !std::memcmp(data, "PYTORCH1", 8))
        fail(GPT_ERR_UNSUPPORTED, "%s: torch's early PYTORCH1 preview format (which torch itself no longer reads)", src);
    if (size >= 2 && data[0] == 0x80 && data[1] == 0x02)
        fail(GPT_ERR_UNSUPPORTED, "%s: the legacy PyTorch format (torch < 1.6 or _use_new_zipfile_serialization=False) is not "
                                  "read; load it in Python and torch.save it again with a current torch", src);
    if (size < 4 || std::memcmp(data, "PK\x03\x04", 4) != 0) fail(GPT_ERR_FORMAT, "%s: not a PyTorch checkpoint (no zip signature)", src);
    PtFile f;
    f.zip = parse_pt_zip(data, size, source);
    if (const ZipEntry *bo = f.zip.find("byteorder")) {
        const std::string order((const char *)bo->data, (size_t)std::min<uint64_t>(bo->size, 16));
        if (order != "little") fail(GPT_ERR_UNSUPPORTED, "%s: byteorder is '%s'; only little-endian checkpoints are read", src, order.c_str());
    }
    const ZipEntry *pkl = f.zip.find("data.pkl");
    if (!pkl) fail(GPT_ERR_FORMAT, "%s: the archive '%s/' holds no data.pkl (not a torch.save file)", src, f.zip.folder.c_str());
    // Storages by key: each record is bound once; a key seen again must agree.
    std::map<std::string, Value *> storages;
    const PtZip &zip = f.zip;
    pickle::PersistentLoad load = [&](pickle::Arena &arena, const Value &pid) -> Value * {
        if (!pid.is(Kind::TUPLE) || pid.items.size() != 5 || !pid.items[0]->is(Kind::STR) || pid.items[0]->s != "storage")
            fail(GPT_ERR_FORMAT, "%s: a persistent id that is not ('storage', type, key, location, numel)", src);
        const Value *type = pid.items[1], *key = pid.items[2], *loc = pid.items[3], *numel = pid.items[4];
        pickle::StorageType st;
        if (!type->is(Kind::GLOBAL) || !pickle::storage_type_of_global(type->s, &st))
            fail(GPT_ERR_FORMAT, "%s: a storage whose type is not a torch storage class", src);
        if (!key->is(Kind::STR) || !loc->is(Kind::STR) || !numel->is(Kind::INT) || numel->i < 0 || key->s.size() > 256)
            fail(GPT_ERR_FORMAT, "%s: a storage id with a malformed key, location or size", src);
        auto it = storages.find(key->s);
        if (it != storages.end()) {
            if (it->second->storage->type != st || it->second->storage->numel != (uint64_t)numel->i)
                fail(GPT_ERR_FORMAT, "%s: storage '%s' is declared twice with different types or sizes", src, key->s.c_str());
            return it->second;
        }
        const ZipEntry *rec = zip.find("data/" + key->s);
        if (!rec) fail(GPT_ERR_FORMAT, "%s: storage '%s' has no record data/%s in the archive", src, key->s.c_str(), key->s.c_str());
        uint64_t bytes;
        if (mul_overflows((uint64_t)numel->i, pickle::storage_type_bytes(st), &bytes) || bytes > rec->size)
            fail(GPT_ERR_FORMAT, "%s: storage '%s' claims %lld %s elements but its record holds %llu bytes", src, key->s.c_str(),
                 (long long)numel->i, pickle::storage_type_name(st), (unsigned long long)rec->size);
        Value *v = arena.make(Kind::STORAGE);
        v->storage = std::make_unique<pickle::StorageData>();
        v->storage->type = st;
        v->storage->key = key->s;
        v->storage->location = loc->s;
        v->storage->numel = (uint64_t)numel->i;
        v->storage->data = rec->data;
        storages.emplace(key->s, v);
        return v;
    };
    f.pickle = pickle::unpickle(pkl->data, pkl->size, source + ": data.pkl", load);
    return f;
}

PtFile open_pt(const std::string &path) {
    std::shared_ptr<MappedFile> m = MappedFile::open(path);
    PtFile f = parse_pt(m->data(), m->size(), path);
    f.file = std::move(m);
    return f;
}

} // namespace gpt::convert
