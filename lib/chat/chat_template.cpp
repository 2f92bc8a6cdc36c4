// chat_template.cpp - source -> tokens -> statements -> text, with the limits scaled to the
// conversation (see chat_template.h).
#include "chat/chat_template.h"

#include "chat/interpreter.h"
#include "chat/lexer.h"
#include "chat/parser.h"
#include "chat/text.h"
#include "core/error.h"

namespace gpt::chat {

std::string apply_template(std::string_view source, const std::vector<Message> &messages, const TemplateInputs &in) {
    if (source.size() > kMaxTemplateBytes)
        fail(GPT_ERR_UNSUPPORTED, "the chat template has %zu bytes, over the renderer's limit of %zu", source.size(), kMaxTemplateBytes);
    if (!valid_utf8(source)) fail(GPT_ERR_FORMAT, "the chat template is not valid UTF-8");
    const Body program = parse(tokenize(source));

    uint64_t message_bytes = 0;
    List list;
    list.reserve(messages.size());
    for (const Message &m : messages) {
        message_bytes += m.role.size() + m.content.size();
        list.push_back(Value::dict({{"role", Value::str(std::string(m.role))}, {"content", Value::str(std::string(m.content))}}));
    }
    Dict globals = {{"messages", Value::list(std::move(list))},
                    {"add_generation_prompt", Value::boolean(in.add_generation_prompt)},
                    {"tools", Value::none()},
                    {"documents", Value::none()}};
    const std::pair<const char *, const std::string *> specials[] = {
        {"bos_token", in.bos_token}, {"eos_token", in.eos_token}, {"unk_token", in.unk_token}, {"pad_token", in.pad_token}};
    for (const auto &s : specials)
        if (s.second) globals.emplace_back(s.first, Value::str(*s.second));

    // A long conversation may need proportionally more work and output; a hostile template
    // gains nothing from a short one.
    Limits limits;
    limits.max_steps += message_bytes / 2 + messages.size() * 1000;
    limits.max_bytes += 4 * message_bytes;
    limits.max_items += messages.size();
    return render(program, globals, limits, in.now);
}

} // namespace gpt::chat
