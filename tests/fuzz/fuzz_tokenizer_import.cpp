// fuzz_tokenizer_import - the converter's tokenizer importers (tools/convert/tokenizer_import*.cpp),
// which read files from the model directory `gpt convert` is given:
//   first byte % 3 == 0: tokenizer.json, and after a "\n#CONFIG#\n" line a tokenizer_config.json
//                  1: vocab.json, and after a "\n#MERGES#\n" line merges.txt
//                  2: a SentencePiece tokenizer.model (protobuf)
// What an importer accepts is built into a tokenizer (which may still refuse it with
// GPT_ERR_FORMAT / UNSUPPORTED) and used; anything else must be GPT_ERR_FORMAT,
// GPT_ERR_UNSUPPORTED or GPT_ERR_IO naming the file.
#include "common.h"

#include "convert/tokenizer_import.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"

#include <string>
#include <vector>

namespace {

void expect_clean(const gpt::Error &e) {
    FUZZ_CHECK(e.status() == GPT_ERR_FORMAT || e.status() == GPT_ERR_UNSUPPORTED || e.status() == GPT_ERR_IO, "status %d: %s",
               (int)e.status(), e.what());
}

std::pair<std::string, std::string> split(const std::string &s, const char *sep) {
    const size_t at = s.find(sep);
    if (at == std::string::npos) return {s, std::string()};
    return {s.substr(0, at), s.substr(at + std::string(sep).size())};
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const std::string in((const char *)data + 1, size - 1);
    gpt::TokenizerData t;
    try {
        switch (data[0] % 3) {
        case 0: {
            const auto [tok, cfg] = split(in, "\n#CONFIG#\n");
            fuzz::MemFile a(tok.data(), tok.size(), "tokenizer.json"), b(cfg.data(), cfg.size(), "tokenizer_config.json");
            gpt::ImportNotes notes;
            t = gpt::import_hf_tokenizer(a.path(), cfg.empty() ? "" : b.path(), &notes);
            break;
        }
        case 1: {
            const auto [vocab, merges] = split(in, "\n#MERGES#\n");
            fuzz::MemFile a(vocab.data(), vocab.size(), "vocab.json"), b(merges.data(), merges.size(), "merges.txt");
            t = gpt::import_gpt2_vocab(a.path(), b.path());
            break;
        }
        default: {
            fuzz::MemFile a(in.data(), in.size(), "tokenizer.model");
            gpt::ImportNotes notes;
            t = gpt::import_sentencepiece_model(a.path(), &notes);
            break;
        }
        }
    } catch (const gpt::Error &e) {
        expect_clean(e);
        return 0;
    }
    try {
        auto tok = gpt::Tokenizer::create(t, "imported");
        for (bool special : {false, true}) {
            std::vector<int32_t> ids;
            tok->encode("Hello, world! the <|endoftext|> <s> caf\xC3\xA9 \xE2\x96\x81 \xFF", true, special, ids);
            for (int32_t id : ids) FUZZ_CHECK(id >= 0 && (uint32_t)id < tok->vocab_size(), "id %d", id);
            (void)tok->decode(ids.data(), ids.size(), special);
        }
    } catch (const gpt::Error &e) {
        FUZZ_CHECK(e.status() == GPT_ERR_FORMAT || e.status() == GPT_ERR_UNSUPPORTED, "create: %s", e.what());
    }
    return 0;
}
