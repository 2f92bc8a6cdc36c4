// test_load_checks.cpp - the load's tensor checks piece by piece, as a device that copies the
// weights runs them (runtime/weight_source.h, format/tensor_check.h: check a piece, upload it,
// drop its pages), against the reader's whole-file pass (WeightFile::verify_checksums, the
// reference): the same verdict and the same message for every dtype, damage and tensor, in
// pieces of random sizes; a damaged tensor in the middle stops the walk there and nothing
// leaks (ASan in CI); the walk's resident memory stays one piece above where it started.
#include "files.h"
#include "fixture.h"
#include "format_decoder.h"
#include "reference.h"

#include "core/error.h"
#include "core/half.h"
#include "core/quant.h"
#include "format/quantize.h"
#include "format/reader.h"
#include "format/writer.h"
#include "model/arch.h"
#include "runtime/weight_source.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

namespace {

using gpt::DType;
using gpt::format::ReadOptions;
using gpt::format::TensorEntry;
using gpt::format::WeightFile;
using namespace format_decoder;

std::mt19937_64 rng_for(const char *test) { return std::mt19937_64(reference::sub_seed(test)); }

struct Outcome {
    gpt_status status = GPT_OK;
    std::string message;
};

template <typename F> Outcome outcome_of(F &&f) {
    try {
        f();
        return {};
    } catch (const gpt::Error &e) {
        return {e.status(), e.what()};
    }
}

// A random llama file whose matrices are in `dtype` (a quantized dtype: the quantizable ones,
// group 32, the rest f16; vectors f32 then, as the converter writes them).
Bytes file_of(DType dtype, std::mt19937_64 &rng, fixture::Spec s = {}) {
    s.seed = rng();
    if (!gpt::is_quantized(dtype)) {
        s.dtype = dtype;
        return fixture::make(s).file;
    }
    fixture::Model fx = fixture::make(s);
    gpt::format::Writer w;
    fx.config.to_metadata(w.metadata());
    for (const gpt::TensorSlot &slot : gpt::tensor_table(fx.config)) {
        const std::vector<float> &v = fx.tensors.at(slot.name);
        if (!gpt::format::quantizable(slot.name, slot.shape, 32)) {
            if (slot.shape.size() == 1) {
                w.add_tensor(slot.name, DType::F32, slot.shape, v.data(), v.size() * 4);
            } else {
                std::vector<uint16_t> h(v.size());
                for (size_t i = 0; i < v.size(); i++) h[i] = gpt::f32_to_f16(v[i]);
                w.add_tensor(slot.name, DType::F16, slot.shape, h.data(), h.size() * 2);
            }
            continue;
        }
        uint64_t n = 0;
        assert_true(gpt::tensor_bytes(dtype, v.size(), slot.shape[1], 32, &n));
        auto b = std::make_shared<std::vector<uint8_t>>(n);
        gpt::quantize_matrix(v.data(), slot.shape[0], slot.shape[1], dtype, 32, b->data(), slot.name);
        w.add_quantized(slot.name, dtype, slot.shape, 32, [b](uint8_t *dst, uint64_t k) { std::memcpy(dst, b->data(), k); });
    }
    return w.write_memory();
}

// Walks every tensor as a copying device does, in random order and pieces of random sizes
// (multiples of 16, the last one what remains), checking each piece and then releasing it.
// Returns the first failure; *passed counts the tensors that passed before it.
Outcome walk_in_pieces(const Bytes &b, std::mt19937_64 &rng, size_t *passed, uint64_t max_piece = 4096) {
    ReadOptions o;
    o.check_finite = true;
    o.defer_tensor_checks = true;
    std::unique_ptr<WeightFile> f = WeightFile::from_memory(b.data(), b.size(), false, o);
    std::vector<const TensorEntry *> order;
    for (const TensorEntry &e : f->tensors()) order.push_back(&e);
    std::shuffle(order.begin(), order.end(), rng);
    gpt::FileWeightSource src(*f, order, true, true);
    *passed = 0;
    Outcome r = outcome_of([&] {
        for (size_t i = 0; i < order.size(); i++) {
            for (uint64_t off = 0; off < order[i]->nbytes;) {
                const uint64_t n = std::min<uint64_t>(16 * (1 + rng() % (max_piece / 16)), order[i]->nbytes - off);
                src.check(i, n);
                src.release(i, off, n);
                off += n;
            }
            ++*passed;
        }
    });
    if (r.status == GPT_OK) assert_true(src.all_checked());
    return r;
}

Outcome whole_file(const Bytes &b) {
    ReadOptions o;
    o.check_finite = true;
    return outcome_of([&] { WeightFile::from_memory(b.data(), b.size(), false, o); });
}

// Writes a non-finite value (NaN, inf or -inf) into a float of tensor t: an element of a
// float tensor, a scale of a quantized one.
void poison_float(Bytes &b, const TensorPos &t, uint64_t data_off, std::mt19937_64 &rng) {
    const DType d = static_cast<DType>(t.dtype);
    uint64_t begin = 0, es = d == DType::F32 ? 4 : 2;
    if (gpt::is_quantized(d)) begin = t.dims[0] * gpt::packed_row_bytes(d, t.dims[1]);
    const uint64_t n = (t.nbytes - begin) / es, at = data_off + t.rel + begin + (rng() % n) * es;
    const int kind = (int)(rng() % 3); // NaN, inf, -inf
    if (d == DType::F32) put32(b, at, kind == 0 ? 0x7fc00001u : kind == 1 ? 0x7f800000u : 0xff800000u);
    else if (d == DType::BF16) put16(b, at, kind == 0 ? 0x7fc1 : kind == 1 ? 0x7f80 : 0xff80);
    else put16(b, at, kind == 0 ? 0x7e01 : kind == 1 ? 0x7c00 : 0xfc00); // f16, and the scales
}

// Every dtype; a damaged first, middle and last tensor (and a random one): a flipped byte
// (CHECKSUM) or a non-finite float with the crcs made to agree (FORMAT). The piecewise walk
// must give the whole-file pass's status and message, and stop at the damaged tensor.
void test_pieces_agree_with_whole_file(void **) {
    auto rng = rng_for("pieces_agree_with_whole_file");
    for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::Q8, DType::Q4}) {
        const Bytes good = file_of(dtype, rng);
        size_t passed = 0;
        const Outcome clean = walk_in_pieces(good, rng, &passed);
        if (clean.status != GPT_OK) fail_msg("%s: an undamaged file failed: %s", gpt::dtype_name(dtype), clean.message.c_str());
        const std::vector<TensorPos> table = table_entries(good);
        assert_int_equal(passed, table.size());
        const uint64_t data_off = header_of(good).data_off;
        for (size_t which : {(size_t)0, table.size() / 2, table.size() - 1, (size_t)(rng() % table.size())})
            for (int damage = 0; damage < 2; damage++) {
                const TensorPos &t = table[which];
                Bytes b = good;
                if (damage == 0) {
                    b[data_off + t.rel + rng() % t.nbytes] ^= (uint8_t)(1 + rng() % 255);
                } else {
                    poison_float(b, t, data_off, rng);
                    fix_all_crcs(b);
                }
                const Outcome ref = whole_file(b);
                assert_int_equal(ref.status, damage == 0 ? GPT_ERR_CHECKSUM : GPT_ERR_FORMAT);
                assert_non_null(std::strstr(ref.message.c_str(), ("'" + t.name + "'").c_str()));
                const Outcome got = walk_in_pieces(b, rng, &passed);
                if (got.status != ref.status || got.message != ref.message)
                    fail_msg("%s, %s in '%s': pieces gave %d '%s', the whole-file pass %d '%s'", gpt::dtype_name(dtype),
                             damage == 0 ? "flipped byte" : "non-finite float", t.name.c_str(), got.status,
                             got.message.c_str(), ref.status, ref.message.c_str());
                assert_true(passed < table.size()); // stopped at the damaged tensor
            }
    }
}

