// char_vocab.h - character-level vocabularies (tokenizer kind "char"): one token per Unicode
// character. From nanoGPT's meta.pkl ({'vocab_size', 'itos': {id: char}, 'stoi'}), read with
// the safe pickle machine (pickle_vm.h), or from a text file: the sorted set of its characters,
// exactly as minGPT's CharDataset and the "Let's build GPT" lecture build it
// (sorted(set(text)) orders by code point).
#pragma once

#include "tokenizer/tokenizer_data.h"

#include <cstdint>
#include <string>

namespace gpt::convert {

// Throws GPT_ERR_FORMAT naming the file and the entry.
TokenizerData import_meta_pkl(const std::string &path);
TokenizerData import_meta_pkl_bytes(const uint8_t *data, uint64_t size, const std::string &source);

// Throws GPT_ERR_FORMAT for text that is not UTF-8, naming the byte offset.
TokenizerData char_vocab_from_text(const std::string &path);

} // namespace gpt::convert
