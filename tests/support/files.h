// files.h - small file-system helpers for the test drivers: temporary directories (removed
// with everything in them), whole-file reads and writes, directory listings. Failures to
// create or write are cmocka failures; reads of a missing file return nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace files {

// A fresh directory $TMPDIR/<prefix>XXXXXX (TMPDIR unset: /tmp).
std::string make_temp_dir(const char *prefix = "gpt-test-");
// Removes path and, for a directory, everything under it (symbolic links not followed).
void remove_tree(const std::string &path);
// The names in a directory, sorted, without "." and ".." (empty if it cannot be opened).
std::vector<std::string> list_dir(const std::string &path);

void write_bytes(const std::string &path, const void *data, size_t n);
void write_bytes(const std::string &path, const std::vector<uint8_t> &b);
void write_text(const std::string &path, const std::string &s);
// The whole file (empty if it cannot be opened).
std::vector<uint8_t> read_bytes(const std::string &path);
std::string read_text(const std::string &path);
// Something (of any type) is at path.
bool exists(const std::string &path);

} // namespace files
