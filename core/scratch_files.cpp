#include "core/scratch_files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>

namespace hetplan {
namespace {

// Enough for every command: at most a few files are in flight at once (each writer holds one
// until its rename).
constexpr int kSlots = 64;
std::atomic<const char*> g_files[kSlots];
std::atomic<const char*> g_folders[kSlots];
std::atomic<pid_t> g_processes[kSlots];  // 0: empty

// The layout the kernel's getdents64 fills in (glibc's struct dirent64 is not declared for it).
struct KernelDirent {
  unsigned long long inode;
  long long offset;
  unsigned short length;
  unsigned char type;
  char name[1];
};

// Unlinks the files of a folder (not its subfolders) with system calls only.
void empty_folder(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  alignas(8) char buffer[4096];
  for (;;) {
    const long got = ::syscall(SYS_getdents64, fd, buffer, sizeof buffer);
    if (got <= 0) break;
    for (long at = 0; at < got;) {
      const auto* entry = reinterpret_cast<const KernelDirent*>(buffer + at);
      const char* name = entry->name;
      const bool dots = name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0));
      if (!dots) ::unlinkat(fd, name, 0);
      at += entry->length;
    }
  }
  ::close(fd);
}

}  // namespace

ScratchFile::ScratchFile(std::string path, bool folder) : path_(std::move(path)), folder_(folder) {
  std::atomic<const char*>* table = folder_ ? g_folders : g_files;
  for (int k = 0; k < kSlots; ++k) {
    const char* empty = nullptr;
    if (table[k].compare_exchange_strong(empty, path_.c_str())) {
      slot_ = k;
      break;
    }
  }
}

ScratchFile::~ScratchFile() {
  if (slot_ >= 0) (folder_ ? g_folders : g_files)[slot_].store(nullptr);
}

ScratchProcess::ScratchProcess(pid_t pid) {
  for (int k = 0; k < kSlots && pid > 0; ++k) {
    pid_t empty = 0;
    if (g_processes[k].compare_exchange_strong(empty, pid)) {
      slot_ = k;
      break;
    }
  }
}

ScratchProcess::~ScratchProcess() {
  if (slot_ >= 0) g_processes[slot_].store(0);
}

void remove_scratch_files() {
  // The processes first: one still running could create a file again after its unlink.
  for (auto& slot : g_processes) {
    if (const pid_t pid = slot.load(); pid > 0) ::kill(pid, SIGKILL);
  }
  for (auto& slot : g_processes) {
    if (const pid_t pid = slot.load(); pid > 0) {
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
  for (auto& slot : g_files) {
    if (const char* path = slot.load()) ::unlink(path);
  }
  for (auto& slot : g_folders) {
    if (const char* path = slot.load()) {
      empty_folder(path);
      ::rmdir(path);
    }
  }
}

}  // namespace hetplan
