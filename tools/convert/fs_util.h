// fs_util.h - the few file-system helpers the converter shares: path joining, existence
// checks and whole-file reads that fail with gpt::Error naming the path.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gpt::convert {

std::string join_path(const std::string &dir, const std::string &name);
std::string base_name(const std::string &path);
std::string dir_name(const std::string &path); // "." for a bare file name
bool is_regular_file(const std::string &path);
bool is_directory(const std::string &path);
bool path_exists(const std::string &path);
// Reads a whole (small) file; throws GPT_ERR_IO naming it.
std::string read_text_file(const std::string &path);

// The files a conversion has read, by identity (device and inode, so another name or a hard
// link of an input is recognised): while an InputLog lives, read_text_file and
// MappedFile::open on its thread record every file they open into it. The output is
// checked against it so no input is ever overwritten.
class InputLog {
public:
    InputLog();
    ~InputLog();
    InputLog(const InputLog &) = delete;
    InputLog &operator=(const InputLog &) = delete;
    // The input that `path` is (its recorded name), or "" when it is none of them or absent.
    std::string input_at(const std::string &path) const;

private:
    friend void record_input(int fd, const std::string &path);
    struct Entry {
        uint64_t dev, ino;
        std::string path;
    };
    std::vector<Entry> entries_;
    InputLog *outer_;
};

void record_input(int fd, const std::string &path);

// A whole file mapped read-only (an empty file maps to size 0 and a non-null pointer).
class MappedFile {
public:
    static std::shared_ptr<MappedFile> open(const std::string &path); // throws GPT_ERR_IO naming it
    ~MappedFile();
    MappedFile(const MappedFile &) = delete;
    MappedFile &operator=(const MappedFile &) = delete;
    const uint8_t *data() const { return data_; }
    uint64_t size() const { return size_; }
    const std::string &path() const { return path_; }

private:
    MappedFile() = default;
    std::string path_;
    void *map_ = nullptr;
    const uint8_t *data_ = nullptr;
    uint64_t size_ = 0;
};

} // namespace gpt::convert
