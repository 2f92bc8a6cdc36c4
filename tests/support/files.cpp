// files.cpp - the test drivers' file helpers (see files.h): POSIX and stdio, nothing from
// the library.
#include "files.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

// cmocka last: it defines a fail() macro.
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>
}

namespace files {

namespace {
int rm_entry(const char *path, const struct stat *, int, struct FTW *) { return ::remove(path); }
} // namespace

std::string make_temp_dir(const char *prefix) {
    const char *t = std::getenv("TMPDIR");
    std::string tmpl = std::string(t && *t ? t : "/tmp") + "/" + prefix + "XXXXXX";
    if (!mkdtemp(tmpl.data())) fail_msg("mkdtemp failed");
    return tmpl;
}

void remove_tree(const std::string &path) { nftw(path.c_str(), rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

std::vector<std::string> list_dir(const std::string &path) {
    std::vector<std::string> out;
    DIR *d = opendir(path.c_str());
    if (!d) return out;
    while (struct dirent *e = readdir(d))
        if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) out.push_back(e->d_name);
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

void write_bytes(const std::string &path, const void *data, size_t n) {
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) fail_msg("cannot write %s", path.c_str());
    if (n && std::fwrite(data, 1, n, f) != n) fail_msg("short write %s", path.c_str());
    std::fclose(f);
}
void write_bytes(const std::string &path, const std::vector<uint8_t> &b) { write_bytes(path, b.data(), b.size()); }
void write_text(const std::string &path, const std::string &s) { write_bytes(path, s.data(), s.size()); }

std::vector<uint8_t> read_bytes(const std::string &path) {
    std::vector<uint8_t> out;
    FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) return out;
    uint8_t buf[65536];
    size_t k;
    while ((k = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + k);
    std::fclose(f);
    return out;
}

std::string read_text(const std::string &path) {
    const auto b = read_bytes(path);
    return std::string(b.begin(), b.end());
}

bool exists(const std::string &path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

} // namespace files
