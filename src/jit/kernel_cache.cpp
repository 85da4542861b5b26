// KernelCache and the process-wide get_or_compile / cache_directory (jit/jit.hpp).
#include "jit/kernel_cache.hpp"

#include "jit/log.hpp"

namespace autogemm::jit {

KernelCache::KernelCache(std::unique_ptr<DiskCache> disk) : disk_(std::move(disk)) {}

std::shared_ptr<const CompiledKernel> KernelCache::get_or_compile(const KernelSource& src) {
  const std::string key = cache_key(src);
  std::promise<std::shared_ptr<const CompiledKernel>> promise;
  Entry entry;
  bool first_caller = false;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      entry = promise.get_future().share();
      entries_.emplace(key, entry);
      first_caller = true;
    } else {
      entry = it->second;
    }
  }
  if (!first_caller) {
    auto kernel = entry.get();  // waits while another caller compiles; rethrows its failure
    ++memory_hits_;
    log(5, "kernel memory cache hit: {} ({})", src.name, key);
    return kernel;
  }
  try {
    auto kernel = load_or_compile(src, key);
    promise.set_value(kernel);
    return kernel;
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard lock(mutex_);
    entries_.erase(key);
    throw;
  }
}

std::shared_ptr<const CompiledKernel> KernelCache::load_or_compile(const KernelSource& src,
                                                                   const std::string& key) {
  if (disk_) {
    if (std::optional<CompiledKernel> cached = disk_->load(key)) {
      ++disk_hits_;
      log(4, "kernel disk cache hit: {} ({})", src.name, disk_->entry_path(key).string());
      return std::make_shared<const CompiledKernel>(std::move(*cached));
    }
  }
  auto kernel = std::make_shared<const CompiledKernel>(compile_to_cubin(src));
  ++compiles_;
  if (disk_) disk_->store(*kernel);
  return kernel;
}

KernelCache::Stats KernelCache::stats() const {
  return Stats{memory_hits_.load(), disk_hits_.load(), compiles_.load()};
}

std::string KernelCache::directory() const { return disk_ ? disk_->directory() : ""; }

namespace {

// The environment's choice, read once: process_kernel_cache() and disk_cache_status() agree.
const DiskCacheRoot& process_disk_cache_root() {
  static const DiskCacheRoot root = disk_cache_root_from_env();
  return root;
}

}  // namespace

KernelCache& process_kernel_cache() {
  // Never destroyed: kernels may be requested from other static destructors and threads.
  static KernelCache* const cache = [] {
    std::unique_ptr<DiskCache> disk;
    const DiskCacheRoot& setting = process_disk_cache_root();
    if (setting.root) {
      disk = std::make_unique<DiskCache>(*setting.root);
      if (!disk->directory().empty()) log(4, "kernel disk cache: {}", disk->directory());
    } else {
      // Asked for: a debug note. Not asked for: the user should know kernels recompile.
      log(setting.disabled_by_user ? 4 : 2, "kernel disk cache disabled: {}",
          setting.why_disabled);
    }
    return new KernelCache(std::move(disk));
  }();
  return *cache;
}

std::shared_ptr<const CompiledKernel> get_or_compile(const KernelSource& src) {
  return process_kernel_cache().get_or_compile(src);
}

std::string cache_directory() { return process_kernel_cache().directory(); }

DiskCacheStatus disk_cache_status() {
  const DiskCache* disk = process_kernel_cache().disk();
  const DiskCacheRoot& root = process_disk_cache_root();
  DiskCacheStatus status;
  status.variable = root.variable;
  status.value = root.value;
  if (disk == nullptr) {
    status.why = root.disabled_by_user ? "disables the kernel disk cache"
                                       : root.why_disabled + ": there is no kernel disk cache";
    return status;
  }
  status.directory = disk->directory();
  status.failed_writes = disk->failed_writes();
  status.writable = disk->writable();
  if (!status.writable) status.why = disk->fallback_reason();
  return status;
}

}  // namespace autogemm::jit
