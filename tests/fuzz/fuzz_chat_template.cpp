// fuzz_chat_template - the chat-template renderer (lib/chat) on hostile templates.
//
// The first byte picks the conversation (bits 0-1: 0 to 3 messages of a fixed set with
// non-ASCII text, quotes and template syntax inside; bit 2: add_generation_prompt; bit 3:
// no bos/eos tokens); the rest is the template source.
// Invariants: no crash, leak or hang (every loop, recursion and string is bounded, see
// docs/RELIABILITY.md); the status is OK, GPT_ERR_FORMAT, GPT_ERR_UNSUPPORTED or
// GPT_ERR_INVALID_ARG (raise_exception) with a message; the output stays within the limit;
// rendering is deterministic.
#include "common.h"

#include "chat/chat_template.h"
#include "chat/interpreter.h"
#include "core/error.h"

#include <string>
#include <vector>

namespace {

struct Result {
    gpt_status status;
    std::string text;
};

Result run(const std::string &tmpl, const std::vector<gpt::chat::Message> &msgs, const gpt::chat::TemplateInputs &in) {
    try {
        return {GPT_OK, gpt::chat::apply_template(tmpl, msgs, in)};
    } catch (const gpt::Error &e) {
        return {e.status(), e.what()};
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    const std::string tmpl(reinterpret_cast<const char *>(data + 1), size - 1);
    static const gpt::chat::Message pool[] = {
        {"system", "Be brief. \xC3\xA9\xE4\xB8\xAD"}, {"user", "{{ x }} {% if %} 'q' \"q\" \\"}, {"assistant", ""}};
    std::vector<gpt::chat::Message> msgs(pool, pool + (mode & 3));
    static const std::string bos = "<s>", eos = "</s>";
    gpt::chat::TemplateInputs in;
    in.add_generation_prompt = (mode & 4) != 0;
    if (!(mode & 8)) in.bos_token = &bos, in.eos_token = &eos;
    in.now = 1700000000;
    const Result a = run(tmpl, msgs, in);
    FUZZ_CHECK(a.status == GPT_OK || a.status == GPT_ERR_FORMAT || a.status == GPT_ERR_UNSUPPORTED || a.status == GPT_ERR_INVALID_ARG,
               "status %d: %s", (int)a.status, a.text.c_str());
    if (a.status != GPT_OK) FUZZ_CHECK(!a.text.empty(), "an error without a message");
    if (a.status == GPT_OK) FUZZ_CHECK(a.text.size() <= gpt::chat::Limits().max_bytes + 4096, "output of %zu bytes", a.text.size());
    const Result b = run(tmpl, msgs, in);
    FUZZ_CHECK(a.status == b.status && a.text == b.text, "two renderings differ");
    return 0;
}
