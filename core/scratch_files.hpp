// Files a command is writing and must not leave behind (a temporary beside its destination, a
// trace the worker is filling in). While a ScratchFile lives, its path is in a fixed table that a
// signal handler can read without locks: remove_scratch_files() unlinks every path in it. A front
// end calls it from its SIGINT/SIGTERM/SIGHUP handler (cli/main.cpp); the core installs no
// handler and never prints.
#pragma once

#include <string>

namespace hetplan {

class ScratchFile {
 public:
  // A folder (`folder` true) is emptied and removed, with whatever files are in it then.
  explicit ScratchFile(std::string path, bool folder = false);
  ~ScratchFile();  // forgets the path; does not remove the file (the owner renamed or removed it)
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int slot_ = -1;  // -1: the table was full; the file is then not cleaned up on a signal
  bool folder_ = false;
};

// Unlinks every registered scratch file, then empties and removes every registered folder.
// Async-signal-safe: only atomic loads and system calls (unlink, open, getdents64, unlinkat,
// rmdir).
void remove_scratch_files();

}  // namespace hetplan
