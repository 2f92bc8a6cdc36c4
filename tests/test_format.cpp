// test_format.cpp - weight file v1: the writer's output checked field by field against the
// spec (decoded independently, with literal offsets: tests/support/format_decoder), round trips of every metadata
// type and every tensor dtype and rank, the atomic file write, and every rejection of the
// reader, each with its exact status and a message naming the problem, through the
// internal reader (memory, mmap and read() paths) and the public gpt_model_load /
// gpt_model_load_from_memory (status and gpt_last_error()).
//
// Damaged files are made by patching bytes of a valid file; where the damage must get past
// a checksum to reach the check under test, the header/metadata/table crc32s are
// recomputed. The replaced global operator new (tests/support/alloc_hooks) records the
// largest request, so absurd counts and sizes are shown to cause no huge allocation.
#include "gpt.h"

#include "alloc_hooks.h"
#include "core/error.h"
#include "core/half.h"
#include "core/quant.h"
#include "dtype_values.h"
#include "files.h"
#include "core/memory.h"
#include "fixture.h"
#include "format/crc32.h"
#include "format/keys.h"
#include "format_decoder.h"
#include "format/reader.h"
#include "format/writer.h"
#include "model/arch.h"
#include "reference.h"
#include "runtime/model.h"

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>
#include <zlib.h>

