#include "core/scratch_files.hpp"

#include <unistd.h>

#include <atomic>

namespace hetplan {
namespace {

// Enough for every command: at most a few files are in flight at once (each writer holds one
// until its rename).
constexpr int kSlots = 64;
std::atomic<const char*> g_slots[kSlots];

}  // namespace

ScratchFile::ScratchFile(std::string path) : path_(std::move(path)) {
  for (int k = 0; k < kSlots; ++k) {
    const char* empty = nullptr;
    if (g_slots[k].compare_exchange_strong(empty, path_.c_str())) {
      slot_ = k;
      break;
    }
  }
}

ScratchFile::~ScratchFile() {
  if (slot_ >= 0) g_slots[slot_].store(nullptr);
}

void remove_scratch_files() {
  for (auto& slot : g_slots) {
    if (const char* path = slot.load()) ::unlink(path);
  }
}

}  // namespace hetplan
