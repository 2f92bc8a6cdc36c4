// system_memory.cpp - /proc/meminfo's MemTotal and MemAvailable, or sysconf's pages.
#include "core/system_memory.h"

#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace gpt {

namespace {
// The "KEY: N kB" line of /proc/meminfo in bytes; false when the file or line is missing.
bool meminfo_bytes(const char *key, uint64_t &bytes) {
    FILE *f = std::fopen("/proc/meminfo", "r");
    if (!f) return false;
    const size_t n = std::strlen(key);
    char line[256];
    bool found = false;
    unsigned long long kb = 0;
    while (!found && std::fgets(line, sizeof line, f))
        found = !std::strncmp(line, key, n) && line[n] == ':' && std::sscanf(line + n + 1, " %llu kB", &kb) == 1;
    std::fclose(f);
    if (found) bytes = (uint64_t)kb * 1024;
    return found;
}

uint64_t sysconf_bytes(int pages_name) {
#if defined(_SC_PAGESIZE)
    const long pages = sysconf(pages_name), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return (uint64_t)pages * (uint64_t)page;
#endif
    (void)pages_name;
    return 0;
}
} // namespace

uint64_t host_available_bytes() {
    uint64_t b = 0;
    if (meminfo_bytes("MemAvailable", b)) return b;
#if defined(_SC_AVPHYS_PAGES)
    return sysconf_bytes(_SC_AVPHYS_PAGES);
#else
    return 0;
#endif
}

uint64_t host_total_bytes() {
    uint64_t b = 0;
    if (meminfo_bytes("MemTotal", b)) return b;
#if defined(_SC_PHYS_PAGES)
    return sysconf_bytes(_SC_PHYS_PAGES);
#else
    return 0;
#endif
}

} // namespace gpt