// cmocka last: it defines a fail() macro (library code is called as (gpt::fail)(...)).
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace {

using namespace format_decoder; // Bytes, header_of, table_entries, put32, fix_crcs, ...
using gpt::DType;
using gpt::format::MetaType;
using gpt::format::MetaValue;
using gpt::format::ReadOptions;
using gpt::format::WeightFile;
using gpt::format::Writer;

// ------------------------------------------------------------------------ test helpers

struct TempFile {
    std::string path;
    explicit TempFile(const Bytes &b) : path(fixture::write_temp(b)) {}
    ~TempFile() { ::unlink(path.c_str()); }
};

// A 64-byte aligned copy at the given misalignment, for load_from_memory.
struct Buffer {
    uint8_t *base = nullptr;
    uint8_t *data = nullptr;
    size_t size = 0;
    Buffer(const Bytes &b, size_t misalign = 0) : size(b.size()) {
        base = static_cast<uint8_t *>(std::aligned_alloc(64, (b.size() + misalign + 63) / 64 * 64 + 64));
        data = base + misalign;
        if (!b.empty()) std::memcpy(data, b.data(), b.size());
    }
    ~Buffer() { std::free(base); }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
};

gpt_model_params cpu_params(uint32_t flags = 0) {
    gpt_model_params p;
    gpt_model_params_init(&p);
    p.device = GPT_DEVICE_CPU;
    p.flags = flags;
    return p;
}

struct Caught {
    bool thrown = false;
    gpt_status status = GPT_OK;
    std::string message;
};
Caught catch_error(const std::function<void()> &f) {
    Caught c;
    try {
        f();
    } catch (const gpt::Error &e) {
        c.thrown = true;
        c.status = e.status();
        c.message = e.what();
    }
    return c;
}

void check_caught(const Caught &c, gpt_status want, const char *needle, const std::string &what, const std::string &source) {
    if (!c.thrown) fail_msg("%s: accepted, expected %s with '%s'", what.c_str(), gpt_status_str(want), needle);
    if (c.status != want || !std::strstr(c.message.c_str(), needle) || !std::strstr(c.message.c_str(), source.c_str()))
        fail_msg("%s: got %s \"%s\", expected %s with '%s' naming '%s'", what.c_str(), gpt_status_str(c.status),
                 c.message.c_str(), gpt_status_str(want), needle, source.c_str());
}

// Runs a public load (which writes its OUT pointer) and checks status, message and OUT.
void check_api(const std::function<gpt_status(gpt_model **)> &load, gpt_status want, const char *needle,
               const std::string &what) {
    gpt_model *m = reinterpret_cast<gpt_model *>(0x1); // must be reset to NULL on failure
    const gpt_status st = load(&m);
    if (st == GPT_OK) gpt_model_free(m);
    if (st != want || !std::strstr(gpt_last_error(), needle))
        fail_msg("%s: public API gave %s \"%s\", expected %s with '%s'", what.c_str(), gpt_status_str(st), gpt_last_error(),
                 gpt_status_str(want), needle);
    if (m != nullptr) fail_msg("%s: OUT pointer not reset to NULL on failure", what.c_str());
}

// The largest single operator new / host_alloc a rejection may make: a copy of the file and
// bookkeeping, never a size taken from the damaged fields.
void check_no_huge_allocation(size_t file_size, uint64_t host_before, const std::string &what) {
    const size_t limit = file_size + (1u << 20);
    if (alloc_hooks::largest() > limit) fail_msg("%s: an operator new of %zu bytes", what.c_str(), alloc_hooks::largest());
    const uint64_t host = gpt::testing::alloc_bytes() - host_before;
    if (host > 2 * (uint64_t)file_size) fail_msg("%s: host_alloc'd %" PRIu64 " bytes", what.c_str(), host);
}

// A file the reader must refuse: every path, the exact status, a message containing needle.
void expect_reject(const Bytes &file, gpt_status want, const char *needle, const std::string &what) {
    alloc_hooks::reset_largest();
    const uint64_t host_before = gpt::testing::alloc_bytes();
    ReadOptions mm, rd;
    rd.use_mmap = false;
    check_caught(catch_error([&] { WeightFile::from_memory(file.data(), file.size(), false, mm); }), want, needle,
                 what + " (from_memory)", "<memory>");
    {
        Buffer aligned(file);
        check_caught(catch_error([&] { WeightFile::from_memory(aligned.data, aligned.size, false, mm); }), want, needle,
                     what + " (from_memory, borrowed)", "<memory>");
    }
    TempFile tmp(file);
    check_caught(catch_error([&] { WeightFile::open(tmp.path, mm); }), want, needle, what + " (mmap)", tmp.path);
    check_caught(catch_error([&] { WeightFile::open(tmp.path, rd); }), want, needle, what + " (read)", tmp.path);
    check_no_huge_allocation(file.size(), host_before, what);

    gpt_model_params p = cpu_params();
    {
        Buffer aligned(file);
        check_api([&](gpt_model **m) { return gpt_model_load_from_memory(aligned.data, aligned.size, &p, m); }, want, needle,
                  what + " (load_from_memory)");
    }
    check_api([&](gpt_model **m) { return gpt_model_load(tmp.path.c_str(), &p, m); }, want, needle, what + " (gpt_model_load)");
    p.flags = GPT_MODEL_NO_MMAP;
    check_api([&](gpt_model **m) { return gpt_model_load(tmp.path.c_str(), &p, m); }, want, needle,
              what + " (gpt_model_load, NO_MMAP)");
    p.flags = GPT_MODEL_SKIP_CHECKSUMS;
    if (want != GPT_ERR_CHECKSUM || std::strstr(needle, "tensor '") == nullptr)
        check_api([&](gpt_model **m) { return gpt_model_load(tmp.path.c_str(), &p, m); }, want, needle,
                  what + " (gpt_model_load, SKIP_CHECKSUMS)");
}

// A file that parses but that the model loader must refuse (config, tensor table binding).
void expect_model_reject(const Bytes &file, gpt_status want, const char *needle, const std::string &what) {
    ReadOptions mm;
    check_caught(catch_error([&] {
                     gpt_model_params p = cpu_params();
                     gpt::Model::load(WeightFile::from_memory(file.data(), file.size(), false, mm), p);
                 }),
                 want, needle, what + " (Model::load)", "<memory>");
    gpt_model_params p = cpu_params();
    {
        Buffer aligned(file);
        check_api([&](gpt_model **m) { return gpt_model_load_from_memory(aligned.data, aligned.size, &p, m); }, want, needle,
                  what + " (load_from_memory)");
    }
    TempFile tmp(file);
    check_api([&](gpt_model **m) { return gpt_model_load(tmp.path.c_str(), &p, m); }, want, needle, what + " (gpt_model_load)");
    if (!std::strstr(gpt_last_error(), tmp.path.c_str()))
        fail_msg("%s: message \"%s\" does not name the file", what.c_str(), gpt_last_error());
}

void expect_load_ok(const Bytes &file, const std::string &what) {
    gpt_model_params p = cpu_params();
    gpt_model *m = nullptr;
    Buffer aligned(file);
    const gpt_status st = gpt_model_load_from_memory(aligned.data, aligned.size, &p, &m);
    if (st != GPT_OK) fail_msg("%s: %s: %s", what.c_str(), gpt_status_str(st), gpt_last_error());
    gpt_model_free(m);
}

// -------------------------------------------------------------------- files under test

// A small llama config; every size odd enough that row and tensor sizes are not multiples
// of the alignment.
gpt::ModelConfig small_config() {
    fixture::Spec s;
    s.arch = GPT_ARCH_LLAMA;
    s.n_layers = 1, s.d_model = 16, s.n_heads = 2, s.n_kv_heads = 1, s.head_dim = 8, s.d_ff = 24, s.vocab_size = 37;
    s.context_length = 16;
    return fixture::config_of(s);
}

void add_model_tensors(Writer &w, const gpt::ModelConfig &c, DType dt, std::mt19937_64 &rng,
                       const std::function<bool(gpt::TensorSlot &)> &edit = nullptr) {
    std::normal_distribution<float> nd(0.0f, 0.5f);
    for (gpt::TensorSlot slot : gpt::tensor_table(c)) {
        if (edit && !edit(slot)) continue;
        uint64_t n = 1;
        for (uint64_t d : slot.shape) n *= d;
        std::vector<float> v(n);
        for (float &x : v) x = nd(rng);
        const Bytes bytes = fixture::encode(v, dt);
        w.add_tensor(slot.name, dt, slot.shape, bytes.data(), bytes.size());
    }
}

// A loadable model file that also carries one metadata entry of every type (extra keys
// are allowed), including two u32 keys whose names differ in their last character.
Bytes base_file(std::mt19937_64 &rng) {
    Writer w;
    small_config().to_metadata(w.metadata());
    w.metadata().set("test.u64", MetaValue::of_u64(0x0123456789abcdefull));
    w.metadata().set("test.str", MetaValue::of_str("a string"));
    w.metadata().set("test.i32s", MetaValue::of_i32s({1, -2, 3}));
    w.metadata().set("test.f32s", MetaValue::of_f32s({0.5f, -1.5f}));
    w.metadata().set("test.strs", MetaValue::of_strs({"x", "yy", ""}));
    w.metadata().set("test.dup1", MetaValue::of_u32(1));
    w.metadata().set("test.dup2", MetaValue::of_u32(2));
    w.metadata().set("test.last", MetaValue::of_i32s({7, 8})); // the last entry
    add_model_tensors(w, small_config(), DType::F32, rng);
    return w.write_memory();
}

// Writer-made model file with metadata edits (value nullptr: remove the key) and tensor
// table edits; the tensors follow tensor_cfg.
Bytes model_file(std::mt19937_64 &rng, const gpt::ModelConfig &cfg,
                 const std::vector<std::pair<std::string, const MetaValue *>> &meta_edits,
                 const std::function<bool(gpt::TensorSlot &)> &edit = nullptr, const gpt::ModelConfig *tensor_cfg = nullptr,
                 const std::function<void(Writer &)> &extra = nullptr) {
    gpt::format::Metadata m;
    cfg.to_metadata(m);
    for (const auto &e : meta_edits) {
        if (e.second) {
            m.set(e.first, *e.second);
        } else {
            gpt::format::Metadata kept;
            for (const auto &kv : m.entries())
                if (kv.first != e.first) kept.set(kv.first, kv.second);
            m = kept;
        }
    }
    Writer w;
    w.metadata() = m;
    add_model_tensors(w, tensor_cfg ? *tensor_cfg : cfg, DType::F32, rng, edit);
    if (extra) extra(w);
    return w.write_memory();
}

std::mt19937_64 rng_for(const char *test) { return std::mt19937_64(reference::sub_seed(test)); }

// The replaced operator new (tests/support/alloc_hooks) is what this binary links; without it
// the allocation checks here would pass without checking anything.
void test_alloc_hooks_linked(void **) { assert_true(alloc_hooks::installed()); }

// ======================================================================== round trip

struct TensorData {
    std::string name;
    DType dtype;
    std::vector<uint64_t> dims;
    Bytes bytes;
};

void check_metadata_equal(const gpt::format::Metadata &got, const gpt::format::Metadata &want) {
    assert_int_equal(got.entries().size(), want.entries().size());
    for (size_t i = 0; i < want.entries().size(); i++) {
        const auto &[gk, gv] = got.entries()[i];
        const auto &[wk, wv] = want.entries()[i];
        assert_string_equal(gk.c_str(), wk.c_str()); // file order kept
        assert_int_equal((int)gv.type, (int)wv.type);
        switch (wv.type) {
        case MetaType::U32:
        case MetaType::U64: assert_true(gv.u == wv.u); break;
        case MetaType::I32: assert_true(gv.i == wv.i); break;
        case MetaType::F32: assert_int_equal(gpt::f32_bits(gv.f), gpt::f32_bits(wv.f)); break; // bit-exact, NaN too
        case MetaType::STR: assert_true(gv.str == wv.str); break;
        case MetaType::I32_ARRAY: assert_true(gv.i32s == wv.i32s); break;
        case MetaType::F32_ARRAY:
            assert_int_equal(gv.f32s.size(), wv.f32s.size());
            for (size_t j = 0; j < wv.f32s.size(); j++) assert_int_equal(gpt::f32_bits(gv.f32s[j]), gpt::f32_bits(wv.f32s[j]));
            break;
        case MetaType::STR_ARRAY: assert_true(gv.strs == wv.strs); break;
        }
    }
}

void check_tensors_equal(const WeightFile &f, const std::vector<TensorData> &want) {
    assert_int_equal(f.tensors().size(), want.size());
    for (size_t i = 0; i < want.size(); i++) {
        const auto &t = f.tensors()[i];
        assert_string_equal(t.name.c_str(), want[i].name.c_str());
        assert_int_equal((int)t.dtype, (int)want[i].dtype);
        assert_int_equal(t.ndim, want[i].dims.size());
        for (size_t d = 0; d < want[i].dims.size(); d++) assert_true(t.dims[d] == want[i].dims[d]);
        assert_int_equal(t.nbytes, want[i].bytes.size());
        assert_int_equal(t.offset % 256, 0);
        assert_memory_equal(f.data(t), want[i].bytes.data(), want[i].bytes.size());
        assert_int_equal(t.crc32, zcrc(want[i].bytes.data(), want[i].bytes.size()));
        assert_ptr_equal(f.find(t.name), &t);
    }
    assert_null(f.find("no.such.tensor"));
}

// Decodes the whole file here, from the spec, and checks the writer's layout rules.
void check_layout(const Bytes &b, const gpt::format::Metadata &meta, const std::vector<TensorData> &tensors) {
    assert_true(b.size() >= HEADER_SIZE);
    assert_memory_equal(b.data(), kMagicBytes, 8);
    assert_int_equal(get32(b, H_VERSION), 1);
    assert_int_equal(get32(b, H_HEADER_SIZE), 128);
    assert_int_equal(get32(b, H_ALIGNMENT), 256);
    const Header h = header_of(b);
    assert_int_equal(h.file_size, b.size());
    assert_int_equal(h.meta_off, 128);
    assert_int_equal(h.table_off, h.meta_off + h.meta_size);
    assert_int_equal(h.data_off, (h.table_off + h.table_size + 255) / 256 * 256);
    assert_int_equal(h.n_tensors, tensors.size());
    for (size_t i = H_RESERVED; i < H_HEADER_CRC; i++) assert_int_equal(b[i], 0);
    assert_int_equal(get32(b, H_HEADER_CRC), zcrc(b.data(), 124));
    assert_int_equal(get32(b, H_META_CRC), zcrc(b.data() + h.meta_off, h.meta_size));
    assert_int_equal(get32(b, H_TABLE_CRC), zcrc(b.data() + h.table_off, h.table_size));
    for (uint64_t i = h.table_off + h.table_size; i < h.data_off; i++) assert_int_equal(b[i], 0); // zero gap

    // Metadata: count, then (u16 key length, key, u8 type, value) in insertion order.
    assert_int_equal(get32(b, h.meta_off), meta.entries().size());
    const auto me = meta_entries(b);
    for (size_t i = 0; i < me.size(); i++) {
        const auto &[key, v] = meta.entries()[i];
        assert_string_equal(me[i].key.c_str(), key.c_str());
        assert_int_equal(me[i].type, (uint8_t)v.type);
        const size_t at = me[i].value_at;
        switch (v.type) {
        case MetaType::U32: assert_int_equal(get32(b, at), (uint32_t)v.u); break;
        case MetaType::I32: assert_int_equal(get32(b, at), (uint32_t)(int32_t)v.i); break;
        case MetaType::F32: assert_int_equal(get32(b, at), gpt::f32_bits(v.f)); break;
        case MetaType::U64: assert_true(get64(b, at) == v.u); break;
        case MetaType::STR:
            assert_int_equal(get32(b, at), v.str.size());
            assert_true(std::string((const char *)b.data() + at + 4, v.str.size()) == v.str);
            break;
        case MetaType::I32_ARRAY:
            assert_int_equal(get32(b, at), v.i32s.size());
            for (size_t j = 0; j < v.i32s.size(); j++) assert_int_equal(get32(b, at + 4 + 4 * j), (uint32_t)v.i32s[j]);
            break;
        case MetaType::F32_ARRAY:
            assert_int_equal(get32(b, at), v.f32s.size());
            for (size_t j = 0; j < v.f32s.size(); j++) assert_int_equal(get32(b, at + 4 + 4 * j), gpt::f32_bits(v.f32s[j]));
            break;
        case MetaType::STR_ARRAY: {
            assert_int_equal(get32(b, at), v.strs.size());
            size_t q = at + 4;
            for (const auto &s : v.strs) {
                assert_int_equal(get32(b, q), s.size());
                assert_true(std::string((const char *)b.data() + q + 4, s.size()) == s);
                q += 4 + s.size();
            }
            break;
        }
        }
    }

    // Table: entries in insertion order, offsets relative to data_off, 256-aligned, packed
    // in order with zero padding, the file ending right after the last tensor.
    const auto te = table_entries(b);
    uint64_t expect_rel = 0;
    for (size_t i = 0; i < te.size(); i++) {
        assert_string_equal(te[i].name.c_str(), tensors[i].name.c_str());
        assert_int_equal(te[i].dtype, (uint8_t)tensors[i].dtype);
        assert_int_equal(te[i].ndim, tensors[i].dims.size());
        assert_int_equal(get16(b, te[i].reserved_at), 0);
        for (size_t d = 0; d < tensors[i].dims.size(); d++) assert_true(te[i].dims[d] == tensors[i].dims[d]);
        assert_int_equal(te[i].rel, expect_rel);
        assert_int_equal(te[i].nbytes, tensors[i].bytes.size());
        assert_int_equal(te[i].crc, zcrc(tensors[i].bytes.data(), tensors[i].bytes.size()));
        assert_memory_equal(b.data() + h.data_off + te[i].rel, tensors[i].bytes.data(), tensors[i].bytes.size());
        const uint64_t end = te[i].rel + te[i].nbytes;
        expect_rel = (end + 255) / 256 * 256;
        if (i + 1 < te.size())
            for (uint64_t j = h.data_off + end; j < h.data_off + expect_rel; j++) assert_int_equal(b[j], 0);
        else
            assert_int_equal(h.data_off + end, b.size());
    }
    if (te.empty()) assert_int_equal(b.size(), h.data_off);
}

// Each crc32 kernel against zlib's own crc32 (the reference: tables, byte at a time): random
// bytes at every alignment, lengths around the kernels' 16- and 64-byte steps and far past them,
// continued from a random running value and in random pieces.
void test_crc32_kernels_match_zlib(void **) {
    std::mt19937_64 rng(reference::sub_seed("crc32"));
    std::vector<uint8_t> buf((1u << 20) + 64);
    for (auto &b : buf) b = (uint8_t)rng();
    auto zlib_crc = [&](uint32_t crc, const uint8_t *p, size_t n) { return (uint32_t)crc32(crc, p, (uInt)n); };
    int kernels = 0;
    for (const gpt::format::Crc32Kernel k : {gpt::format::Crc32Kernel::Zlib, gpt::format::Crc32Kernel::Accelerated}) {
        if (!gpt::format::crc32_kernel_available(k)) {
            std::printf("# crc32: the accelerated kernel is not available on this CPU: skipped\n");
            continue;
        }
        kernels++;
        for (int trial = 0; trial < 4000; trial++) {
            const size_t off = rng() % 64, n = trial < 3000 ? rng() % 400 : rng() % (buf.size() - 64);
            const uint32_t start = trial % 4 == 0 ? 0 : (uint32_t)rng();
            const uint32_t want = zlib_crc(start, buf.data() + off, n);
            const uint32_t got = gpt::format::crc32_extend_with(k, start, buf.data() + off, n);
            if (got != want) fail_msg("kernel %d: %zu bytes at offset %zu from %08x: %08x, zlib %08x", (int)k, n, off, start, got, want);
        }
        // A run in pieces equals the whole.
        const size_t n = buf.size() - 64;
        uint32_t crc = 0;
        for (size_t at = 0; at < n;) {
            const size_t len = std::min<size_t>(n - at, rng() % 5000);
            crc = gpt::format::crc32_extend_with(k, crc, buf.data() + at, len);
            at += len;
        }
        assert_int_equal(crc, zlib_crc(0, buf.data(), n));
    }
    assert_int_equal(gpt::format::crc32_of(buf.data(), 1000), zlib_crc(0, buf.data(), 1000));
    std::printf("# crc32: %d kernel(s) checked against zlib\n", kernels);
}

// The checksum of every byte a load reads stays linear in the bytes: 4n costs at most twice
// the 4x that linear time gives over n (best of 5 runs each, so a busy machine does not decide).
void test_crc32_linear_time(void **) {
    std::mt19937_64 rng(reference::sub_seed("crc32 linear"));
    const size_t n = 4u << 20;
    std::vector<uint8_t> buf(4 * n);
    for (auto &b : buf) b = (uint8_t)rng();
    auto best_seconds = [&](size_t len) {
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            const auto t0 = std::chrono::steady_clock::now();
            volatile uint32_t crc = gpt::format::crc32_of(buf.data(), len);
            (void)crc;
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return best;
    };
    const double t1 = best_seconds(n), t4 = best_seconds(4 * n);
    std::printf("# crc32: %zu bytes in %.2f ms, %zu in %.2f ms\n", n, t1 * 1e3, 4 * n, t4 * 1e3);
    if (t4 > 8 * t1 + 2e-3) fail_msg("crc32 of 4n bytes took %.2f ms, of n %.2f ms: not linear", t4 * 1e3, t1 * 1e3);
}

void test_round_trip(void **) {
    auto rng = rng_for("round_trip");
    std::uniform_int_distribution<int> byte(0, 255);
    Writer w;
    gpt::format::Metadata &m = w.metadata();
    m.set("u32.zero", MetaValue::of_u32(0));
    m.set("u32.max", MetaValue::of_u32(0xffffffffu));
    m.set("i32.neg", MetaValue::of_i32(-1));
    m.set("i32.min", MetaValue::of_i32(INT32_MIN));
    m.set("f32.pi", MetaValue::of_f32(3.14159265f));
    m.set("f32.negzero", MetaValue::of_f32(-0.0f));
    m.set("f32.inf", MetaValue::of_f32(INFINITY));
    m.set("f32.nan", MetaValue::of_f32(gpt::bits_f32(0x7fc01234u)));
    m.set("u64.max", MetaValue::of_u64(~0ull));
    m.set("u64.big", MetaValue::of_u64(rng()));
    m.set("str.empty", MetaValue::of_str(""));
    m.set("str.utf8", MetaValue::of_str("h\xc3\xa9llo \xe2\x96\x81world"));
    m.set("str.nul", MetaValue::of_str(std::string("a\0b", 3)));
    std::string long_str(5000, ' ');
    for (auto &c : long_str) c = (char)byte(rng);
    m.set("str.long_random_bytes", MetaValue::of_str(long_str));
    m.set("i32s.empty", MetaValue::of_i32s({}));
    std::vector<int32_t> i32s(1000);
    for (auto &x : i32s) x = (int32_t)rng();
    m.set("i32s.random", MetaValue::of_i32s(i32s));
    m.set("f32s.empty", MetaValue::of_f32s({}));
    std::vector<float> f32s(777);
    std::normal_distribution<float> nd;
    for (auto &x : f32s) x = nd(rng);
    m.set("f32s.random", MetaValue::of_f32s(f32s));
    m.set("strs.empty", MetaValue::of_strs({}));
    m.set("strs.some", MetaValue::of_strs({"", "a", "\xc4\xa0the", std::string(300, 'z'), ""}));
    m.set("k", MetaValue::of_u32(7));                         // shortest key
    m.set(std::string(256, 'K'), MetaValue::of_u32(8));       // longest key
    m.set("u32.max", MetaValue::of_u32(0xfffffffeu));         // set replaces in place

    std::vector<TensorData> tensors;
    int k = 0;
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        for (int rank = 1; rank <= 4; rank++) {
            TensorData t;
            t.name = "t" + std::to_string(k++) + "." + gpt::dtype_name(dt) + ".rank" + std::to_string(rank);
            t.dtype = dt;
            uint64_t n = 1;
            for (int d = 0; d < rank; d++) {
                t.dims.push_back(std::uniform_int_distribution<uint64_t>(1, rank == 1 ? 300 : 9)(rng));
                n *= t.dims.back();
            }
            t.bytes.resize(n * gpt::dtype_bytes(dt));
            for (auto &x : t.bytes) x = (uint8_t)byte(rng);
            tensors.push_back(t);
        }
    }
    TensorData longname{std::string(256, 'n'), DType::F16, {1}, {0x12, 0x34}};
    tensors.push_back(longname);
    for (size_t i = 0; i < tensors.size(); i++) {
        if (i % 2) w.add_tensor(tensors[i].name, tensors[i].dtype, tensors[i].dims, tensors[i].bytes.data(), tensors[i].bytes.size());
        else {
            const Bytes copy = tensors[i].bytes; // the streaming form
            w.add_tensor(tensors[i].name, tensors[i].dtype, tensors[i].dims,
                         [copy](uint8_t *dst, uint64_t n) { assert_int_equal(n, copy.size()); std::memcpy(dst, copy.data(), n); });
        }
    }

    const Bytes mem = w.write_memory();
    assert_int_equal(w.file_size(), mem.size());
    check_layout(mem, m, tensors);

    // Back through the reader: memory (copied and borrowed), mmap and read().
    ReadOptions mm, rd;
    rd.use_mmap = false;
    auto check = [&](const WeightFile &f) {
        check_metadata_equal(f.metadata(), m);
        check_tensors_equal(f, tensors);
        assert_true(f.checksums_verified());
        assert_int_equal(f.size(), mem.size());
    };
    check(*WeightFile::from_memory(mem.data(), mem.size(), true, mm));
    Buffer aligned(mem);
    auto borrowed = WeightFile::from_memory(aligned.data, aligned.size, false, mm);
    check(*borrowed);
    assert_ptr_equal(borrowed->data(borrowed->tensors()[0]), aligned.data + borrowed->tensors()[0].offset);

    char dir[] = "/tmp/gpt-format-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const std::string path = std::string(dir) + "/rt.gpt";
    std::vector<size_t> progress;
    Writer::FileOptions fo;
    fo.progress = [&](size_t done, size_t total, uint64_t bytes_done, uint64_t bytes_total) {
        assert_int_equal(total, tensors.size());
        assert_true(bytes_done <= bytes_total);
        if (done == total) assert_int_equal(bytes_done, bytes_total);
        progress.push_back(done);
    };
    w.write_file(path, fo);
    assert_int_equal(progress.size(), tensors.size());
    for (size_t i = 0; i < progress.size(); i++) assert_int_equal(progress[i], i + 1);
    auto mapped = WeightFile::open(path, mm);
    assert_true(mapped->mapped());
    check(*mapped);
    auto read = WeightFile::open(path, rd);
    assert_false(read->mapped());
    check(*read);
    // The file on disk is byte-identical to write_memory().
    {
        FILE *fp = std::fopen(path.c_str(), "rb");
        assert_non_null(fp);
        Bytes disk(mem.size() + 1);
        const size_t got = std::fread(disk.data(), 1, disk.size(), fp);
        std::fclose(fp);
        assert_int_equal(got, mem.size());
        disk.resize(got);
        assert_true(disk == mem);
    }
    ::unlink(path.c_str());
    ::rmdir(dir);
}