// Pieces out of order or past a tensor's end are the device's bug: GPT_ERR_INTERNAL, never a
// silently skipped check.
void test_pieces_misused(void **) {
    auto rng = rng_for("pieces_misused");
    const Bytes good = file_of(DType::F32, rng);
    ReadOptions o;
    o.defer_tensor_checks = true;
    std::unique_ptr<WeightFile> f = WeightFile::from_memory(good.data(), good.size(), false, o);
    std::vector<const TensorEntry *> order;
    for (const TensorEntry &e : f->tensors()) order.push_back(&e);
    {
        gpt::FileWeightSource src(*f, order, true, true);
        assert_int_equal(outcome_of([&] { src.check(0, order[0]->nbytes + 16); }).status, GPT_ERR_INTERNAL);
    }
    {
        gpt::FileWeightSource src(*f, order, true, true);
        src.check(0, 16);
        const Outcome r = outcome_of([&] { src.check(1, 16); }); // tensor 0 left half checked
        assert_int_equal(r.status, GPT_ERR_INTERNAL);
        assert_false(src.all_checked());
    }
    {
        gpt::FileWeightSource src(*f, order, true, true);
        assert_int_equal(outcome_of([&] { src.check(order.size(), 16); }).status, GPT_ERR_INTERNAL);
    }
    // Checks off (GPT_MODEL_SKIP_CHECKSUMS): nothing to do, everything counts as checked.
    gpt::FileWeightSource off(*f, order, false, false);
    assert_true(off.all_checked());
}

