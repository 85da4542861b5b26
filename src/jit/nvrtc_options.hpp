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

}  // namespace autogemm::jit
