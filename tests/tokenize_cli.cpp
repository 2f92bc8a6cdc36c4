// tokenize_cli.cpp - encodes a corpus with our tokenizer and prints the ids as JSON, for
// tests/reference/tokenizer_check.py to compare against Hugging Face's tokenizers. Not a
// unit test: a small tool built with the tests.
//
//   tokenize_cli SPEC --corpus FILE [--no-special] [--bos]
//   SPEC: --hf tokenizer.json [--config tokenizer_config.json] | --gpt2 vocab.json merges.txt
//         | --llama2c tokenizer.bin | --spm tokenizer.model
//
// Output: {"kind", "pre", "vocab_size", "notes": [...], "cases": [{"ids": [...],
// "decoded_hex": "...", "input_hex": "..."}]}. Special tokens in the text are parsed unless
// --no-special (Hugging Face always parses its added tokens). --bos prepends BOS where the
// source does by default (Hugging Face's add_special_tokens=True); without it, never.
// decoded_hex is decode(ids) (less that BOS) with special tokens rendered when parsed.
#include "convert/tokenizer_import.h"
#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_corpus.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstring>
#include <exception>

namespace {

std::string hex(const std::string &s) {
    static const char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

int usage() {
    fprintf(stderr, "usage: tokenize_cli (--hf tokenizer.json [--config tokenizer_config.json] | --gpt2 vocab.json merges.txt |\n"
                    "                     --llama2c tokenizer.bin | --spm tokenizer.model) --corpus FILE [--no-special] [--bos]\n");
    return 2;
}

} // namespace

int main(int argc, char **argv) {
    std::string hf, config, gpt2_vocab, gpt2_merges, llama2c, spm, corpus_path;
    bool parse_special = true, add_bos = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        try {
            if (a == "--hf") hf = next();
            else if (a == "--config") config = next();
            else if (a == "--gpt2") { gpt2_vocab = next(); gpt2_merges = next(); }
            else if (a == "--llama2c") llama2c = next();
            else if (a == "--spm") spm = next();
            else if (a == "--corpus") corpus_path = next();
            else if (a == "--no-special") parse_special = false;
            else if (a == "--bos") add_bos = true;
            else return usage();
        } catch (const std::exception &e) {
            fprintf(stderr, "tokenize_cli: %s\n", e.what());
            return usage();
        }
    }
    if (corpus_path.empty() || (hf.empty() && gpt2_vocab.empty() && llama2c.empty() && spm.empty())) return usage();
    try {
        gpt::ImportNotes notes;
        gpt::TokenizerData data;
        std::string source;
        if (!hf.empty()) { data = gpt::import_hf_tokenizer(hf, config, &notes); source = hf; }
        else if (!gpt2_vocab.empty()) { data = gpt::import_gpt2_vocab(gpt2_vocab, gpt2_merges); source = gpt2_vocab; }
        else if (!llama2c.empty()) { data = gpt::import_llama2c_tokenizer(llama2c); source = llama2c; }
        else { data = gpt::import_sentencepiece_model(spm, &notes); source = spm; }
        auto tok = gpt::Tokenizer::create(data, source);
        std::vector<std::string> cases = corpus::load(corpus_path);

        nlohmann::json out;
        out["kind"] = gpt::tokenizer_kind_name(data.kind);
        out["pre"] = gpt::pretokenizer_name(data.pre);
        out["vocab_size"] = tok->vocab_size();
        out["bos_id"] = tok->bos_id();
        out["default_add_bos"] = tok->default_add_bos();
        out["notes"] = notes;
        out["cases"] = nlohmann::json::array();
        for (const std::string &text : cases) {
            std::vector<int32_t> ids;
            bool bos = add_bos && tok->default_add_bos() && tok->bos_id() >= 0;
            tok->encode(text, bos, parse_special, ids);
            // the round trip is of the text: decoded without the BOS we put in front
            size_t skip = bos ? 1 : 0;
            std::string decoded = tok->decode(ids.data() + skip, ids.size() - skip, parse_special);
            out["cases"].push_back({{"ids", ids}, {"input_hex", hex(text)}, {"decoded_hex", hex(decoded)}});
        }
        printf("%s\n", out.dump().c_str());
        return 0;
    } catch (const gpt::Error &e) {
        fprintf(stderr, "tokenize_cli: %s\n", e.what());
        return 1;
    } catch (const std::exception &e) {
        fprintf(stderr, "tokenize_cli: %s\n", e.what());
        return 1;
    }
}
