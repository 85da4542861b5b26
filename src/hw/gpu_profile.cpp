// profile_gpus: every visible CUDA device, measured through the runtime API.
//
// CUDA 13 removed clockRate and memoryClockRate from cudaDeviceProp, so every number is read
// with cudaDeviceGetAttribute (driver_types.h, enum cudaDeviceAttr); the properties struct is
// only used for the name.
#include "hw/cost_calibration.hpp"
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "autogemm/device.hpp"
#include "hw/cluster_probe.hpp"
#include "hw/gpu_math.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/current_device_guard.hpp"

namespace autogemm {
namespace {

int attribute(cudaDeviceAttr attr, int ordinal, const char* what) {
  int value = 0;
  cuda_check(cudaDeviceGetAttribute(&value, attr, ordinal), what);
  return value;
}

// The device must be current. Creates its primary context (cudaMemGetInfo needs one).
GpuInfo profile_device(int ordinal) {
  GpuInfo g;
  g.ordinal = ordinal;
  cudaDeviceProp prop{};
  cuda_check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
  g.name = prop.name;
  g.cc.major = attribute(cudaDevAttrComputeCapabilityMajor, ordinal, "ComputeCapabilityMajor");
  g.cc.minor = attribute(cudaDevAttrComputeCapabilityMinor, ordinal, "ComputeCapabilityMinor");
  g.sm_count = attribute(cudaDevAttrMultiProcessorCount, ordinal, "MultiProcessorCount");
  g.smem_per_sm_bytes = attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, ordinal,
                                  "MaxSharedMemoryPerMultiprocessor");
  g.smem_per_block_bytes =
      attribute(cudaDevAttrMaxSharedMemoryPerBlock, ordinal, "MaxSharedMemoryPerBlock");
  g.smem_per_block_optin_bytes = attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal,
                                           "MaxSharedMemoryPerBlockOptin");
  g.l2_bytes = attribute(cudaDevAttrL2CacheSize, ordinal, "L2CacheSize");
  g.regs_per_sm = attribute(cudaDevAttrMaxRegistersPerMultiprocessor, ordinal,
                            "MaxRegistersPerMultiprocessor");
  g.regs_per_block = attribute(cudaDevAttrMaxRegistersPerBlock, ordinal, "MaxRegistersPerBlock");
  g.max_threads_per_sm = attribute(cudaDevAttrMaxThreadsPerMultiProcessor, ordinal,
                                   "MaxThreadsPerMultiProcessor");
  g.max_threads_per_block =
      attribute(cudaDevAttrMaxThreadsPerBlock, ordinal, "MaxThreadsPerBlock");
  g.memory_bus_width_bits =
      attribute(cudaDevAttrGlobalMemoryBusWidth, ordinal, "GlobalMemoryBusWidth");
  g.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, ordinal, "MemoryClockRate");
  g.memory_bandwidth_gbps =
      hw::theoretical_bandwidth_gbps(g.memory_clock_khz, g.memory_bus_width_bits);
  g.sm_clock_khz = attribute(cudaDevAttrClockRate, ordinal, "ClockRate");
  g.cluster_launch = attribute(cudaDevAttrClusterLaunch, ordinal, "ClusterLaunch") != 0;

  size_t free_bytes = 0, total_bytes = 0;
  cuda_check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  g.memory_total_bytes = static_cast<int64_t>(total_bytes);
  g.memory_free_bytes = static_cast<int64_t>(free_bytes);

  char bus_id[32] = {};
  cuda_check(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal), "cudaDeviceGetPCIBusId");
  g.pci_bus_id = bus_id;

  if (auto caps = arch_capabilities(g.cc)) {
    g.caps = *caps;
  } else {
    // A GPU autogemm has no row for (Turing, or newer than the table): all features off,
    // so planning falls back to the vendor library instead of guessing.
    g.caps.arch_name = fmt::format("sm_{} (not in autogemm's capability table)", g.cc.as_int());
  }
  const hw::ClusterSizeProbe cluster = hw::probe_max_cluster_size(g.cc, g.cluster_launch);
  g.max_cluster_size = cluster.max_cluster_size;
  g.max_cluster_size_source = cluster.source;
  g.cost = hw::calibration_for(g);   // after name: a measured GPU finds its product's
  return g;
}

}  // namespace

GpuProfile profile_gpus() {
  GpuProfile profile;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // No driver (cudaErrorInsufficientDriver) or no GPU (cudaErrorNoDevice): not an error for
    // a profile. Clear the error so later runtime calls do not report it again.
    cudaGetLastError();
    const std::string text = cuda_error_text(status, "cudaGetDeviceCount");
    profile.unavailable_reason =
        means_no_device(status) ? text : fmt::format("no usable CUDA device: {}", text);
    return profile;
  }
  if (count == 0) {
    profile.unavailable_reason =
        fmt::format("{} (cudaGetDeviceCount found 0 devices)", kNoDriverOrGpu);
    return profile;
  }
  CurrentDeviceGuard restore_current_device;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
    profile.gpus.push_back(profile_device(ordinal));
  }
  // [i][j]: device i can map device j's memory. A device always reaches its own memory.
  profile.peer_access.assign(count, std::vector<bool>(count, true));
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < count; ++j) {
      if (i == j) continue;
      int can_access = 0;
      cuda_check(cudaDeviceCanAccessPeer(&can_access, i, j), "cudaDeviceCanAccessPeer");
      profile.peer_access[i][j] = can_access != 0;
    }
  return profile;
}

}  // namespace autogemm
