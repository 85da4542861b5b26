// Compile-and-launch for the helper kernels (simple_launch.hpp).
#include "runtime/simple_launch.hpp"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "jit/jit.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/driver.hpp"
#include "jit/module.hpp"

namespace autogemm::runtime {

int current_device_cc() {
  int device = 0, major = 0, minor = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  cuda_check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
             "cudaDeviceGetAttribute(compute capability major)");
  cuda_check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device),
             "cudaDeviceGetAttribute(compute capability minor)");
  return major * 10 + minor;
}

std::string current_device_arch() { return fmt::format("sm_{}", current_device_cc()); }

void launch_simple_kernel(const std::string& header, const std::string& kernel_name,
                          const SimpleGrid& grid, void* params, cudaStream_t stream,
                          const std::string& what) {
  // Resolved once per (device, kernel): later launches (the tail split's finish runs after every
  // tail-split GEMM, the A-scale transposition before large FP8 ones) skip the source hashing
  // and the device queries.
  static std::mutex mutex;
  static std::map<std::tuple<int, std::string, std::string>, std::shared_ptr<jit::LoadedKernel>> loaded;
  int device = 0;
  cuda_check(cudaGetDevice(&device), "cudaGetDevice");
  const auto key = std::make_tuple(device, header, kernel_name);
  std::shared_ptr<jit::LoadedKernel> kernel;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = loaded.find(key); it != loaded.end()) kernel = it->second;
  }
  if (!kernel) {
    jit::KernelSource src;
    src.name = kernel_name;
    src.source = fmt::format("#include \"{}\"\n", header);
    src.kernel_name = kernel_name;
    src.arch = current_device_arch();
    kernel = jit::load_kernel(*jit::get_or_compile(src));
    std::lock_guard<std::mutex> lock(mutex);
    loaded.emplace(key, kernel);
  }

  CUlaunchConfig config{};
  config.gridDimX = grid.grid_x;
  config.gridDimY = grid.grid_y;
  config.gridDimZ = grid.grid_z;
  config.blockDimX = grid.block_x;
  config.blockDimY = grid.block_y;
  config.blockDimZ = grid.block_z;
  config.sharedMemBytes = 0;  // static shared memory only
  config.hStream = reinterpret_cast<CUstream>(stream);
  void* args[] = {params};
  driver::check(driver::api().cuLaunchKernelEx(&config, kernel->function, args, nullptr),
                fmt::format("cuLaunchKernelEx({})", what).c_str());
}

}  // namespace autogemm::runtime