// Resident memory of the process's file-backed and shared pages (a file in tmpfs is shmem).
uint64_t resident_file_bytes() {
    std::ifstream in("/proc/self/status");
    std::string key;
    uint64_t kb = 0, total = 0;
    while (in >> key) {
        if (key == "RssFile:" || key == "RssShmem:") {
            in >> kb;
            total += kb << 10;
        }
        in.ignore(1 << 20, '\n');
    }
    return total;
}

// A mapped 64 MiB file walked in 8 MiB pieces: with each piece released after its check the
// resident memory stays within a piece (and some slack) of where it started; without the
// release it grows by the whole file (so the measurement can tell). The large pieces also
// take TensorCheck's threaded path; the verdict is the whole-file pass's.
void test_released_pieces_leave_resident_memory(void **) {
    if (access("/proc/self/status", R_OK) != 0) {
        std::printf("  no /proc/self/status: skipped\n");
        skip();
    }
    auto rng = rng_for("released_pieces");
    fixture::Spec s;
    s.n_layers = 1, s.d_model = 1024, s.n_heads = 8, s.n_kv_heads = 8, s.head_dim = 128, s.d_ff = 64, s.vocab_size = 8192;
    const Bytes bytes = file_of(DType::F32, rng, s); // two 32 MiB tables (embedding, head)
    const std::string path = fixture::write_temp(bytes);
    constexpr uint64_t kPiece = 8u << 20, kSlack = 4u << 20;
    for (bool release : {true, false}) {
        ReadOptions o;
        o.check_finite = true;
        o.defer_tensor_checks = true;
        std::unique_ptr<WeightFile> f = WeightFile::open(path, o);
        assert_true(f->mapped());
        std::vector<const TensorEntry *> order;
        for (const TensorEntry &e : f->tensors()) order.push_back(&e);
        gpt::FileWeightSource src(*f, order, true, true);
        const uint64_t base = resident_file_bytes();
        uint64_t peak = base;
        for (size_t i = 0; i < order.size(); i++)
            for (uint64_t off = 0; off < order[i]->nbytes; off += kPiece) {
                const uint64_t n = std::min(kPiece, order[i]->nbytes - off);
                src.check(i, n); // a copying device uploads the piece here
                peak = std::max(peak, resident_file_bytes());
                if (release) src.release(i, off, n);
            }
        assert_true(src.all_checked());
        std::printf("  %s: resident file pages grew by %.1f MiB at most (file %.1f MiB)\n",
                    release ? "released" : "kept", (double)(peak - base) / (1 << 20), (double)bytes.size() / (1 << 20));
        if (release) assert_true(peak - base <= kPiece + kSlack);
        else assert_true(peak - base >= (uint64_t)bytes.size() - (8u << 20));
        // Released pages come back from the file when read again: still the same bytes.
        f->verify_checksums(true);
    }
    unlink(path.c_str());
}

