// Asks cuOccupancyMaxPotentialClusterSize about an empty kernel with non-portable cluster
// sizes allowed: the answer is the hardware's cluster limit for a block that uses almost no
// resources (16 on H100 and B200, where the portable limit is 8).
#include "hw/cluster_probe.hpp"

#include <fmt/format.h>

#include <exception>

#include "autogemm/errors.hpp"
#include "jit/log.hpp"
#include "cuda/driver.hpp"

namespace autogemm::hw {
namespace {

// PTX ISA 7.8 introduced the sm_90 target; a non-'a' target is forward compatible, so the
// driver JIT-compiles this for any CC 9.0+ device.
constexpr const char* kProbePtx = R"(.version 7.8
.target sm_90
.address_size 64
.visible .entry autogemm_cluster_probe()
{
  ret;
}
)";

constexpr int kProbeBlockThreads = 128;
// The cluster dims in the launch config are ignored by the query, but the grid must be a
// multiple of any cluster size it might answer: 1680 is divisible by 1..8, 10, 12, 14..16.
constexpr unsigned kProbeGridBlocks = 1680;

// Unloads the probe module on every path.
struct ModuleGuard {
  const driver::Api& api;
  CUmodule module = nullptr;
  ~ModuleGuard() {
    if (module != nullptr) api.cuModuleUnload(module);
  }
};

int query_cluster_size() {
  const driver::Api& api = driver::api();
  ModuleGuard guard{api};
  driver::check(api.cuModuleLoadData(&guard.module, kProbePtx), "cuModuleLoadData(cluster probe)");
  CUfunction function = nullptr;
  driver::check(api.cuModuleGetFunction(&function, guard.module, "autogemm_cluster_probe"),
                "cuModuleGetFunction(autogemm_cluster_probe)");
  driver::check(
      api.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
      "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)");
  CUlaunchConfig config{};
  config.gridDimX = kProbeGridBlocks;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = kProbeBlockThreads;
  config.blockDimY = config.blockDimZ = 1;
  int cluster_size = 0;
  driver::check(api.cuOccupancyMaxPotentialClusterSize(&cluster_size, function, &config),
                "cuOccupancyMaxPotentialClusterSize");
  return cluster_size;
}

}  // namespace

ClusterSizeProbe probe_max_cluster_size(ComputeCapability cc, bool cluster_launch) {
  if (!cluster_launch) return {1, "no cluster launch"};
  try {
    const int size = query_cluster_size();
    if (size >= 1) return {size, "occupancy query"};
    throw Error(fmt::format("cuOccupancyMaxPotentialClusterSize answered {}", size));
  } catch (const std::exception& e) {
    // The portable size is 8 blocks from sm_90 on (driver_types.h,
    // nonPortableClusterSizeAllowed); below sm_90 there are no clusters.
    const int portable = cc.major >= 9 ? 8 : 1;
    log(2, "cluster size query failed on sm_{}: {}; assuming the portable size {}",
        cc.as_int(), e.what(), portable);
    return {portable, fmt::format("portable default (occupancy query failed: {})", e.what())};
  }
}

}  // namespace autogemm::hw
