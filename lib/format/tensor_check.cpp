// tensor_check.cpp - crc32 and NaN/Inf scan of tensor bytes (see tensor_check.h).
#include "format/tensor_check.h"

#include "core/error.h"
#include "core/parallel.h"
#include "core/quant.h"
#include "format/bytes.h"
#include "format/crc32.h"

#include <algorithm>
#include <cstring>
#include <vector>
#include <zlib.h>

namespace gpt::format {

namespace {

constexpr uint64_t kStep = 256u << 10; // bytes that stay in cache between the crc and the scan

// Whether p[0..nbytes) of a float dtype holds Inf or NaN, i.e. an all-ones exponent. Adding
// the exponent's lowest bit to the masked exponent carries into the sign bit exactly then, so
// OR-ing those sums is an AND/ADD/OR loop the compiler vectorises with plain SSE2: far cheaper
// than the crc32 of the same bytes.
bool has_non_finite(const uint8_t *p, uint64_t nbytes, DType t) {
    if (t == DType::F32) {
        uint32_t acc = 0;
        for (uint64_t i = 0; i + 4 <= nbytes; i += 4) {
            uint32_t u;
            std::memcpy(&u, p + i, 4);
            acc |= (u & 0x7f800000u) + 0x00800000u;
        }
        return (acc & 0x80000000u) != 0;
    }
    const uint16_t exp = t == DType::F16 ? 0x7c00u : 0x7f80u, low = t == DType::F16 ? 0x0400u : 0x0080u;
    uint16_t acc = 0;
    for (uint64_t i = 0; i + 2 <= nbytes; i += 2) {
        uint16_t u;
        std::memcpy(&u, p + i, 2);
        acc |= (uint16_t)((u & exp) + low);
    }
    return (acc & 0x8000u) != 0;
}

// Index of the first non-finite element of p[0..nbytes) and what it is ("NaN", "inf", "-inf").
uint64_t first_non_finite(const uint8_t *p, uint64_t nbytes, DType t, const char **kind) {
    const bool f32 = t == DType::F32;
    const uint64_t es = f32 ? 4 : 2;
    const uint32_t inf = f32 ? 0x7f800000u : t == DType::F16 ? 0x7c00u : 0x7f80u;
    for (uint64_t i = 0; i + es <= nbytes; i += es) {
        const uint32_t u = f32 ? load_u32(p + i) : (uint32_t)(p[i] | p[i + 1] << 8);
        const uint32_t mag = u & (f32 ? 0x7fffffffu : 0x7fffu);
        if (mag >= inf) {
            *kind = mag > inf ? "NaN" : (u & (f32 ? 0x80000000u : 0x8000u)) ? "-inf" : "inf";
            return i / es;
        }
    }
    *kind = "?";
    return 0;
}

// The bytes of a tensor that hold floats, which the NaN/Inf scan reads: all of a float
// tensor, the f16 scale plane of a quantized one (its integers are always finite).
struct FloatRegion {
    uint64_t begin;
    DType dtype;
};
FloatRegion float_region(const TensorEntry &e) {
    if (!is_quantized(e.dtype)) return {0, e.dtype};
    return {e.dims[0] * packed_row_bytes(e.dtype, e.dims[1]), DType::F16};
}

} // namespace

PieceScan scan_piece(const TensorEntry &e, const uint8_t *data, uint64_t off, uint64_t len, bool check_finite) {
    PieceScan r;
    const FloatRegion fr = float_region(e);
    uint32_t crc = 0;
    for (uint64_t o = 0; o < len; o += kStep) {
        const uint64_t n = std::min(kStep, len - o);
        crc = crc32_extend(crc, data + off + o, n);
        // The part of this step inside the float region (even offsets: the region and the
        // pieces start at multiples of 16).
        const uint64_t at = std::max(off + o, fr.begin), end = off + o + n;
        if (check_finite && r.bad_at == UINT64_MAX && at < end && has_non_finite(data + at, end - at, fr.dtype)) r.bad_at = at;
    }
    r.crc = crc;
    return r;
}

void check_scan_result(const std::string &source, const TensorEntry &e, const uint8_t *data, uint32_t crc, uint64_t bad) {
    if (crc != e.crc32) fail(GPT_ERR_CHECKSUM, "%s: tensor '%s' checksum mismatch (data damaged)", source.c_str(), e.name.c_str());
    if (bad == UINT64_MAX) return;
    const char *kind = "?";
    const FloatRegion fr = float_region(e);
    const uint64_t at =
        (bad - fr.begin) / dtype_bytes(fr.dtype) + first_non_finite(data + bad, std::min(kStep, e.nbytes - bad), fr.dtype, &kind);
    if (is_quantized(e.dtype))
        fail(GPT_ERR_FORMAT, "%s: tensor '%s' holds a non-finite scale (%s at row %llu, group %llu): the weights are unusable",
             source.c_str(), e.name.c_str(), kind, (unsigned long long)(at / (e.dims[1] / e.group)),
             (unsigned long long)(at % (e.dims[1] / e.group)));
    fail(GPT_ERR_FORMAT, "%s: tensor '%s' holds a non-finite value (%s at element %llu): the weights are unusable",
         source.c_str(), e.name.c_str(), kind, (unsigned long long)at);
}

TensorCheck::TensorCheck(const std::string &source, const TensorEntry &e, const uint8_t *data, bool check_finite)
    : source_(source), e_(e), data_(data), check_finite_(check_finite), crc_(0) {}

void TensorCheck::add(uint64_t len) {
    if (len > e_.nbytes - done_ || done_ % 16 != 0)
        fail(GPT_ERR_INTERNAL, "%s: tensor '%s' checked out of order (%llu bytes at %llu of %llu)", source_.c_str(),
             e_.name.c_str(), (unsigned long long)len, (unsigned long long)done_, (unsigned long long)e_.nbytes);
    // Sub-pieces of 1 MiB shared among up to 8 threads: a thread costs tens of microseconds,
    // the crc32 of 1 MiB a few hundred.
    constexpr uint64_t kSub = 1u << 20;
    const uint64_t n_sub = (len + kSub - 1) / kSub;
    std::vector<PieceScan> scans((size_t)n_sub);
    parallel_for(scans.size(), 8, [&](size_t i) {
        scans[i] = scan_piece(e_, data_, done_ + i * kSub, std::min(kSub, len - i * kSub), check_finite_);
    });
    for (size_t i = 0; i < scans.size(); i++) {
        crc_ = (uint32_t)crc32_combine(crc_, scans[i].crc, (z_off_t)std::min(kSub, len - i * kSub));
        if (bad_at_ == UINT64_MAX) bad_at_ = scans[i].bad_at;
    }
    done_ += len;
}

void TensorCheck::finish() const {
    if (done_ != e_.nbytes)
        fail(GPT_ERR_INTERNAL, "%s: tensor '%s' finished after %llu of %llu bytes", source_.c_str(), e_.name.c_str(),
             (unsigned long long)done_, (unsigned long long)e_.nbytes);
    check_scan_result(source_, e_, data_, crc_, bad_at_);
}

} // namespace gpt::format
