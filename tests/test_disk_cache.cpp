// DiskCache and KernelCache against a real directory: persistence across instances,
// concurrent writers (threads and processes), corrupt entries, unwritable directories.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "jit/disk_cache.hpp"
#include "jit/kernel_cache.hpp"
#include "jit/log.hpp"
#include "test_jit_util.hpp"

using namespace autogemm;
using autogemm::testing::ScratchDir;
using autogemm::testing::ScopedEnv;

namespace {

std::unique_ptr<jit::KernelCache> cache_in(const std::filesystem::path& root) {
  return std::make_unique<jit::KernelCache>(std::make_unique<jit::DiskCache>(root));
}

// One compiled kernel for the tests that only move bytes around (NVRTC takes ~0.5 s).
const jit::CompiledKernel& compiled_fence() {
  static const jit::CompiledKernel kernel =
      jit::compile_to_cubin(autogemm::testing::fence_kernel_source("disk"));
  return kernel;
}

std::uintmax_t bytes_of(const std::filesystem::path& p) { return std::filesystem::file_size(p); }

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(DiskCache, FreshInstanceServesTheEntryFromDisk) {
  ScratchDir dir;
  const jit::KernelSource src = autogemm::testing::fence_kernel_source("persist");
  auto first = cache_in(dir.path());
  const auto compiled = first->get_or_compile(src);
  EXPECT_EQ(first->stats().compiles, 1);
  EXPECT_FALSE(compiled->from_disk_cache);
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "v1" / (compiled->cache_key + ".cubin")));
  EXPECT_EQ(first->directory(), (dir.path() / "v1").string());

  auto second = cache_in(dir.path());
  const auto loaded = second->get_or_compile(src);
  EXPECT_EQ(second->stats().compiles, 0);
  EXPECT_EQ(second->stats().disk_hits, 1);
  EXPECT_TRUE(loaded->from_disk_cache);
  EXPECT_EQ(loaded->cubin, compiled->cubin);
  EXPECT_EQ(loaded->lowered_name, compiled->lowered_name);
  EXPECT_EQ(loaded->log, compiled->log);  // ptxas report survives, for register checks
  EXPECT_EQ(loaded->cache_key, compiled->cache_key);
  EXPECT_TRUE(loaded->ptx.empty());
  EXPECT_EQ(loaded->compile_ms, 0.0);
}

TEST(DiskCache, ConcurrentThreadsWritingOneEntryLeaveItValid) {
  ScratchDir dir;
  const jit::CompiledKernel& kernel = compiled_fence();
  jit::DiskCache shared(dir.path());
  std::vector<std::thread> threads;
  std::atomic<int> bad_reads{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      jit::DiskCache own(dir.path());  // half share an instance, half have their own
      jit::DiskCache& cache = t % 2 ? shared : own;
      for (int i = 0; i < 25; ++i) {
        cache.store(kernel);
        auto back = cache.load(kernel.cache_key);
        if (!back || back->cubin != kernel.cubin) ++bad_reads;
      }
      bad_reads += cache.rejected_entries();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad_reads.load(), 0);
  auto back = jit::DiskCache(dir.path()).load(kernel.cache_key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->cubin, kernel.cubin);
  // Only the entry is left: every temporary was renamed.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path() / "v1"), {}), 1);
}

TEST(DiskCache, ConcurrentProcessesWritingOneEntryLeaveItValid) {
  ScratchDir dir;
  const jit::CompiledKernel& kernel = compiled_fence();
  std::vector<pid_t> children;
  for (int p = 0; p < 4; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      // Child: no gtest macros (they would report into the parent's copy of the state).
      jit::DiskCache cache(dir.path());
      int failures = 0;
      for (int i = 0; i < 25; ++i) {
        cache.store(kernel);
        auto back = cache.load(kernel.cache_key);
        if (!back || back->cubin != kernel.cubin || back->lowered_name != kernel.lowered_name)
          ++failures;
      }
      ::_exit(failures + cache.rejected_entries() == 0 && cache.writable() ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << pid << " saw a bad entry";
  }
  jit::DiskCache cache(dir.path());
  auto back = cache.load(kernel.cache_key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->cubin, kernel.cubin);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path() / "v1"), {}), 1);
}

