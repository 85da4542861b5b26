// load_kernel: cubin -> CUmodule/CUfunction, once per (device, cache key) (jit/module.hpp).
#include "jit/module.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <mutex>
#include <utility>

#include "autogemm/errors.hpp"
#include "jit/log.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/driver.hpp"

namespace autogemm::jit {

namespace {

using LoadKey = std::pair<int, std::string>;  // device ordinal, cache key

struct LoadedModules {
  std::mutex mutex;
  std::map<LoadKey, std::shared_ptr<LoadedKernel>> by_key;
};

LoadedModules& loaded_modules() {
  // Never destroyed, and modules are never unloaded: at exit the driver may already be shut
  // down, and cuModuleUnload would then fail or crash.
  static LoadedModules* const modules = new LoadedModules;
  return *modules;
}

}  // namespace

std::shared_ptr<LoadedKernel> load_kernel(const jit::CompiledKernel& compiled) {
  if (compiled.cubin.empty())
    throw InvalidArgument("compiled.cubin", "empty", "load a kernel returned by the JIT");
  if (compiled.lowered_name.empty())
    throw InvalidArgument("compiled.lowered_name", "\"\"", "name the function to look up");
  const driver::Api& api = driver::api();

  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  // A thread that never called the runtime has no current context; the driver calls below
  // need one. cudaSetDevice makes the device's primary context current (CUDA 12+).
  CUcontext context = nullptr;
  driver::check(api.cuCtxGetCurrent(&context), "cuCtxGetCurrent");
  if (context == nullptr) cuda_check(cudaSetDevice(device), "cudaSetDevice");

  // Loading under the lock keeps it to once per key; cuModuleLoadData takes a driver lock of
  // its own, so concurrent loads would not overlap much anyway.
  LoadedModules& modules = loaded_modules();
  std::lock_guard lock(modules.mutex);
  const LoadKey key{device, compiled.cache_key};
  if (!compiled.cache_key.empty())
    if (auto it = modules.by_key.find(key); it != modules.by_key.end()) return it->second;

  const auto start = std::chrono::steady_clock::now();
  auto loaded = std::make_shared<LoadedKernel>();
  driver::check(api.cuModuleLoadData(&loaded->module, compiled.cubin.data()),
                fmt::format("cuModuleLoadData({} bytes, key {}) on device {}",
                            compiled.cubin.size(), compiled.cache_key, device).c_str());
  const CUresult found =
      api.cuModuleGetFunction(&loaded->function, loaded->module, compiled.lowered_name.c_str());
  if (found != CUDA_SUCCESS) {
    api.cuModuleUnload(loaded->module);
    driver::check(found, fmt::format("cuModuleGetFunction({})", compiled.lowered_name).c_str());
  }
  loaded->load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  log(4, "loaded module {} on device {} in {:.2f} ms", compiled.lowered_name, device,
      loaded->load_ms);
  // A kernel without a key (not from the JIT) cannot be found again: load it every time.
  if (!compiled.cache_key.empty()) modules.by_key.emplace(key, loaded);
  return loaded;
}

}  // namespace autogemm::jit
