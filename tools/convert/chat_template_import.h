// chat_template_import.h - the chat template a Hugging Face checkpoint ships, for the weight
// file's tokenizer.chat_template (docs/FORMAT.md). Looked for as transformers does, first
// found wins: chat_template.jinja (the text), chat_template.json ({"chat_template": text}),
// tokenizer_config.json's "chat_template" (a text, or a list of {"name", "template"} of which
// the one named "default" is taken).
#pragma once

#include "convert/tokenizer_import.h"

#include <string>

namespace gpt {

struct FoundChatTemplate {
    std::string text; // empty: none
    std::string file; // where it came from
};

// Reads dir's files. A template the library's renderer cannot render (or too large, or not
// UTF-8) is still kept, with a note saying so (transformers may render it; the library then
// reports GPT_ERR_UNSUPPORTED when asked). Throws GPT_ERR_FORMAT naming the file for
// malformed JSON or a chat_template of the wrong type; GPT_ERR_IO when unreadable.
FoundChatTemplate import_chat_template(const std::string &dir, ImportNotes *notes);

} // namespace gpt