// An empty file: no metadata, no tensors.
void test_round_trip_empty_file(void **) {
    ReadOptions mm;
    Writer empty;
    const Bytes e = empty.write_memory();
    check_layout(e, empty.metadata(), {});
    assert_int_equal(e.size(), 256);
    auto ef = WeightFile::from_memory(e.data(), e.size(), true, mm);
    assert_int_equal(ef->tensors().size(), 0);
    assert_int_equal(ef->metadata().entries().size(), 0);
}

// The smallest legal entries: one-byte keys with u32 values and one-byte tensor names of
// rank 1 (35-byte table entries), many of them.
void test_minimal_entries(void **) {
    Writer w;
    std::vector<TensorData> tensors;
    for (int i = 0; i < 60; i++) {
        const std::string name(1, (char)('!' + i));
        w.metadata().set(name, MetaValue::of_u32((uint32_t)i));
        TensorData t{name, DType::F16, {1}, {(uint8_t)i, (uint8_t)(i * 7)}};
        w.add_tensor(t.name, t.dtype, t.dims, t.bytes.data(), 2);
        tensors.push_back(t);
    }
    const Bytes b = w.write_memory();
    const Header h = header_of(b);
    assert_int_equal(h.table_size, 60 * 35);
    assert_int_equal(h.meta_size, 4 + 60 * 8);
    check_layout(b, w.metadata(), tensors);
    const Caught c = catch_error([&] {
        auto f = WeightFile::from_memory(b.data(), b.size(), true, ReadOptions());
        check_metadata_equal(f->metadata(), w.metadata());
        check_tensors_equal(*f, tensors);
    });
    if (c.thrown) fail_msg("a valid file with minimal entries was refused: %s", c.message.c_str());
}

// The writer refuses tensors the format cannot hold.
void test_writer_rejects_bad_tensors(void **) {
    Writer w;
    const uint8_t one[4] = {1, 2, 3, 4};
    w.add_tensor("a", DType::F32, {1}, one, 4);
    struct Case {
        const char *what;
        std::function<void()> f;
        const char *needle;
    } cases[] = {
        {"duplicate tensor", [&] { w.add_tensor("a", DType::F32, {1}, one, 4); }, "added twice"},
        {"empty name", [&] { w.add_tensor("", DType::F32, {1}, one, 4); }, "bad length"},
        {"long name", [&] { w.add_tensor(std::string(257, 'x'), DType::F32, {1}, one, 4); }, "bad length"},
        {"rank 0", [&] { w.add_tensor("b", DType::F32, {}, one, 4); }, "dimensions"},
        {"rank 5", [&] { w.add_tensor("b", DType::F32, {1, 1, 1, 1, 1}, one, 4); }, "dimensions"},
        {"zero dim", [&] { w.add_tensor("b", DType::F32, {2, 0}, one, 4); }, "invalid shape"},
        {"overflowing shape", [&] { w.add_tensor("b", DType::F32, {1ull << 62, 1ull << 62}, one, 4); }, "invalid shape"},
    };
    for (auto &c : cases) {
        const Caught r = catch_error(c.f);
        if (!r.thrown || r.status != GPT_ERR_INVALID_ARG || !std::strstr(r.message.c_str(), c.needle))
            fail_msg("%s: got %d \"%s\"", c.what, r.thrown ? (int)r.status : 0, r.message.c_str());
    }
}

// Bytes that do not match the shape are refused when written.
void test_writer_rejects_short_data(void **) {
    const uint8_t one[4] = {1, 2, 3, 4};
    Writer w2;
    w2.add_tensor("short", DType::F32, {2}, one, 4);
    const Caught r = catch_error([&] { w2.write_memory(); });
    assert_true(r.thrown && r.status == GPT_ERR_INVALID_ARG && std::strstr(r.message.c_str(), "short"));
}

// A key the format cannot hold.
void test_writer_rejects_long_key(void **) {
    Writer w3;
    w3.metadata().set(std::string(257, 'k'), MetaValue::of_u32(1));
    const Caught r3 = catch_error([&] { w3.write_memory(); });
    assert_true(r3.thrown && r3.status == GPT_ERR_INVALID_ARG && std::strstr(r3.message.c_str(), "bad length"));
}

// write_file's scratch: a fresh directory for model.gpt, and two writers of different files.
struct AtomicFiles {
    char dir[32] = "/tmp/gpt-atomic-XXXXXX";
    std::string path;
    Writer a, b;
    Bytes data = Bytes(1000);
    Writer::FileOptions keep, replace;
    AtomicFiles() {
        auto rng = rng_for("writer_atomic_file");
        assert_non_null(mkdtemp(dir));
        path = std::string(dir) + "/model.gpt";
        a.metadata().set("which", MetaValue::of_str("a"));
        b.metadata().set("which", MetaValue::of_str("b"));
        for (auto &x : data) x = (uint8_t)rng();
        a.add_tensor("x", DType::F16, {500}, data.data(), data.size());
        b.add_tensor("x", DType::BF16, {250, 2}, data.data(), data.size());
        replace.overwrite = true;
    }
    // write_file left no temporary files: only model.gpt; then removes it and the directory.
    void expect_only_model_left() {
        const auto entries = files::list_dir(dir);
        if (entries.size() != 1 || entries[0] != "model.gpt") {
            for (const auto &e : entries) std::printf("left in %s: %s\n", dir, e.c_str());
            fail_msg("write_file left files behind");
        }
        ::unlink(path.c_str());
        assert_int_equal(::rmdir(dir), 0);
    }
};

// write_file refuses to replace a file without overwrite and replaces it with it.
void test_writer_replaces_only_with_overwrite(void **) {
    AtomicFiles f;
    f.a.write_file(f.path, f.keep);
    assert_true(files::read_bytes(f.path) == f.a.write_memory());

    Caught c = catch_error([&] { f.b.write_file(f.path, f.keep); });
    assert_true(c.thrown);
    assert_int_equal(c.status, GPT_ERR_IO);
    assert_non_null(std::strstr(c.message.c_str(), "already exists"));
    assert_non_null(std::strstr(c.message.c_str(), f.path.c_str()));
    assert_true(files::read_bytes(f.path) == f.a.write_memory());

    f.b.write_file(f.path, f.replace);
    assert_true(files::read_bytes(f.path) == f.b.write_memory());
    f.expect_only_model_left();
}

// A tensor whose bytes cannot be produced: the old file stays, a new one is not created,
// nothing else is left.
void test_writer_failure_keeps_old_file(void **) {
    AtomicFiles f;
    f.b.write_file(f.path, f.keep);
    Writer bad;
    bad.metadata().set("which", MetaValue::of_str("bad"));
    bad.add_tensor("ok", DType::F32, {4}, f.data.data(), 16);
    bad.add_tensor("boom", DType::F32, {4}, [](uint8_t *, uint64_t) { (gpt::fail)(GPT_ERR_IO, "source tensor unreadable"); });
    Caught c = catch_error([&] { bad.write_file(f.path, f.replace); });
    assert_true(c.thrown);
    assert_int_equal(c.status, GPT_ERR_IO);
    assert_non_null(std::strstr(c.message.c_str(), "source tensor unreadable"));
    assert_true(files::read_bytes(f.path) == f.b.write_memory());
    const std::string fresh = std::string(f.dir) + "/fresh.gpt";
    c = catch_error([&] { bad.write_file(fresh, f.keep); });
    assert_true(c.thrown);
    struct stat st;
    assert_int_not_equal(::stat(fresh.c_str(), &st), 0);
    f.expect_only_model_left();
}

// No directory to write into.
void test_writer_missing_directory(void **) {
    AtomicFiles f;
    f.a.write_file(f.path, f.keep);
    const Caught c = catch_error([&] { f.a.write_file(std::string(f.dir) + "/missing/x.gpt", f.keep); });
    assert_true(c.thrown);
    assert_int_equal(c.status, GPT_ERR_IO);
    assert_non_null(std::strstr(c.message.c_str(), "missing/x.gpt"));
    f.expect_only_model_left();
}

// ======================================================================== rejections

void test_reject_truncated(void **) {
    auto rng = rng_for("reject_truncated");
    const Bytes good = base_file(rng);
    expect_load_ok(good, "base file");
    const Header h = header_of(good);
    const auto te = table_entries(good);
    std::set<size_t> cuts = {0, 1, 7, 8, 12, 16, 64, 123, 124, 127, 128, 129, h.meta_off + 4, h.meta_off + h.meta_size - 1,
                             h.meta_off + h.meta_size, h.table_off + h.table_size - 1, h.table_off + h.table_size,
                             h.data_off - 1, h.data_off, good.size() - 1};
    for (const auto &t : te) {
        cuts.insert(h.data_off + t.rel);
        cuts.insert(h.data_off + t.rel + 1);
        cuts.insert(h.data_off + t.rel + t.nbytes - 1);
        cuts.insert(h.data_off + t.rel + t.nbytes);
    }
    for (int i = 0; i < 12; i++) cuts.insert(std::uniform_int_distribution<size_t>(0, good.size() - 1)(rng));
    for (size_t cut : cuts) {
        if (cut >= good.size()) continue;
        Bytes b(good.begin(), good.begin() + cut);
        const std::string what = "truncated to " + std::to_string(cut) + " bytes";
        if (cut < 128) {
            if (cut == 0) { // an empty buffer / file
                check_caught(catch_error([&] { WeightFile::from_memory("", 0, false, ReadOptions()); }), GPT_ERR_FORMAT,
                             "shorter than the 128-byte header", what, "<memory>");
                TempFile tmp(b);
                check_caught(catch_error([&] { WeightFile::open(tmp.path, ReadOptions()); }), GPT_ERR_FORMAT,
                             "shorter than the 128-byte header", what, tmp.path);
                continue;
            }
            expect_reject(b, GPT_ERR_FORMAT, "shorter than the 128-byte header", what);
            continue;
        }
        expect_reject(b, GPT_ERR_FORMAT, "header says the file is", what);

        // The same cut with a header that agrees (file_size patched, crcs fixed): the
        // section the cut falls in is named.
        put64(b, H_FILE_SIZE, cut);
        fix_crcs(b);
        const char *needle;
        if (cut < h.meta_off + h.meta_size) needle = "metadata section [";
        else if (cut < h.table_off + h.table_size) needle = "tensor table [";
        else needle = "data offset";
        std::string tensor_needle;
        if (cut >= h.data_off) {
            for (const auto &t : te)
                if (h.data_off + t.rel + t.nbytes > cut) {
                    tensor_needle = "tensor '" + t.name + "' data [";
                    break;
                }
            assert_false(tensor_needle.empty());
            needle = tensor_needle.c_str();
        }
        expect_reject(b, GPT_ERR_FORMAT, needle, what + " with a consistent header");
    }
}

// Padding is refused just as well as a cut.
void test_reject_appended_byte(void **) {
    auto rng = rng_for("reject_appended_byte");
    const Bytes good = base_file(rng);
    Bytes longer = good;
    longer.push_back(0);
    expect_reject(longer, GPT_ERR_FORMAT, "header says the file is", "one byte appended");
}

