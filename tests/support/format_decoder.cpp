// format_decoder.cpp - the independent weight-file decoding (see format_decoder.h): plain
// byte reads at the offsets docs/FORMAT.md gives, checked with cmocka as it goes.
#include "format_decoder.h"

#include <zlib.h>

// cmocka last: it defines a fail() macro.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {
#include <cmocka.h>
}

namespace format_decoder {

uint32_t get32(const Bytes &b, size_t at) {
    return (uint32_t)b[at] | (uint32_t)b[at + 1] << 8 | (uint32_t)b[at + 2] << 16 | (uint32_t)b[at + 3] << 24;
}
uint64_t get64(const Bytes &b, size_t at) { return (uint64_t)get32(b, at) | (uint64_t)get32(b, at + 4) << 32; }
uint16_t get16(const Bytes &b, size_t at) { return (uint16_t)(b[at] | b[at + 1] << 8); }
void put32(Bytes &b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) b[at + i] = (uint8_t)(v >> (8 * i));
}
void put64(Bytes &b, size_t at, uint64_t v) {
    for (int i = 0; i < 8; i++) b[at + i] = (uint8_t)(v >> (8 * i));
}
void put16(Bytes &b, size_t at, uint16_t v) {
    b[at] = (uint8_t)v;
    b[at + 1] = (uint8_t)(v >> 8);
}
uint32_t zcrc(const uint8_t *p, size_t n) { return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n); }

const uint8_t kMagicBytes[8] = {'G', 'P', 'T', 'W', 0x0d, 0x0a, 0x1a, 0x0a};

Header header_of(const Bytes &b) {
    return Header{get64(b, H_FILE_SIZE), get64(b, H_META_OFF),  get64(b, H_META_SIZE), get64(b, H_TABLE_OFF),
                  get64(b, H_TABLE_SIZE), get64(b, H_DATA_OFF), get32(b, H_N_TENSORS)};
}

bool inside(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

void fix_crcs(Bytes &b) {
    const Header h = header_of(b);
    if (inside(h.meta_off, h.meta_size, b.size())) put32(b, H_META_CRC, zcrc(b.data() + h.meta_off, h.meta_size));
    if (inside(h.table_off, h.table_size, b.size())) put32(b, H_TABLE_CRC, zcrc(b.data() + h.table_off, h.table_size));
    put32(b, H_HEADER_CRC, zcrc(b.data(), H_HEADER_CRC));
}

std::vector<MetaPos> meta_entries(const Bytes &b) {
    const Header h = header_of(b);
    size_t p = h.meta_off;
    const uint32_t count = get32(b, p);
    p += 4;
    std::vector<MetaPos> out;
    for (uint32_t i = 0; i < count; i++) {
        MetaPos m;
        m.key_len_at = p;
        const uint16_t kl = get16(b, p);
        m.key.assign((const char *)b.data() + p + 2, kl);
        m.type_at = p + 2 + kl;
        m.type = b[m.type_at];
        m.value_at = m.type_at + 1;
        size_t q = m.value_at;
        switch (m.type) {
        case 1: case 2: case 3: q += 4; break;
        case 4: q += 8; break;
        case 5: q += 4 + get32(b, q); break;
        case 6: case 7: q += 4 + 4ull * get32(b, q); break;
        case 8: {
            const uint32_t n = get32(b, q);
            q += 4;
            for (uint32_t j = 0; j < n; j++) q += 4 + get32(b, q);
            break;
        }
        default: fail_msg("meta_entries: unexpected type %u", m.type);
        }
        m.end = q;
        p = q;
        out.push_back(m);
    }
    assert_int_equal(p, h.meta_off + h.meta_size);
    return out;
}
const MetaPos &meta_entry(const std::vector<MetaPos> &v, const std::string &key) {
    for (const auto &m : v)
        if (m.key == key) return m;
    fail_msg("no metadata key %s", key.c_str());
    return v[0];
}

std::vector<TensorPos> table_entries(const Bytes &b) {
    const Header h = header_of(b);
    size_t p = h.table_off;
    std::vector<TensorPos> out;
    for (uint32_t i = 0; i < h.n_tensors; i++) {
        TensorPos t{};
        t.name_len_at = p;
        const uint16_t nl = get16(b, p);
        t.name.assign((const char *)b.data() + p + 2, nl);
        p += 2 + nl;
        t.dtype_at = p;
        t.dtype = b[p++];
        t.ndim_at = p;
        t.ndim = b[p++];
        t.reserved_at = p;
        p += 2;
        t.dims_at = p;
        for (uint32_t d = 0; d < t.ndim; d++, p += 8) t.dims[d] = get64(b, p);
        t.rel_at = p;
        t.rel = get64(b, p);
        p += 8;
        t.nbytes_at = p;
        t.nbytes = get64(b, p);
        p += 8;
        t.crc_at = p;
        t.crc = get32(b, p);
        p += 4;
        out.push_back(t);
    }
    assert_int_equal(p, h.table_off + h.table_size);
    return out;
}
const TensorPos &table_entry(const std::vector<TensorPos> &v, const std::string &name) {
    for (const auto &t : v)
        if (t.name == name) return t;
    fail_msg("no tensor %s", name.c_str());
    return v[0];
}

void fix_all_crcs(Bytes &b) {
    const Header h = header_of(b);
    for (const TensorPos &t : table_entries(b))
        if (inside(h.data_off + t.rel, t.nbytes, b.size())) put32(b, t.crc_at, zcrc(b.data() + h.data_off + t.rel, t.nbytes));
    fix_crcs(b);
}

} // namespace format_decoder
