// chat_template_import.cpp - finds and reads a checkpoint's chat template (see the header).
#include "convert/chat_template_import.h"

#include "chat/chat_template.h"
#include "chat/lexer.h"
#include "chat/parser.h"
#include "chat/text.h"
#include "convert/fs_util.h"
#include "core/error.h"

#include <nlohmann/json.hpp>

namespace gpt {

namespace {

using nlohmann::json;

json parse_json(const std::string &path) {
    const std::string text = convert::read_text_file(path);
    try {
        return json::parse(text);
    } catch (const json::exception &e) {
        fail(GPT_ERR_FORMAT, "%s: not valid JSON: %s", path.c_str(), e.what());
    }
}

// A "chat_template" value: a string, or a list of {"name", "template"} (the "default" one).
std::string template_of(const json &v, const std::string &path, ImportNotes *notes) {
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_array()) fail(GPT_ERR_FORMAT, "%s: chat_template is neither a string nor a list of named templates", path.c_str());
    std::string names;
    for (const json &e : v) {
        if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["name"].is_string() || !e["template"].is_string())
            fail(GPT_ERR_FORMAT, "%s: a chat_template list entry is not {\"name\": ..., \"template\": ...}", path.c_str());
        if (e["name"] == "default") return e["template"].get<std::string>();
        names += (names.empty() ? "" : ", ") + e["name"].get<std::string>();
    }
    if (notes) notes->push_back(path + ": the chat templates (" + names + ") include no \"default\"; the file gets none");
    return "";
}

// Notes what the library's renderer will refuse, without refusing the conversion.
void check_renderable(const FoundChatTemplate &t, ImportNotes *notes) {
    if (!notes || t.text.empty()) return;
    try {
        if (t.text.size() > chat::kMaxTemplateBytes) fail(GPT_ERR_UNSUPPORTED, "over %zu bytes", chat::kMaxTemplateBytes);
        if (!chat::valid_utf8(t.text)) fail(GPT_ERR_FORMAT, "not valid UTF-8");
        chat::parse(chat::tokenize(t.text));
    } catch (const Error &e) {
        notes->push_back(t.file + ": the chat template is kept, but this library cannot render it: " + e.what());
    }
}

} // namespace

FoundChatTemplate import_chat_template(const std::string &dir, ImportNotes *notes) {
    FoundChatTemplate t;
    const std::string jinja = convert::join_path(dir, "chat_template.jinja");
    const std::string json_file = convert::join_path(dir, "chat_template.json");
    const std::string config = convert::join_path(dir, "tokenizer_config.json");
    if (convert::is_regular_file(jinja)) {
        t.text = convert::read_text_file(jinja);
        t.file = jinja;
    } else if (convert::is_regular_file(json_file)) {
        const json j = parse_json(json_file);
        if (!j.is_object() || !j.contains("chat_template")) fail(GPT_ERR_FORMAT, "%s: no \"chat_template\" key", json_file.c_str());
        t.text = template_of(j["chat_template"], json_file, notes);
        t.file = json_file;
    } else if (convert::is_regular_file(config)) {
        const json j = parse_json(config);
        if (j.is_object() && j.contains("chat_template") && !j["chat_template"].is_null()) {
            t.text = template_of(j["chat_template"], config, notes);
            t.file = config;
        }
    }
    check_renderable(t, notes);
    return t;
}

} // namespace gpt
