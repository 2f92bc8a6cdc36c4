// open_file.h - opening a file the library reads: never blocks on a FIFO or a device, and
// refuses anything but a regular file with a message naming the path and what it is.
#pragma once

#include <cstdint>
#include <string>

namespace gpt {

// Opens path read-only (close-on-exec) and returns the descriptor; *size gets the file's
// size. Throws GPT_ERR_IO naming the path: missing, unreadable, or not a regular file
// ("is a FIFO", "is a directory", ...).
int open_regular_file(const std::string &path, uint64_t *size);

// "a FIFO", "a directory", "a character device", ... for the type bits of st_mode.
const char *file_type_name(unsigned mode);

} // namespace gpt