// Each magic byte, a text-mode transfer's CR LF -> LF, another format's magic.
void test_reject_bad_magic(void **) {
    auto rng = rng_for("reject_bad_magic");
    const Bytes good = base_file(rng);
    for (size_t i = 0; i < 8; i++) {
        Bytes b = good;
        b[i] ^= (uint8_t)(1u << (rng() % 8));
        expect_reject(b, GPT_ERR_FORMAT, "bad magic", "magic byte " + std::to_string(i));
    }
    // A text-mode transfer turns CR LF into LF.
    Bytes t = good;
    t.erase(t.begin() + 4);
    expect_reject(t, GPT_ERR_FORMAT, "bad magic", "CR dropped from the magic");
    Bytes gguf = good;
    std::memcpy(gguf.data(), "GGUF", 4);
    expect_reject(gguf, GPT_ERR_FORMAT, "bad magic", "a GGUF file");
}

// Versions other than 1, with the header crc as it was and recomputed.
void test_reject_version(void **) {
    auto rng = rng_for("reject_version");
    const Bytes good = base_file(rng);
    for (uint32_t v : {0u, 2u, 3u, 0x01000000u, 0xffffffffu}) {
        for (bool fix : {false, true}) {
            Bytes b = good;
            put32(b, H_VERSION, v);
            if (fix) fix_crcs(b);
            const std::string needle = "weight file version " + std::to_string(v) + ";";
            expect_reject(b, GPT_ERR_UNSUPPORTED, needle.c_str(), "version " + std::to_string(v) + (fix ? " (crc fixed)" : ""));
        }
    }
}

// Header: any byte in 12..123 (not the magic or version, checked first) or the crc itself.
void test_reject_header_checksum(void **) {
    auto rng = rng_for("reject_header_checksum");
    const Bytes good = base_file(rng);
    for (size_t at : {12ul, 16ul, 40ul, 64ul, 70ul, 80ul, 100ul, 123ul, 124ul, 127ul}) {
        Bytes b = good;
        b[at] ^= 0x10;
        expect_reject(b, GPT_ERR_CHECKSUM, "header checksum mismatch", "header byte " + std::to_string(at));
    }
}

// Metadata and table: a flipped byte, and a flipped stored crc.
void test_reject_section_checksums(void **) {
    auto rng = rng_for("reject_section_checksums");
    const Bytes good = base_file(rng);
    const Header h = header_of(good);
    for (int i = 0; i < 6; i++) {
        Bytes b = good;
        b[h.meta_off + rng() % h.meta_size] ^= (uint8_t)(1 + rng() % 255);
        put32(b, H_HEADER_CRC, zcrc(b.data(), 124));
        expect_reject(b, GPT_ERR_CHECKSUM, "metadata checksum mismatch", "metadata byte flipped");
        Bytes c = good;
        c[h.table_off + rng() % h.table_size] ^= (uint8_t)(1 + rng() % 255);
        put32(c, H_HEADER_CRC, zcrc(c.data(), 124));
        expect_reject(c, GPT_ERR_CHECKSUM, "tensor table checksum mismatch", "table byte flipped");
    }
    Bytes mc = good;
    put32(mc, H_META_CRC, get32(mc, H_META_CRC) ^ 1);
    put32(mc, H_HEADER_CRC, zcrc(mc.data(), 124));
    expect_reject(mc, GPT_ERR_CHECKSUM, "metadata checksum mismatch", "stored metadata crc");
    Bytes tc = good;
    put32(tc, H_TABLE_CRC, get32(tc, H_TABLE_CRC) ^ 0x80000000u);
    put32(tc, H_HEADER_CRC, zcrc(tc.data(), 124));
    expect_reject(tc, GPT_ERR_CHECKSUM, "tensor table checksum mismatch", "stored table crc");
}

// Tensor data: first and last byte of every tensor, and the stored crc; skipping checksums
// loads damaged data.
void test_reject_tensor_checksums(void **) {
    auto rng = rng_for("reject_tensor_checksums");
    const Bytes good = base_file(rng);
    const Header h = header_of(good);
    for (const auto &t : table_entries(good)) {
        for (uint64_t at : {h.data_off + t.rel, h.data_off + t.rel + t.nbytes - 1}) {
            Bytes b = good;
            b[at] ^= 0x01;
            const std::string needle = "tensor '" + t.name + "' checksum mismatch";
            expect_reject(b, GPT_ERR_CHECKSUM, needle.c_str(), "data of " + t.name);

            // Skipping checksums loads it; the reader says it did not verify them.
            ReadOptions skip;
            skip.verify_checksums = false;
            auto f = WeightFile::from_memory(b.data(), b.size(), false, skip);
            assert_false(f->checksums_verified());
            check_caught(catch_error([&] { f->verify_checksums(); }), GPT_ERR_CHECKSUM, needle.c_str(), "verify_checksums()", "<memory>");
            gpt_model_params p = cpu_params(GPT_MODEL_SKIP_CHECKSUMS);
            gpt_model *m = nullptr;
            Buffer buf(b);
            const gpt_status st = gpt_model_load_from_memory(buf.data, buf.size, &p, &m);
            if (st != GPT_OK) fail_msg("SKIP_CHECKSUMS load of damaged %s: %s", t.name.c_str(), gpt_last_error());
            gpt_model_free(m);
        }
        Bytes b = good;
        put32(b, t.crc_at, t.crc ^ 0x5a5a5a5au);
        fix_crcs(b);
        const std::string needle = "tensor '" + t.name + "' checksum mismatch";
        expect_reject(b, GPT_ERR_CHECKSUM, needle.c_str(), "stored crc of " + t.name);
    }
}

// Skipping tensor checksums never skips the header, metadata and table crcs.
void test_skip_checksums_keeps_section_checks(void **) {
    auto rng = rng_for("skip_checksums_keeps_section_checks");
    const Bytes good = base_file(rng);
    const Header h = header_of(good);
    Bytes b = good;
    b[h.meta_off + 5] ^= 1;
    put32(b, H_HEADER_CRC, zcrc(b.data(), 124));
    ReadOptions skip;
    skip.verify_checksums = false;
    check_caught(catch_error([&] { WeightFile::from_memory(b.data(), b.size(), false, skip); }), GPT_ERR_CHECKSUM,
                 "metadata checksum mismatch", "SKIP with damaged metadata", "<memory>");
    // The good file loads with and without verification.
    auto f = WeightFile::from_memory(good.data(), good.size(), false, skip);
    assert_false(f->checksums_verified());
    f->verify_checksums();
}

void test_reject_header_fields(void **) {
    auto rng = rng_for("reject_header_fields");
    const Bytes good = base_file(rng);
    const Header h = header_of(good);
    const uint64_t size = good.size(), M = ~0ull;
    struct Case {
        const char *what;
        size_t at;
        int width;
        uint64_t value;
        const char *needle;
    } cases[] = {
        {"header_size 0", H_HEADER_SIZE, 4, 0, "header_size is 0, expected 128"},
        {"header_size 256", H_HEADER_SIZE, 4, 256, "header_size is 256"},
        {"alignment 64", H_ALIGNMENT, 4, 64, "alignment is 64, expected 256"},
        {"alignment 0", H_ALIGNMENT, 4, 0, "alignment is 0"},
        {"metadata inside the header", H_META_OFF, 8, 64, "metadata section [64,"},
        {"metadata past the end", H_META_OFF, 8, size, "metadata section ["},
        {"metadata offset near 2^64", H_META_OFF, 8, M - 7, "metadata section ["},
        {"metadata size past the end", H_META_SIZE, 8, size, "metadata section ["},
        {"metadata size 2^64-1", H_META_SIZE, 8, M, "metadata section ["},
        {"metadata size 2^32", H_META_SIZE, 8, 1ull << 32, "metadata section ["},
        {"table overlaps metadata", H_TABLE_OFF, 8, h.meta_off, "overlaps the metadata"},
        {"table past the end", H_TABLE_OFF, 8, size + 256, "tensor table ["},
        {"table offset near 2^64", H_TABLE_OFF, 8, M - 3, "tensor table ["},
        {"table size 2^64-1", H_TABLE_SIZE, 8, M, "tensor table ["},
        {"table size past the end", H_TABLE_SIZE, 8, size - h.table_off + 1, "tensor table ["},
        {"data offset misaligned", H_DATA_OFF, 8, h.data_off + 8, "data offset"},
        {"data offset inside the table", H_DATA_OFF, 8, h.data_off - 256, "data offset"},
        {"data offset past the end", H_DATA_OFF, 8, (size + 511) / 256 * 256, "data offset"},
        {"data offset near 2^64", H_DATA_OFF, 8, M - 255, "data offset"},
        {"tensor count 2^32-1", H_N_TENSORS, 4, 0xffffffffull, "table claims 4294967295 tensors"},
        {"tensor count 2^31", H_N_TENSORS, 4, 0x80000000ull, "table claims 2147483648 tensors"},
        {"one tensor more", H_N_TENSORS, 4, h.n_tensors + 1, "tensor table section ends early"},
        {"one tensor less", H_N_TENSORS, 4, h.n_tensors - 1, "stray bytes after the tensor table"},
        {"no tensors", H_N_TENSORS, 4, 0, "stray bytes after the tensor table"},
    };
    for (const Case &c : cases) {
        Bytes b = good;
        if (c.width == 4) put32(b, c.at, (uint32_t)c.value);
        else put64(b, c.at, c.value);
        fix_crcs(b);
        expect_reject(b, GPT_ERR_FORMAT, c.needle, c.what);
    }
}

// Reserved header bytes are not interpreted by v1 readers (written as zero).
void test_reserved_header_bytes_ignored(void **) {
    auto rng = rng_for("reserved_header_bytes_ignored");
    const Bytes good = base_file(rng);
    Bytes r = good;
    r[H_RESERVED + 3] = 0x77;
    fix_crcs(r);
    expect_load_ok(r, "nonzero reserved header byte");
}

// The base file to damage: its header and entries, and copies patched by f with the section
// and header crcs recomputed (so the damage reaches the checks behind them).
struct Damage {
    Bytes good;
    Header h;
    std::vector<MetaPos> me;
    std::vector<TensorPos> te;
    explicit Damage(const char *test) {
        auto rng = rng_for(test);
        good = base_file(rng);
        h = header_of(good);
        me = meta_entries(good);
        te = table_entries(good);
    }
    Bytes patched(const std::function<void(Bytes &)> &f) const {
        Bytes b = good;
        f(b);
        fix_crcs(b);
        return b;
    }
};

// Entry counts past the section (2^32-1, 2^31, one more) and short of it (one less).
void test_reject_metadata_count(void **) {
    const Damage d("reject_metadata_count");
    const Bytes &good = d.good;
    const Header &h = d.h;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const uint32_t count = get32(good, h.meta_off);
    expect_reject(patched([&](Bytes &b) { put32(b, h.meta_off, 0xffffffffu); }), GPT_ERR_FORMAT,
                  "metadata claims 4294967295 entries", "metadata count 2^32-1");
    expect_reject(patched([&](Bytes &b) { put32(b, h.meta_off, 0x80000000u); }), GPT_ERR_FORMAT, "metadata claims",
                  "metadata count 2^31");
    expect_reject(patched([&](Bytes &b) { put32(b, h.meta_off, count + 1); }), GPT_ERR_FORMAT, "metadata section ends early",
                  "one entry more");
    expect_reject(patched([&](Bytes &b) { put32(b, h.meta_off, count - 1); }), GPT_ERR_FORMAT,
                  "stray bytes after the metadata entries", "one entry less");
}

// Key lengths 0, 257, 65 535.
void test_reject_metadata_key_length(void **) {
    const Damage d("reject_metadata_key_length");
    const auto &me = d.me;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const MetaPos &first = me[0];
    expect_reject(patched([&](Bytes &b) { put16(b, first.key_len_at, 0); }), GPT_ERR_FORMAT, "key length of 0", "key length 0");
    expect_reject(patched([&](Bytes &b) { put16(b, first.key_len_at, 257); }), GPT_ERR_FORMAT, "key length of 257",
                  "key length 257");
    expect_reject(patched([&](Bytes &b) { put16(b, first.key_len_at, 0xffff); }), GPT_ERR_FORMAT, "key length of 65535",
                  "key length 65535");
}

// Duplicate key: "test.dup2" becomes "test.dup1".
void test_reject_metadata_duplicate_key(void **) {
    const Damage d("reject_metadata_duplicate_key");
    const auto &me = d.me;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const MetaPos &dup2 = meta_entry(me, "test.dup2");
    expect_reject(patched([&](Bytes &b) { b[dup2.type_at - 1] = '1'; }), GPT_ERR_FORMAT, "metadata key 'test.dup1' appears twice",
                  "duplicate key");
}

// Unknown value types.
void test_reject_metadata_unknown_type(void **) {
    const Damage d("reject_metadata_unknown_type");
    const auto &me = d.me;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const MetaPos &u32 = meta_entry(me, "test.dup1");
    for (uint8_t t : {0, 9, 42, 255}) {
        const std::string needle = "metadata key 'test.dup1' has unknown type " + std::to_string(t);
        expect_reject(patched([&](Bytes &b) { b[u32.type_at] = t; }), GPT_ERR_FORMAT, needle.c_str(),
                      "meta type " + std::to_string(t));
    }
}

