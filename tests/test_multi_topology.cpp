// The link model between GPUs (src/multi/topology.cpp) and the communication formulas
// (src/multi/comm_cost.cpp), on presets: no GPU needed.
#include <gtest/gtest.h>

#include <cmath>

#include "autogemm/multi_gpu.hpp"
#include "cuda/cuda_check.hpp"
#include "multi/comm_cost.hpp"
#include "multi/topology.hpp"
#include "multi_test_util.hpp"

using namespace autogemm;

TEST(MultiTopology, PresetsCarryThePublishedFigures) {
  const Topology nvlink = topology_preset("nvlink", 4);
  EXPECT_EQ(nvlink.gpus(), 4);
  EXPECT_EQ(nvlink.links[0][1].kind, LinkKind::nvlink);
  EXPECT_DOUBLE_EQ(nvlink.links[0][1].bandwidth_gbps, 450.0);  // 900 GB/s bidirectional
  EXPECT_TRUE(autogemm::testing::contains(nvlink.links[2][3].source, "900 GB/s"));
  EXPECT_EQ(nvlink.links[1][1].kind, LinkKind::self);
  EXPECT_DOUBLE_EQ(topology_preset("nvlink3", 2).links[0][1].bandwidth_gbps, 300.0);
  EXPECT_DOUBLE_EQ(topology_preset("pcie", 2).links[0][1].bandwidth_gbps, 55.0);
  EXPECT_DOUBLE_EQ(topology_preset("pcie5", 2).links[1][0].bandwidth_gbps, 55.0);
  EXPECT_DOUBLE_EQ(topology_preset("pcie4", 2).links[1][0].bandwidth_gbps, 25.0);
  EXPECT_EQ(topology_preset("pcie4", 2).links[1][0].kind, LinkKind::pcie);
  EXPECT_FALSE(nvlink.measured);
}

TEST(MultiTopology, BadPresetsNameTheArgumentAndTheKnownNames) {
  const std::string message =
      autogemm::testing::expect_invalid([] { topology_preset("infiniband", 2); }, "link");
  EXPECT_TRUE(autogemm::testing::contains(message, "nvlink, nvlink3, pcie"));
  autogemm::testing::expect_invalid([] { topology_preset("nvlink", 0); }, "gpus");
}

TEST(MultiTopology, RingAndRootFiguresAreTheSlowestLinks) {
  Topology t = topology_preset("nvlink", 3);
  t.links[1][2].bandwidth_gbps = 100;   // one slow hop of the ring 0 -> 1 -> 2 -> 0
  t.links[2][0].latency_us = 9;
  EXPECT_DOUBLE_EQ(t.ring_bandwidth_gbps(), 100.0);
  EXPECT_DOUBLE_EQ(t.ring_latency_us(), 9.0);
  EXPECT_DOUBLE_EQ(t.root_bandwidth_gbps(0), 450.0);  // 1<->2 does not touch GPU 0
  EXPECT_DOUBLE_EQ(t.root_latency_us(0), 9.0);        // 2 -> 0
  const Topology one = topology_preset("pcie", 1);
  EXPECT_TRUE(std::isinf(one.ring_bandwidth_gbps()));
  EXPECT_DOUBLE_EQ(one.ring_latency_us(), 0.0);
}

TEST(MultiTopology, DefaultLinkFollowsTheBoard) {
  std::string why;
  EXPECT_EQ(default_link_preset(device_preset("h200"), &why), "nvlink");
  EXPECT_TRUE(autogemm::testing::contains(why, "SXM"));
  EXPECT_EQ(default_link_preset(device_preset("h100-sxm")), "nvlink");
  EXPECT_EQ(default_link_preset(device_preset("a100-80g")), "nvlink3");
  EXPECT_EQ(default_link_preset(device_preset("h100-pcie")), "pcie");
  EXPECT_EQ(default_link_preset(device_preset("l40s")), "pcie4");
  GpuInfo measured;
  measured.name = "NVIDIA H200";
  EXPECT_EQ(default_link_preset(measured), "nvlink");
  measured.name = "NVIDIA H100 PCIe";
  EXPECT_EQ(default_link_preset(measured), "pcie");
}

