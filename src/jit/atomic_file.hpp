#pragma once
// Files that readers in other processes see whole or not at all: written to a temporary in the
// same folder, fsynced, then renamed over the final name (rename is atomic for the name; the
// fsync before it makes it atomic for the contents after a crash too). The kernel disk cache
// (disk_cache.cpp) and the tuning record (runtime/tuning_record.cpp) write this way.
#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

namespace autogemm::jit {

// Writes `bytes` to `final_path` through a temporary named `<stem><marker><pid>-<thread>-
// <random>` in the same folder (unique among writers; `marker` lets remove_stale_temporaries
// find it). Returns empty, or what failed with the path and the system's reason; the
// temporary is removed on failure.
std::string write_file_atomically(const std::filesystem::path& final_path, std::string_view bytes,
                                  const std::string& stem, std::string_view marker);

// Removes the temporaries (names containing `marker`) in `folder` older than `age`: leftovers of
// writers that died, since a live writer's is younger. Best effort (another process may remove
// the same file first). Returns how many it removed.
int remove_stale_temporaries(const std::filesystem::path& folder, std::string_view marker,
                             std::chrono::seconds age);

}  // namespace autogemm::jit