TEST(DiskCache, LeftoverTemporaryOfAKilledWriterIsIgnored) {
  ScratchDir dir;
  const jit::CompiledKernel& kernel = compiled_fence();
  jit::DiskCache cache(dir.path());
  // What a writer killed mid-write leaves: a partial temporary, never the entry itself.
  std::ofstream(dir.path() / "v1" / (kernel.cache_key + ".cubin.tmp-1-2-3")) << "AGMJ";
  EXPECT_FALSE(cache.load(kernel.cache_key).has_value());
  EXPECT_EQ(cache.rejected_entries(), 0);
  cache.store(kernel);
  EXPECT_TRUE(cache.load(kernel.cache_key).has_value());
}

TEST(DiskCache, TruncatedEntryIsDetectedRemovedAndRebuilt) {
  ScratchDir dir;
  const jit::KernelSource src = autogemm::testing::fence_kernel_source("truncate");
  const auto compiled = cache_in(dir.path())->get_or_compile(src);
  const auto path = dir.path() / "v1" / (compiled->cache_key + ".cubin");
  std::filesystem::resize_file(path, bytes_of(path) / 2);

  jit::DiskCache probe(dir.path());
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(probe.load(compiled->cache_key).has_value());
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(probe.rejected_entries(), 1);
  if (log_level() >= 2) EXPECT_NE(warnings.find("truncated"), std::string::npos) << warnings;
  EXPECT_FALSE(std::filesystem::exists(path));

  auto rebuilt = cache_in(dir.path());
  const auto again = rebuilt->get_or_compile(src);
  EXPECT_EQ(rebuilt->stats().compiles, 1);
  EXPECT_EQ(again->cubin, compiled->cubin);
  // The rebuilt entry is valid again. (Not byte-identical: the log holds ptxas's compile time.)
  const auto reloaded = jit::DiskCache(dir.path()).load(compiled->cache_key);
  ASSERT_TRUE(reloaded.has_value());
  EXPECT_EQ(reloaded->cubin, compiled->cubin);
}

TEST(DiskCache, CorruptedByteIsDetectedAndRebuilt) {
  ScratchDir dir;
  const jit::KernelSource src = autogemm::testing::fence_kernel_source("corrupt");
  const auto compiled = cache_in(dir.path())->get_or_compile(src);
  const auto path = dir.path() / "v1" / (compiled->cache_key + ".cubin");
  // Flip one byte of the cubin (the payload's tail), keeping the length.
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    const auto offset = static_cast<std::streamoff>(bytes_of(path) - compiled->cubin.size() / 2);
    file.seekg(offset);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x40);
    file.seekp(offset);
    file.write(&byte, 1);
  }
  auto rebuilt = cache_in(dir.path());
  ::testing::internal::CaptureStderr();
  const auto again = rebuilt->get_or_compile(src);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rebuilt->disk()->rejected_entries(), 1);
  EXPECT_EQ(rebuilt->stats().disk_hits, 0);
  EXPECT_EQ(rebuilt->stats().compiles, 1);
  if (log_level() >= 2) EXPECT_NE(warnings.find("checksum"), std::string::npos) << warnings;
  EXPECT_EQ(again->cubin, compiled->cubin);
  // The rebuilt entry is valid again.
  EXPECT_TRUE(jit::DiskCache(dir.path()).load(compiled->cache_key).has_value());
}

TEST(DiskCache, EntryUnderAnotherKeyIsRejected) {
  ScratchDir dir;
  const jit::CompiledKernel& kernel = compiled_fence();
  jit::DiskCache cache(dir.path());
  cache.store(kernel);
  const std::string other_key(32, 'a');
  std::filesystem::copy_file(cache.entry_path(kernel.cache_key), cache.entry_path(other_key));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(other_key).has_value());
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache.rejected_entries(), 1);
}

