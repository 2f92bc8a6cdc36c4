// tokenizer_import.h - fills a gpt::TokenizerData from the tokenizer files models ship with:
// Hugging Face tokenizer.json (+ tokenizer_config.json), GPT-2's vocab.json + merges.txt,
// llama2.c's tokenizer.bin and SentencePiece's tokenizer.model. Used by `gpt convert`, not
// by the library. Every failure is a gpt::Error naming the file and what was wrong:
// GPT_ERR_IO (unreadable), GPT_ERR_FORMAT (malformed), GPT_ERR_UNSUPPORTED (valid, but a
// tokenizer the engine cannot reproduce exactly).
#pragma once

#include "tokenizer/tokenizer_data.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

// Caveats found while importing (behaviour the engine approximates), for the tool to print.
using ImportNotes = std::vector<std::string>;

// A Hugging Face tokenizer.json with a BPE model: byte-level (the GPT-2 / Llama-3 / Qwen2 /
// o200k split patterns, or SmolLM2's Digits + ByteLevel; optionally NFC) or SentencePiece-style
// (byte_fallback, "▁" for spaces; Llama-2's Prepend normalizer, Metaspace's prepend schemes or
// Gemma's no prefix), with added tokens' lstrip/rstrip. config_path, when not empty, is its
// tokenizer_config.json: bos/eos/unk/pad tokens and add_bos_token.
TokenizerData import_hf_tokenizer(const std::string &tokenizer_json, const std::string &config_path = "",
                                  ImportNotes *notes = nullptr);

// GPT-2's vocab.json (alias encoder.json) + merges.txt (alias vocab.bpe).
TokenizerData import_gpt2_vocab(const std::string &vocab_json, const std::string &merges_txt);

// llama2.c's tokenizer.bin: int32 max_token_length, then per token float score, int32 length,
// bytes. vocab_size 0 reads tokens to the end of the file; otherwise exactly that many.
TokenizerData import_llama2c_tokenizer(const std::string &path, uint32_t vocab_size = 0);

// A SentencePiece tokenizer.model (protobuf ModelProto) of model type BPE.
TokenizerData import_sentencepiece_model(const std::string &path, ImportNotes *notes = nullptr);

} // namespace gpt
