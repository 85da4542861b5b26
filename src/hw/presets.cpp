// Named GPU presets, so that planning works for a GPU that is not in this machine.
//
// Every field is what cudaDeviceGetAttribute would report on that product. Sources:
//  [HF]  /work/shared/docs/hopper-facts.md section 0/7: attributes read on an H100 SXM5.
//  [CG]  CUDA C++ Programming Guide, per-compute-capability limits (smem, threads, registers):
//        48 KiB default per block everywhere; 65536 registers per SM and per block on every
//        CC 8.x-12.x; 2048 threads per SM on CC 8.0/9.0/10.0, 1536 on CC 8.6/8.9/12.x.
//  [DS]  the vendor datasheet of the product (SMs, memory size, bus, bandwidth, clocks).
//  Memory sizes are the nominal capacity in GiB; the driver reports slightly less
//  (81559 MiB on an H100 80GB). Memory clocks follow the driver's convention (DDR clock =
//  data rate / 2); where only a datasheet bandwidth is published the clock is derived from
//  it as bandwidth / (2 x bus bytes) and marked "derived".
#include "hw/cost_calibration.hpp"
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "hw/gpu_math.hpp"

// Each preset names the measured fields with designated initializers and leaves the derived
// ones (preset key, caps, bandwidth, cluster source) to finish(); GCC's
// -Wmissing-field-initializers would flag every such omission.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace autogemm {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = 1024 * kMiB;
constexpr int kDefaultSmemPerBlock = 48 * 1024;  // [CG] static limit without opt-in

// Fills what follows from the other fields: capabilities, bandwidth, provenance.
GpuInfo finish(std::string key, GpuInfo g) {
  g.preset = std::move(key);
  g.ordinal = -1;
  g.caps = arch_capabilities(g.cc).value();  // every preset's CC is in the table (tested)
  g.memory_bandwidth_gbps = hw::theoretical_bandwidth_gbps(g.memory_clock_khz,
                                                           g.memory_bus_width_bits);
  g.max_cluster_size_source = "preset";
  g.cost = hw::calibration_for(g);
  return g;
}

GpuInfo h100_sxm() {
  return finish("h100-sxm", {
      .name = "NVIDIA H100 80GB HBM3",
      .cc = {9, 0},
      .sm_count = 132,                        // [HF] verified
      .smem_per_sm_bytes = 233472,            // [HF] verified (228 KiB)
      .smem_per_block_bytes = kDefaultSmemPerBlock,
      .smem_per_block_optin_bytes = 232448,   // [HF] verified (227 KiB)
      .l2_bytes = 52428800,                   // [HF] verified (50 MiB)
      .regs_per_sm = 65536,                   // [HF] verified
      .regs_per_block = 65536,                // [HF] verified
      .max_threads_per_sm = 2048,             // [HF] verified
      .max_threads_per_block = 1024,          // [CG]
      .memory_total_bytes = 80 * kGiB,        // [DS] 80 GB HBM3
      .memory_bus_width_bits = 5120,          // [HF] verified
      .memory_clock_khz = 2619000,            // [HF] verified -> 3352 GB/s ([DS] 3.35 TB/s)
      .sm_clock_khz = 1980000,                // [HF] verified max SM clock
      .cluster_launch = true,
      .max_cluster_size = 16,                 // Hopper tuning guide: 16 non-portable
  });
}

GpuInfo h100_pcie() {
  return finish("h100-pcie", {
      .name = "NVIDIA H100 PCIe",
      .cc = {9, 0},
      .sm_count = 114,                        // [DS] H100 PCIe: 114 SMs
      .smem_per_sm_bytes = 233472,            // [CG] CC 9.0 (same GH100 SM as the SXM part)
      .smem_per_block_bytes = kDefaultSmemPerBlock,
      .smem_per_block_optin_bytes = 232448,   // [CG] CC 9.0
      .l2_bytes = 52428800,                   // [DS] 50 MB L2
      .regs_per_sm = 65536,                   // [CG]
      .regs_per_block = 65536,                // [CG]
      .max_threads_per_sm = 2048,             // [CG] CC 9.0
      .max_threads_per_block = 1024,          // [CG]
      .memory_total_bytes = 80 * kGiB,        // [DS] 80 GB HBM2e
      .memory_bus_width_bits = 5120,          // [DS] 5 HBM2e stacks
      .memory_clock_khz = 1593000,            // -> 2039 GB/s, [DS] "2 TB/s"
      .sm_clock_khz = 1755000,                // [DS] max boost 1755 MHz
      .cluster_launch = true,
      .max_cluster_size = 16,                 // Hopper tuning guide
  });
}

