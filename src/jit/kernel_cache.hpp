#pragma once
// The in-process kernel cache in front of the disk cache and NVRTC. get_or_compile()
// (jit/jit.hpp) uses one process-wide instance; tests build their own with an explicit
// DiskCache (or none) to observe what happened.
#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "jit/disk_cache.hpp"
#include "jit/jit.hpp"

namespace autogemm::jit {

class KernelCache {
 public:
  struct Stats {
    std::int64_t memory_hits = 0;  // served from memory (including waits on another caller)
    std::int64_t disk_hits = 0;
    std::int64_t compiles = 0;     // NVRTC runs that succeeded
  };

  // disk may be null: memory only.
  explicit KernelCache(std::unique_ptr<DiskCache> disk);

  // Memory, then disk, then NVRTC (whose result is written to disk). Thread-safe: concurrent
  // callers of one key share one compilation. A failed compilation is not cached: every waiting
  // caller gets its exception and a later call tries again.
  std::shared_ptr<const CompiledKernel> get_or_compile(const KernelSource& src);

  Stats stats() const;
  // The disk cache's entry folder, or "" when there is none.
  std::string directory() const;
  DiskCache* disk() const { return disk_.get(); }

 private:
  using Entry = std::shared_future<std::shared_ptr<const CompiledKernel>>;
  std::shared_ptr<const CompiledKernel> load_or_compile(const KernelSource& src,
                                                        const std::string& key);

  std::unique_ptr<DiskCache> disk_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
  std::atomic<std::int64_t> memory_hits_{0}, disk_hits_{0}, compiles_{0};
};

// The instance behind get_or_compile(): disk root from the environment (docs/env-vars.md).
KernelCache& process_kernel_cache();

}  // namespace autogemm::jit
