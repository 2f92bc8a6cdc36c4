// system_memory.cpp - /proc/meminfo's MemAvailable, or sysconf's free pages.
#include "core/system_memory.h"

#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace gpt {

uint64_t host_available_bytes() {
    if (FILE *f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        unsigned long long kb = 0;
        bool found = false;
        while (!found && std::fgets(line, sizeof line, f))
            found = std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
        std::fclose(f);
        if (found) return (uint64_t)kb * 1024;
    }
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) return (uint64_t)pages * (uint64_t)page;
#endif
    return 0;
}

} // namespace gpt
