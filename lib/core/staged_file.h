// staged_file.h - files that appear whole or not at all. A StagedFile is a new file created
// beside its target (same directory, so the final rename is atomic). The writer fills it
// through fd(); finish() makes the bytes durable and closes it (it may then be read back by
// path, e.g. to verify it); commit() moves it onto the target and makes the directory entry
// durable. Until committed, the destructor removes it, so an error or an exception leaves
// nothing behind.
#pragma once

#include <string>

namespace gpt {

class StagedFile {
public:
    // Creates "<target>.partial-XXXXXX" (the target's name shortened when needed so the staging
    // name stays within the file-name limit) with the mode a new file gets (0666 less the
    // umask), or the mode of the regular file at target. Throws GPT_ERR_IO naming target.
    explicit StagedFile(const std::string &target);
    ~StagedFile();
    StagedFile(const StagedFile &) = delete;
    StagedFile &operator=(const StagedFile &) = delete;

    int fd() const { return fd_; }
    const std::string &path() const { return stage_; }
    const std::string &target() const { return target_; }

    // fsync and close; throws GPT_ERR_IO naming the target.
    void finish();
    // Moves the finished file onto the target. replace: an existing regular file there is
    // replaced, anything else (a directory, FIFO, device, symbolic link) is refused; otherwise
    // an existing path is never replaced, even one that appeared meanwhile. GPT_ERR_IO naming
    // the target on failure (the staged file is then removed by the destructor).
    void commit(bool replace);

private:
    std::string target_, stage_;
    int fd_ = -1;
    bool committed_ = false;
};

} // namespace gpt