// Absurd string lengths and array counts (2^32-1, 2^31, 2^30: 4 bytes each would wrap 32
// bits; just past the end), an element length past the end, the last entry's array one
// element longer than stored.
void test_reject_metadata_lengths(void **) {
    const Damage d("reject_metadata_lengths");
    const Header &h = d.h;
    const auto &me = d.me;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const MetaPos &str = meta_entry(me, "test.str");
    const uint64_t meta_end = h.meta_off + h.meta_size;
    for (uint32_t n : {0xffffffffu, 0x80000000u, 0x40000000u, (uint32_t)(meta_end - str.value_at - 4 + 1)}) {
        const std::string what = "string length " + std::to_string(n);
        expect_reject(patched([&](Bytes &b) { put32(b, str.value_at, n); }), GPT_ERR_FORMAT, "metadata section ends early",
                      what);
    }
    for (const char *key : {"test.i32s", "test.f32s", "test.strs"}) {
        const MetaPos &a = meta_entry(me, key);
        // The bytes left after the count, plus one: the smallest count that cannot fit.
        const uint32_t just_too_many = (uint32_t)((meta_end - a.value_at - 4) / 4 + 1);
        for (uint32_t n : {0xffffffffu, 0x80000000u, 0x40000000u, just_too_many}) {
            const std::string needle = "metadata key '" + std::string(key) + "' claims " + std::to_string(n) + " elements";
            expect_reject(patched([&](Bytes &b) { put32(b, a.value_at, n); }), GPT_ERR_FORMAT, needle.c_str(),
                          std::string(key) + " count " + std::to_string(n));
        }
    }
    const MetaPos &strs = meta_entry(me, "test.strs");
    expect_reject(patched([&](Bytes &b) { put32(b, strs.value_at + 4, 0xffffffffu); }), GPT_ERR_FORMAT,
                  "metadata section ends early", "string array element length 2^32-1");
    // The last entry's array one element longer than stored.
    const MetaPos &last = me.back();
    assert_string_equal(last.key.c_str(), "test.last");
    expect_reject(patched([&](Bytes &b) { put32(b, last.value_at, get32(b, last.value_at) + 1); }), GPT_ERR_FORMAT,
                  "metadata key 'test.last' claims 3 elements", "array one element longer");
}

// Tensor name lengths 0 and 65 535.
void test_reject_table_name_length(void **) {
    const Damage d("reject_table_name_length");
    const auto &te = d.te;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const TensorPos &t1 = te[1];
    expect_reject(patched([&](Bytes &b) { put16(b, t1.name_len_at, 0); }), GPT_ERR_FORMAT, "tensor 1 has a name length of 0",
                  "name length 0");
    expect_reject(patched([&](Bytes &b) { put16(b, t1.name_len_at, 0xffff); }), GPT_ERR_FORMAT,
                  "tensor 1 has a name length of 65535", "name length 65535");
}

// Unknown dtypes.
void test_reject_table_dtype(void **) {
    const Damage d("reject_table_dtype");
    const auto &te = d.te;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const TensorPos &t1 = te[1];
    const std::string n1 = t1.name;
    for (uint8_t dt : {0, 6, 9, 255}) { // 4 and 5 are q8 and q4 (test_reject_quantized_*)
        const std::string needle = "tensor '" + n1 + "' has unknown dtype " + std::to_string(dt);
        expect_reject(patched([&](Bytes &b) { b[t1.dtype_at] = dt; }), GPT_ERR_FORMAT, needle.c_str(), "dtype " + std::to_string(dt));
    }
}

// Ranks 0, 5, 255.
void test_reject_table_ndim(void **) {
    const Damage d("reject_table_ndim");
    const auto &te = d.te;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const TensorPos &t1 = te[1];
    const std::string n1 = t1.name;
    for (uint8_t nd : {0, 5, 255}) {
        const std::string needle = "tensor '" + n1 + "' has " + std::to_string(nd) + " dimensions";
        expect_reject(patched([&](Bytes &b) { b[t1.ndim_at] = nd; }), GPT_ERR_FORMAT, needle.c_str(), "ndim " + std::to_string(nd));
    }
}

// Nonzero reserved bits in an entry.
void test_reject_table_reserved_bits(void **) {
    const Damage d("reject_table_reserved_bits");
    const auto &te = d.te;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const TensorPos &t1 = te[1];
    expect_reject(patched([&](Bytes &b) { put16(b, t1.reserved_at, 1); }), GPT_ERR_FORMAT, "nonzero reserved bits",
                  "reserved bits");
}

// Duplicate names: the second tensor renamed to the first's name when lengths allow,
// else a byte-level rename of two same-length names.
void test_reject_table_duplicate_name(void **) {
    const Damage d("reject_table_duplicate_name");
    const auto &te = d.te;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    {
        const TensorPos *a = nullptr, *b2 = nullptr;
        for (size_t i = 0; i < te.size() && !a; i++)
            for (size_t j = i + 1; j < te.size(); j++)
                if (te[i].name.size() == te[j].name.size()) {
                    a = &te[i];
                    b2 = &te[j];
                    break;
                }
        assert_non_null(a);
        const std::string needle = "tensor '" + a->name + "' appears twice";
        expect_reject(patched([&](Bytes &b) { std::memcpy(b.data() + b2->name_len_at + 2, a->name.data(), a->name.size()); }),
                      GPT_ERR_FORMAT, needle.c_str(), "duplicate tensor name");
    }
}

// Shapes: a zero dimension, products overflowing 2^64, sizes that disagree.
void test_reject_table_shape(void **) {
    const Damage d("reject_table_shape");
    const auto &te = d.te;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const TensorPos &t0 = te[0];
    const std::string n0 = t0.name;
    assert_int_equal(t0.ndim, 2);
    const std::string shape0 = "tensor '" + n0 + "' has an invalid shape";
    expect_reject(patched([&](Bytes &b) { put64(b, t0.dims_at, 0); }), GPT_ERR_FORMAT, (shape0 + " (dimension 0 is 0)").c_str(),
                  "zero dimension");
    expect_reject(patched([&](Bytes &b) { put64(b, t0.dims_at + 8, 0); }), GPT_ERR_FORMAT, (shape0 + " (dimension 1 is 0)").c_str(),
                  "zero second dimension");
    expect_reject(patched([&](Bytes &b) {
                      put64(b, t0.dims_at, 1ull << 32);
                      put64(b, t0.dims_at + 8, 1ull << 32);
                  }),
                  GPT_ERR_FORMAT, shape0.c_str(), "dims 2^32 x 2^32");
    expect_reject(patched([&](Bytes &b) { put64(b, t0.dims_at, ~0ull); }), GPT_ERR_FORMAT, (shape0 + " (dimension 1").c_str(),
                  "dim 2^64-1");
}

// Byte counts that overflow or disagree with the shape, and consistent but absurd sizes.
void test_reject_table_byte_count(void **) {
    const Damage d("reject_table_byte_count");
    const auto &te = d.te;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const TensorPos &t0 = te[0];
    const std::string n0 = t0.name;
    assert_int_equal(t0.ndim, 2);
    const std::string shape0 = "tensor '" + n0 + "' has an invalid shape";
    const std::string stores = "tensor '" + n0 + "' stores";
    expect_reject(patched([&](Bytes &b) {
                      put64(b, t0.dims_at, 1ull << 62); // 2^62 x 16 f32: the byte count overflows
                  }),
                  GPT_ERR_FORMAT, shape0.c_str(), "numel 2^66");
    expect_reject(patched([&](Bytes &b) {
                      put64(b, t0.dims_at, 1ull << 58); // numel 2^62, bytes 2^64: overflows in the dtype size
                  }),
                  GPT_ERR_FORMAT, stores.c_str(), "byte count 2^64");
    expect_reject(patched([&](Bytes &b) { put64(b, t0.nbytes_at, t0.nbytes + 4); }), GPT_ERR_FORMAT, stores.c_str(),
                  "nbytes one element more");
    expect_reject(patched([&](Bytes &b) { put64(b, t0.nbytes_at, ~0ull); }), GPT_ERR_FORMAT, stores.c_str(), "nbytes 2^64-1");
    expect_reject(patched([&](Bytes &b) { put64(b, t0.nbytes_at, 0); }), GPT_ERR_FORMAT, stores.c_str(), "nbytes 0");
    // A consistent but absurd size: 2^31 x 16 f32 = 2^37 bytes (and 2^32 x 2^27 = 2^61).
    const std::string outside0 = "tensor '" + n0 + "' data [";
    expect_reject(patched([&](Bytes &b) {
                      put64(b, t0.dims_at, 1ull << 31);
                      put64(b, t0.nbytes_at, (1ull << 31) * 16 * 4);
                  }),
                  GPT_ERR_FORMAT, outside0.c_str(), "consistent 2^37-byte tensor");
    expect_reject(patched([&](Bytes &b) {
                      put64(b, t0.dims_at, 1ull << 32);
                      put64(b, t0.dims_at + 8, 1ull << 27);
                      put64(b, t0.nbytes_at, 1ull << 61);
                  }),
                  GPT_ERR_FORMAT, outside0.c_str(), "consistent 2^61-byte tensor");
}

// Offsets: misaligned, past the end, wrapping around 2^64, overlapping.
void test_reject_table_offsets(void **) {
    const Damage d("reject_table_offsets");
    const Bytes &good = d.good;
    const auto &te = d.te;
    auto patched = [&](const std::function<void(Bytes &)> &f) { return d.patched(f); };
    const TensorPos &t0 = te[0], &t1 = te[1], &last = te.back();
    const std::string n0 = t0.name, n1 = t1.name;
    assert_true(t0.nbytes > 512); // tok_emb: partial overlap below needs it
    const std::string lastn = "tensor '" + last.name + "' data [";
    for (uint64_t add : {1ull, 4ull, 128ull, 255ull}) {
        expect_reject(patched([&](Bytes &b) { put64(b, last.rel_at, last.rel + add); }), GPT_ERR_FORMAT,
                      (lastn + std::to_string(last.rel + add)).c_str(), "offset misaligned by " + std::to_string(add));
    }
    expect_reject(patched([&](Bytes &b) { put64(b, last.rel_at, last.rel + 256); }), GPT_ERR_FORMAT, lastn.c_str(),
                  "last tensor shifted past the end");
    expect_reject(patched([&](Bytes &b) { put64(b, last.rel_at, (good.size() + 255) / 256 * 256); }), GPT_ERR_FORMAT,
                  lastn.c_str(), "offset past the end");
    expect_reject(patched([&](Bytes &b) { put64(b, last.rel_at, ~0ull - 255); }), GPT_ERR_FORMAT, lastn.c_str(),
                  "offset 2^64-256 (wraps)");
    expect_reject(patched([&](Bytes &b) { put64(b, last.rel_at, 1ull << 32); }), GPT_ERR_FORMAT, lastn.c_str(), "offset 2^32");
    expect_reject(patched([&](Bytes &b) { put64(b, t1.rel_at, t0.rel); }), GPT_ERR_FORMAT, "overlap", "same offset");
    expect_reject(patched([&](Bytes &b) { put64(b, t1.rel_at, t0.rel + 256); }), GPT_ERR_FORMAT,
                  ("tensors '" + n0 + "' and '" + n1 + "' overlap").c_str(), "partial overlap");
}

// ------------------------------------------------------------------ model-level checks

