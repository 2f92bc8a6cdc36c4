// staged_file.cpp - create beside, fill, fsync, rename or link into place, fsync the directory.
#include "core/staged_file.h"

#include "core/error.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpt {

namespace {

constexpr size_t kNameMax = NAME_MAX;           // bytes of one path component
constexpr const char *kSuffix = ".partial-";   // then 6 characters

std::string dir_of(const std::string &path) {
    const size_t s = path.rfind('/');
    if (s == std::string::npos) return ".";
    return s == 0 ? "/" : path.substr(0, s);
}

// Six characters that differ between calls, threads and processes.
std::string unique_tag() {
    static std::atomic<uint64_t> counter{0};
    uint64_t x = (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count() ^ ((uint64_t)getpid() << 32) ^
                 (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull);
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 32;
    static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string t(6, 'a');
    for (char &c : t) {
        c = kChars[x % 62];
        x /= 62;
    }
    return t;
}

void fsync_dir(const std::string &dir) {
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        ::close(dfd);
    }
}

} // namespace

StagedFile::StagedFile(const std::string &target) : target_(target) {
    const char *t = target.c_str();
    if (target.empty()) fail(GPT_ERR_INVALID_ARG, "no output path given");
    const size_t slash = target.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : target.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
    if (base.empty()) fail(GPT_ERR_IO, "%s: names a directory; give a file's path", t);
    const size_t room = kNameMax - std::strlen(kSuffix) - 6;
    if (base.size() > room) base.resize(room);
    // A file replaced keeps its permissions; a new one gets 0666 less the umask (open applies it).
    mode_t mode = 0666;
    struct stat st;
    const bool keep_mode = ::stat(t, &st) == 0 && S_ISREG(st.st_mode);
    if (keep_mode) mode = st.st_mode & 07777;
    for (int attempt = 0; attempt < 100 && fd_ < 0; attempt++) {
        stage_ = dir + base + kSuffix + unique_tag();
        fd_ = ::open(stage_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd_ < 0 && errno != EEXIST)
            fail(GPT_ERR_IO, "%s: cannot create a staging file beside it: %s", t, std::strerror(errno));
    }
    if (fd_ < 0) fail(GPT_ERR_IO, "%s: cannot create a staging file beside it: every name tried exists", t);
    if (keep_mode) fchmod(fd_, mode); // open() applied the umask to the old file's mode too
}

StagedFile::~StagedFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !stage_.empty()) ::unlink(stage_.c_str());
}

void StagedFile::finish() {
    if (fd_ < 0) return;
    const int fd = fd_;
    fd_ = -1;
    if (fsync(fd) != 0) {
        const int e = errno;
        ::close(fd);
        fail(GPT_ERR_IO, "%s: fsync failed: %s", target_.c_str(), std::strerror(e));
    }
    if (::close(fd) != 0) fail(GPT_ERR_IO, "%s: close failed: %s", target_.c_str(), std::strerror(errno));
}

void StagedFile::commit(bool replace) {
    finish();
    const char *t = target_.c_str();
    struct stat st;
    const bool exists = ::lstat(t, &st) == 0;
    if (replace) {
        if (exists && !S_ISREG(st.st_mode))
            fail(GPT_ERR_IO, "%s: is not a regular file (only a regular file is replaced)", t);
        if (::rename(stage_.c_str(), t) != 0) fail(GPT_ERR_IO, "%s: rename failed: %s", t, std::strerror(errno));
    } else {
        if (exists) fail(GPT_ERR_IO, "%s: already exists (not overwritten)", t);
        // link() refuses to replace a path that appeared meanwhile.
        if (::link(stage_.c_str(), t) == 0) {
            ::unlink(stage_.c_str());
        } else {
            if (errno == EEXIST) fail(GPT_ERR_IO, "%s: already exists (not overwritten)", t);
            // File systems without hard links: a fresh check, then rename.
            if (::lstat(t, &st) == 0) fail(GPT_ERR_IO, "%s: already exists (not overwritten)", t);
            if (::rename(stage_.c_str(), t) != 0) fail(GPT_ERR_IO, "%s: rename failed: %s", t, std::strerror(errno));
        }
    }
    committed_ = true;
    fsync_dir(dir_of(target_));
}

} // namespace gpt