TEST(MultiTopology, MeasuredLinksAreNvlinkAboveWhatPcieCarries) {
  EXPECT_EQ(multi::infer_link_kind(380), LinkKind::nvlink);
  EXPECT_EQ(multi::infer_link_kind(101), LinkKind::nvlink);
  EXPECT_EQ(multi::infer_link_kind(100), LinkKind::pcie);
  EXPECT_EQ(multi::infer_link_kind(52), LinkKind::pcie);
}

TEST(MultiTopology, MeasurementRefusesBadDeviceListsBeforeTouchingAGpu) {
  autogemm::testing::expect_invalid([] { measure_topology({}); }, "devices");
  const std::string twice = autogemm::testing::expect_invalid([] { measure_topology({0, 1, 0}); }, "devices");
  EXPECT_TRUE(autogemm::testing::contains(twice, "device 0 is listed twice"));
}

TEST(MultiTopology, MeasurementOutOfRangeOrWithoutGpu) {
  // No GPU: NoDevice with the reason; with GPUs: ordinal 64 is out of range.
  try {
    measure_topology({0, 64});
    ADD_FAILURE() << "expected an error";
  } catch (const NoDevice& e) {
    EXPECT_TRUE(autogemm::testing::contains(e.what(), std::string(autogemm::kNoDriverOrGpu)))
        << e.what();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "devices");
    EXPECT_TRUE(autogemm::testing::contains(e.what(), "device 64 is out of range")) << e.what();
  }
}

TEST(MultiCommCost, OneGpuOrNoBytesMoveNothing) {
  const Topology one = topology_preset("nvlink", 1), four = topology_preset("nvlink", 4);
  EXPECT_EQ(multi::ring_all_reduce_us(1e9, one), 0.0);
  EXPECT_EQ(multi::root_gather_us(1e9, one), 0.0);
  EXPECT_EQ(multi::chain_reduce_us(0, four), 0.0);
  EXPECT_EQ(multi::transfer_us(1e9, INFINITY), 0.0);
}

TEST(MultiCommCost, RingAndChainFormulas) {
  const Topology t = topology_preset("nvlink", 4);  // 450 GB/s, 3 us per step
  const double bytes = 450e6;                        // 1000 us at 450 GB/s
  EXPECT_DOUBLE_EQ(multi::transfer_us(bytes, 450), 1000.0);
  // (G-1) L + (G-1)/G S/B, plus the NCCL call.
  EXPECT_DOUBLE_EQ(multi::ring_all_gather_us(bytes, t), multi::kNcclCallUs + 3 * 3.0 + 750.0);
  EXPECT_DOUBLE_EQ(multi::ring_reduce_scatter_us(bytes, t), multi::ring_all_gather_us(bytes, t));
  // All-reduce: twice the steps and bytes, one call.
  EXPECT_DOUBLE_EQ(multi::ring_all_reduce_us(bytes, t), multi::kNcclCallUs + 6 * 3.0 + 1500.0);
  // A pipelined chain streams the whole tensor through each link once.
  EXPECT_DOUBLE_EQ(multi::chain_broadcast_us(bytes, t), multi::kNcclCallUs + 3 * 3.0 + 1000.0);
  EXPECT_DOUBLE_EQ(multi::root_gather_us(bytes, t), multi::kNcclCallUs + 3.0 + 1000.0);
}

TEST(MultiCommCost, PcieIsSlowerThanNvlinkByTheBandwidthRatio) {
  const double bytes = 1e9;
  const double nvlink = multi::root_gather_us(bytes, topology_preset("nvlink", 2));
  const double pcie = multi::root_gather_us(bytes, topology_preset("pcie", 2));
  EXPECT_NEAR((pcie - multi::kNcclCallUs - 5.0) / (nvlink - multi::kNcclCallUs - 3.0), 450.0 / 55.0, 1e-9);
}