// Config fields out of range, missing or of the wrong type (each case named).
void test_reject_model_config(void **) {
    auto rng = rng_for("reject_model_config");
    const gpt::ModelConfig c = small_config();
    expect_load_ok(model_file(rng, c, {}), "base model");
    namespace k = gpt::keys;
    const MetaValue u0 = MetaValue::of_u32(0), u2 = MetaValue::of_u32(2), u3 = MetaValue::of_u32(3),
                    u7 = MetaValue::of_u32(7), big = MetaValue::of_u32(0xffffffffu), big2 = MetaValue::of_u32(1u << 31),
                    f0 = MetaValue::of_f32(0.0f), fneg = MetaValue::of_f32(-1e-5f), fnan = MetaValue::of_f32(NAN),
                    finf = MetaValue::of_f32(INFINITY), fbig = MetaValue::of_f32(2.0f), mamba = MetaValue::of_str("mamba"),
                    u64 = MetaValue::of_u64(16), s16 = MetaValue::of_str("16"), bos = MetaValue::of_i32(37),
                    eos = MetaValue::of_i32(-2), tokfoo = MetaValue::of_str("foo");
    // Windows and Gemma's fields (the base model has 1 layer).
    const MetaValue u5 = MetaValue::of_u32(5), flags_2 = MetaValue::of_i32s({1, 0}),
                    flag_two = MetaValue::of_i32s({2}), flag_one = MetaValue::of_i32s({1}), gemma3 = MetaValue::of_str("gemma3"),
                    gemma2 = MetaValue::of_str("gemma2"), linear = MetaValue::of_str("linear"), llama3 = MetaValue::of_str("llama3"),
                    fone = MetaValue::of_f32(1.0f);
    struct Case {
        const char *what;
        std::vector<std::pair<std::string, const MetaValue *>> edits;
        gpt_status want;
        const char *needle;
    } cases[] = {
        {"n_heads 3, n_kv_heads 2", {{k::kNHeads, &u3}, {k::kNKvHeads, &u2}}, GPT_ERR_FORMAT,
         "n_heads (3) is not a multiple of n_kv_heads (2)"},
        {"n_kv_heads > n_heads", {{k::kNKvHeads, &u3}}, GPT_ERR_FORMAT, "model.n_kv_heads is 3, outside [1, 2]"},
        {"n_layers 0", {{k::kNLayers, &u0}}, GPT_ERR_FORMAT, "model.n_layers is 0, outside"},
        {"d_model 0", {{k::kDModel, &u0}}, GPT_ERR_FORMAT, "model.d_model is 0, outside"},
        {"n_heads 0", {{k::kNHeads, &u0}}, GPT_ERR_FORMAT, "model.n_heads is 0, outside"},
        {"n_kv_heads 0", {{k::kNKvHeads, &u0}}, GPT_ERR_FORMAT, "model.n_kv_heads is 0, outside"},
        {"head_dim 0", {{k::kHeadDim, &u0}}, GPT_ERR_FORMAT, "model.head_dim is 0, outside"},
        {"d_ff 0", {{k::kDFF, &u0}}, GPT_ERR_FORMAT, "model.d_ff is 0, outside"},
        {"vocab_size 0", {{k::kVocabSize, &u0}}, GPT_ERR_FORMAT, "model.vocab_size is 0, outside"},
        {"context_length 0", {{k::kContextLength, &u0}}, GPT_ERR_FORMAT, "model.context_length is 0, outside"},
        {"d_model 2^32-1", {{k::kDModel, &big}}, GPT_ERR_FORMAT, "model.d_model is 4294967295, outside"},
        {"n_layers 2^31", {{k::kNLayers, &big2}}, GPT_ERR_FORMAT, "model.n_layers is 2147483648, outside"},
        {"vocab 2^32-1", {{k::kVocabSize, &big}}, GPT_ERR_FORMAT, "model.vocab_size is 4294967295, outside"},
        {"d_ff 2^32-1", {{k::kDFF, &big}}, GPT_ERR_FORMAT, "model.d_ff is 4294967295, outside"},
        {"context 2^31", {{k::kContextLength, &big2}}, GPT_ERR_FORMAT, "model.context_length is 2147483648, outside"},
        {"odd head_dim (rope)", {{k::kHeadDim, &u7}}, GPT_ERR_FORMAT, "head_dim 7 must be even"},
        {"norm_eps 0", {{k::kNormEps, &f0}}, GPT_ERR_FORMAT, "norm_eps 0 is not"},
        {"norm_eps < 0", {{k::kNormEps, &fneg}}, GPT_ERR_FORMAT, "norm_eps -1e-05 is not"},
        {"norm_eps NaN", {{k::kNormEps, &fnan}}, GPT_ERR_FORMAT, "norm_eps"},
        {"norm_eps inf", {{k::kNormEps, &finf}}, GPT_ERR_FORMAT, "norm_eps"},
        {"norm_eps 2", {{k::kNormEps, &fbig}}, GPT_ERR_FORMAT, "norm_eps 2 is not"},
        {"rope_theta 0", {{k::kRopeTheta, &f0}}, GPT_ERR_FORMAT, "rope_theta 0 is not positive"},
        {"rope_theta NaN", {{k::kRopeTheta, &fnan}}, GPT_ERR_FORMAT, "rope_theta"},
        {"rope_theta -1e-5", {{k::kRopeTheta, &fneg}}, GPT_ERR_FORMAT, "rope_theta"},
        {"unknown architecture", {{k::kArchitecture, &mamba}}, GPT_ERR_UNSUPPORTED, "unknown architecture 'mamba'"},
        {"architecture missing", {{k::kArchitecture, nullptr}}, GPT_ERR_FORMAT, "'general.architecture' (str) is missing"},
        {"d_ff missing", {{k::kDFF, nullptr}}, GPT_ERR_FORMAT, "'model.d_ff' (u32) is missing"},
        {"norm_eps missing", {{k::kNormEps, nullptr}}, GPT_ERR_FORMAT, "'model.norm_eps' (f32) is missing"},
        {"rope_theta missing", {{k::kRopeTheta, nullptr}}, GPT_ERR_FORMAT, "'model.rope_theta' (f32) is missing"},
        {"d_model as u64", {{k::kDModel, &u64}}, GPT_ERR_FORMAT, "'model.d_model' has type u64, expected u32"},
        {"d_model as str", {{k::kDModel, &s16}}, GPT_ERR_FORMAT, "'model.d_model' has type str, expected u32"},
        {"architecture as u32", {{k::kArchitecture, &u3}}, GPT_ERR_FORMAT, "'general.architecture' has type u32, expected str"},
        {"bos_id = vocab", {{k::kTokBos, &bos}}, GPT_ERR_FORMAT, "bos_id 37 out of range"},
        {"eos_id -2", {{k::kTokEos, &eos}}, GPT_ERR_FORMAT, "eos_id -2 out of range"},
        {"unknown tokenizer", {{k::kTokModel, &tokfoo}}, GPT_ERR_UNSUPPORTED, "unknown tokenizer.model 'foo'"},
        {"window_layers without sliding_window", {{k::kWindowLayers, &flag_one}}, GPT_ERR_FORMAT,
         "model.window_layers is set without model.sliding_window"},
        {"window_layers of 2 for 1 layer", {{k::kSlidingWindow, &u5}, {k::kWindowLayers, &flags_2}}, GPT_ERR_FORMAT,
         "model.window_layers holds 2 flags for 1 layers"},
        {"window flag 2", {{k::kSlidingWindow, &u5}, {k::kWindowLayers, &flag_two}}, GPT_ERR_FORMAT, "holds 2; each flag is 0 or 1"},
        {"window_layers as u32", {{k::kSlidingWindow, &u5}, {k::kWindowLayers, &u3}}, GPT_ERR_FORMAT, "model.window_layers"},
        {"attn_softcap NaN", {{k::kAttnSoftcap, &fnan}}, GPT_ERR_FORMAT, "model.attn_softcap nan is not"},
        {"logit_softcap < 0", {{k::kLogitSoftcap, &fneg}}, GPT_ERR_FORMAT, "model.logit_softcap -1e-05 is not"},
        {"query_pre_attn_scalar inf", {{k::kQueryPreAttnScalar, &finf}}, GPT_ERR_FORMAT, "model.query_pre_attn_scalar inf"},
        {"linear RoPE scaling on gemma2", {{k::kArchitecture, &gemma2}, {k::kRopeScalingType, &linear}, {k::kRopeScalingFactor, &fbig}},
         GPT_ERR_UNSUPPORTED, "model.rope_scaling.type 'linear' on gemma2"},
        {"llama3 RoPE scaling on gemma3",
         {{k::kArchitecture, &gemma3}, {k::kRopeThetaLocal, &fbig}, {k::kRopeScalingType, &llama3}, {k::kRopeScalingFactor, &fbig},
          {k::kRopeScalingLowFreq, &fone}, {k::kRopeScalingHighFreq, &fbig}, {k::kRopeScalingOrigContext, &u5}},
         GPT_ERR_UNSUPPORTED, "model.rope_scaling.type 'llama3' on gemma3"},
        {"gemma3 without rope_theta_local", {{k::kArchitecture, &gemma3}}, GPT_ERR_FORMAT, "'model.rope_theta_local' (f32) is missing"},
        {"gemma3 rope_theta_local 0", {{k::kArchitecture, &gemma3}, {k::kRopeThetaLocal, &f0}}, GPT_ERR_FORMAT,
         "model.rope_theta_local 0 is not positive"},
    };
    for (const Case &cs : cases) expect_model_reject(model_file(rng, c, cs.edits), cs.want, cs.needle, cs.what);
}

// GPT-2 constraints: no GQA, head_dim * n_heads == d_model.
void test_reject_gpt2_config(void **) {
    auto rng = rng_for("reject_gpt2_config");
    namespace k = gpt::keys;
    fixture::Spec g;
    g.arch = GPT_ARCH_GPT2;
    g.n_layers = 1, g.d_model = 16, g.n_heads = 2, g.d_ff = 24, g.vocab_size = 37, g.context_length = 16;
    const gpt::ModelConfig gc = fixture::config_of(g);
    expect_load_ok(model_file(rng, gc, {}), "base gpt2 model");
    const MetaValue u1 = MetaValue::of_u32(1), u4 = MetaValue::of_u32(4);
    expect_model_reject(model_file(rng, gc, {{k::kNKvHeads, &u1}}), GPT_ERR_FORMAT, "gpt2 needs n_kv_heads == n_heads",
                        "gpt2 with GQA");
    expect_model_reject(model_file(rng, gc, {{k::kHeadDim, &u4}}), GPT_ERR_FORMAT, "head_dim * n_heads == d_model",
                        "gpt2 head_dim mismatch");
}

// Shape mismatch: every tensor in turn gets one more row.
void test_reject_model_tensor_shapes(void **) {
    auto rng = rng_for("reject_model_tensor_shapes");
    const gpt::ModelConfig c = small_config();
    for (const gpt::TensorSlot &s : gpt::tensor_table(c)) {
        const std::string name = s.name;
        const Bytes b = model_file(rng, c, {}, [&](gpt::TensorSlot &slot) {
            if (slot.name == name) slot.shape[0] += 1;
            return true;
        });
        std::string got, want;
        for (size_t d = 0; d < s.shape.size(); d++) {
            got += (d ? ", " : "") + std::to_string(s.shape[d] + (d == 0));
            want += (d ? ", " : "") + std::to_string(s.shape[d]);
        }
        const std::string needle = "tensor '" + name + "' has shape [" + got + "], the config needs [" + want + "]";
        expect_model_reject(b, GPT_ERR_FORMAT, needle.c_str(), "shape of " + name);
    }
}

// Every tensor in turn missing.
void test_reject_model_missing_tensors(void **) {
    auto rng = rng_for("reject_model_missing_tensors");
    const gpt::ModelConfig c = small_config();
    for (const gpt::TensorSlot &s : gpt::tensor_table(c)) {
        const std::string name = s.name;
        const Bytes m = model_file(rng, c, {}, [&](gpt::TensorSlot &slot) { return slot.name != name; });
        expect_model_reject(m, GPT_ERR_FORMAT, ("tensor '" + name + "' is missing").c_str(), "missing " + name);
    }
}

// A matrix stored as a vector (rank mismatch).
void test_reject_model_tensor_rank(void **) {
    auto rng = rng_for("reject_model_tensor_rank");
    const gpt::ModelConfig c = small_config();
    const Bytes r = model_file(rng, c, {}, [&](gpt::TensorSlot &slot) {
        if (slot.name == "blk.0.attn_out.weight") slot.shape = {slot.shape[0] * slot.shape[1]};
        return true;
    });
    expect_model_reject(r, GPT_ERR_FORMAT, "tensor 'blk.0.attn_out.weight' has shape [", "rank mismatch");
}

// Unexpected extras: an unknown tensor, a second layer's tensor.
void test_reject_model_extra_tensors(void **) {
    auto rng = rng_for("reject_model_extra_tensors");
    const gpt::ModelConfig c = small_config();
    const float one = 1.0f;
    expect_model_reject(model_file(rng, c, {}, nullptr, nullptr,
                                   [&](Writer &w) { w.add_tensor("extra.weight", DType::F32, {1}, &one, 4); }),
                        GPT_ERR_FORMAT, "unexpected tensor 'extra.weight' for a llama model", "extra tensor");
    gpt::ModelConfig two = c;
    two.n_layers = 2;
    expect_model_reject(model_file(rng, c, {}, nullptr, &two), GPT_ERR_FORMAT, "unexpected tensor 'blk.1.", "extra layer");
}

// Names from the file reach messages escaped: a tensor named with terminal control bytes
// (clear screen, a newline that would forge a log line) and invalid UTF-8 is reported with
// \xNN escapes and no raw control byte, through every load path (regression: gpt_last_error()
// carried the raw bytes to terminals and logs).
void test_reject_names_printed_escaped(void **) {
    auto rng = rng_for("reject_names_printed_escaped");
    const gpt::ModelConfig c = small_config();
    const float one = 1.0f;
    const std::string evil = "evil\x1b[2J\nFAKE LOG\xc2\x9b\x9b\xff\xc3\xa9.weight"; // U+009B (CSI), lone bytes, é
    const Bytes file = model_file(rng, c, {}, nullptr, nullptr, [&](Writer &w) { w.add_tensor(evil, DType::F32, {1}, &one, 4); });
    expect_model_reject(file, GPT_ERR_FORMAT, "unexpected tensor 'evil\\x1b[2J\\x0aFAKE LOG\\xc2\\x9b\\x9b\\xff\xc3\xa9.weight'",
                        "control bytes in a tensor name");
    for (const char *p = gpt_last_error(); *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) fail_msg("raw control byte 0x%02x in: %s", (unsigned char)*p, gpt_last_error());
}

// An lm_head with a tied head; none with an untied one.
void test_reject_model_head(void **) {
    auto rng = rng_for("reject_model_head");
    const gpt::ModelConfig c = small_config();
    gpt::ModelConfig untied = c, tied = c;
    untied.tied_head = false;
    tied.tied_head = true;
    expect_model_reject(model_file(rng, tied, {}, nullptr, &untied), GPT_ERR_FORMAT, "unexpected tensor 'lm_head.weight'",
                        "lm_head with a tied head");
    expect_model_reject(model_file(rng, untied, {}, nullptr, &tied), GPT_ERR_FORMAT, "tensor 'lm_head.weight' is missing",
                        "no lm_head, untied");
}

