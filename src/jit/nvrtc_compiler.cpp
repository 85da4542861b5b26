// compile_to_cubin: one NVRTC compilation for an exact architecture (jit/jit.hpp).
#include <cuda.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <nvrtc.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "autogemm/errors.hpp"
#include "autogemm/version.hpp"
#include "jit/embedded.hpp"
#include "jit/jit.hpp"
#include "jit/log.hpp"
#include "jit/nvrtc_options.hpp"
#include "jit/ptxas_usage.hpp"

namespace autogemm::jit {

namespace {

bool is_directory(const std::string& path) {
  struct stat info {};
  return !path.empty() && ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// Where NVRTC finds the toolkit headers (cuda_bf16.h, cuda/std/...): $CUDA_HOME/include first,
// so a user can point at another toolkit at run time, then the toolkit the library was built
// with. Its CCCL subfolder is added too: CUDA 13 moved libcu++ (<cuda/std/...>) there.
// Read once per process, like every autogemm environment variable (docs/env-vars.md).
std::vector<std::string> find_cuda_include_dirs() {
  std::vector<std::string> candidates;
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != '\0')
    candidates.push_back(std::string(home) + "/include");
  // The build passes CUDAToolkit_INCLUDE_DIRS, a CMake list: split it on ';'.
  std::string_view built_with = AUTOGEMM_CUDA_INCLUDE_DIR;
  while (!built_with.empty()) {
    const auto end = built_with.find(';');
    candidates.emplace_back(built_with.substr(0, end));
    built_with = end == std::string_view::npos ? std::string_view{} : built_with.substr(end + 1);
  }
  std::vector<std::string> dirs;
  for (const std::string& dir : candidates) {
    for (const std::string& path : {dir, dir + "/cccl"})
      if (is_directory(path)) dirs.push_back(path);
  }
  return dirs;
}

const std::vector<std::string>& cuda_include_dirs() {
  static const std::vector<std::string> dirs = find_cuda_include_dirs();
  return dirs;
}

void check_nvrtc(nvrtcResult result, const char* what) {
  if (result != NVRTC_SUCCESS)
    throw CudaError(std::string(what) + ": " + nvrtcGetErrorString(result));
}

struct ProgramDeleter {
  void operator()(nvrtcProgram program) const { nvrtcDestroyProgram(&program); }
};
using Program = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

std::string program_log(nvrtcProgram program) {
  std::size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return {};
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
  while (!log.empty() && log.back() == '\0') log.pop_back();  // size counts the terminator
  return log;
}

void validate(const KernelSource& src) {
  if (src.kernel_name.empty())
    throw InvalidArgument("kernel_name", "\"\"",
                          "name the __global__ function (or template instance) to look up");
  // A cubin is machine code for one real GPU: "sm_90a" compiles for it, a virtual
  // "compute_90a" yields only PTX (nvrtcGetCUBIN would fail).
  if (src.arch.rfind("sm_", 0) != 0 || src.arch.size() < 5)
    throw InvalidArgument("arch", src.arch,
                          "must name a real GPU architecture such as sm_90a (a cubin cannot be "
                          "produced for a virtual compute_* architecture)");
}

void log_compilation(const KernelSource& src, const CompiledKernel& kernel) {
  if (log_level() < 4) return;
  const auto functions = parse_ptxas_functions(kernel.log);
  if (functions.empty()) {
    log(4, "compiled {} for {} in {:.1f} ms (no ptxas report)", src.name, src.arch,
        kernel.compile_ms);
    return;
  }
  const PtxasUsage usage = parse_ptxas_usage(kernel.log);
  log(4, "compiled {} for {} in {:.1f} ms: {} registers, {} B stack, {} B spill stores, {} B "
      "spill loads{}", src.name, src.arch, kernel.compile_ms, usage.registers,
      usage.stack_frame_bytes, usage.spill_store_bytes, usage.spill_load_bytes,
      usage.has_spills() ? " (SPILLS)" : "");
}

}  // namespace

std::string nvrtc_version() {
  static const std::string version = [] {
    int major = 0, minor = 0;
    check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
    return std::to_string(major) + "." + std::to_string(minor);
  }();
  return version;
}

namespace {

// The file the dynamic loader mapped nvrtcVersion from (the executable itself when NVRTC is
// linked statically), with its size and modification time.
std::string nvrtc_library_identity() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || info.dli_fname == nullptr)
    return "library file unknown";
  std::string path = info.dli_fname;
  if (char* real = ::realpath(info.dli_fname, nullptr)) {
    path = real;
    std::free(real);
  }
  struct stat file {};
  if (::stat(path.c_str(), &file) != 0) return path;
  return fmt::format("{}, {} bytes, mtime {}", path, static_cast<long long>(file.st_size),
                     static_cast<long long>(file.st_mtime));
}

}  // namespace