// The read() path (GPT_MODEL_NO_MMAP, host weights) reads 64 MiB shares on threads: a file
// of several shares with a ragged end comes back byte for byte, its checks pass, and a
// damaged byte in the last share is still caught.
void test_threaded_read_of_a_large_file(void **) {
    auto rng = rng_for("threaded_read");
    fixture::Spec s;
    s.n_layers = 1, s.d_model = 1024, s.n_heads = 8, s.n_kv_heads = 8, s.head_dim = 128, s.d_ff = 64, s.vocab_size = 24577;
    Bytes bytes = file_of(DType::F32, rng, s); // two ~96 MiB tables: three shares and a ragged end
    assert_true(bytes.size() > (128u << 20) && bytes.size() % (64u << 20) != 0);
    std::string path = fixture::write_temp(bytes);
    ReadOptions o;
    o.use_mmap = false;
    o.check_finite = true;
    {
        std::unique_ptr<WeightFile> f = WeightFile::open(path, o);
        assert_false(f->mapped());
        for (const TensorEntry &e : f->tensors())
            assert_memory_equal(f->data(e), bytes.data() + e.offset, e.nbytes);
        f->verify_checksums(true);
    }
    unlink(path.c_str());
    // A flipped byte near the end: the read is whole, so the checksum pass finds it.
    bytes[bytes.size() - 100] ^= 0x40;
    path = fixture::write_temp(bytes);
    try {
        std::unique_ptr<WeightFile> f = WeightFile::open(path, o);
        f->verify_checksums(true);
        fail_msg("a damaged byte in the last share went unnoticed");
    } catch (const gpt::Error &e) {
        assert_int_equal(e.status(), GPT_ERR_CHECKSUM);
    }
    unlink(path.c_str());
}

// The placement flags through the API on the CPU: both at once are refused before anything
// is read; either alone loads (the CPU reads host memory anyway) and the model does not claim
// a GPU reads its weights.
void test_weight_flags_on_cpu(void **) {
    auto rng = rng_for("weight_flags_on_cpu");
    const Bytes b = file_of(DType::F16, rng);
    gpt_model_params p;
    gpt_model_params_init(&p);
    p.device = GPT_DEVICE_CPU;
    p.flags = GPT_MODEL_HOST_WEIGHTS | GPT_MODEL_DEVICE_WEIGHTS;
    gpt_model *m = reinterpret_cast<gpt_model *>(0x1);
    assert_int_equal(gpt_model_load_from_memory(b.data(), b.size(), &p, &m), GPT_ERR_INVALID_ARG);
    assert_null(m);
    assert_non_null(std::strstr(gpt_last_error(), "GPT_MODEL_HOST_WEIGHTS and GPT_MODEL_DEVICE_WEIGHTS"));
    for (uint32_t flags : {GPT_MODEL_HOST_WEIGHTS, GPT_MODEL_DEVICE_WEIGHTS}) {
        p.flags = flags;
        p.weight_dtype = GPT_DTYPE_F32; // a conversion the CPU ignores either way
        if (gpt_model_load_from_memory(b.data(), b.size(), &p, &m) != GPT_OK) fail_msg("flags 0x%x: %s", flags, gpt_last_error());
        gpt_model_info i;
        std::memset(&i, 0, sizeof i);
        i.struct_size = sizeof i;
        assert_int_equal(gpt_model_get_info(m, &i), GPT_OK);
        assert_int_equal(i.flags & GPT_MODEL_INFO_HOST_WEIGHTS, 0);
        assert_int_equal(i.device_bytes, 0);
        gpt_model_free(m);
    }
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces_agree_with_whole_file),
        cmocka_unit_test(test_pieces_misused),
        cmocka_unit_test(test_released_pieces_leave_resident_memory),
        cmocka_unit_test(test_weight_flags_on_cpu),
        cmocka_unit_test(test_threaded_read_of_a_large_file),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