// A qkv bias the config does not enable; none where it does.
void test_reject_model_qkv_bias(void **) {
    auto rng = rng_for("reject_model_qkv_bias");
    const gpt::ModelConfig c = small_config();
    gpt::ModelConfig bias = c;
    bias.qkv_bias = true;
    expect_model_reject(model_file(rng, c, {}, nullptr, &bias), GPT_ERR_FORMAT, "unexpected tensor 'blk.0.attn_qkv.bias'",
                        "qkv bias not in the config");
    expect_model_reject(model_file(rng, bias, {}, nullptr, &c), GPT_ERR_FORMAT, "tensor 'blk.0.attn_qkv.bias' is missing",
                        "qkv bias missing");
}

// A gpt2 file with llama tensors.
void test_reject_gpt2_with_llama_tensors(void **) {
    auto rng = rng_for("reject_gpt2_with_llama_tensors");
    const gpt::ModelConfig c = small_config();
    gpt::ModelConfig g2 = c;
    g2.arch = GPT_ARCH_GPT2;
    g2.n_kv_heads = g2.n_heads;
    g2.head_dim = g2.d_model / g2.n_heads;
    g2.qkv_bias = true;
    g2.rope_theta = 0;
    gpt::ModelConfig l2 = g2;
    l2.arch = GPT_ARCH_LLAMA;
    l2.rope_theta = 10000;
    expect_model_reject(model_file(rng, g2, {}, nullptr, &l2), GPT_ERR_FORMAT, "tensor 'pos_emb.weight' is missing",
                        "gpt2 config, llama tensors");
}

// ---------------------------------------------------------------- load paths (positive)

std::vector<float> logits_of(gpt_model *m, const std::vector<int32_t> &toks, uint32_t vocab) {
    gpt_ctx_params cp;
    gpt_ctx_params_init(&cp);
    cp.n_threads = 1;
    gpt_ctx *ctx = nullptr;
    assert_int_equal(gpt_ctx_create(m, &cp, &ctx), GPT_OK);
    std::vector<float> out(toks.size() * vocab);
    reference::poison(out.data(), out.size());
    assert_int_equal(gpt_forward(ctx, toks.data(), 1, (uint32_t)toks.size(), GPT_FORWARD_ALL_LOGITS, out.data()), GPT_OK);
    gpt_ctx_free(ctx);
    return out;
}

void expect_same(const std::vector<float> &a, const std::vector<float> &b, const char *what) {
    assert_int_equal(a.size(), b.size());
    for (size_t i = 0; i < a.size(); i++)
        if (!(a[i] == b[i])) fail_msg("%s: logit %zu is %.9g, expected %.9g", what, i, a[i], b[i]);
}

// The load-path tests' model in one dtype (a small llama), and its tokens.
fixture::Model load_path_model(DType dt, std::mt19937_64 &rng) {
    fixture::Spec s;
    s.arch = GPT_ARCH_LLAMA;
    s.n_layers = 1, s.d_model = 16, s.n_heads = 2, s.n_kv_heads = 1, s.head_dim = 8, s.d_ff = 24, s.vocab_size = 37;
    s.context_length = 16, s.dtype = dt, s.seed = rng();
    return fixture::make(s);
}
const std::vector<int32_t> kLoadPathTokens = {3, 1, 4, 1, 5, 9, 2, 6};

// The logits of the model loaded from a file by mmap (what every other path must give).
std::vector<float> mmap_logits(const fixture::Model &fx) {
    TempFile tmp(fx.file);
    gpt_model_params p = cpu_params();
    gpt_model *mapped = nullptr;
    assert_int_equal(gpt_model_load(tmp.path.c_str(), &p, &mapped), GPT_OK);
    const auto want = logits_of(mapped, kLoadPathTokens, 37);
    gpt_model_free(mapped);
    return want;
}

// mmap agrees with the reference (and reports the file's dtype and size); read(), with and
// without checksums, loads the same model.
void test_load_mmap_and_read(void **) {
    auto rng = rng_for("load_mmap_and_read");
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        const fixture::Model fx = load_path_model(dt, rng);
        const std::vector<int32_t> &toks = kLoadPathTokens;
        const std::vector<double> ref = reference::forward(fx, toks);
        TempFile tmp(fx.file);

        gpt_model_params p = cpu_params();
        gpt_model *mapped = nullptr;
        assert_int_equal(gpt_model_load(tmp.path.c_str(), &p, &mapped), GPT_OK);
        const auto want = logits_of(mapped, toks, 37);
        if (!reference::compare(want.data(), ref.data(), toks.size(), 37).within(1e-4, "mmap load vs reference"))
            fail_msg("mmap-loaded model disagrees with the reference");
        gpt_model_info info;
        info.struct_size = sizeof info;
        assert_int_equal(gpt_model_get_info(mapped, &info), GPT_OK);
        assert_int_equal(info.file_dtype, (uint32_t)dt);
        assert_int_equal(info.host_bytes, fx.file.size());
        gpt_model_free(mapped);

        p.flags = GPT_MODEL_NO_MMAP;
        gpt_model *read = nullptr;
        assert_int_equal(gpt_model_load(tmp.path.c_str(), &p, &read), GPT_OK);
        expect_same(logits_of(read, toks, 37), want, "read() load");
        gpt_model_free(read);

        p.flags = GPT_MODEL_SKIP_CHECKSUMS | GPT_MODEL_NO_MMAP;
        assert_int_equal(gpt_model_load(tmp.path.c_str(), &p, &read), GPT_OK);
        expect_same(logits_of(read, toks, 37), want, "read() load, checksums skipped");
        gpt_model_free(read);
    }
}

// Misaligned buffers are copied: the caller may scribble over and free them.
// Loads fx from a buffer `misalign` bytes off 64-byte alignment, overwrites the buffer with
// `fill` and frees it: the logits must still be `want` (the model copied the bytes).
void expect_load_independent_of_buffer(const fixture::Model &fx, const std::vector<float> &want, size_t misalign,
                                       uint32_t flags, uint8_t fill, const char *what) {
    gpt_model_params p = cpu_params();
    p.flags = flags;
    auto *buf = new Buffer(fx.file, misalign);
    gpt_model *m = nullptr;
    assert_int_equal(gpt_model_load_from_memory(buf->data, buf->size, &p, &m), GPT_OK);
    std::memset(buf->data, fill, buf->size);
    delete buf;
    expect_same(logits_of(m, kLoadPathTokens, 37), want, what);
    gpt_model_free(m);
}

void test_load_misaligned_buffers(void **) {
    auto rng = rng_for("load_misaligned_buffers");
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        const fixture::Model fx = load_path_model(dt, rng);
        const auto want = mmap_logits(fx);
        for (size_t mis : {1ul, 2ul, 4ul, 8ul, 16ul, 32ul, 63ul})
            for (uint32_t flags : {0u, (uint32_t)GPT_MODEL_COPY_BUFFER})
                expect_load_independent_of_buffer(fx, want, mis, flags, 0xff, "misaligned buffer");
    }
}

// An aligned buffer with COPY_BUFFER: independent of the caller's bytes.
void test_load_copy_buffer(void **) {
    auto rng = rng_for("load_copy_buffer");
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        const fixture::Model fx = load_path_model(dt, rng);
        expect_load_independent_of_buffer(fx, mmap_logits(fx), 0, GPT_MODEL_COPY_BUFFER, 0, "COPY_BUFFER");
    }
}

// An aligned buffer without COPY_BUFFER is borrowed: changing the embedding of a token the
// caller owns changes the logits (the documented contract: keep it unchanged).
void test_load_borrowed_buffer(void **) {
    auto rng = rng_for("load_borrowed_buffer");
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
        const fixture::Model fx = load_path_model(dt, rng);
        const std::vector<int32_t> &toks = kLoadPathTokens;
        const auto want = mmap_logits(fx);
        gpt_model_params p = cpu_params();
        Buffer buf(fx.file, 0);
        p.flags = 0;
        gpt_model *m = nullptr;
        assert_int_equal(gpt_model_load_from_memory(buf.data, buf.size, &p, &m), GPT_OK);
        expect_same(logits_of(m, toks, 37), want, "borrowed buffer");
        const Header h = header_of(fx.file);
        const auto entries = table_entries(fx.file);
        const TensorPos &emb = table_entry(entries, "tok_emb.weight");
        const size_t row_bytes = 16 * (dt == DType::F32 ? 4 : 2);
        std::memset(buf.data + h.data_off + emb.rel + toks[0] * row_bytes, 0, row_bytes);
        const auto changed = logits_of(m, toks, 37);
        bool differs = false;
        for (size_t i = 0; i < changed.size(); i++) differs |= changed[i] != want[i];
        assert_true(differs);
        gpt_model_free(m);
    }
}

void test_load_io_errors(void **) {
    gpt_model_params p = cpu_params();
    gpt_model *m = reinterpret_cast<gpt_model *>(0x1);
    assert_int_equal(gpt_model_load("/nonexistent/dir/model.gpt", &p, &m), GPT_ERR_IO);
    assert_null(m);
    assert_non_null(std::strstr(gpt_last_error(), "/nonexistent/dir/model.gpt: cannot open"));
    m = reinterpret_cast<gpt_model *>(0x1);
    assert_int_equal(gpt_model_load("/tmp", &p, &m), GPT_ERR_IO);
    assert_null(m);
    assert_non_null(std::strstr(gpt_last_error(), "/tmp: is a directory, not a regular file"));
    Caught c = catch_error([] { WeightFile::open("/nonexistent.gpt", ReadOptions()); });
    assert_true(c.thrown && c.status == GPT_ERR_IO);
    c = catch_error([] { WeightFile::from_memory(nullptr, 128, false, ReadOptions()); });
    assert_true(c.thrown && c.status == GPT_ERR_INVALID_ARG);
}

// Checksums of large tensors are computed in 16 MiB pieces on several threads and combined:
// a 40 MiB tensor between two small ones. A damaged byte in any piece is found (CHECKSUM
// naming the tensor); a NaN deep in the third piece is reported at its exact element; with
// two tensors damaged the first in file order is named, whatever the threads' timing.
void test_checksums_in_pieces(void **) {
    namespace fd = format_decoder;
    auto rng = rng_for("checksums_in_pieces");
    const uint64_t big = 20u << 20; // f16 elements: 40 MiB
    Writer w;
    std::vector<uint16_t> values(big);
    for (auto &v : values) v = (uint16_t)(0x3000 + rng() % 0x0c00); // finite halves
    const std::vector<float> small = {1.0f, 2.0f, 3.0f};
    w.add_tensor("a", DType::F32, {3}, small.data(), 12);
    w.add_tensor("big", DType::F16, {big}, values.data(), 2 * big);
    w.add_tensor("z", DType::F32, {3}, small.data(), 12);
    const Bytes good = w.write_memory();
    const auto table = fd::table_entries(good);
    const fd::Header h = fd::header_of(good);
    const fd::TensorPos &tb = fd::table_entry(table, "big"), &tz = fd::table_entry(table, "z");
    ReadOptions ro;
    ro.check_finite = true;
    auto verify = [&](const Bytes &b) { return catch_error([&] { WeightFile::from_memory(b.data(), b.size(), false, ro); }); };
    assert_false(verify(good).thrown);
    for (uint64_t at : std::initializer_list<uint64_t>{5, (16ull << 20) + 3, (32ull << 20) + 77, 2 * big - 1}) {
        Bytes b = good;
        b[h.data_off + tb.rel + at] ^= 0x01;
        const Caught c = verify(b);
        if (!c.thrown || c.status != GPT_ERR_CHECKSUM || c.message.find("tensor 'big'") == std::string::npos)
            fail_msg("byte %llu damaged: %s", (unsigned long long)at, c.message.c_str());
    }
    Bytes b = good;
    const uint64_t element = (33ull << 20) / 2 + 12345; // in the third piece
    fd::put16(b, h.data_off + tb.rel + 2 * element, 0x7e00); // f16 NaN
    fd::fix_all_crcs(b);
    Caught c = verify(b);
    char want[96];
    std::snprintf(want, sizeof want, "tensor 'big' holds a non-finite value (NaN at element %llu)", (unsigned long long)element);
    if (!c.thrown || c.status != GPT_ERR_FORMAT || c.message.find(want) == std::string::npos)
        fail_msg("NaN at %llu: %s", (unsigned long long)element, c.message.c_str());
    b = good;
    b[h.data_off + tz.rel] ^= 0x01;
    b[h.data_off + tb.rel + (24ull << 20)] ^= 0x01;
    c = verify(b);
    if (!c.thrown || c.message.find("tensor 'big'") == std::string::npos) fail_msg("two damaged: %s", c.message.c_str());
}

// A FIFO (or a device) as the model path: refused at once with GPT_ERR_IO naming what it is,
// with and without mapping (regression: open() waited for a writer forever, in
// gpt_model_load, `gpt info` and `gpt generate`). Each load runs in a child process under a
// 5-second alarm, so a blocking open fails the test instead of hanging it.
void test_load_refuses_fifo_and_devices(void **) {
    const std::string dir = files::make_temp_dir();
    const std::string fifo = dir + "/model.gpt";
    assert_int_equal(mkfifo(fifo.c_str(), 0600), 0);
    struct Case {
        std::string path;
        const char *kind;
        uint32_t flags;
    } cases[] = {{fifo, "is a FIFO", 0}, {fifo, "is a FIFO", GPT_MODEL_NO_MMAP}, {"/dev/null", "is a character device", 0},
                 {"/dev/zero", "is a character device", GPT_MODEL_NO_MMAP}};
    for (const Case &c : cases) {
        std::fflush(stdout);
        const pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            alarm(5);
            gpt_model_params p = cpu_params();
            p.flags = c.flags;
            gpt_model *m = nullptr;
            const gpt_status st = gpt_model_load(c.path.c_str(), &p, &m);
            const bool ok = st == GPT_ERR_IO && !m && std::strstr(gpt_last_error(), c.path.c_str()) &&
                            std::strstr(gpt_last_error(), c.kind);
            if (!ok) std::fprintf(stderr, "%s: %s %s\n", c.path.c_str(), gpt_status_str(st), gpt_last_error());
            _exit(ok ? 0 : 1);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status))
            fail_msg("%s (flags 0x%x): the load blocked (killed by signal %d)", c.path.c_str(), c.flags, WTERMSIG(status));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("%s (flags 0x%x): not refused as %s", c.path.c_str(), c.flags, c.kind);
    }
    files::remove_tree(dir);
}


