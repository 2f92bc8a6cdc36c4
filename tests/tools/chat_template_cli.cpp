// chat_template_cli - the library's chat-template renderer on a batch of conversations, for
// tests/reference/chat_template_check.py and tests/reference/jinja2_check.py (not installed).
//
//   chat_template_cli < request.json > results.json
//
// request: {"template": "...", "cases": [{"messages": [{"role": ..., "content": ...}, ...],
//           "add_generation_prompt": bool, "bos_token": "<s>", "eos_token": "</s>"}, ...]}
// results: [{"ok": true, "text": "..."} or {"ok": false, "status": N, "error": "..."}, ...]
// (bos_token / eos_token may be absent: the template then sees them undefined.)
#include "chat/chat_template.h"
#include "core/error.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>
#include <iostream>
#include <iterator>
#include <string>

using nlohmann::json;

int main() {
    try {
        const std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
        const json req = json::parse(input);
        const std::string tmpl = req.at("template").get<std::string>();
        json results = json::array();
        for (const json &c : req.at("cases")) {
            std::vector<std::string> store;
            std::vector<gpt::chat::Message> msgs;
            for (const json &m : c.at("messages")) {
                store.push_back(m.at("role").get<std::string>());
                store.push_back(m.at("content").get<std::string>());
            }
            for (size_t k = 0; k + 1 < store.size(); k += 2) msgs.push_back({store[k], store[k + 1]});
            gpt::chat::TemplateInputs in;
            in.add_generation_prompt = c.value("add_generation_prompt", false);
            std::string bos, eos;
            if (c.contains("bos_token")) in.bos_token = &(bos = c["bos_token"].get<std::string>());
            if (c.contains("eos_token")) in.eos_token = &(eos = c["eos_token"].get<std::string>());
            in.now = std::time(nullptr);
            try {
                results.push_back({{"ok", true}, {"text", gpt::chat::apply_template(tmpl, msgs, in)}});
            } catch (const gpt::Error &e) {
                results.push_back({{"ok", false}, {"status", (int)e.status()}, {"error", e.what()}});
            }
        }
        std::cout << results.dump() << "\n";
        return 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "chat_template_cli: %s\n", e.what());
        return 2;
    }
}
