// reader.cpp - weight file v1 parsing and validation (see docs/FORMAT.md).
#include "format/reader.h"

#include "core/error.h"
#include "core/memory.h"
#include "core/open_file.h"
#include "core/parallel.h"
#include "core/quant.h"
#include "format/bytes.h"
#include "format/crc32.h"
#include "format/tensor_check.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

namespace gpt::format {

namespace {

// [off, off + len) lies inside [lo, hi), without overflow.
bool range_inside(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi) {
    uint64_t end;
    return !add_overflows(off, len, &end) && off >= lo && end <= hi;
}

} // namespace

uint64_t TensorEntry::numel() const {
    uint64_t n = 1;
    for (uint32_t i = 0; i < ndim; i++) n *= dims[i];
    return n;
}

std::unique_ptr<WeightFile> WeightFile::open(const std::string &path, const ReadOptions &opt) {
    std::unique_ptr<WeightFile> wf(new WeightFile());
    wf->source_ = path;
    int fd = open_regular_file(path, &wf->size_);
    if (wf->size_ < kHeaderSize) {
        ::close(fd);
        fail(GPT_ERR_FORMAT, "%s: file is %llu bytes, shorter than the %u-byte header", path.c_str(),
             (unsigned long long)wf->size_, kHeaderSize);
    }
    if (opt.use_mmap) {
        void *m = mmap(nullptr, (size_t)wf->size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            wf->map_ = m;
            wf->base_ = static_cast<const uint8_t *>(m);
        }
    }
    if (!wf->base_) { // read() fallback: mmap disabled or unavailable (e.g. some FUSE mounts)
        try {
            wf->owned_ = static_cast<uint8_t *>(host_alloc((size_t)wf->size_, "weight file contents"));
        } catch (...) {
            ::close(fd);
            throw;
        }
        // Shares of 64 MiB read by up to 8 threads: the page cache copies and the buffer's
        // first-touch faults then run in parallel (a 2 GB file: ~3x faster than one read loop).
        constexpr uint64_t kShare = 64ull << 20;
        const uint64_t shares = (wf->size_ + kShare - 1) / kShare;
        std::atomic<uint64_t> failed_at{UINT64_MAX};
        std::atomic<int> failed_errno{0};
        parallel_for((size_t)shares, 8, [&](size_t sh) {
            if (failed_at.load() != UINT64_MAX) return; // one failed: the rest are not read
            const uint64_t end = std::min(wf->size_, (sh + 1) * kShare);
            for (uint64_t got = sh * kShare; got < end;) {
                ssize_t r = ::pread(fd, wf->owned_ + got, (size_t)(end - got), (off_t)got);
                if (r < 0 && errno == EINTR) continue;
                if (r <= 0) {
                    failed_errno = r < 0 ? errno : 0;
                    failed_at = got;
                    return;
                }
                got += (uint64_t)r;
            }
        });
        if (failed_at.load() != UINT64_MAX) {
            const int e = failed_errno.load();
            ::close(fd);
            fail(GPT_ERR_IO, "%s: read failed at byte %llu: %s", path.c_str(), (unsigned long long)failed_at.load(),
                 e ? strerror(e) : "unexpected end of file");
        }
        wf->base_ = wf->owned_;
    }
    ::close(fd);
    wf->parse(opt);
    return wf;
}

std::unique_ptr<WeightFile> WeightFile::from_memory(const void *data, size_t size, bool copy, const ReadOptions &opt) {
    if (!data) fail(GPT_ERR_INVALID_ARG, "weight file buffer is NULL");
    std::unique_ptr<WeightFile> wf(new WeightFile());
    wf->source_ = "<memory>";
    wf->size_ = size;
    if (size < kHeaderSize)
        fail(GPT_ERR_FORMAT, "<memory>: buffer is %zu bytes, shorter than the %u-byte header", size, kHeaderSize);
    if (copy || (reinterpret_cast<uintptr_t>(data) % 64) != 0) {
        wf->owned_ = static_cast<uint8_t *>(host_alloc(size, "weight file copy"));
        std::memcpy(wf->owned_, data, size);
        wf->base_ = wf->owned_;
    } else {
        wf->base_ = static_cast<const uint8_t *>(data);
    }
    wf->parse(opt);
    return wf;
}

WeightFile::~WeightFile() { release_data(); }

void WeightFile::release_data() {
    if (map_) munmap(map_, (size_t)size_);
    host_free(owned_);
    map_ = nullptr;
    owned_ = nullptr;
    base_ = nullptr;
}

const TensorEntry *WeightFile::find(const std::string &name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

void WeightFile::parse(const ReadOptions &opt) {
    const char *src = source_.c_str();
    const uint8_t *h = base_;
    if (std::memcmp(h + hdr::magic, kMagic, sizeof kMagic) != 0)
        fail(GPT_ERR_FORMAT, "%s: not a libgpt weight file (bad magic)", src);
    const uint32_t version = load_u32(h + hdr::version);
    if (version != kVersion)
        fail(GPT_ERR_UNSUPPORTED, "%s: weight file version %u; this library reads version %u", src, version, kVersion);
    if (load_u32(h + hdr::header_crc) != crc32_of(h, hdr::header_crc))
        fail(GPT_ERR_CHECKSUM, "%s: header checksum mismatch (the first %u bytes are damaged)", src, kHeaderSize);
    if (load_u32(h + hdr::header_size) != kHeaderSize)
        fail(GPT_ERR_FORMAT, "%s: header_size is %u, expected %u", src, load_u32(h + hdr::header_size), kHeaderSize);
    const uint64_t file_size = load_u64(h + hdr::file_size);
    if (file_size != size_)
        fail(GPT_ERR_FORMAT, "%s: header says the file is %llu bytes but it is %llu (truncated or padded)", src,
             (unsigned long long)file_size, (unsigned long long)size_);
    const uint32_t alignment = load_u32(h + hdr::alignment);
    if (alignment != kAlignment) fail(GPT_ERR_FORMAT, "%s: alignment is %u, expected %u", src, alignment, kAlignment);

    const uint64_t meta_off = load_u64(h + hdr::meta_offset), meta_size = load_u64(h + hdr::meta_size);
    const uint64_t table_off = load_u64(h + hdr::table_offset), table_size = load_u64(h + hdr::table_size);
    const uint64_t data_off = load_u64(h + hdr::data_offset);
    if (!range_inside(meta_off, meta_size, kHeaderSize, size_))
        fail(GPT_ERR_FORMAT, "%s: metadata section [%llu, +%llu) lies outside the file", src, (unsigned long long)meta_off,
             (unsigned long long)meta_size);
    if (!range_inside(table_off, table_size, meta_off + meta_size, size_))
        fail(GPT_ERR_FORMAT, "%s: tensor table [%llu, +%llu) lies outside the file or overlaps the metadata", src,
             (unsigned long long)table_off, (unsigned long long)table_size);
    if (data_off % kAlignment != 0 || data_off < table_off + table_size || data_off > size_)
        fail(GPT_ERR_FORMAT, "%s: data offset %llu is misaligned or overlaps the table", src, (unsigned long long)data_off);
    if (load_u32(h + hdr::meta_crc) != crc32_of(base_ + meta_off, meta_size))
        fail(GPT_ERR_CHECKSUM, "%s: metadata checksum mismatch", src);
    if (load_u32(h + hdr::table_crc) != crc32_of(base_ + table_off, table_size))
        fail(GPT_ERR_CHECKSUM, "%s: tensor table checksum mismatch", src);

    parse_metadata(base_ + meta_off, meta_size);
    parse_table(base_ + table_off, table_size, load_u32(h + hdr::n_tensors), data_off);
    if (opt.verify_checksums && !opt.defer_tensor_checks) {
        verify_checksums(opt.check_finite);
        checksums_verified_ = true;
    }
}

void WeightFile::parse_metadata(const uint8_t *p, uint64_t n) {
    Cursor c(p, n, "metadata", source_);
    const uint32_t count = c.u32();
    // Each entry takes at least 7 bytes; a larger count cannot be honest.
    if (count > c.remaining() / 7)
        fail(GPT_ERR_FORMAT, "%s: metadata claims %u entries in %llu bytes", source_.c_str(), count,
             (unsigned long long)n);
    for (uint32_t i = 0; i < count; i++) {
        const uint32_t key_len = c.u16();
        if (key_len == 0 || key_len > kMaxKeyLen)
            fail(GPT_ERR_FORMAT, "%s: metadata entry %u has a key length of %u", source_.c_str(), i, key_len);
        std::string key = c.str(key_len);
        if (meta_.has(key)) fail(GPT_ERR_FORMAT, "%s: metadata key '%s' appears twice", source_.c_str(), key.c_str());
        MetaValue v;
        v.type = static_cast<MetaType>(c.u8());
        // Array counts are checked against the bytes left before anything is reserved.
        auto check_count = [&](uint64_t count_, uint64_t min_each) {
            if (count_ > c.remaining() / min_each)
                fail(GPT_ERR_FORMAT, "%s: metadata key '%s' claims %llu elements, more than the section holds",
                     source_.c_str(), key.c_str(), (unsigned long long)count_);
        };
        switch (v.type) {
        case MetaType::U32: v.u = c.u32(); break;
        case MetaType::I32: v.i = (int32_t)c.u32(); break;
        case MetaType::F32: v.f = c.f32(); break;
        case MetaType::U64: v.u = c.u64(); break;
        case MetaType::STR: v.str = c.str(c.u32()); break;
        case MetaType::I32_ARRAY: {
            uint32_t k = c.u32();
            check_count(k, 4);
            v.i32s.resize(k);
            for (auto &x : v.i32s) x = (int32_t)c.u32();
            break;
        }
        case MetaType::F32_ARRAY: {
            uint32_t k = c.u32();
            check_count(k, 4);
            v.f32s.resize(k);
            for (auto &x : v.f32s) x = c.f32();
            break;
        }
        case MetaType::STR_ARRAY: {
            uint32_t k = c.u32();
            check_count(k, 4);
            v.strs.resize(k);
            for (auto &s : v.strs) s = c.str(c.u32());
            break;
        }
        default:
            fail(GPT_ERR_FORMAT, "%s: metadata key '%s' has unknown type %u", source_.c_str(), key.c_str(),
                 (unsigned)v.type);
        }
        meta_.set(key, std::move(v));
    }
    if (c.remaining() != 0)
        fail(GPT_ERR_FORMAT, "%s: %llu stray bytes after the metadata entries", source_.c_str(),
             (unsigned long long)c.remaining());
}

void WeightFile::parse_table(const uint8_t *p, uint64_t n, uint32_t count, uint64_t data_off) {
    Cursor c(p, n, "tensor table", source_);
    const char *src = source_.c_str();
    // An entry takes at least 35 bytes: name length 2, name 1, dtype 1, ndim 1, reserved 2,
    // one dimension 8, offset 8, nbytes 8, crc 4.
    if (count > n / 35) fail(GPT_ERR_FORMAT, "%s: table claims %u tensors in %llu bytes", src, count, (unsigned long long)n);
    tensors_.reserve(count);
    by_name_.clear();
    by_name_.reserve(count);
    for (uint32_t i = 0; i < count; i++) {
        TensorEntry t;
        const uint32_t name_len = c.u16();
        if (name_len == 0 || name_len > kMaxNameLen)
            fail(GPT_ERR_FORMAT, "%s: tensor %u has a name length of %u", src, i, name_len);
        t.name = c.str(name_len);
        const char *tn = t.name.c_str();
        if (!by_name_.emplace(t.name, tensors_.size()).second) fail(GPT_ERR_FORMAT, "%s: tensor '%s' appears twice", src, tn);
        const uint8_t dt = c.u8();
        if (!is_dtype(dt)) fail(GPT_ERR_FORMAT, "%s: tensor '%s' has unknown dtype %u", src, tn, dt);
        t.dtype = static_cast<DType>(dt);
        t.ndim = c.u8();
        t.group = c.u16(); // the reserved field of float tensors
        if (t.ndim < 1 || t.ndim > kMaxDims) fail(GPT_ERR_FORMAT, "%s: tensor '%s' has %u dimensions", src, tn, t.ndim);
        if (!is_quantized(t.dtype) && t.group != 0) fail(GPT_ERR_FORMAT, "%s: tensor '%s' has nonzero reserved bits", src, tn);
        if (is_quantized(t.dtype) && t.ndim != 2)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s' is %s with %u dimensions; quantized tensors are matrices", src, tn,
                 dtype_name(t.dtype), t.ndim);
        uint64_t numel = 1;
        for (uint32_t d = 0; d < t.ndim; d++) {
            t.dims[d] = c.u64();
            if (t.dims[d] == 0 || mul_overflows(numel, t.dims[d], &numel))
                fail(GPT_ERR_FORMAT, "%s: tensor '%s' has an invalid shape (dimension %u is %llu)", src, tn, d,
                     (unsigned long long)t.dims[d]);
        }
        const uint64_t rel = c.u64();
        t.nbytes = c.u64();
        t.crc32 = c.u32();
        if (is_quantized(t.dtype) && (!is_valid_group(t.group) || t.dims[1] % t.group != 0))
            fail(GPT_ERR_FORMAT, "%s: tensor '%s' (%s, %llu columns) has group size %u: it must be 32, 64 or 128 and divide the columns",
                 src, tn, dtype_name(t.dtype), (unsigned long long)t.dims[1], t.group);
        uint64_t expect;
        if (!tensor_bytes(t.dtype, numel, t.dims[t.ndim - 1], t.group, &expect) || expect != t.nbytes)
            fail(GPT_ERR_FORMAT, "%s: tensor '%s' stores %llu bytes but its shape and dtype need %llu", src, tn,
                 (unsigned long long)t.nbytes, (unsigned long long)expect);
        if (rel % kAlignment != 0 || add_overflows(data_off, rel, &t.offset) || !range_inside(t.offset, t.nbytes, data_off, size_))
            fail(GPT_ERR_FORMAT, "%s: tensor '%s' data [%llu, +%llu) is misaligned or lies outside the file", src, tn,
                 (unsigned long long)rel, (unsigned long long)t.nbytes);
        tensors_.push_back(std::move(t));
    }
    if (c.remaining() != 0)
        fail(GPT_ERR_FORMAT, "%s: %llu stray bytes after the tensor table", src, (unsigned long long)c.remaining());
    // No two tensors may share bytes.
    std::vector<const TensorEntry *> by_off;
    for (const auto &t : tensors_) by_off.push_back(&t);
    std::sort(by_off.begin(), by_off.end(), [](auto a, auto b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_off.size(); i++)
        if (by_off[i - 1]->offset + by_off[i - 1]->nbytes > by_off[i]->offset)
            fail(GPT_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", src, by_off[i - 1]->name.c_str(),
                 by_off[i]->name.c_str());
}

void WeightFile::verify_checksums(bool check_finite) const {
    // The bytes are cut into pieces of up to kPiece (a tensor's pieces are combined with
    // crc32_combine) that threads take in turn; each piece goes through in cache-sized steps,
    // so its bytes come in from memory (or disk) once for both the crc32 and the NaN/Inf scan.
    // Results are then checked in file order, so the first damaged tensor is the one named,
    // whatever the threads' timing.
    constexpr uint64_t kPiece = 16u << 20;
    struct Piece {
        size_t tensor;
        uint64_t off, len;
        uint32_t crc;
        uint64_t bad_at; // offset of the first step holding a non-finite value, or UINT64_MAX
    };
    std::vector<Piece> pieces;
    uint64_t total = 0;
    for (size_t t = 0; t < tensors_.size(); t++) {
        const TensorEntry &e = tensors_[t];
        uint64_t off = 0;
        do { // at least one piece, so every tensor is checked
            pieces.push_back(Piece{t, off, std::min(kPiece, e.nbytes - off), 0, UINT64_MAX});
            off += kPiece;
        } while (off < e.nbytes);
        total += e.nbytes;
    }
    auto run = [&](Piece &pc) {
        const TensorEntry &e = tensors_[pc.tensor];
        const PieceScan r = scan_piece(e, base_ + e.offset, pc.off, pc.len, check_finite);
        pc.crc = r.crc;
        pc.bad_at = r.bad_at;
    };
    // Threads only where they pay: a few tens of MB go faster on the calling thread alone.
    parallel_for(pieces.size(), std::min<size_t>(8, (size_t)(total / (32u << 20)) + 1), [&](size_t i) { run(pieces[i]); });

    size_t k = 0;
    for (size_t t = 0; t < tensors_.size(); t++) {
        const TensorEntry &e = tensors_[t];
        uLong crc = 0; // the crc32 of nothing
        uint64_t bad = UINT64_MAX;
        for (; k < pieces.size() && pieces[k].tensor == t; k++) {
            crc = crc32_combine(crc, pieces[k].crc, (z_off_t)pieces[k].len);
            if (bad == UINT64_MAX) bad = pieces[k].bad_at;
        }
        check_scan_result(source_, e, base_ + e.offset, (uint32_t)crc, bad);
    }
}

void WeightFile::drop_pages(uint64_t offset, uint64_t len) const {
    if (!map_ || len == 0) return;
    // Whole pages inside the range only: a page shared with a neighbour is left for it.
    const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    const uint64_t begin = (offset + page - 1) / page * page, end = std::min(offset + len, size_) / page * page;
    if (begin < end) madvise(static_cast<uint8_t *>(map_) + begin, (size_t)(end - begin), MADV_DONTNEED);
}

} // namespace gpt::format