// ------------------------------------------------------------------------ quantized tensors

// A loadable llama file with quantized matrices, group 32: q4 everywhere but ffn_down
// ([64, 96], q8), so both quantized dtypes and a 96-column matrix are present. Norms stay f32.
struct QuantFile {
    Bytes good;
    std::vector<TensorPos> te;
    QuantFile() {
        std::mt19937_64 rng(reference::sub_seed("quant_file"));
        fixture::Spec s;
        s.arch = GPT_ARCH_LLAMA;
        s.n_layers = 1, s.d_model = 64, s.n_heads = 2, s.n_kv_heads = 1, s.head_dim = 32, s.d_ff = 96, s.vocab_size = 37;
        s.context_length = 16;
        const gpt::ModelConfig c = fixture::config_of(s);
        Writer w;
        c.to_metadata(w.metadata());
        std::normal_distribution<float> nd(0.0f, 0.5f);
        for (const gpt::TensorSlot &slot : gpt::tensor_table(c)) {
            uint64_t n = 1;
            for (uint64_t d : slot.shape) n *= d;
            std::vector<float> v(n);
            for (float &x : v) x = nd(rng);
            if (slot.shape.size() == 1) {
                w.add_tensor(slot.name, DType::F32, slot.shape, v.data(), n * 4);
                continue;
            }
            const DType t = slot.name.find("ffn_down") != std::string::npos ? DType::Q8 : DType::Q4;
            uint64_t nbytes = 0;
            assert_true(gpt::tensor_bytes(t, n, slot.shape[1], 32, &nbytes));
            auto b = std::make_shared<Bytes>(nbytes);
            gpt::quantize_matrix(v.data(), slot.shape[0], slot.shape[1], t, 32, b->data(), slot.name);
            w.add_quantized(slot.name, t, slot.shape, 32, [b](uint8_t *dst, uint64_t k) { std::memcpy(dst, b->data(), k); });
        }
        good = w.write_memory();
        te = table_entries(good);
    }
    const TensorPos &first(uint8_t dtype) const {
        for (const TensorPos &t : te)
            if (t.dtype == dtype) return t;
        fail_msg("no tensor of dtype %u", dtype);
        return te[0];
    }
    Bytes patched(const std::function<void(Bytes &)> &f, bool tensor_crcs = false) const {
        Bytes b = good;
        f(b);
        if (tensor_crcs) fix_all_crcs(b);
        else fix_crcs(b);
        return b;
    }
};

// The table entry of a quantized tensor, from the spec: dtype 4/5, the group in the u16,
// nbytes = integers + 2 bytes per group; the file loads and reports q4.
void test_quantized_layout(void **) {
    const QuantFile q;
    expect_load_ok(q.good, "quantized file");
    size_t n_q8 = 0, n_q4 = 0;
    for (const TensorPos &t : q.te) {
        if (t.ndim == 1) {
            assert_int_equal(t.dtype, 1);
            assert_int_equal(get16(q.good, t.reserved_at), 0);
            continue;
        }
        assert_true(t.dtype == 4 || t.dtype == 5);
        (t.dtype == 4 ? n_q8 : n_q4)++;
        assert_int_equal(get16(q.good, t.reserved_at), 32);
        const uint64_t ints = t.dtype == 4 ? t.dims[0] * t.dims[1] : t.dims[0] * t.dims[1] / 2;
        assert_int_equal(t.nbytes, ints + 2 * t.dims[0] * (t.dims[1] / 32));
    }
    assert_int_equal(n_q8, 1);
    assert_int_equal(n_q4, 5); // tok_emb, qkv, out, gate_up, head (untied)
    gpt_model_params p = cpu_params();
    gpt_model *m = nullptr;
    Buffer aligned(q.good);
    assert_int_equal(gpt_model_load_from_memory(aligned.data, aligned.size, &p, &m), GPT_OK);
    gpt_model_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    assert_int_equal(gpt_model_get_info(m, &info), GPT_OK);
    assert_int_equal(info.file_dtype, GPT_DTYPE_Q4);
    assert_string_equal(gpt_dtype_name((int)info.file_dtype), "q4");
    assert_string_equal(gpt_dtype_name(GPT_DTYPE_Q8), "q8");
    gpt_model_free(m);
}

// Group sizes 0, outside {32, 64, 128}, or not dividing the columns; a quantized dtype on a
// vector; a group on a float tensor.
void test_reject_quantized_group(void **) {
    const QuantFile q;
    const TensorPos &t4 = q.first(5), &t8 = q.first(4);
    const std::string n4 = "tensor '" + t4.name + "' (q4, " + std::to_string(t4.dims[1]) + " columns) has group size ";
    for (uint16_t g : {0, 1, 16, 48, 256, 65535})
        expect_reject(q.patched([&](Bytes &b) { put16(b, t4.reserved_at, g); }), GPT_ERR_FORMAT, (n4 + std::to_string(g)).c_str(),
                      "q4 group " + std::to_string(g));
    // ffn_down has 96 columns: 64 is a valid size that does not divide them.
    assert_int_equal(t8.dims[1], 96);
    const std::string n8 = "tensor '" + t8.name + "' (q8, 96 columns) has group size 64";
    expect_reject(q.patched([&](Bytes &b) { put16(b, t8.reserved_at, 64); }), GPT_ERR_FORMAT, n8.c_str(), "q8 group 64 of 96");
    const TensorPos &vec = q.first(1);
    expect_reject(q.patched([&](Bytes &b) { b[vec.dtype_at] = 4; }), GPT_ERR_FORMAT,
                  ("tensor '" + vec.name + "' is q8 with 1 dimensions").c_str(), "q8 vector");
    expect_reject(q.patched([&](Bytes &b) { put16(b, vec.reserved_at, 32); }), GPT_ERR_FORMAT,
                  ("tensor '" + vec.name + "' has nonzero reserved bits").c_str(), "group on an f32 tensor");
    // A q4 tensor relabelled q8 (same group): its byte count no longer matches.
    expect_reject(q.patched([&](Bytes &b) { b[t4.dtype_at] = 4; }), GPT_ERR_FORMAT,
                  ("tensor '" + t4.name + "' stores").c_str(), "q4 read as q8");
}

// Byte counts one block short or long, and files cut inside the scale plane.
void test_reject_quantized_bytes(void **) {
    const QuantFile q;
    const TensorPos &t4 = q.first(5);
    const std::string stores = "tensor '" + t4.name + "' stores";
    for (int64_t delta : {-2, -1, 1, 2, 64})
        expect_reject(q.patched([&](Bytes &b) { put64(b, t4.nbytes_at, t4.nbytes + (uint64_t)delta); }), GPT_ERR_FORMAT,
                      stores.c_str(), "nbytes " + std::to_string(delta));
    // The last tensor (the head) cut in its scales, the header's file size made to agree.
    const TensorPos &last = q.te.back();
    const Header h = header_of(q.good);
    for (uint64_t cut : {(uint64_t)1, (uint64_t)2, (uint64_t)33}) {
        Bytes b = q.good;
        b.resize(b.size() - cut);
        put64(b, H_FILE_SIZE, b.size());
        fix_crcs(b);
        expect_reject(b, GPT_ERR_FORMAT, ("tensor '" + last.name + "' data [").c_str(), "cut " + std::to_string(cut));
    }
    (void)h;
}

// NaN or infinity in a scale is refused when a model loads (naming the tensor, row and
// group); the integers are not floats: any byte there loads.
void test_reject_quantized_nan_scale(void **) {
    const QuantFile q;
    const TensorPos &t4 = q.first(5);
    const Header h = header_of(q.good);
    const uint64_t groups = t4.dims[1] / 32, scales_at = h.data_off + t4.rel + t4.dims[0] * t4.dims[1] / 2;
    struct Case {
        uint16_t bits;
        const char *kind;
    };
    for (const Case c : {Case{0x7e00, "NaN"}, Case{0x7c00, "inf"}, Case{0xfc00, "-inf"}})
        for (uint64_t at : {(uint64_t)0, groups + 1, t4.dims[0] * groups - 1}) {
            const Bytes b = q.patched([&](Bytes &x) { put16(x, scales_at + 2 * at, c.bits); }, true);
            const std::string needle = "tensor '" + t4.name + "' holds a non-finite scale (" + c.kind + " at row " +
                                       std::to_string(at / groups) + ", group " + std::to_string(at % groups) + ")";
            gpt_model_params p = cpu_params();
            Buffer aligned(b);
            check_api([&](gpt_model **m) { return gpt_model_load_from_memory(aligned.data, aligned.size, &p, m); },
                      GPT_ERR_FORMAT, needle.c_str(), needle);
            TempFile tmp(b);
            p.flags = GPT_MODEL_NO_MMAP;
            check_api([&](gpt_model **m) { return gpt_model_load(tmp.path.c_str(), &p, m); }, GPT_ERR_FORMAT, needle.c_str(),
                      needle + " (file)");
        }
    // All-ones integer bytes (0xffff would be an f16 NaN) load.
    const Bytes ints = q.patched([&](Bytes &x) {
        for (uint64_t i = 0; i < 64; i++) x[h.data_off + t4.rel + i] = 0xff;
    }, true);
    expect_load_ok(ints, "0xff integers");
}
} // namespace

int main(void) {
    reference::test_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_hooks_linked),
        cmocka_unit_test(test_crc32_kernels_match_zlib),
        cmocka_unit_test(test_crc32_linear_time),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_round_trip_empty_file),
        cmocka_unit_test(test_minimal_entries),
        cmocka_unit_test(test_writer_rejects_bad_tensors),
        cmocka_unit_test(test_writer_rejects_short_data),
        cmocka_unit_test(test_writer_rejects_long_key),
        cmocka_unit_test(test_writer_replaces_only_with_overwrite),
        cmocka_unit_test(test_writer_failure_keeps_old_file),
        cmocka_unit_test(test_writer_missing_directory),
        cmocka_unit_test(test_reject_truncated),
        cmocka_unit_test(test_reject_appended_byte),
        cmocka_unit_test(test_reject_bad_magic),
        cmocka_unit_test(test_reject_version),
        cmocka_unit_test(test_reject_header_checksum),
        cmocka_unit_test(test_reject_section_checksums),
        cmocka_unit_test(test_reject_tensor_checksums),
        cmocka_unit_test(test_skip_checksums_keeps_section_checks),
        cmocka_unit_test(test_reject_header_fields),
        cmocka_unit_test(test_reserved_header_bytes_ignored),
        cmocka_unit_test(test_reject_metadata_count),
        cmocka_unit_test(test_reject_metadata_key_length),
        cmocka_unit_test(test_reject_metadata_duplicate_key),
        cmocka_unit_test(test_reject_metadata_unknown_type),
        cmocka_unit_test(test_reject_metadata_lengths),
        cmocka_unit_test(test_reject_table_name_length),
        cmocka_unit_test(test_reject_table_dtype),
        cmocka_unit_test(test_reject_table_ndim),
        cmocka_unit_test(test_reject_table_reserved_bits),
        cmocka_unit_test(test_reject_table_duplicate_name),
        cmocka_unit_test(test_reject_table_shape),
        cmocka_unit_test(test_reject_table_byte_count),
        cmocka_unit_test(test_quantized_layout),
        cmocka_unit_test(test_reject_quantized_group),
        cmocka_unit_test(test_reject_quantized_bytes),
        cmocka_unit_test(test_reject_quantized_nan_scale),
        cmocka_unit_test(test_reject_table_offsets),
        cmocka_unit_test(test_reject_model_config),
        cmocka_unit_test(test_reject_gpt2_config),
        cmocka_unit_test(test_reject_model_tensor_shapes),
        cmocka_unit_test(test_reject_model_missing_tensors),
        cmocka_unit_test(test_reject_model_tensor_rank),
        cmocka_unit_test(test_reject_model_extra_tensors),
        cmocka_unit_test(test_reject_names_printed_escaped),
        cmocka_unit_test(test_reject_model_head),
        cmocka_unit_test(test_reject_model_qkv_bias),
        cmocka_unit_test(test_reject_gpt2_with_llama_tensors),
        cmocka_unit_test(test_load_mmap_and_read),
        cmocka_unit_test(test_load_misaligned_buffers),
        cmocka_unit_test(test_load_copy_buffer),
        cmocka_unit_test(test_load_borrowed_buffer),
        cmocka_unit_test(test_load_io_errors),
        cmocka_unit_test(test_load_refuses_fifo_and_devices),
        cmocka_unit_test(test_checksums_in_pieces),
    };
    return cmocka_run_group_tests_name("format", tests, nullptr, nullptr);
}
