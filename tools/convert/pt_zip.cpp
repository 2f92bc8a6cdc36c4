// pt_zip.cpp - the stored-only zip reader of PyTorch checkpoints (see pt_zip.h).
#include "convert/pt_zip.h"

#include "core/error.h"
#include "format/bytes.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace gpt::convert {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kEnd64LocatorSig = 0x07064b50;
constexpr uint64_t kMaxEntries = 1u << 20; // a checkpoint of a million tensors is already absurd
constexpr uint16_t kZip64Tag = 0x0001;

uint16_t u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

struct Raw {
    std::string name;
    uint64_t local = 0, size = 0, csize = 0, begin = 0;
};

// The ZIP64 extended information extra field replaces the 0xFFFFFFFF fields, in order.
void apply_zip64(const uint8_t *extra, uint16_t len, Raw &r, bool usize, bool csize, bool off, const char *src) {
    uint16_t pos = 0;
    while (pos + 4 <= len) {
        const uint16_t tag = u16(extra + pos), n = u16(extra + pos + 2);
        if ((uint32_t)pos + 4 + n > len) break;
        if (tag == kZip64Tag) {
            format::Cursor c(extra + pos + 4, n, "ZIP64 extra field", src);
            if (usize) r.size = c.u64();
            if (csize) r.csize = c.u64();
            if (off) r.local = c.u64();
            return;
        }
        pos = (uint16_t)(pos + 4 + n);
    }
    if (usize || csize || off) fail(GPT_ERR_FORMAT, "%s: zip entry '%s' needs a ZIP64 extra field and has none", src, r.name.c_str());
}

} // namespace

const ZipEntry *PtZip::find(const std::string &name) const {
    auto it = entries.find(name);
    return it == entries.end() ? nullptr : &it->second;
}

