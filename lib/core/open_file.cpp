// open_file.cpp - O_NONBLOCK keeps open() of a FIFO from waiting for a writer; the type is
// checked on the descriptor (no race with a rename), then blocking reads are restored.
#include "core/open_file.h"

#include "core/error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpt {

const char *file_type_name(unsigned mode) {
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    }
    return "not a regular file";
}

int open_regular_file(const std::string &path, uint64_t *size) {
    const char *p = path.c_str();
    const int fd = ::open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) fail(GPT_ERR_IO, "%s: cannot open: %s", p, std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        fail(GPT_ERR_IO, "%s: cannot stat: %s", p, std::strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        fail(GPT_ERR_IO, "%s: is %s, not a regular file", p, file_type_name(st.st_mode));
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    *size = (uint64_t)st.st_size;
    return fd;
}

} // namespace gpt
