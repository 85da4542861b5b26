// Named GPU presets: complete, consistent with the capability table, and findable by alias.
#include <gtest/gtest.h>

#include <algorithm>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "hw/device_json.hpp"

using namespace autogemm;

TEST(Presets, ListsTheEightNamedGpus) {
  const std::vector<std::string> expected = {"h100-sxm", "h100-pcie", "h200", "a100-80g",
                                             "l40s",     "b200",      "rtx5090", "gb10"};
  std::vector<std::string> names = device_preset_names();
  for (const std::string& name : expected)
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

TEST(Presets, EveryPresetIsCompleteAndItsCapsComeFromTheTable) {
  for (const std::string& name : device_preset_names()) {
    SCOPED_TRACE(name);
    const GpuInfo g = device_preset(name);
    EXPECT_EQ(g.preset, name);
    EXPECT_EQ(g.ordinal, -1);
    EXPECT_FALSE(g.name.empty());
    auto row = arch_capabilities(g.cc);
    ASSERT_TRUE(row.has_value());
    EXPECT_EQ(g.caps, *row);
    EXPECT_GT(g.sm_count, 0);
    // The per-SM and opt-in limits are arch facts: the preset must agree with the table.
    EXPECT_EQ(g.smem_per_sm_bytes, row->smem_per_sm_bytes);
    EXPECT_EQ(g.smem_per_block_optin_bytes, row->smem_per_block_optin_bytes);
    EXPECT_EQ(g.smem_per_block_bytes, 48 * 1024);
    EXPECT_GT(g.l2_bytes, 0);
    EXPECT_EQ(g.regs_per_sm, 65536);
    EXPECT_EQ(g.regs_per_block, 65536);
    EXPECT_GE(g.max_threads_per_sm, 1536);
    EXPECT_EQ(g.max_threads_per_block, 1024);
    EXPECT_GT(g.memory_total_bytes, 0);
    EXPECT_EQ(g.memory_free_bytes, 0);
    EXPECT_GT(g.memory_bus_width_bits, 0);
    EXPECT_GT(g.memory_clock_khz, 0);
    EXPECT_DOUBLE_EQ(g.memory_bandwidth_gbps,
                     2.0 * g.memory_clock_khz * 1e3 * g.memory_bus_width_bits / 8 / 1e9);
    EXPECT_GT(g.sm_clock_khz, 0);
    EXPECT_EQ(g.cluster_launch, g.caps.clusters);
    EXPECT_GE(g.max_cluster_size, g.caps.max_cluster_portable);
    EXPECT_LE(g.max_cluster_size, g.caps.max_cluster_nonportable);
    EXPECT_TRUE(g.pci_bus_id.empty());
    EXPECT_GT(g.peak_bf16_tflops(), 0);
    EXPECT_EQ(g.peak_fp8_tflops() > 0, g.caps.fp8_tensor_cores);
  }
}

TEST(Presets, H100SxmMatchesTheMeasuredDevice) {
  // Values read from an H100 SXM5 (hopper-facts.md section 0).
  const GpuInfo g = device_preset("h100-sxm");
  EXPECT_EQ(g.cc, (ComputeCapability{9, 0}));
  EXPECT_EQ(g.sm_count, 132);
  EXPECT_EQ(g.smem_per_sm_bytes, 233472);
  EXPECT_EQ(g.smem_per_block_optin_bytes, 232448);
  EXPECT_EQ(g.l2_bytes, 52428800);
  EXPECT_EQ(g.max_threads_per_sm, 2048);
  EXPECT_EQ(g.memory_bus_width_bits, 5120);
  EXPECT_EQ(g.memory_clock_khz, 2619000);
  EXPECT_EQ(g.sm_clock_khz, 1980000);
  EXPECT_EQ(g.max_cluster_size, 16);
  EXPECT_NEAR(g.memory_bandwidth_gbps, 3352.3, 0.1);  // datasheet: 3.35 TB/s
  // 4096 FLOP/clk/SM x 132 SMs x 1.98 GHz; the datasheet's 989.4 uses the 1.83 GHz clock.
  EXPECT_NEAR(g.peak_bf16_tflops(), 1070.5, 0.1);
  EXPECT_NEAR(g.peak_fp8_tflops(), 2 * g.peak_bf16_tflops(), 1e-9);
}

TEST(Presets, PeaksScaleWithSmsAndClock) {
  const GpuInfo sxm = device_preset("h100-sxm");
  const GpuInfo pcie = device_preset("h100-pcie");
  EXPECT_NEAR(pcie.peak_bf16_tflops() / sxm.peak_bf16_tflops(),
              (114.0 * pcie.sm_clock_khz) / (132.0 * sxm.sm_clock_khz), 1e-12);
}

TEST(Presets, ConsumerBlackwellPresetsHave99KiBPerBlockAndNoWgmma) {
  for (const char* name : {"rtx5090", "gb10"}) {
    const GpuInfo g = device_preset(name);
    EXPECT_EQ(g.smem_per_block_optin_bytes, 101376) << name;
    EXPECT_FALSE(g.caps.wgmma) << name;
    EXPECT_FALSE(g.caps.tcgen05) << name;
  }
  EXPECT_EQ(device_preset("gb10").cc, (ComputeCapability{12, 1}));
  EXPECT_TRUE(device_preset("b200").caps.tcgen05);
  EXPECT_FALSE(device_preset("b200").caps.wgmma);
}

TEST(Presets, AliasesAndCaseResolveToTheCanonicalPreset) {
  EXPECT_EQ(device_preset("a100").preset, "a100-80g");
  EXPECT_EQ(device_preset("h100").preset, "h100-sxm");
  EXPECT_EQ(device_preset("H100-SXM").preset, "h100-sxm");
  EXPECT_EQ(resolve_device("a100").preset, "a100-80g");
}

TEST(Presets, UnknownNameListsTheKnownOnes) {
  try {
    device_preset("h300");
    FAIL() << "no error for an unknown preset";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.value(), "\"h300\"");
    for (const std::string& name : device_preset_names())
      EXPECT_NE(e.rule().find(name), std::string::npos) << name << " missing in: " << e.what();
  }
  EXPECT_THROW(resolve_device("tpu"), InvalidArgument);
  EXPECT_THROW(resolve_device(""), InvalidArgument);
}

TEST(Presets, JsonCarriesEveryField) {
  const GpuInfo g = device_preset("h200");
  const nlohmann::json j = hw::to_json(g);
  for (const char* key :
       {"name", "ordinal", "preset", "compute_capability", "sm_count", "smem_per_sm_bytes",
        "smem_per_block_bytes", "smem_per_block_optin_bytes", "l2_bytes", "regs_per_sm",
        "regs_per_block", "max_threads_per_sm", "max_threads_per_block", "memory_total_bytes",
        "memory_free_bytes", "memory_bus_width_bits", "memory_clock_khz",
        "memory_bandwidth_gbps", "sm_clock_khz", "cluster_launch", "max_cluster_size",
        "pci_bus_id", "capabilities", "peak_bf16_tflops", "peak_fp8_tflops"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["compute_capability"]["major"], 9);
  EXPECT_EQ(j["compute_capability"]["minor"], 0);
  EXPECT_EQ(j["sm_count"], g.sm_count);
  EXPECT_EQ(j["capabilities"]["wgmma"], true);
  EXPECT_EQ(j["capabilities"]["arch_name"], "sm_90a");
  EXPECT_DOUBLE_EQ(j["peak_bf16_tflops"].get<double>(), g.peak_bf16_tflops());
}
