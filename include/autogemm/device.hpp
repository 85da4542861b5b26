#pragma once
// What autogemm knows about a GPU: measured from the device (profile_gpus) or taken from a
// named preset (device_preset) so that planning works for a GPU that is not present.
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autogemm {

// Compute capability as integers; compare these, never version strings ("10.0" < "7.0").
struct ComputeCapability {
  int major = 0;
  int minor = 0;
  constexpr int as_int() const { return major * 10 + minor; }  // 9.0 -> 90, 10.0 -> 100
  friend constexpr auto operator<=>(const ComputeCapability&, const ComputeCapability&) = default;
};

// Architecture facts that follow from the compute capability (src/hw/capability_table.cpp,
// each row cites its source). "sm_90a" features (wgmma, setmaxnreg) need the arch-specific
// compile target; a device of CC 9.0 can run it.
struct ArchCapabilities {
  std::string arch_name;            // "sm_90a", "sm_100a", "sm_80", ...
  bool mma_sync_f16_bf16 = false;   // warp-level mma.sync for f16/bf16 (sm_80+)
  bool fp8_tensor_cores = false;    // e4m3/e5m2 matrix instructions (sm_89+)
  bool fp4_tensor_cores = false;    // e2m1 matrix instructions (sm_100+, sm_120+)
  bool wgmma = false;               // warpgroup MMA (sm_90a only)
  bool tcgen05 = false;             // 5th-gen tensor core instructions (sm_100a/103a/110a)
  bool tensor_memory = false;       // TMEM (same archs as tcgen05)
  bool tma = false;                 // cp.async.bulk.tensor (sm_90+)
  bool clusters = false;            // thread block clusters (sm_90+)
  bool setmaxnreg = false;          // register reconfiguration (sm_90a, sm_100a)
  int smem_per_sm_bytes = 0;        // shared memory per SM
  int smem_per_block_optin_bytes = 0;
  int max_cluster_portable = 1;     // cluster size valid on every device of the arch
  int max_cluster_nonportable = 1;  // with cudaFuncAttributeNonPortableClusterSizeAllowed
  int dense_bf16_flops_per_clock_per_sm = 0;  // matrix-unit rate, FP32 accumulate
  int dense_fp8_flops_per_clock_per_sm = 0;   // 0 when the arch has no FP8 matrix unit
  friend bool operator==(const ArchCapabilities&, const ArchCapabilities&) = default;
};

// Returns the capability row for an architecture, or nullopt for one autogemm does not know.
std::optional<ArchCapabilities> arch_capabilities(ComputeCapability cc);

// The cost model's rates fitted to one device's measurements (`autogemm fit-cost`, issue 49):
// each multiplies the model's built-in value of its term; 1 is the model as written
// (src/plan/cost_model.cpp). Found by device (src/plan/calibration.hpp): the file named by
// $AUTOGEMM_COST_CALIBRATION, else the one kept in data/cost-model/ for the preset, else none.
struct CostCalibration {
  double mma = 1.0;     // the matrix units' sustained share of their peak
  double l2 = 1.0;      // the L2 -> SM rate
  double dram = 1.0;    // the DRAM rate
  double fixed = 1.0;   // the fixed costs (launch, pipeline fill, each tile's epilogue)
  std::string source;   // the file the values came from; empty: the built-in model
  friend bool operator==(const CostCalibration&, const CostCalibration&) = default;
};

struct GpuInfo {
  int ordinal = -1;                 // CUDA device index; -1 for a preset
  std::string name;                 // "NVIDIA H100 80GB HBM3" or the preset's product name
  std::string preset;               // preset key ("h100-sxm") when not measured
  ComputeCapability cc;
  int sm_count = 0;
  int smem_per_sm_bytes = 0;
  int smem_per_block_bytes = 0;         // default per-block limit (48 KiB)
  int smem_per_block_optin_bytes = 0;   // opt-in limit (232448 on H100)
  int64_t l2_bytes = 0;
  int regs_per_sm = 0;
  int regs_per_block = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  int64_t memory_total_bytes = 0;
  int64_t memory_free_bytes = 0;        // 0 for presets
  int memory_bus_width_bits = 0;
  int memory_clock_khz = 0;             // as the driver reports it (DDR: data rate / 2)
  double memory_bandwidth_gbps = 0;     // theoretical: 2 * clock * bus width / 8
  int sm_clock_khz = 0;                 // maximum SM clock
  bool cluster_launch = false;
  int max_cluster_size = 1;             // largest cluster the occupancy query allows
  std::string max_cluster_size_source;  // "occupancy query", "preset", "no cluster launch", or
                                        // "portable default (<why the query failed>)"
  std::string pci_bus_id;               // "0000:17:00.0"; empty for presets
  ArchCapabilities caps;                // arch_capabilities(cc), filled by profile/preset
  CostCalibration cost;                 // the cost model's fitted rates for this device

  // Peak dense matrix throughput implied by the arch rate, SM count and SM clock.
  double peak_bf16_tflops() const;
  double peak_fp8_tflops() const;
};

struct GpuProfile {
  std::vector<GpuInfo> gpus;
  std::string unavailable_reason;       // non-empty when gpus is empty
  std::vector<std::vector<bool>> peer_access;  // [i][j]: device i can access device j
};

// Queries every visible CUDA device. Never throws for "no driver"/"no GPU": returns an empty
// list and the reason ("no CUDA device: CUDA driver version is insufficient ...").
GpuProfile profile_gpus();

// Named presets: h100-sxm, h100-pcie, h200, a100-80g, l40s, b200, rtx5090, gb10.
std::vector<std::string> device_preset_names();
// Throws InvalidArgument naming the preset and listing the known ones.
GpuInfo device_preset(const std::string& name);
// "0", "1", ... selects a present GPU (throws NoDevice when absent); anything else a preset.
GpuInfo resolve_device(const std::string& device_spec);

struct CacheLevel {
  int level = 0;
  std::string type;      // "data", "instruction", "unified"
  int64_t size_bytes = 0;
  int count = 0;         // instances in the system
};

struct CpuInfo {
  std::string model;
  std::string vendor;
  std::string architecture;            // "x86_64", "aarch64"
  int logical_cores = 0;
  int physical_cores = 0;
  std::vector<std::string> features;   // "avx2", "avx512f", "amx_bf16", "neon", "sve", ...
  std::vector<CacheLevel> caches;
  int64_t memory_total_bytes = 0;
  int64_t memory_available_bytes = 0;
};

CpuInfo profile_cpu();

}  // namespace autogemm