GpuInfo h200() {
  return finish("h200", {
      .name = "NVIDIA H200",
      .cc = {9, 0},
      .sm_count = 132,                        // [DS] same GH100 configuration as H100 SXM
      .smem_per_sm_bytes = 233472,            // [CG] CC 9.0
      .smem_per_block_bytes = kDefaultSmemPerBlock,
      .smem_per_block_optin_bytes = 232448,   // [CG] CC 9.0
      .l2_bytes = 62914560,                   // measured: cudaDevAttrL2CacheSize on an H200, 2026-11-22 (autogemm profile); hopper-facts 7 says 50 MB
      .regs_per_sm = 65536,
      .regs_per_block = 65536,
      .max_threads_per_sm = 2048,
      .max_threads_per_block = 1024,
      .memory_total_bytes = 141 * kGiB,       // [DS] 141 GB HBM3e
      .memory_bus_width_bits = 6144,          // all six HBM3e stacks enabled (H100 uses 5)
      .memory_clock_khz = 3125000,            // derived from [DS] 4.8 TB/s over 6144 bits
      .sm_clock_khz = 1980000,                // [HF] section 7: same as H100 SXM
      .cluster_launch = true,
      .max_cluster_size = 16,                 // Hopper tuning guide
  });
}

GpuInfo a100_80g() {
  return finish("a100-80g", {
      .name = "NVIDIA A100-SXM4-80GB",
      .cc = {8, 0},
      .sm_count = 108,                        // [DS] 108 SMs
      .smem_per_sm_bytes = 167936,            // [CG] CC 8.0: 164 KiB
      .smem_per_block_bytes = kDefaultSmemPerBlock,
      .smem_per_block_optin_bytes = 166912,   // [CG] CC 8.0: 163 KiB
      .l2_bytes = 41943040,                   // [DS] 40 MB L2
      .regs_per_sm = 65536,
      .regs_per_block = 65536,
      .max_threads_per_sm = 2048,             // [CG] CC 8.0
      .max_threads_per_block = 1024,
      .memory_total_bytes = 80 * kGiB,        // [DS] 80 GB HBM2e
      .memory_bus_width_bits = 5120,          // [DS]
      .memory_clock_khz = 1593000,            // -> 2039 GB/s, [DS] 2,039 GB/s
      .sm_clock_khz = 1410000,                // [DS] boost 1410 MHz
      .cluster_launch = false,                // [CG] clusters need CC 9.0
      .max_cluster_size = 1,
  });
}

GpuInfo l40s() {
  return finish("l40s", {
      .name = "NVIDIA L40S",
      .cc = {8, 9},
      .sm_count = 142,                        // [DS] 142 SMs (18176 CUDA cores)
      .smem_per_sm_bytes = 102400,            // [CG] CC 8.9: 100 KiB
      .smem_per_block_bytes = kDefaultSmemPerBlock,
      .smem_per_block_optin_bytes = 101376,   // [CG] CC 8.9: 99 KiB
      .l2_bytes = 96 * kMiB,                  // [DS] 96 MB L2
      .regs_per_sm = 65536,
      .regs_per_block = 65536,
      .max_threads_per_sm = 1536,             // [CG] CC 8.9
      .max_threads_per_block = 1024,
      .memory_total_bytes = 48 * kGiB,        // [DS] 48 GB GDDR6
      .memory_bus_width_bits = 384,           // [DS]
      .memory_clock_khz = 9000000,            // derived from [DS] 864 GB/s (18 Gbps GDDR6)
      .sm_clock_khz = 2520000,                // [DS] boost 2520 MHz
      .cluster_launch = false,
      .max_cluster_size = 1,
  });
}

GpuInfo b200() {
  return finish("b200", {
      .name = "NVIDIA B200",
      .cc = {10, 0},
      .sm_count = 148,                        // [DS] 148 SMs
      .smem_per_sm_bytes = 233472,            // [CG] CC 10.0: 228 KiB
      .smem_per_block_bytes = kDefaultSmemPerBlock,
      .smem_per_block_optin_bytes = 232448,   // [CG] CC 10.0: 227 KiB
      .l2_bytes = 132644864,                  // device query on a B200 (126.5 MiB)
      .regs_per_sm = 65536,
      .regs_per_block = 65536,
      .max_threads_per_sm = 2048,             // [CG] CC 10.0
      .max_threads_per_block = 1024,
      .memory_total_bytes = 180 * kGiB,       // [DS] HGX B200: 180 GB HBM3e per GPU
      .memory_bus_width_bits = 8192,          // [DS] 8 HBM3e stacks
      .memory_clock_khz = 3906250,            // derived from [DS] 8 TB/s over 8192 bits
      .sm_clock_khz = 1965000,                // device query on a B200: max SM clock
      .cluster_launch = true,
      .max_cluster_size = 16,                 // Blackwell tuning guide: 16 non-portable
  });
}

