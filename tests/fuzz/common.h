// common.h - shared pieces of the fuzz targets: invariant checks that abort (so libFuzzer
// reports them like a crash), a byte reader over the fuzz input, in-memory files for the
// readers that take a path, crc repair of weight file images, and the tokenizers and tiny
// models the targets drive.
#pragma once

#include "gpt.h"
#include "tokenizer/tokenizer_data.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#ifndef GPT_SOURCE_ROOT
#define GPT_SOURCE_ROOT "."
#endif

// A broken invariant is a finding: print what and abort.
#define FUZZ_CHECK(cond, ...)                                                                                          \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            std::fprintf(stderr, "\nFUZZ INVARIANT FAILED: %s (%s:%d): ", #cond, __FILE__, __LINE__);                 \
            std::fprintf(stderr, __VA_ARGS__);                                                                         \
            std::fputc('\n', stderr);                                                                                  \
            std::abort();                                                                                              \
        }                                                                                                              \
    } while (0)

namespace fuzz {

// Consumes the fuzz input front to back; past the end every read gives 0.
class Bytes {
public:
    Bytes(const uint8_t *p, size_t n) : p_(p), n_(n) {}
    bool empty() const { return n_ == 0; }
    size_t left() const { return n_; }
    uint8_t u8() { return n_ ? (n_--, *p_++) : 0; }
    uint16_t u16() { return (uint16_t)(u8() | u8() << 8); }
    uint32_t u32() { return (uint32_t)u16() | (uint32_t)u16() << 16; }
    uint64_t u64() { return (uint64_t)u32() | (uint64_t)u32() << 32; }
    float f32();                               // mostly ordinary values, sometimes NaN/inf/extremes
    uint32_t below(uint32_t n) { return n ? u32() % n : 0; }
    uint32_t range(uint32_t lo, uint32_t hi) { return lo + below(hi - lo + 1); }
    bool flip() { return (u8() & 1) != 0; }
    std::string str(size_t max);               // up to max bytes (length from the input)
    std::string rest() { std::string s((const char *)p_, n_); p_ += n_; n_ = 0; return s; }

private:
    const uint8_t *p_;
    size_t n_;
};

// Statuses gpt.h defines.
bool valid_status(int st);

// The bytes as an anonymous in-memory file (memfd), reachable by path "/proc/self/fd/N".
class MemFile {
public:
    MemFile(const void *data, size_t size, const char *name);
    ~MemFile();
    MemFile(const MemFile &) = delete;
    MemFile &operator=(const MemFile &) = delete;
    const std::string &path() const { return path_; }

private:
    int fd_ = -1;
    std::string path_;
};

// Recomputes, where their ranges lie inside the image, every tensor's crc32 in the table,
// then the metadata, table and header crc32s: a mutated file then reaches the checks
// behind the checksums instead of stopping at them.
void fix_weight_file_crcs(std::vector<uint8_t> &file);

// The byte-level BPE tokenizer of the shipped model (models/kjv-llama.gpt, 4096 tokens).
const gpt::TokenizerData &kjv_tokenizer();
// A llama2.c-style SentencePiece tokenizer: <unk> <s> </s>, the 256 byte tokens, then
// pieces with scores (merged by score), 300 tokens.
const gpt::TokenizerData &spm_tokenizer();

// A tiny random model (fixture writer) with the given tokenizer (or none), as a file image.
std::vector<uint8_t> tiny_model(gpt_arch arch, const gpt::TokenizerData *tok, uint32_t vocab, uint64_t seed);

} // namespace fuzz
