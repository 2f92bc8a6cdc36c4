// common.cpp - see common.h.
#include "common.h"

#include "fixture.h"
#include "format/reader.h"
#include "tokenizer/tokenizer_data.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

namespace fuzz {

float Bytes::f32() {
    const uint8_t sel = u8();
    if (sel < 160) return (float)(int16_t)u16() / 4096.0f;
    switch (sel) {
    case 160: return std::numeric_limits<float>::quiet_NaN();
    case 161: return std::numeric_limits<float>::infinity();
    case 162: return -std::numeric_limits<float>::infinity();
    case 163: return 0.0f;
    case 164: return -0.0f;
    case 165: return 1e30f;
    case 166: return -1e-30f;
    case 167: return std::numeric_limits<float>::denorm_min();
    case 168: return std::numeric_limits<float>::max();
    case 169: {
        const uint32_t bits = u32();
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    default: return (float)u16() / 65535.0f;
    }
}

std::string Bytes::str(size_t max) {
    size_t n = u16() % (max + 1);
    if (n > n_) n = n_;
    std::string s((const char *)p_, n);
    p_ += n;
    n_ -= n;
    return s;
}

bool valid_status(int st) { return st <= 0 && st >= GPT_ERR_BUFFER_TOO_SMALL; }

MemFile::MemFile(const void *data, size_t size, const char *name) {
    fd_ = memfd_create(name, MFD_CLOEXEC);
    FUZZ_CHECK(fd_ >= 0, "memfd_create failed");
    const uint8_t *p = static_cast<const uint8_t *>(data);
    size_t off = 0;
    while (off < size) {
        const ssize_t w = ::write(fd_, p + off, size - off);
        FUZZ_CHECK(w > 0, "write to memfd failed");
        off += (size_t)w;
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
}

MemFile::~MemFile() {
    if (fd_ >= 0) ::close(fd_);
}

namespace {

uint32_t get32(const std::vector<uint8_t> &b, size_t at) {
    return (uint32_t)b[at] | (uint32_t)b[at + 1] << 8 | (uint32_t)b[at + 2] << 16 | (uint32_t)b[at + 3] << 24;
}
uint64_t get64(const std::vector<uint8_t> &b, size_t at) { return (uint64_t)get32(b, at) | (uint64_t)get32(b, at + 4) << 32; }
void put32(std::vector<uint8_t> &b, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) b[at + i] = (uint8_t)(v >> (8 * i));
}
uint32_t crc(const uint8_t *p, uint64_t n) { return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n); }
bool inside(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

} // namespace

void fix_weight_file_crcs(std::vector<uint8_t> &b) {
    const uint64_t size = b.size();
    if (size < 128) return;
    const uint64_t meta_off = get64(b, 24), meta_size = get64(b, 32), table_off = get64(b, 40), table_size = get64(b, 48),
                   data_off = get64(b, 56);
    const uint32_t n_tensors = get32(b, 64);
    if (inside(table_off, table_size, size)) {
        // Walk the table as the spec lays it out, repairing each crc whose data is inside.
        uint64_t p = table_off;
        const uint64_t end = table_off + table_size;
        for (uint32_t i = 0; i < n_tensors && i < 100000; i++) {
            if (end - p < 2) break;
            const uint64_t name_len = b[p] | b[p + 1] << 8;
            p += 2;
            if (end - p < name_len + 4) break;
            p += name_len;
            const uint8_t ndim = b[p + 1];
            p += 4;
            if (ndim > 4 || end - p < 8ull * ndim + 20) break;
            p += 8ull * ndim;
            const uint64_t rel = get64(b, p), nbytes = get64(b, p + 8);
            p += 16;
            if (data_off <= size && inside(rel, nbytes, size - data_off)) put32(b, p, crc(b.data() + data_off + rel, nbytes));
            p += 4;
        }
        put32(b, 76, crc(b.data() + table_off, table_size));
    }
    if (inside(meta_off, meta_size, size)) put32(b, 72, crc(b.data() + meta_off, meta_size));
    put32(b, 124, crc(b.data(), 124));
}

const gpt::TokenizerData &kjv_tokenizer() {
    static const gpt::TokenizerData t = [] {
        const char *env = std::getenv("GPT_FUZZ_MODEL");
        const std::string path = env && *env ? env : GPT_SOURCE_ROOT "/models/kjv-llama.gpt";
        gpt::format::ReadOptions o;
        o.verify_checksums = false;
        auto f = gpt::format::WeightFile::open(path, o);
        uint32_t vocab = 0;
        f->metadata().get_u32("model.vocab_size", &vocab);
        return gpt::TokenizerData::from_metadata(f->metadata(), vocab, path);
    }();
    return t;
}

const gpt::TokenizerData &spm_tokenizer() {
    static const gpt::TokenizerData t = [] {
        gpt::TokenizerData d = fixture::spm_base();
        d.pre = gpt::PreTokenizer::NONE;
        d.add_bos = true;
        auto add = [&](const std::string &text, int32_t type, float score) { fixture::add_token(d, text, type, score); };
        const std::string sp = "\xE2\x96\x81"; // U+2581
        const char *pieces[] = {"e", "t", "a", "o", "i", "n", "s", "h", "r", "d", "l", "u", "w", "f", "g", "y", "b", "c",
                                "he", "th", "in", "an", "er", "on", "re", "nd", "the", "ing", "and", "\xC3\xA9", "\xE6\x97\xA5",
                                "\xE6\x9C\xAC", "\xE6\x97\xA5\xE6\x9C\xAC", "<tag>"};
        float score = -1;
        add(sp, gpt::TOKEN_NORMAL, score--);
        for (const char *p : pieces) add(p, std::string(p) == "<tag>" ? gpt::TOKEN_USER_DEFINED : gpt::TOKEN_NORMAL, score--);
        for (const char *p : {"t", "th", "the", "a", "an", "and", "i", "in", "w", "o"}) add(sp + p, gpt::TOKEN_NORMAL, score--);
        while (d.tokens.size() < 300) add("x" + std::to_string(d.tokens.size()), gpt::TOKEN_NORMAL, score--);
        return d;
    }();
    return t;
}

std::vector<uint8_t> tiny_model(gpt_arch arch, const gpt::TokenizerData *tok, uint32_t vocab, uint64_t seed) {
    fixture::Spec s;
    s.arch = arch;
    s.n_layers = 2, s.d_model = 16, s.n_heads = 2, s.n_kv_heads = arch == GPT_ARCH_LLAMA ? 1 : 2, s.head_dim = 8, s.d_ff = 24;
    s.vocab_size = tok ? (uint32_t)tok->tokens.size() : vocab;
    s.context_length = 32;
    s.seed = seed;
    if (tok) {
        s.bos_id = tok->bos_id;
        s.eos_id = tok->eos_id;
    }
    return fixture::make(s, tok).file;
}

} // namespace fuzz
