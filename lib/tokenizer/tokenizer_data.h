// tokenizer_data.h - a tokenizer as stored in the weight file's metadata (tokenizer.*),
// the contract between the converter (which fills it from tokenizer.json, vocab.json +
// merges.txt, tokenizer.model or llama2.c's tokenizer.bin) and the tokenizer engine.
//
// Token strings are stored in the Hugging Face tokenizer.json form (CHAR: the characters):
//   BPE (byte-level, GPT-2/Llama-3/Qwen2): GPT-2's bytes-to-unicode mapped strings ("Ġthe").
//   SPM (SentencePiece-style BPE with byte fallback, Llama-2/TinyLlama/llama2.c): "▁" (U+2581)
//        stands for a space, byte tokens are spelled "<0x0A>".
#pragma once

#include "format/metadata.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gpt {

// CHAR: one token per Unicode character (character-level models), tokens are the characters.
enum class TokenizerKind : uint8_t { NONE, BPE, SPM, CHAR };
// Pre-tokenization (splitting text into words before BPE) of byte-level BPE: a split regex
// (GPT-2, Llama-3, Qwen2, o200k as in Phi-4-mini), or GPT2_DIGITS: every digit alone, then
// the GPT-2 regex between them (SmolLM2's Digits(individual_digits) + ByteLevel).
enum class PreTokenizer : uint8_t { NONE, GPT2, LLAMA3, QWEN2, O200K, GPT2_DIGITS };

// Where SPM puts its "▁" before a text segment (the text between special tokens), with
// add_space_prefix: every segment (Llama-2's Prepend normalizer); every segment that does not
// already start with a space (Metaspace prepend_scheme "always"); only the segment at the
// start of the text, unless it starts with a space (Metaspace "first").
enum class SpacePrefixRule : uint8_t { EVERY_SEGMENT, UNLESS_SPACE, FIRST_SEGMENT };

// Unicode normalization applied to text (each stretch between special tokens) before it is
// split: none, or form C (Qwen2.5/Qwen3's NFC normalizer).
enum class TextNormalizer : uint8_t { NONE, NFC };

// Token types, as in SentencePiece / GGUF.
enum TokenType : int32_t {
    TOKEN_NORMAL = 1,
    TOKEN_UNKNOWN = 2,
    TOKEN_CONTROL = 3,      // special: BOS, EOS, <|endoftext|>, <|im_start|> ...
    TOKEN_USER_DEFINED = 4, // added tokens matched verbatim in text
    TOKEN_UNUSED = 5,
    TOKEN_BYTE = 6,         // <0xNN>
};

struct TokenizerData {
    TokenizerKind kind = TokenizerKind::NONE;
    PreTokenizer pre = PreTokenizer::NONE;
    std::vector<std::string> tokens;  // [vocab], id -> token string
    std::vector<float> scores;        // [vocab] or empty; SPM merge priority when merges are absent
    std::vector<int32_t> types;       // [vocab] or empty (all normal)
    std::vector<std::string> merges;  // "left right", highest priority first; may be empty for SPM
    int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
    bool add_bos = false;             // the source's default: prepend BOS when encoding
    bool add_space_prefix = true;     // SPM: prepend "▁" to the text (Llama-2 does)
    SpacePrefixRule prefix_rule = SpacePrefixRule::EVERY_SEGMENT;  // SPM with add_space_prefix
    bool ignore_merges = false;       // BPE: a word that is itself a token is emitted whole
    TextNormalizer normalizer = TextNormalizer::NONE;
    // Added tokens whose match takes the whitespace before (lstrip) / after (rstrip) it, as
    // Hugging Face's AddedToken flags do (Phi-3's chat tokens); ids, any order.
    std::vector<int32_t> lstrip_ids, rstrip_ids;

    // Reads tokenizer.* keys; kind NONE when the file carries no tokenizer. Throws
    // GPT_ERR_FORMAT naming the key for inconsistent data (sizes differ from vocab, ...).
    static TokenizerData from_metadata(const format::Metadata &m, uint32_t vocab_size, const std::string &source);
    void to_metadata(format::Metadata &m) const;
};

const char *tokenizer_kind_name(TokenizerKind k);   // "none" | "bpe" | "spm" | "char"
const char *pretokenizer_name(PreTokenizer p);      // "none" | "gpt2" | "llama3" | "qwen2" | "o200k" | "gpt2_digits"
const char *space_prefix_rule_name(SpacePrefixRule r); // "every_segment" | "unless_space" | "first_segment"

} // namespace gpt
