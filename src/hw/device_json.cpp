// JSON forms of the profile. Field names match the C++ members so the two read alike.
#include "hw/device_json.hpp"

namespace autogemm::hw {

nlohmann::json to_json(const ArchCapabilities& c) {
  return {
      {"arch_name", c.arch_name},
      {"mma_sync_f16_bf16", c.mma_sync_f16_bf16},
      {"fp8_tensor_cores", c.fp8_tensor_cores},
      {"fp4_tensor_cores", c.fp4_tensor_cores},
      {"wgmma", c.wgmma},
      {"tcgen05", c.tcgen05},
      {"tensor_memory", c.tensor_memory},
      {"tma", c.tma},
      {"clusters", c.clusters},
      {"setmaxnreg", c.setmaxnreg},
      {"smem_per_sm_bytes", c.smem_per_sm_bytes},
      {"smem_per_block_optin_bytes", c.smem_per_block_optin_bytes},
      {"max_cluster_portable", c.max_cluster_portable},
      {"max_cluster_nonportable", c.max_cluster_nonportable},
      {"dense_bf16_flops_per_clock_per_sm", c.dense_bf16_flops_per_clock_per_sm},
      {"dense_fp8_flops_per_clock_per_sm", c.dense_fp8_flops_per_clock_per_sm},
  };
}

nlohmann::json to_json(const GpuInfo& g) {
  return {
      {"name", g.name},
      {"ordinal", g.ordinal},
      {"preset", g.preset},
      {"compute_capability", {{"major", g.cc.major}, {"minor", g.cc.minor}}},
      {"sm_count", g.sm_count},
      {"smem_per_sm_bytes", g.smem_per_sm_bytes},
      {"smem_per_block_bytes", g.smem_per_block_bytes},
      {"smem_per_block_optin_bytes", g.smem_per_block_optin_bytes},
      {"l2_bytes", g.l2_bytes},
      {"regs_per_sm", g.regs_per_sm},
      {"regs_per_block", g.regs_per_block},
      {"max_threads_per_sm", g.max_threads_per_sm},
      {"max_threads_per_block", g.max_threads_per_block},
      {"memory_total_bytes", g.memory_total_bytes},
      {"memory_free_bytes", g.memory_free_bytes},
      {"memory_bus_width_bits", g.memory_bus_width_bits},
      {"memory_clock_khz", g.memory_clock_khz},
      {"memory_bandwidth_gbps", g.memory_bandwidth_gbps},
      {"sm_clock_khz", g.sm_clock_khz},
      {"cluster_launch", g.cluster_launch},
      {"max_cluster_size", g.max_cluster_size},
      {"max_cluster_size_source", g.max_cluster_size_source},
      {"pci_bus_id", g.pci_bus_id},
      {"capabilities", to_json(g.caps)},
      {"peak_bf16_tflops", g.peak_bf16_tflops()},
      {"peak_fp8_tflops", g.peak_fp8_tflops()},
  };
}

nlohmann::json to_json(const CpuInfo& c) {
  nlohmann::json caches = nlohmann::json::array();
  for (const CacheLevel& cache : c.caches)
    caches.push_back({{"level", cache.level},
                      {"type", cache.type},
                      {"size_bytes", cache.size_bytes},
                      {"count", cache.count}});
  return {
      {"model", c.model},
      {"vendor", c.vendor},
      {"architecture", c.architecture},
      {"logical_cores", c.logical_cores},
      {"physical_cores", c.physical_cores},
      {"features", c.features},
      {"caches", caches},
      {"memory_total_bytes", c.memory_total_bytes},
      {"memory_available_bytes", c.memory_available_bytes},
  };
}

}  // namespace autogemm::hw
