// cache_key: changes with everything that changes the binary, stable otherwise.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <cuda.h>

#include "autogemm/version.hpp"
#include "jit/jit.hpp"
#include "jit/nvrtc_options.hpp"
#include "test_jit_util.hpp"

using namespace autogemm;

TEST(JitCacheKey, StableForEqualSources) {
  const jit::KernelSource a = autogemm::testing::fence_kernel_source();
  const jit::KernelSource b = autogemm::testing::fence_kernel_source();
  const std::string key = jit::cache_key(a);
  EXPECT_EQ(key, jit::cache_key(a));
  EXPECT_EQ(key, jit::cache_key(b));
  EXPECT_EQ(key.size(), 32u);  // 128 bits in hex
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << key;
}

TEST(JitCacheKey, ChangesWithSourceOptionsArchAndKernelName) {
  const jit::KernelSource base = autogemm::testing::fence_kernel_source();
  std::set<std::string> keys = {jit::cache_key(base)};

  jit::KernelSource changed = base;
  changed.source += " ";
  keys.insert(jit::cache_key(changed));

  changed = base;
  changed.extra_options = {"-DX=1"};
  keys.insert(jit::cache_key(changed));

  changed = base;
  changed.extra_options = {"-DX=2"};
  keys.insert(jit::cache_key(changed));

  changed = base;
  changed.arch = "sm_90";
  keys.insert(jit::cache_key(changed));

  changed = base;
  changed.kernel_name = "other_kernel";
  keys.insert(jit::cache_key(changed));

  EXPECT_EQ(keys.size(), 6u) << "two different sources share a cache key";
}

TEST(JitCacheKey, FieldBoundariesMatter) {
  // Length-prefixed fields: moving a character from one option to the next changes the key.
  jit::KernelSource a = autogemm::testing::fence_kernel_source(), b = a;
  a.extra_options = {"-DA=1", "-DB=2"};
  b.extra_options = {"-DA=1-", "DB=2"};
  EXPECT_NE(jit::cache_key(a), jit::cache_key(b));
}

TEST(JitCacheKey, ReadableNameIsNotPartOfTheKey) {
  // The name only labels logs; the same code under two names is the same binary.
  jit::KernelSource a = autogemm::testing::fence_kernel_source(), b = a;
  b.name = "another_label";
  EXPECT_EQ(jit::cache_key(a), jit::cache_key(b));
}

TEST(JitCacheKey, ChangesWithTheToolchain) {
  // The toolchain: the NVRTC library loaded (its version and the file, so a patch release
  // differs), the CUDA toolkit built against and autogemm's version.
  const jit::KernelSource src = autogemm::testing::fence_kernel_source();
  const std::string toolchain = jit::toolchain_identity();
  EXPECT_EQ(jit::cache_key(src), jit::cache_key(src, toolchain));
  EXPECT_NE(jit::cache_key(src, toolchain), jit::cache_key(src, toolchain + " patched"));
  EXPECT_NE(toolchain.find("nvrtc " + jit::nvrtc_version()), std::string::npos) << toolchain;
  EXPECT_NE(toolchain.find("libnvrtc"), std::string::npos) << toolchain;
  EXPECT_NE(toolchain.find("CUDA_VERSION " + std::to_string(CUDA_VERSION)), std::string::npos)
      << toolchain;
  EXPECT_NE(toolchain.find("autogemm " + autogemm::version()), std::string::npos) << toolchain;
}