// A directory this process cannot write: chmod 0555 where permissions apply, else (root
// ignores modes) a path below a regular file, which can never be created.
static std::filesystem::path unwritable_root(const ScratchDir& dir) {
  const auto locked = dir.path() / "locked";
  std::filesystem::create_directory(locked);
  ::chmod(locked.c_str(), 0555);
  const auto probe = locked / "probe";
  if (std::ofstream(probe).good()) {  // permissions do not stop us (root)
    std::filesystem::remove(probe);
    const auto file = dir.path() / "a_file";
    std::ofstream(file) << "not a directory";
    return file / "sub";
  }
  return locked;
}

TEST(DiskCache, UnwritableDirectoryFallsBackToMemoryWithOneWarning) {
  ScratchDir dir;
  const auto root = unwritable_root(dir);
  ::testing::internal::CaptureStderr();
  auto cache = cache_in(root);
  const auto a = cache->get_or_compile(autogemm::testing::fence_kernel_source("ro-a"));
  const auto b = cache->get_or_compile(autogemm::testing::fence_kernel_source("ro-b"));
  const auto a_again = cache->get_or_compile(autogemm::testing::fence_kernel_source("ro-a"));
  const std::string warnings = ::testing::internal::GetCapturedStderr();

  EXPECT_FALSE(a->cubin.empty());
  EXPECT_FALSE(b->cubin.empty());
  EXPECT_EQ(a_again, a);  // the memory cache still works
  EXPECT_EQ(cache->stats().compiles, 2);
  EXPECT_EQ(cache->disk()->fallback_warnings(), 1);
  EXPECT_FALSE(cache->disk()->writable());
  EXPECT_EQ(cache->directory(), "");
  if (log_level() >= 2) EXPECT_EQ(count(warnings, "kernel disk cache:"), 1) << warnings;
  EXPECT_FALSE(std::filesystem::exists(root / "v1"));
}

TEST(DiskCache, ReadOnlyEntryFolderIsStillReadButNotWritten) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  ScratchDir dir;
  const jit::KernelSource cached_src = autogemm::testing::fence_kernel_source("ro-cached");
  cache_in(dir.path())->get_or_compile(cached_src);  // one entry, written while writable
  ::chmod((dir.path() / "v1").c_str(), 0555);

  ::testing::internal::CaptureStderr();
  auto cache = cache_in(dir.path());
  const auto hit = cache->get_or_compile(cached_src);
  const auto fresh = cache->get_or_compile(autogemm::testing::fence_kernel_source("ro-new"));
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(hit->from_disk_cache);
  EXPECT_FALSE(fresh->from_disk_cache);
  EXPECT_EQ(cache->stats().disk_hits, 1);
  EXPECT_EQ(cache->stats().compiles, 1);
  EXPECT_EQ(cache->disk()->fallback_warnings(), 1);
  EXPECT_TRUE(cache->disk()->readable());
  EXPECT_FALSE(std::filesystem::exists(cache->disk()->entry_path(fresh->cache_key)));
  if (log_level() >= 2) EXPECT_EQ(count(warnings, "kernel disk cache:"), 1) << warnings;
}


