#pragma once
// Helpers shared by the JIT tests: tiny kernels and scratch directories.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "jit/jit.hpp"

namespace autogemm::testing {

// Sets (or, with nullptr, unsets) an environment variable for one scope; a command run by
// run_cli inherits it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// An sm_90a-only kernel: wgmma.fence exists only with the "a" architecture suffix.
// `tag` changes the source (and so the cache key) without changing what is compiled.
inline jit::KernelSource fence_kernel_source(const std::string& tag = "") {
  jit::KernelSource src;
  src.name = "test_fence" + tag;
  src.source = "// " + tag + "\n"
               "extern \"C\" __global__ void fence_kernel(int* out) {\n"
               "  asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
               "  if (out != nullptr) out[threadIdx.x] = int(threadIdx.x) * 3 + 1;\n"
               "}\n";
  src.kernel_name = "fence_kernel";
  return src;
}

// A fresh empty directory under $TMPDIR (or /tmp), removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base ? base : "/tmp") +
                          "/autogemm-jit-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    // Make read-only test folders removable again.
    for (auto it = std::filesystem::recursive_directory_iterator(path_, ignored);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ignored))
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ignored);
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace autogemm::testing