PtZip parse_pt_zip(const uint8_t *file, uint64_t size, const std::string &source) {
    const char *src = source.c_str();
    if (size < 22) fail(GPT_ERR_FORMAT, "%s: truncated: %llu bytes cannot hold a zip archive", src, (unsigned long long)size);
    // The end record: the last signature within its 22 bytes plus a comment of at most 64 KiB.
    uint64_t end = UINT64_MAX;
    const uint64_t lowest = size > 22 + 65535 ? size - 22 - 65535 : 0;
    for (uint64_t p = size - 22 + 1; p-- > lowest;)
        if (format::load_u32(file + p) == kEndSig && p + 22 + u16(file + p + 20) == size) {
            end = p;
            break;
        }
    if (end == UINT64_MAX) fail(GPT_ERR_FORMAT, "%s: no zip end-of-central-directory record (truncated or not a zip file)", src);
    uint64_t count = u16(file + end + 10), cd_size = format::load_u32(file + end + 12), cd_off = format::load_u32(file + end + 16);
    uint64_t cd_limit = end; // the central directory must end before this
    if (count == 0xFFFF || cd_size == 0xFFFFFFFF || cd_off == 0xFFFFFFFF) {
        if (end < 20 || format::load_u32(file + end - 20) != kEnd64LocatorSig)
            fail(GPT_ERR_FORMAT, "%s: the zip end record asks for ZIP64 but has no ZIP64 locator", src);
        const uint64_t e64 = format::load_u64(file + end - 20 + 8);
        if (e64 > end - 20 || end - 20 - e64 < 56 || format::load_u32(file + e64) != kEnd64Sig)
            fail(GPT_ERR_FORMAT, "%s: the ZIP64 end record is not where its locator says (%llu)", src, (unsigned long long)e64);
        count = format::load_u64(file + e64 + 32);
        cd_size = format::load_u64(file + e64 + 40);
        cd_off = format::load_u64(file + e64 + 48);
        cd_limit = e64;
    }
    if (count > kMaxEntries) fail(GPT_ERR_FORMAT, "%s: the zip archive claims %llu entries (at most %llu)", src, (unsigned long long)count, (unsigned long long)kMaxEntries);
    if (cd_off > cd_limit || cd_size > cd_limit - cd_off)
        fail(GPT_ERR_FORMAT, "%s: the zip central directory (offset %llu, %llu bytes) lies outside the file", src, (unsigned long long)cd_off, (unsigned long long)cd_size);

    std::vector<Raw> raw;
    raw.reserve((size_t)count);
    format::Cursor c(file + cd_off, cd_size, "zip central directory", source);
    for (uint64_t i = 0; i < count; i++) {
        if (c.u32() != kCentralSig) fail(GPT_ERR_FORMAT, "%s: zip central directory entry %llu has a bad signature", src, (unsigned long long)i);
        c.need(4); // versions
        const uint16_t flags = c.u16(), method = c.u16();
        c.need(8); // time, date, crc
        Raw r;
        r.csize = c.u32();
        r.size = c.u32();
        const uint16_t name_len = c.u16(), extra_len = c.u16(), comment_len = c.u16();
        c.need(8); // disk, attributes
        r.local = c.u32();
        r.name = c.str(name_len);
        const uint8_t *extra = c.need(extra_len);
        c.need(comment_len);
        apply_zip64(extra, extra_len, r, r.size == 0xFFFFFFFF, r.csize == 0xFFFFFFFF, r.local == 0xFFFFFFFF, src);
        if (flags & 0x1) fail(GPT_ERR_UNSUPPORTED, "%s: zip entry '%s' is encrypted", src, r.name.c_str());
        if (method != 0)
            fail(GPT_ERR_UNSUPPORTED, "%s: zip entry '%s' is compressed (method %u); torch.save stores entries uncompressed", src,
                 r.name.c_str(), method);
        if (r.csize != r.size)
            fail(GPT_ERR_FORMAT, "%s: zip entry '%s' is stored but its sizes differ (%llu and %llu)", src, r.name.c_str(),
                 (unsigned long long)r.csize, (unsigned long long)r.size);
        // The local header: 30 bytes, then its own name and extra field (torch pads with one).
        if (r.local > cd_off || cd_off - r.local < 30 || format::load_u32(file + r.local) != kLocalSig)
            fail(GPT_ERR_FORMAT, "%s: zip entry '%s': no local header at offset %llu", src, r.name.c_str(), (unsigned long long)r.local);
        r.begin = r.local + 30 + u16(file + r.local + 26) + u16(file + r.local + 28);
        if (r.begin > cd_off || r.size > cd_off - r.begin)
            fail(GPT_ERR_FORMAT, "%s: zip entry '%s' (%llu bytes at %llu) runs past the data area (%llu bytes)", src, r.name.c_str(),
                 (unsigned long long)r.size, (unsigned long long)r.begin, (unsigned long long)cd_off);
        raw.push_back(std::move(r));
    }
    if (raw.empty()) fail(GPT_ERR_FORMAT, "%s: the zip archive is empty", src);
    // No entry may overlap another's header or data: sorted by offset, each ends before the next begins.
    std::vector<const Raw *> order;
    for (const Raw &r : raw) order.push_back(&r);
    std::sort(order.begin(), order.end(), [](const Raw *a, const Raw *b) { return a->local < b->local; });
    for (size_t i = 1; i < order.size(); i++)
        if (order[i - 1]->begin + order[i - 1]->size > order[i]->local)
            fail(GPT_ERR_FORMAT, "%s: zip entries '%s' and '%s' overlap", src, order[i - 1]->name.c_str(), order[i]->name.c_str());

    PtZip z;
    const size_t slash = raw[0].name.find('/');
    if (slash == std::string::npos || slash == 0)
        fail(GPT_ERR_FORMAT, "%s: zip entry '%s' is not inside a top folder (not a torch.save archive)", src, raw[0].name.c_str());
    z.folder = raw[0].name.substr(0, slash);
    for (const Raw &r : raw) {
        if (r.name.compare(0, slash + 1, raw[0].name, 0, slash + 1) != 0)
            fail(GPT_ERR_FORMAT, "%s: zip entry '%s' is outside the archive's folder '%s'", src, r.name.c_str(), z.folder.c_str());
        const std::string rel = r.name.substr(slash + 1);
        if (!z.entries.emplace(rel, ZipEntry{file + r.begin, r.size}).second)
            fail(GPT_ERR_FORMAT, "%s: zip entry '%s' appears twice", src, r.name.c_str());
    }
    return z;
}

} // namespace gpt::convert
