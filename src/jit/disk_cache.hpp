#pragma once
// The on-disk kernel cache: one file per cache key, written atomically, verified on read.
//
// Layout: <root>/v<kDiskCacheFormatVersion>/<key>.cubin, where <root> is $AUTOGEMM_CACHE_DIR,
// else $XDG_CACHE_HOME/autogemm, else ~/.cache/autogemm (docs/env-vars.md). An entry is
//   header  magic "AGMJITC1", format version, the byte length of each payload field, the
//           payload length and an XXH3-64 checksum of the header and payload
//   payload key, lowered name, NVRTC log, cubin
// so a truncated, corrupted or misplaced file is detected (log warning, file removed, kernel
// recompiled). Writers create a uniquely named temporary file in the same directory, fsync it
// and rename() it over the entry: readers see the old entry or the new one, never a partial
// one, whatever other processes do and even if the writer is killed mid-write. A killed
// writer's temporary is removed by the next process that opens the cache once it is older
// than kStaleTemporaryAge.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>

#include "jit/jit.hpp"

namespace autogemm::jit {

// Bump when the entry layout changes; each version lives in its own subfolder.
inline constexpr std::uint32_t kDiskCacheFormatVersion = 1;

// A temporary this old belongs to a writer that died: a live one writes one entry (a few MB)
// in well under a second, so an hour never removes a file still being written.
inline constexpr std::chrono::hours kStaleTemporaryAge{1};

// The cache root the environment asks for (docs/env-vars.md).
struct DiskCacheRoot {
  std::optional<std::filesystem::path> root;  // nullopt: no disk caching
  std::string why_disabled;                   // when root is nullopt
  bool disabled_by_user = false;  // AUTOGEMM_DISABLE_DISK_CACHE=1 or AUTOGEMM_CACHE_DIR=""
  // The environment variable that decided (AUTOGEMM_DISABLE_DISK_CACHE, AUTOGEMM_CACHE_DIR,
  // XDG_CACHE_HOME or HOME) and its value ("(unset)" when none is set), for messages.
  std::string variable;
  std::string value;
};
DiskCacheRoot disk_cache_root_from_env();

class DiskCache {
 public:
  // Uses <root>/v<format version>, creating it. If it cannot be created the cache is disabled;
  // if it exists but is not writable, existing entries are still read but new ones are kept in
  // memory only. Either case logs one warning (level 2) for this instance. When it is
  // writable, temporaries older than kStaleTemporaryAge are removed.
  explicit DiskCache(const std::filesystem::path& root);

  // The entry folder; empty when the cache is disabled.
  std::string directory() const;
  bool readable() const { return readable_.load(); }
  bool writable() const { return writable_.load(); }
  // How many fallback warnings this instance has logged (0 or 1).
  int fallback_warnings() const { return fallback_warnings_.load(); }
  // Why the cache is not writable (empty while it is).
  const std::string& fallback_reason() const { return fallback_reason_; }
  // How many invalid entries load() found (and removed) in this instance.
  int rejected_entries() const { return rejected_entries_.load(); }
  // How many entries store() could not write (each logged and skipped).
  int failed_writes() const { return failed_writes_.load(); }

  std::filesystem::path entry_path(const std::string& key) const;

  // The entry for key, or nullopt when there is none or it is invalid (then it is removed with
  // a warning so that the next store rebuilds it). from_disk_cache is set, ptx is empty.
  std::optional<CompiledKernel> load(const std::string& key) const;

  // Writes kernel under kernel.cache_key, atomically. A failure to write this entry is logged
  // (level 2) and skipped: it says nothing about other entries (one entry's path may be taken
  // by a folder), so the cache stays on; the cache is an optimisation.
  void store(const CompiledKernel& kernel);

 private:
  // Only the constructor falls back, so fallback_reason_ is fixed once the cache is shared.
  void fall_back(const std::string& reason, bool keep_reading);
  void remove_stale_temporaries();
  void skip_entry(const std::string& reason);  // one store() failed: count and log it

  std::filesystem::path directory_;
  std::atomic<bool> readable_{true};
  std::atomic<bool> writable_{true};
  std::atomic<int> fallback_warnings_{0};
  std::string fallback_reason_;
  mutable std::atomic<int> rejected_entries_{0};
  std::atomic<int> failed_writes_{0};
  std::once_flag warn_once_;
};

}  // namespace autogemm::jit
