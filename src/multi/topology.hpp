#pragma once
// The link model between GPUs (multi_gpu.hpp: Link, Topology): presets with published
// figures, the measurement's constants, and the rule that names a measured link NVLink or PCIe.
#include <string>

#include "autogemm/multi_gpu.hpp"

namespace autogemm::multi {

// One link of a preset ("nvlink", "nvlink3", "pcie5", "pcie4"; "pcie" is "pcie5").
// InvalidArgument("link", name, <the known names>) for another name.
Link preset_link(const std::string& name);

// The CUDA runtime does not say which link joins two GPUs, so a measured link is NVLink when it
// carries more than any PCIe link could: PCIe Gen5 x16 is 64 GB/s per direction before
// protocol overhead, NVLink 4 450 GB/s per GPU. 100 GB/s sits well between the two.
inline constexpr double kNvlinkInferenceGbps = 100.0;
LinkKind infer_link_kind(double measured_gbps);

// What measure_topology copies: large enough that the copy's start-up is < 1% of it at NVLink
// speed (256 MiB at 450 GB/s = 0.6 ms), and a small copy for the latency.
inline constexpr std::size_t kBandwidthCopyBytes = std::size_t(256) << 20;
inline constexpr std::size_t kLatencyCopyBytes = 8;

// A topology of `gpus` GPUs where every pair is `link`. InvalidArgument for gpus < 1.
Topology uniform_topology(const Link& link, int gpus, const std::string& description);

// "NVLink 450 GB/s, 3.0 us" for one link.
std::string describe_link(const Link& link);

}  // namespace autogemm::multi