GpuInfo rtx5090() {
  return finish("rtx5090", {
      .name = "NVIDIA GeForce RTX 5090",
      .cc = {12, 0},
      .sm_count = 170,                        // [DS] 170 SMs (21760 CUDA cores)
      .smem_per_sm_bytes = 102400,            // [CG] CC 12.0: 100 KiB
      .smem_per_block_bytes = kDefaultSmemPerBlock,
      .smem_per_block_optin_bytes = 101376,   // [CG] CC 12.0: 99 KiB
      .l2_bytes = 96 * kMiB,                  // [DS] 96 MB L2
      .regs_per_sm = 65536,
      .regs_per_block = 65536,
      .max_threads_per_sm = 1536,             // [CG] CC 12.0
      .max_threads_per_block = 1024,
      .memory_total_bytes = 32 * kGiB,        // [DS] 32 GB GDDR7
      .memory_bus_width_bits = 512,           // [DS]
      .memory_clock_khz = 14000000,           // derived from [DS] 1792 GB/s (28 Gbps GDDR7)
      .sm_clock_khz = 2407000,                // [DS] boost 2407 MHz
      .cluster_launch = true,                 // [CG] CC 9.0+
      .max_cluster_size = 8,                  // portable size; no non-portable figure
  });
}

GpuInfo gb10() {
  return finish("gb10", {
      .name = "NVIDIA GB10",
      .cc = {12, 1},
      .sm_count = 48,                         // [DS] DGX Spark: 6144 CUDA cores / 128 per SM
      .smem_per_sm_bytes = 102400,            // [CG] CC 12.1: 100 KiB
      .smem_per_block_bytes = kDefaultSmemPerBlock,
      .smem_per_block_optin_bytes = 101376,   // [CG] CC 12.1: 99 KiB
      .l2_bytes = 24 * kMiB,                  // unverified estimate: no published figure
      .regs_per_sm = 65536,
      .regs_per_block = 65536,
      .max_threads_per_sm = 1536,             // [CG] CC 12.x
      .max_threads_per_block = 1024,
      .memory_total_bytes = 124610 * kMiB,    // nvidia-smi on a DGX Spark (128 GB unified)
      .memory_bus_width_bits = 256,           // [DS] 256-bit LPDDR5X
      .memory_clock_khz = 4266000,            // derived from [DS] 273 GB/s (8533 MT/s)
      .sm_clock_khz = 2520000,                // derived: [DS] 31 TFLOP/s FP32 / (6144 x 2)
      .cluster_launch = true,
      .max_cluster_size = 8,                  // portable size
  });
}

struct PresetEntry {
  const char* key;
  GpuInfo (*make)();
};

constexpr PresetEntry kPresets[] = {
    {"h100-sxm", h100_sxm}, {"h100-pcie", h100_pcie}, {"h200", h200},
    {"a100-80g", a100_80g}, {"l40s", l40s},           {"b200", b200},
    {"rtx5090", rtx5090},   {"gb10", gb10},
};

// Short names used in issues and by users ("--device a100").
constexpr std::pair<const char*, const char*> kAliases[] = {
    {"h100", "h100-sxm"},      {"h100-sxm5", "h100-sxm"}, {"a100", "a100-80g"},
    {"a100-sxm", "a100-80g"},  {"5090", "rtx5090"},       {"rtx-5090", "rtx5090"},
    {"dgx-spark", "gb10"},     {"spark", "gb10"},
};

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::vector<std::string> device_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : kPresets) names.emplace_back(p.key);
  return names;
}

GpuInfo device_preset(const std::string& name) {
  std::string key = lowercase(name);
  for (const auto& [alias, target] : kAliases)
    if (key == alias) key = target;
  for (const auto& p : kPresets)
    if (key == p.key) return p.make();
  std::vector<std::string> aliases;
  for (const auto& [alias, target] : kAliases) aliases.push_back(fmt::format("{}", alias));
  throw InvalidArgument("device preset", "\"" + name + "\"",
                        fmt::format("not a known GPU preset; known presets: {} (aliases: {})",
                                    fmt::join(device_preset_names(), ", "),
                                    fmt::join(aliases, ", ")));
}

}  // namespace autogemm
