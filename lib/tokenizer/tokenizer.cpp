// tokenizer.cpp - PLACEHOLDER until the tokenizer engine lands (issue 3): refuses to build.
#include "tokenizer/tokenizer.h"

#include "core/error.h"

namespace gpt {

std::unique_ptr<Tokenizer> Tokenizer::create(const TokenizerData &, const std::string &source) {
    fail(GPT_ERR_UNSUPPORTED, "%s: tokenizers are not implemented in this build yet", source.c_str());
}

} // namespace gpt
