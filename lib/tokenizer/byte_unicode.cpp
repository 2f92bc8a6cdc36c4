// byte_unicode.cpp - the tables of GPT-2's bytes_to_unicode, built once (thread-safe static
// initialisation) exactly as OpenAI's encoder.py builds them.
#include "tokenizer/byte_unicode.h"

#include "tokenizer/utf8.h"

#include <array>

namespace gpt {

namespace {

struct ByteTables {
    std::array<uint32_t, 256> cp{};
    std::array<std::string, 256> utf8;
    std::array<int16_t, 512> back{};  // every image code point is < 0x144

    ByteTables() {
        back.fill(-1);
        bool printable[256] = {};
        for (int b = '!'; b <= '~'; ++b) printable[b] = true;
        for (int b = 0xA1; b <= 0xAC; ++b) printable[b] = true;
        for (int b = 0xAE; b <= 0xFF; ++b) printable[b] = true;
        uint32_t n = 0;
        for (int b = 0; b < 256; ++b) cp[b] = printable[b] ? (uint32_t)b : 256 + n++;
        for (int b = 0; b < 256; ++b) {
            utf8::append(utf8[b], cp[b]);
            back[cp[b]] = (int16_t)b;
        }
    }
};

const ByteTables &tables() {
    static const ByteTables t;
    return t;
}

} // namespace

uint32_t byte_to_codepoint(uint8_t b) { return tables().cp[b]; }
const std::string &byte_to_utf8(uint8_t b) { return tables().utf8[b]; }
int codepoint_to_byte(uint32_t cp) { return cp < 512 ? tables().back[cp] : -1; }

} // namespace gpt
