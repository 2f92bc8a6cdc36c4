// pretokenize.h - splits text into the words byte-level BPE merges within, exactly as the
// GPT-2, Llama-3, Qwen2 and o200k (Phi-4-mini) split regexes do, alone or after Hugging
// Face's Digits pre-tokenizer (SmolLM2) (leftmost-first alternation with backtracking,
// as Oniguruma / Python's regex run them), hand-coded over Unicode character classes.
// The words tile the text: every byte is in exactly one word, invalid UTF-8 included (each
// invalid byte is a unit of class "other", matching [^\s\p{L}\p{N}]).
#pragma once

#include "tokenizer/tokenizer_data.h"

#include <cstddef>
#include <string_view>
#include <vector>

namespace gpt {

struct TextSpan {
    size_t begin, end;  // byte offsets into the text, begin < end
};

// Appends the words of text, in order. kind must not be NONE.
void pretokenize(PreTokenizer kind, std::string_view text, std::vector<TextSpan> &out);

} // namespace gpt
