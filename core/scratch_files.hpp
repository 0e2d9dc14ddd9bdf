// Files a command is writing and must not leave behind (a temporary beside its destination, a
// trace the worker is filling in), and the child processes that may be writing them. While a
// ScratchFile or ScratchProcess lives, its path or process id is in a fixed table that a signal
// handler can read without locks: remove_scratch_files() kills and reaps every process in it,
// then unlinks every path. A front end calls it from its SIGINT/SIGTERM/SIGHUP handler
// (cli/main.cpp); the core installs no handler and never prints.
#pragma once

#include <sys/types.h>

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

// A child process that may write a scratch file (a twin worker filling in its trace): ended
// before the files are removed, so that it cannot create one again after its removal. Its owner
// keeps it registered until the child has exited but is not yet reaped (waitid with WNOWAIT), so
// the id never names another process.
class ScratchProcess {
 public:
  explicit ScratchProcess(pid_t pid);
  ~ScratchProcess();  // forgets the process; does not signal or reap it
  ScratchProcess(const ScratchProcess&) = delete;
  ScratchProcess& operator=(const ScratchProcess&) = delete;

 private:
  int slot_ = -1;  // -1: the table was full; the process is then not ended on a signal
};

// Kills (SIGKILL) and reaps every registered scratch process, then unlinks every registered
// scratch file, then empties and removes every registered folder.
// Async-signal-safe: only atomic loads and system calls (kill, waitpid, unlink, open,
// getdents64, unlinkat, rmdir).
void remove_scratch_files();

}  // namespace hetplan
