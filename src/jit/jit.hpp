#pragma once
// Run-time compilation of device code with NVRTC, and the two caches in front of it.
//
//   KernelSource (a translation unit + its name expression)
//     -> compile_to_cubin (NVRTC, exact arch, embedded headers)      [jit/nvrtc_compiler.cpp]
//     -> disk cache keyed by hash(source, headers, toolchain, options, arch) [jit/disk_cache.cpp]
//     -> in-process cache (second call is free, thread-safe)         [jit/kernel_cache.cpp]
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace autogemm::jit {

struct KernelSource {
  std::string name;          // readable id for logs and cache file names ("gemm_bf16_128x256...")
  std::string source;        // full CUDA C++ translation unit; #includes embedded headers by name
  std::string kernel_name;   // name expression NVRTC must resolve ("autogemm::gemm_kernel<...>")
                             // or an extern "C" symbol
  std::string arch = "sm_90a";            // NVRTC --gpu-architecture
  std::vector<std::string> extra_options; // e.g. "-DAUTOGEMM_DEBUG=1"
};

struct CompiledKernel {
  std::vector<char> cubin;
  std::string lowered_name;  // mangled symbol to look up in the module
  std::string ptx;           // kept only when compiled in this process (empty from the disk cache)
  std::string log;           // NVRTC log (warnings; ptxas -v resource usage)
  double compile_ms = 0;     // 0 when loaded from cache
  bool from_disk_cache = false;
  std::string cache_key;     // hex hash
};

// Compiles with NVRTC; throws CudaError with the log on failure. Needs no GPU.
CompiledKernel compile_to_cubin(const KernelSource& src);

// Hash of everything that determines the binary: source, every embedded header, the
// toolchain (toolchain_identity() in jit/nvrtc_options.hpp), options and arch.
std::string cache_key(const KernelSource& src);
// The same with another toolchain description (tests: a different NVRTC gives another key).
std::string cache_key(const KernelSource& src, std::string_view toolchain);

// XXH3-128 (32 hex digits) of every embedded device source (jit/embedded.hpp: each file's name
// and text, in order): part of every cache key, and of the tuning record's key
// (runtime/tuning_record.hpp), so that a change to any kernel source invalidates both.
const std::string& embedded_sources_digest();

// Process-wide cache: memory, then disk ($AUTOGEMM_CACHE_DIR, else $XDG_CACHE_HOME/autogemm,
// else ~/.cache/autogemm), then NVRTC. Thread-safe; concurrent callers of one key compile once.
std::shared_ptr<const CompiledKernel> get_or_compile(const KernelSource& src);

// The directory in use (empty when the disk cache fell back to memory).
std::string cache_directory();

// Whether the process-wide disk cache can store new kernels, and when it cannot, the
// environment variable that chose its root or turned it off (docs/env-vars.md), that
// variable's value and why, for a command whose job is filling the cache (warmup).
struct DiskCacheStatus {
  bool writable = false;
  std::string directory;  // the entry folder; empty when there is none
  std::string variable;   // "AUTOGEMM_CACHE_DIR", "AUTOGEMM_DISABLE_DISK_CACHE", "XDG_CACHE_HOME"
                          // or "HOME"
  std::string value;      // its value ("(unset)" when no variable is set)
  std::string why;        // empty when writable
  int failed_writes = 0;  // entries this process could not write (each logged and skipped)
};
DiskCacheStatus disk_cache_status();

}  // namespace autogemm::jit
