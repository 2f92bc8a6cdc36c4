// writer.cpp - weight file v1 encoding; files are published through core/staged_file.
#include "format/writer.h"

#include "core/quant.h"

#include "core/error.h"
#include "core/staged_file.h"
#include "format/bytes.h"
#include "format/crc32.h"
#include "format/reader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace gpt::format {

namespace {

uint64_t align_up(uint64_t x) { return (x + kAlignment - 1) / kAlignment * kAlignment; }

void put_u16(std::vector<uint8_t> &b, uint16_t v) { b.push_back((uint8_t)v); b.push_back((uint8_t)(v >> 8)); }
void put_u32(std::vector<uint8_t> &b, uint32_t v) { for (int i = 0; i < 4; i++) b.push_back((uint8_t)(v >> (8 * i))); }
void put_u64(std::vector<uint8_t> &b, uint64_t v) { for (int i = 0; i < 8; i++) b.push_back((uint8_t)(v >> (8 * i))); }
void put_f32(std::vector<uint8_t> &b, float f) { uint32_t u; std::memcpy(&u, &f, 4); put_u32(b, u); }
void put_str(std::vector<uint8_t> &b, const std::string &s) {
    put_u32(b, (uint32_t)s.size());
    b.insert(b.end(), s.begin(), s.end());
}

std::vector<uint8_t> encode_metadata(const Metadata &m) {
    std::vector<uint8_t> b;
    put_u32(b, (uint32_t)m.entries().size());
    for (const auto &[key, v] : m.entries()) {
        if (key.empty() || key.size() > kMaxKeyLen) fail(GPT_ERR_INVALID_ARG, "metadata key '%s' has a bad length", key.c_str());
        put_u16(b, (uint16_t)key.size());
        b.insert(b.end(), key.begin(), key.end());
        b.push_back((uint8_t)v.type);
        switch (v.type) {
        case MetaType::U32: put_u32(b, (uint32_t)v.u); break;
        case MetaType::I32: put_u32(b, (uint32_t)(int32_t)v.i); break;
        case MetaType::F32: put_f32(b, v.f); break;
        case MetaType::U64: put_u64(b, v.u); break;
        case MetaType::STR: put_str(b, v.str); break;
        case MetaType::I32_ARRAY:
            put_u32(b, (uint32_t)v.i32s.size());
            for (int32_t x : v.i32s) put_u32(b, (uint32_t)x);
            break;
        case MetaType::F32_ARRAY:
            put_u32(b, (uint32_t)v.f32s.size());
            for (float x : v.f32s) put_f32(b, x);
            break;
        case MetaType::STR_ARRAY:
            put_u32(b, (uint32_t)v.strs.size());
            for (const auto &s : v.strs) put_str(b, s);
            break;
        }
    }
    return b;
}

// Writes all of [p, p+n) at offset off, retrying short writes.
void pwrite_all(int fd, const uint8_t *p, uint64_t n, uint64_t off, const std::string &path) {
    while (n > 0) {
        ssize_t w = ::pwrite(fd, p, (size_t)std::min<uint64_t>(n, 1u << 30), (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) fail(GPT_ERR_IO, "%s: write failed: %s", path.c_str(), w < 0 ? strerror(errno) : "no progress");
        p += w;
        n -= (uint64_t)w;
        off += (uint64_t)w;
    }
}

} // namespace

void Writer::add_tensor(const std::string &name, DType dtype, const std::vector<uint64_t> &dims, Fill fill) {
    if (name.empty() || name.size() > kMaxNameLen) fail(GPT_ERR_INVALID_ARG, "tensor name '%s' has a bad length", name.c_str());
    if (dims.empty() || dims.size() > kMaxDims) fail(GPT_ERR_INVALID_ARG, "tensor '%s': %zu dimensions", name.c_str(), dims.size());
    for (const auto &t : tensors_)
        if (t.name == name) fail(GPT_ERR_INVALID_ARG, "tensor '%s' added twice", name.c_str());
    if (is_quantized(dtype)) fail(GPT_ERR_INVALID_ARG, "tensor '%s': %s tensors are added with add_quantized", name.c_str(), dtype_name(dtype));
    uint64_t n = dtype_bytes(dtype);
    for (uint64_t d : dims)
        if (d == 0 || mul_overflows(n, d, &n)) fail(GPT_ERR_INVALID_ARG, "tensor '%s': invalid shape", name.c_str());
    tensors_.push_back(Pending{name, dtype, dims, n, std::move(fill), 0});
}

void Writer::add_quantized(const std::string &name, DType dtype, const std::vector<uint64_t> &dims, uint32_t group, Fill fill) {
    if (name.empty() || name.size() > kMaxNameLen) fail(GPT_ERR_INVALID_ARG, "tensor name '%s' has a bad length", name.c_str());
    for (const auto &t : tensors_)
        if (t.name == name) fail(GPT_ERR_INVALID_ARG, "tensor '%s' added twice", name.c_str());
    uint64_t numel = 0, n = 0;
    if (!is_quantized(dtype) || dims.size() != 2 || dims[0] == 0 || !is_valid_group(group) ||
        mul_overflows(dims[0], dims[1], &numel) || !tensor_bytes(dtype, numel, dims[1], group, &n))
        fail(GPT_ERR_INVALID_ARG, "tensor '%s': not a quantized matrix with group 32, 64 or 128 dividing its columns",
             name.c_str());
    tensors_.push_back(Pending{name, dtype, dims, n, std::move(fill), group});
}

void Writer::add_tensor(const std::string &name, DType dtype, const std::vector<uint64_t> &dims, const void *data,
                        uint64_t nbytes) {
    auto copy = std::make_shared<std::vector<uint8_t>>((const uint8_t *)data, (const uint8_t *)data + nbytes);
    add_tensor(name, dtype, dims, [copy, name](uint8_t *dst, uint64_t n) {
        if (n != copy->size()) fail(GPT_ERR_INVALID_ARG, "tensor '%s': %zu bytes given, shape needs %llu", name.c_str(), copy->size(), (unsigned long long)n);
        std::memcpy(dst, copy->data(), n);
    });
}

Writer::Layout Writer::layout() const {
    Layout l;
    l.meta = encode_metadata(meta_);
    l.meta_off = kHeaderSize;
    l.table_off = l.meta_off + l.meta.size();
    l.table_size = 0;
    for (const auto &t : tensors_) l.table_size += 2 + t.name.size() + 1 + 1 + 2 + 8 * t.dims.size() + 8 + 8 + 4;
    l.data_off = align_up(l.table_off + l.table_size);
    uint64_t rel = 0;
    for (const auto &t : tensors_) {
        l.rel_offsets.push_back(rel);
        rel = align_up(rel + t.nbytes);
    }
    // The file ends right after the last tensor's bytes (no trailing padding).
    l.file_size = l.data_off + (tensors_.empty() ? 0 : l.rel_offsets.back() + tensors_.back().nbytes);
    return l;
}

uint64_t Writer::file_size() const { return layout().file_size; }

std::vector<uint8_t> Writer::encode_table(const Layout &l, const std::vector<uint32_t> &crcs) const {
    std::vector<uint8_t> b;
    for (size_t i = 0; i < tensors_.size(); i++) {
        const Pending &t = tensors_[i];
        put_u16(b, (uint16_t)t.name.size());
        b.insert(b.end(), t.name.begin(), t.name.end());
        b.push_back((uint8_t)t.dtype);
        b.push_back((uint8_t)t.dims.size());
        put_u16(b, (uint16_t)t.group); // reserved (0) for float tensors
        for (uint64_t d : t.dims) put_u64(b, d);
        put_u64(b, l.rel_offsets[i]);
        put_u64(b, t.nbytes);
        put_u32(b, crcs[i]);
    }
    return b;
}

std::vector<uint8_t> Writer::encode_header(const Layout &l, uint32_t meta_crc, uint32_t table_crc) const {
    std::vector<uint8_t> h(kHeaderSize, 0);
    std::memcpy(h.data() + hdr::magic, kMagic, sizeof kMagic);
    store_u32(h.data() + hdr::version, kVersion);
    store_u32(h.data() + hdr::header_size, kHeaderSize);
    store_u64(h.data() + hdr::file_size, l.file_size);
    store_u64(h.data() + hdr::meta_offset, l.meta_off);
    store_u64(h.data() + hdr::meta_size, l.meta.size());
    store_u64(h.data() + hdr::table_offset, l.table_off);
    store_u64(h.data() + hdr::table_size, l.table_size);
    store_u64(h.data() + hdr::data_offset, l.data_off);
    store_u32(h.data() + hdr::n_tensors, (uint32_t)tensors_.size());
    store_u32(h.data() + hdr::alignment, kAlignment);
    store_u32(h.data() + hdr::meta_crc, meta_crc);
    store_u32(h.data() + hdr::table_crc, table_crc);
    store_u32(h.data() + hdr::header_crc, crc32_of(h.data(), hdr::header_crc));
    return h;
}

std::vector<uint8_t> Writer::write_memory(bool tensor_checksums) const {
    std::vector<uint8_t> out(file_size());
    write_memory_into(out.data(), out.size(), tensor_checksums);
    return out;
}

void Writer::write_memory_into(uint8_t *out, uint64_t size, bool tensor_checksums) const {
    Layout l = layout();
    if (size != l.file_size)
        fail(GPT_ERR_INTERNAL, "write_memory_into: a %llu-byte buffer for a %llu-byte file", (unsigned long long)size,
             (unsigned long long)l.file_size);
    // Zero what no tensor covers (header gaps, alignment padding), in file order.
    std::vector<std::pair<uint64_t, uint64_t>> spans; // [begin, end) of each tensor
    for (size_t i = 0; i < tensors_.size(); i++)
        spans.push_back({l.data_off + l.rel_offsets[i], l.data_off + l.rel_offsets[i] + tensors_[i].nbytes});
    std::sort(spans.begin(), spans.end());
    uint64_t at = 0;
    for (const auto &[b, e] : spans) {
        if (b > at) std::memset(out + at, 0, b - at);
        at = std::max(at, e);
    }
    if (l.file_size > at) std::memset(out + at, 0, l.file_size - at);
    std::vector<uint32_t> crcs;
    for (size_t i = 0; i < tensors_.size(); i++) {
        uint8_t *dst = out + l.data_off + l.rel_offsets[i];
        tensors_[i].fill(dst, tensors_[i].nbytes);
        crcs.push_back(tensor_checksums ? crc32_of(dst, tensors_[i].nbytes) : 0);
    }
    std::vector<uint8_t> table = encode_table(l, crcs);
    std::vector<uint8_t> h = encode_header(l, crc32_of(l.meta.data(), l.meta.size()), crc32_of(table.data(), table.size()));
    std::memcpy(out, h.data(), h.size());
    std::memcpy(out + l.meta_off, l.meta.data(), l.meta.size());
    if (!table.empty()) std::memcpy(out + l.table_off, table.data(), table.size()); // no tensors: data() may be null
}

void Writer::write_to(int fd, const std::string &shown, const Progress &progress) const {
    Layout l = layout();
    // Data first (computing crcs), then table and header.
    uint64_t total = 0, done = 0;
    for (const auto &t : tensors_) total += t.nbytes;
    std::vector<uint32_t> crcs;
    std::vector<uint8_t> buf;
    for (size_t i = 0; i < tensors_.size(); i++) {
        const Pending &t = tensors_[i];
        buf.assign((size_t)t.nbytes, 0);
        t.fill(buf.data(), t.nbytes);
        crcs.push_back(crc32_of(buf.data(), t.nbytes));
        pwrite_all(fd, buf.data(), t.nbytes, l.data_off + l.rel_offsets[i], shown);
        done += t.nbytes;
        if (progress) progress(i + 1, tensors_.size(), done, total);
    }
    buf.clear();
    buf.shrink_to_fit();
    std::vector<uint8_t> table = encode_table(l, crcs);
    std::vector<uint8_t> h = encode_header(l, crc32_of(l.meta.data(), l.meta.size()), crc32_of(table.data(), table.size()));
    // Zero the gap between table and data explicitly (pwrite past holes leaves zeros too).
    std::vector<uint8_t> gap(l.data_off - (l.table_off + l.table_size), 0);
    pwrite_all(fd, h.data(), h.size(), 0, shown);
    pwrite_all(fd, l.meta.data(), l.meta.size(), l.meta_off, shown);
    pwrite_all(fd, table.data(), table.size(), l.table_off, shown);
    if (!gap.empty()) pwrite_all(fd, gap.data(), gap.size(), l.table_off + l.table_size, shown);
    if (ftruncate(fd, (off_t)l.file_size) != 0) fail(GPT_ERR_IO, "%s: cannot size file: %s", shown.c_str(), strerror(errno));
}

void Writer::write_file(const std::string &path, const FileOptions &opt) const {
    if (!opt.overwrite) {
        struct stat st;
        if (::lstat(path.c_str(), &st) == 0) fail(GPT_ERR_IO, "%s: already exists (not overwritten)", path.c_str());
    }
    StagedFile out(path);
    write_to(out.fd(), path, opt.progress);
    out.commit(opt.overwrite);
}

} // namespace gpt::format