TEST(DiskCache, RootFollowsTheEnvironment) {
  ScopedEnv off("AUTOGEMM_DISABLE_DISK_CACHE", nullptr);
  ScopedEnv dir("AUTOGEMM_CACHE_DIR", nullptr);
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(jit::disk_cache_root_from_env().root, "/home/someone/.cache/autogemm");
  {
    ScopedEnv set_xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(jit::disk_cache_root_from_env().root, "/xdg/autogemm");
    ScopedEnv set_dir("AUTOGEMM_CACHE_DIR", "/explicit");
    EXPECT_EQ(jit::disk_cache_root_from_env().root, "/explicit");
    ScopedEnv empty_dir("AUTOGEMM_CACHE_DIR", "");
    const auto disabled = jit::disk_cache_root_from_env();
    EXPECT_FALSE(disabled.root.has_value());
    EXPECT_TRUE(disabled.disabled_by_user);
  }
  {
    ScopedEnv set_dir("AUTOGEMM_CACHE_DIR", "/explicit");
    ScopedEnv disable("AUTOGEMM_DISABLE_DISK_CACHE", "1");
    const auto disabled = jit::disk_cache_root_from_env();
    EXPECT_FALSE(disabled.root.has_value());
    EXPECT_NE(disabled.why_disabled.find("AUTOGEMM_DISABLE_DISK_CACHE"), std::string::npos);
  }
  ScopedEnv no_home("HOME", nullptr);
  const auto none = jit::disk_cache_root_from_env();
  EXPECT_FALSE(none.root.has_value());
  EXPECT_FALSE(none.disabled_by_user);
}

// One entry that cannot be written (its path is taken by a directory) is skipped with a
// warning; the cache stays on for every other entry and the kernel is still returned.
TEST(DiskCache, OneFailedEntryWriteLeavesTheCacheOn) {
  ScratchDir dir;
  const jit::KernelSource blocked_src = autogemm::testing::fence_kernel_source("blocked");
  const jit::KernelSource other_src = autogemm::testing::fence_kernel_source("unblocked");
  auto cache = cache_in(dir.path());
  const auto blocked_path = cache->disk()->entry_path(jit::cache_key(blocked_src));
  std::filesystem::create_directories(blocked_path / "in-the-way");

  ::testing::internal::CaptureStderr();
  const auto blocked = cache->get_or_compile(blocked_src);
  const auto other = cache->get_or_compile(other_src);
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(blocked->cubin.empty());
  EXPECT_TRUE(cache->disk()->writable());
  EXPECT_EQ(cache->disk()->failed_writes(), 1);
  EXPECT_EQ(cache->directory(), (dir.path() / "v1").string());
  EXPECT_TRUE(std::filesystem::exists(cache->disk()->entry_path(other->cache_key)));
  if (log_level() >= 2)
    EXPECT_NE(warnings.find(blocked_path.string()), std::string::npos) << warnings;
  // A later process (a fresh instance) still writes the other entries.
  auto later = cache_in(dir.path());
  EXPECT_TRUE(later->disk()->writable());
  const auto third = later->get_or_compile(autogemm::testing::fence_kernel_source("third"));
  EXPECT_TRUE(std::filesystem::exists(later->disk()->entry_path(third->cache_key)));
  // No temporary is left behind by the failed write.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "v1"))
    EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
}

// A killed writer's temporary older than an hour is removed when the cache opens; a fresh
// one (a writer at work in another process) is left alone.
TEST(DiskCache, StaleTemporariesAreRemovedWhenTheCacheOpens) {
  ScratchDir dir;
  jit::DiskCache first(dir.path());  // creates v1
  const auto stale = dir.path() / "v1" / (std::string(32, 'a') + ".cubin.tmp-1-2-3");
  const auto fresh = dir.path() / "v1" / (std::string(32, 'b') + ".cubin.tmp-4-5-6");
  const auto entry_like = dir.path() / "v1" / (std::string(32, 'c') + ".cubin");
  for (const auto& path : {stale, fresh, entry_like}) std::ofstream(path) << "AGMJ";
  const auto two_hours_ago = std::filesystem::file_time_type::clock::now() -
                             std::chrono::hours(2);
  std::filesystem::last_write_time(stale, two_hours_ago);
  std::filesystem::last_write_time(entry_like, two_hours_ago);

  jit::DiskCache reopened(dir.path());
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  EXPECT_TRUE(std::filesystem::exists(entry_like));  // entries are not temporaries
  EXPECT_TRUE(reopened.writable());
}
