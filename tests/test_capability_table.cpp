// The capability table: each architecture gets the features it has and none it lacks.
#include <gtest/gtest.h>

#include "autogemm/device.hpp"

using namespace autogemm;

static ArchCapabilities caps(int major, int minor) {
  auto row = arch_capabilities({major, minor});
  EXPECT_TRUE(row.has_value()) << "no row for CC " << major << "." << minor;
  return row.value_or(ArchCapabilities{});
}

TEST(CapabilityTable, ComputeCapabilityComparesAsIntegersNotStrings) {
  // "10.0" < "7.0" and "10.0" < "9.0" as strings; as integers Blackwell is newest.
  EXPECT_GT((ComputeCapability{10, 0}), (ComputeCapability{7, 0}));
  EXPECT_GT((ComputeCapability{10, 0}), (ComputeCapability{9, 0}));
  EXPECT_GT((ComputeCapability{12, 1}), (ComputeCapability{12, 0}));
  EXPECT_LT((ComputeCapability{8, 9}), (ComputeCapability{9, 0}));
  EXPECT_EQ((ComputeCapability{10, 0}).as_int(), 100);
}

TEST(CapabilityTable, KnowsEveryListedArchAndNoOther) {
  for (auto [major, minor] : {std::pair{8, 0}, {8, 6}, {8, 7}, {8, 9}, {9, 0}, {10, 0},
                              {10, 3}, {11, 0}, {12, 0}, {12, 1}}) {
    auto row = arch_capabilities({major, minor});
    ASSERT_TRUE(row.has_value()) << major << "." << minor;
    EXPECT_TRUE(row->mma_sync_f16_bf16) << row->arch_name;
    EXPECT_GT(row->smem_per_sm_bytes, row->smem_per_block_optin_bytes) << row->arch_name;
    EXPECT_GT(row->dense_bf16_flops_per_clock_per_sm, 0) << row->arch_name;
    // Arch names spell the CC: sm_<major><minor>, with 'a' where arch-specific features exist.
    EXPECT_EQ(row->arch_name.rfind("sm_" + std::to_string(major * 10 + minor), 0), 0u)
        << row->arch_name;
  }
  EXPECT_FALSE(arch_capabilities({7, 5}).has_value());   // Turing: no bf16 mma.sync
  EXPECT_FALSE(arch_capabilities({10, 1}).has_value());  // renamed 11.0 in CUDA 13
  EXPECT_FALSE(arch_capabilities({13, 0}).has_value());
}

TEST(CapabilityTable, HopperHasWgmmaTmaClustersAndNoBlackwellFeatures) {
  const ArchCapabilities h = caps(9, 0);
  EXPECT_EQ(h.arch_name, "sm_90a");
  EXPECT_TRUE(h.wgmma);
  EXPECT_TRUE(h.tma);
  EXPECT_TRUE(h.clusters);
  EXPECT_TRUE(h.setmaxnreg);
  EXPECT_TRUE(h.fp8_tensor_cores);
  EXPECT_FALSE(h.fp4_tensor_cores);
  EXPECT_FALSE(h.tcgen05);
  EXPECT_FALSE(h.tensor_memory);
  EXPECT_EQ(h.smem_per_sm_bytes, 233472);
  EXPECT_EQ(h.smem_per_block_optin_bytes, 232448);
  EXPECT_EQ(h.max_cluster_portable, 8);
  EXPECT_EQ(h.max_cluster_nonportable, 16);
  EXPECT_EQ(h.dense_bf16_flops_per_clock_per_sm, 4096);
  EXPECT_EQ(h.dense_fp8_flops_per_clock_per_sm, 8192);
}

TEST(CapabilityTable, DatacenterBlackwellHasTcgen05AndNoWgmma) {
  for (auto [major, minor] : {std::pair{10, 0}, {10, 3}, {11, 0}}) {
    const ArchCapabilities b = caps(major, minor);
    EXPECT_TRUE(b.tcgen05) << b.arch_name;
    EXPECT_TRUE(b.tensor_memory) << b.arch_name;
    EXPECT_FALSE(b.wgmma) << b.arch_name << ": wgmma is sm_90a only";
    EXPECT_TRUE(b.fp4_tensor_cores) << b.arch_name;
    EXPECT_TRUE(b.tma && b.clusters && b.setmaxnreg) << b.arch_name;
    EXPECT_EQ(b.smem_per_block_optin_bytes, 232448) << b.arch_name;
  }
  EXPECT_EQ(caps(10, 0).max_cluster_nonportable, 16);
}

TEST(CapabilityTable, ConsumerBlackwellHasNeitherWgmmaNorTcgen05And99KiBPerBlock) {
  for (auto [major, minor] : {std::pair{12, 0}, {12, 1}}) {
    const ArchCapabilities c = caps(major, minor);
    EXPECT_FALSE(c.wgmma) << c.arch_name;
    EXPECT_FALSE(c.tcgen05) << c.arch_name;
    EXPECT_FALSE(c.tensor_memory) << c.arch_name;
    EXPECT_TRUE(c.fp8_tensor_cores) << c.arch_name;
    EXPECT_TRUE(c.fp4_tensor_cores) << c.arch_name;
    EXPECT_TRUE(c.tma && c.clusters) << c.arch_name;
    EXPECT_EQ(c.smem_per_sm_bytes, 102400) << c.arch_name;
    EXPECT_EQ(c.smem_per_block_optin_bytes, 101376) << c.arch_name;
  }
}

TEST(CapabilityTable, Fp8FromAdaOnAndFp4OnlyFromBlackwell) {
  EXPECT_FALSE(caps(8, 0).fp8_tensor_cores);
  EXPECT_FALSE(caps(8, 6).fp8_tensor_cores);
  EXPECT_FALSE(caps(8, 7).fp8_tensor_cores);
  EXPECT_EQ(caps(8, 0).dense_fp8_flops_per_clock_per_sm, 0);
  for (auto [major, minor] : {std::pair{8, 9}, {9, 0}}) {
    const ArchCapabilities c = caps(major, minor);
    EXPECT_TRUE(c.fp8_tensor_cores) << c.arch_name;
    EXPECT_FALSE(c.fp4_tensor_cores) << c.arch_name;
    EXPECT_EQ(c.dense_fp8_flops_per_clock_per_sm, 2 * c.dense_bf16_flops_per_clock_per_sm);
  }
}

TEST(CapabilityTable, PreHopperHasNoTmaClustersOrArchSpecificFeatures) {
  for (auto [major, minor] : {std::pair{8, 0}, {8, 6}, {8, 7}, {8, 9}}) {
    const ArchCapabilities c = caps(major, minor);
    EXPECT_FALSE(c.tma || c.clusters || c.wgmma || c.tcgen05 || c.setmaxnreg) << c.arch_name;
    EXPECT_EQ(c.max_cluster_portable, 1) << c.arch_name;
    EXPECT_EQ(c.max_cluster_nonportable, 1) << c.arch_name;
  }
  EXPECT_EQ(caps(8, 0).smem_per_sm_bytes, 164 * 1024);
  EXPECT_EQ(caps(8, 0).smem_per_block_optin_bytes, 163 * 1024);
  EXPECT_EQ(caps(8, 7).smem_per_block_optin_bytes, 163 * 1024);
  EXPECT_EQ(caps(8, 6).smem_per_block_optin_bytes, 99 * 1024);
  EXPECT_EQ(caps(8, 9).smem_per_block_optin_bytes, 99 * 1024);
}
