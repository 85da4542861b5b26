// The in-process kernel cache: the second call is free, concurrent callers compile once.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "autogemm/errors.hpp"
#include "jit/jit.hpp"
#include "jit/kernel_cache.hpp"
#include "test_jit_util.hpp"

using namespace autogemm;

TEST(JitKernelCache, SecondCallReturnsTheSamePointer) {
  jit::KernelCache cache(nullptr);
  const jit::KernelSource src = autogemm::testing::fence_kernel_source("memory");
  const auto first = cache.get_or_compile(src);
  const auto second = cache.get_or_compile(src);
  EXPECT_EQ(first, second);
  EXPECT_EQ(cache.stats().compiles, 1);
  EXPECT_EQ(cache.stats().memory_hits, 1);
  EXPECT_EQ(cache.directory(), "");
}

TEST(JitKernelCache, EightThreadsCompileOnce) {
  jit::KernelCache cache(nullptr);
  const jit::KernelSource src = autogemm::testing::fence_kernel_source("threads");
  std::vector<std::shared_ptr<const jit::CompiledKernel>> results(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] { results[t] = cache.get_or_compile(src); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, results[0]);
  EXPECT_EQ(cache.stats().compiles, 1);
  EXPECT_EQ(cache.stats().memory_hits, 7);
}

TEST(JitKernelCache, FailureReachesEveryWaiterAndIsNotCached) {
  jit::KernelCache cache(nullptr);
  jit::KernelSource src = autogemm::testing::fence_kernel_source("fails");
  src.source += "int broken = undeclared_identifier_abc;\n";
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      try {
        cache.get_or_compile(src);
      } catch (const CudaError& e) {
        if (std::string(e.what()).find("undeclared_identifier_abc") != std::string::npos) ++errors;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 4);
  EXPECT_EQ(cache.stats().compiles, 0);
  // Not cached: the next call compiles (and fails) again rather than replaying an old error.
  EXPECT_THROW(cache.get_or_compile(src), CudaError);
}

TEST(JitKernelCache, ProcessWideCacheReturnsTheSamePointer) {
  const jit::KernelSource src = autogemm::testing::fence_kernel_source("process");
  const auto first = jit::get_or_compile(src);
  EXPECT_EQ(jit::get_or_compile(src), first);
  EXPECT_FALSE(first->cubin.empty());
  const std::string dir = jit::cache_directory();
  // Either the disk cache is off (memory only) or it lives in a versioned subfolder.
  if (!dir.empty()) EXPECT_TRUE(dir.ends_with("/v1")) << dir;
}
