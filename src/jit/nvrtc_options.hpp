#pragma once
// The NVRTC command line of a KernelSource. Shared by the compiler and cache_key, so that every
// option that can change the binary is also part of the key.
#include <string>
#include <vector>

#include "jit/jit.hpp"

namespace autogemm::jit {

// Every option passed to nvrtcCompileProgram, in order (see nvrtc_compiler.cpp for each one).
std::vector<std::string> nvrtc_options(const KernelSource& src);

// "13.0": the NVRTC library actually loaded (nvrtcVersion), not the headers built against.
std::string nvrtc_version();

// What the cache key holds of the toolchain. nvrtcVersion reports major.minor only, and a
// patch release (13.0.48 -> 13.0.88) can change the code, so the loaded NVRTC library file is
// named with its size and modification time (its patch release, without reading 100 MB), with
// the CUDA toolkit autogemm was built with (CUDA_VERSION) and autogemm's version:
//   "nvrtc 13.0 (/usr/local/cuda/lib64/libnvrtc.so.13, 109338064 bytes, mtime 1760564160);
//    CUDA_VERSION 13000; autogemm 0.1.0"
std::string toolchain_identity();

}  // namespace autogemm::jit
