// system_memory.h - how much host memory the system has and can still give a process.
#pragma once

#include <cstdint>

namespace gpt {

// MemAvailable from /proc/meminfo (what the kernel estimates can be allocated without
// swapping, page cache it can drop included); elsewhere the free physical pages. 0 when
// unknown.
uint64_t host_available_bytes();
// MemTotal from /proc/meminfo; elsewhere the physical pages. 0 when unknown.
uint64_t host_total_bytes();

} // namespace gpt