std::string toolchain_identity() {
  static const std::string identity =
      fmt::format("nvrtc {} ({}); CUDA_VERSION {}; autogemm {}", nvrtc_version(),
                  nvrtc_library_identity(), CUDA_VERSION, version());
  return identity;
}

std::vector<std::string> nvrtc_options(const KernelSource& src) {
  std::vector<std::string> options = {
      "--gpu-architecture=" + src.arch,  // exact arch: sm_90a unlocks wgmma/setmaxnreg
      "-std=c++20",
      "--ptxas-options=-v",  // register/spill/stack report in the log (ptxas_usage.hpp)
      "-default-device",     // functions without __host__/__device__ are device functions
      "-lineinfo",           // source lines in profilers, no effect on the generated code
      // --use_fast_math stays off: it flushes denormals and approximates division, which
      // would make results differ from the reference and from cuBLASLt.
  };
  for (const std::string& dir : cuda_include_dirs()) options.push_back("-I" + dir);
  options.insert(options.end(), src.extra_options.begin(), src.extra_options.end());
  return options;
}

CompiledKernel compile_to_cubin(const KernelSource& src) {
  validate(src);
  const std::string what = "NVRTC compiling " + src.name + " (" + src.kernel_name + ") for " +
                           src.arch;
  // Every embedded file is offered as a header under its path below src/kernels, so
  // #include "sm90/gemm_layout.cuh" resolves without a source tree.
  std::vector<const char*> header_names, header_texts;
  header_names.reserve(kNumEmbeddedFiles);
  header_texts.reserve(kNumEmbeddedFiles);
  for (std::size_t i = 0; i < kNumEmbeddedFiles; ++i) {
    header_names.push_back(kEmbeddedFiles[i].name);
    header_texts.push_back(kEmbeddedFiles[i].text);
  }
  const std::string file_name = (src.name.empty() ? std::string("kernel") : src.name) + ".cu";

  const auto start = std::chrono::steady_clock::now();
  nvrtcProgram raw = nullptr;
  check_nvrtc(nvrtcCreateProgram(&raw, src.source.c_str(), file_name.c_str(),
                                 static_cast<int>(header_names.size()), header_texts.data(),
                                 header_names.data()),
              (what + ": nvrtcCreateProgram").c_str());
  Program program(raw);
  check_nvrtc(nvrtcAddNameExpression(raw, src.kernel_name.c_str()),
              (what + ": nvrtcAddNameExpression").c_str());

  const std::vector<std::string> options = nvrtc_options(src);
  std::vector<const char*> option_ptrs;
  for (const std::string& o : options) option_ptrs.push_back(o.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(raw, static_cast<int>(option_ptrs.size()), option_ptrs.data());

  CompiledKernel kernel;
  kernel.log = program_log(raw);
  if (compiled != NVRTC_SUCCESS)
    throw CudaError(what + ": " + nvrtcGetErrorString(compiled) + "\n" + kernel.log);

  const char* lowered = nullptr;
  check_nvrtc(nvrtcGetLoweredName(raw, src.kernel_name.c_str(), &lowered),
              (what + ": nvrtcGetLoweredName(\"" + src.kernel_name + "\")").c_str());
  kernel.lowered_name = lowered;

  std::size_t size = 0;
  check_nvrtc(nvrtcGetCUBINSize(raw, &size), (what + ": nvrtcGetCUBINSize").c_str());
  kernel.cubin.resize(size);
  check_nvrtc(nvrtcGetCUBIN(raw, kernel.cubin.data()), (what + ": nvrtcGetCUBIN").c_str());
  check_nvrtc(nvrtcGetPTXSize(raw, &size), (what + ": nvrtcGetPTXSize").c_str());
  kernel.ptx.resize(size);
  check_nvrtc(nvrtcGetPTX(raw, kernel.ptx.data()), (what + ": nvrtcGetPTX").c_str());
  while (!kernel.ptx.empty() && kernel.ptx.back() == '\0') kernel.ptx.pop_back();

  kernel.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  kernel.cache_key = cache_key(src);
  log_compilation(src, kernel);
  return kernel;
}

}  // namespace autogemm::jit
