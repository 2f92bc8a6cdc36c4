// tokenizer_corpus.h - reads tests/data/tokenizer_corpus.txt (shared by test_tokenizer.cpp
// and tokenize_cli.cpp; tests/reference/tokenizer_check.py parses the same format): one case
// per line, '#' comment lines and blank lines skipped, escapes \\ \n \r \t \xHH \u{H..}.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace corpus {

inline void append_utf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
        out += (char)cp;
    } else if (cp < 0x800) {
        out += (char)(0xC0 | (cp >> 6));
        out += (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += (char)(0xE0 | (cp >> 12));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    } else {
        out += (char)(0xF0 | (cp >> 18));
        out += (char)(0x80 | ((cp >> 12) & 0x3F));
        out += (char)(0x80 | ((cp >> 6) & 0x3F));
        out += (char)(0x80 | (cp & 0x3F));
    }
}

// One line's escapes resolved; throws std::runtime_error on a malformed escape.
inline std::string unescape(const std::string &line) {
    std::string out;
    for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] != '\\') {
            out += line[i];
            continue;
        }
        if (++i >= line.size()) throw std::runtime_error("dangling backslash in: " + line);
        char c = line[i];
        if (c == '\\') out += '\\';
        else if (c == 'n') out += '\n';
        else if (c == 'r') out += '\r';
        else if (c == 't') out += '\t';
        else if (c == 'x' && i + 2 < line.size()) {
            out += (char)std::stoi(line.substr(i + 1, 2), nullptr, 16);
            i += 2;
        } else if (c == 'u' && i + 1 < line.size() && line[i + 1] == '{') {
            size_t close = line.find('}', i);
            if (close == std::string::npos) throw std::runtime_error("unclosed \\u{ in: " + line);
            append_utf8(out, (uint32_t)std::stoul(line.substr(i + 2, close - i - 2), nullptr, 16));
            i = close;
        } else {
            throw std::runtime_error(std::string("unknown escape \\") + c + " in: " + line);
        }
    }
    return out;
}

inline std::vector<std::string> load(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open " + path);
    std::vector<std::string> cases;
    std::string line;
    while (std::getline(f, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        cases.push_back(unescape(line));
    }
    return cases;
}

} // namespace corpus
