// chat_template.h - renders a conversation with a model's chat template (a Jinja2 template
// from its Hugging Face tokenizer_config.json), as transformers' apply_chat_template does:
// jinja2 with trim_blocks and lstrip_blocks, the loop controls, raise_exception,
// strftime_now, transformers' tojson and {% generation %}. The template is hostile input:
// its size, nesting, work, output and recursion are bounded (the k* constants here and in
// interpreter.h, parser.h, value.h; docs/RELIABILITY.md lists them).
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <vector>

namespace gpt::chat {

inline constexpr size_t kMaxTemplateBytes = 1u << 20;

struct Message {
    std::string_view role, content; // valid UTF-8 (the caller checks)
};

struct TemplateInputs {
    bool add_generation_prompt = false;
    // The text of the model's special tokens; a missing one is left undefined, as
    // transformers leaves out a special token the tokenizer does not have.
    const std::string *bos_token = nullptr, *eos_token = nullptr, *unk_token = nullptr, *pad_token = nullptr;
    std::time_t now = 0; // what strftime_now formats (local time)
};

// Throws gpt::Error: GPT_ERR_FORMAT for a syntax error or an error jinja2 would raise while
// rendering (naming line and column or line), GPT_ERR_UNSUPPORTED for a construct this
// renderer lacks or a limit reached, GPT_ERR_INVALID_ARG when the template calls
// raise_exception (its message included).
std::string apply_template(std::string_view source, const std::vector<Message> &messages, const TemplateInputs &in);

} // namespace gpt::chat
