// fs_util.cpp - path helpers and whole-file reads.
#include "convert/fs_util.h"

#include "core/error.h"
#include "core/open_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpt::convert {

std::string join_path(const std::string &dir, const std::string &name) {
    if (dir.empty()) return name;
    if (dir.back() == '/') return dir + name;
    return dir + "/" + name;
}

std::string base_name(const std::string &path) {
    std::string p = path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    size_t s = p.rfind('/');
    return s == std::string::npos ? p : p.substr(s + 1);
}

std::string dir_name(const std::string &path) {
    size_t s = path.rfind('/');
    if (s == std::string::npos) return ".";
    if (s == 0) return "/";
    return path.substr(0, s);
}

bool is_regular_file(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_directory(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool path_exists(const std::string &path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

namespace {
thread_local InputLog *t_inputs = nullptr;
} // namespace

InputLog::InputLog() : outer_(t_inputs) { t_inputs = this; }
InputLog::~InputLog() { t_inputs = outer_; }

std::string InputLog::input_at(const std::string &path) const {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return "";
    for (const Entry &e : entries_)
        if (e.dev == (uint64_t)st.st_dev && e.ino == (uint64_t)st.st_ino) return e.path;
    return "";
}

void record_input(int fd, const std::string &path) {
    struct stat st;
    if (t_inputs && fstat(fd, &st) == 0) t_inputs->entries_.push_back({(uint64_t)st.st_dev, (uint64_t)st.st_ino, path});
}

std::string read_text_file(const std::string &path) {
    uint64_t size = 0;
    const int fd = open_regular_file(path, &size); // a FIFO or device is refused, never waited on
    record_input(fd, path);
    std::string text;
    char buf[65536];
    for (;;) {
        const ssize_t k = ::read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            const int e = errno;
            ::close(fd);
            fail(GPT_ERR_IO, "%s: read failed: %s", path.c_str(), strerror(e));
        }
        if (k == 0) break;
        text.append(buf, (size_t)k);
    }
    ::close(fd);
    return text;
}

std::shared_ptr<MappedFile> MappedFile::open(const std::string &path) {
    std::shared_ptr<MappedFile> f(new MappedFile());
    f->path_ = path;
    const int fd = open_regular_file(path, &f->size_);
    record_input(fd, path);
    static const uint8_t kEmpty[8] = {0};
    f->data_ = kEmpty;
    if (f->size_ > 0) {
        void *p = mmap(nullptr, (size_t)f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int e = errno;
            ::close(fd);
            fail(GPT_ERR_IO, "%s: cannot map: %s", path.c_str(), strerror(e));
        }
        f->map_ = p;
        f->data_ = (const uint8_t *)p;
    }
    ::close(fd);
    return f;
}

MappedFile::~MappedFile() {
    if (map_) munmap(map_, (size_t)size_);
}

} // namespace gpt::convert
