// Link presets, the topology's ring and root figures, and the measurement of the links
// between this machine's GPUs (multi_gpu.hpp, topology.hpp).
#include "multi/topology.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "autogemm/errors.hpp"

namespace autogemm {

namespace {

constexpr double kInfinite = std::numeric_limits<double>::infinity();

struct LinkPreset {
  const char* name;
  LinkKind kind;
  double gbps;
  double latency_us;
  const char* source;
};

// Bandwidths are per direction per GPU, the figure a ring collective's step can use.
// Latencies are not datasheet figures: the order of one small peer copy, launch to completion,
// that the ring formulas charge per step; measure_topology replaces both with measurements.
constexpr LinkPreset kLinkPresets[] = {
    // NVIDIA H100 and H200 datasheets: "NVLink: 900GB/s" (bidirectional; 18 NVLink 4 links of
    // 50 GB/s, 25 GB/s each way) on SXM boards, every GPU reaching every other through NVSwitch
    // at the full rate: 450 GB/s per direction.
    {"nvlink", LinkKind::nvlink, 450.0, 3.0,
     "NVLink 4 (H100/H200 SXM datasheets: 900 GB/s bidirectional = 450 GB/s per direction)"},
    // NVIDIA A100 datasheet: "NVLink: 600GB/s" on SXM4 boards (12 NVLink 3 links).
    {"nvlink3", LinkKind::nvlink, 300.0, 3.0,
     "NVLink 3 (A100 SXM4 datasheet: 600 GB/s bidirectional = 300 GB/s per direction)"},
    // PCI-SIG: Gen5 runs 32 GT/s per lane with 128b/130b coding, 63 GB/s per direction on x16;
    // about 55 GB/s is what DMA copies achieve after packet headers (~87%).
    {"pcie5", LinkKind::pcie, 55.0, 5.0,
     "PCIe Gen5 x16 (32 GT/s x 16 lanes = 64 GB/s per direction; ~55 GB/s achievable)"},
    // Gen4: 16 GT/s per lane, 32 GB/s per direction on x16; ~25 GB/s achievable.
    {"pcie4", LinkKind::pcie, 25.0, 5.0,
     "PCIe Gen4 x16 (16 GT/s x 16 lanes = 32 GB/s per direction; ~25 GB/s achievable)"},
};

std::string known_link_names() { return "nvlink, nvlink3, pcie (= pcie5), pcie5, pcie4"; }

}  // namespace

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::self: return "self";
    case LinkKind::nvlink: return "NVLink";
    case LinkKind::pcie: return "PCIe";
  }
  return "?";
}

std::vector<std::string> link_preset_names() { return {"nvlink", "nvlink3", "pcie", "pcie5", "pcie4"}; }

double Topology::ring_bandwidth_gbps() const {
  const int g = gpus();
  if (g < 2) return kInfinite;
  double slowest = kInfinite;
  for (int i = 0; i < g; ++i) slowest = std::min(slowest, links[i][(i + 1) % g].bandwidth_gbps);
  return slowest;
}

double Topology::ring_latency_us() const {
  const int g = gpus();
  double largest = 0;
  for (int i = 0; g > 1 && i < g; ++i)
    largest = std::max(largest, links[i][(i + 1) % g].latency_us);
  return largest;
}

double Topology::root_bandwidth_gbps(int root) const {
  double slowest = kInfinite;
  for (int r = 0; r < gpus(); ++r)
    if (r != root)
      slowest = std::min({slowest, links[r][root].bandwidth_gbps, links[root][r].bandwidth_gbps});
  return slowest;
}

double Topology::root_latency_us(int root) const {
  double largest = 0;
  for (int r = 0; r < gpus(); ++r)
    if (r != root) largest = std::max({largest, links[r][root].latency_us, links[root][r].latency_us});
  return largest;
}

Topology topology_preset(const std::string& link, int gpus) {
  const Link one = multi::preset_link(link);
  return multi::uniform_topology(
      one, gpus,
      fmt::format("{} GPU{}, every pair {} (preset \"{}\": {})", gpus, gpus == 1 ? "" : "s",
                  multi::describe_link(one), link, one.source));
}

std::string default_link_preset(const GpuInfo& device, std::string* why) {
  auto answer = [why](const char* preset, std::string reason) {
    if (why) *why = std::move(reason);
    return std::string(preset);
  };
  const std::string& p = device.preset;
  if (p == "h100-sxm" || p == "h200" || p == "b200")
    return answer("nvlink", fmt::format("{} is an SXM board: NVLink through NVSwitch{}", p,
                                        p == "b200" ? " (NVLink 5 is twice NVLink 4: this "
                                                      "understates it)"
                                                    : ""));
  if (p == "a100-80g") return answer("nvlink3", "a100-80g is an SXM4 board: NVLink 3");
  if (p == "l40s") return answer("pcie4", "l40s is a PCIe Gen4 card");
  if (!p.empty()) return answer("pcie", fmt::format("{} is a PCIe card (Gen5 assumed)", p));
  const std::string& name = device.name;
  auto has = [&name](const char* part) { return name.find(part) != std::string::npos; };
  if (has("A100") && has("SXM"))
    return answer("nvlink3", fmt::format("\"{}\" names an SXM4 A100: NVLink 3", name));
  if (has("H200") || has("SXM") || (has("H100") && has("HBM3")))
    return answer("nvlink", fmt::format("\"{}\" is an SXM board (H100 HBM3 and H200 are): NVLink "
                                        "4 assumed",
                                        name));
  return answer("pcie", fmt::format("\"{}\" is not known as an SXM board: PCIe Gen5 assumed", name));
}

namespace multi {

Link preset_link(const std::string& name) {
  const std::string key = name == "pcie" ? "pcie5" : name;
  for (const LinkPreset& p : kLinkPresets)
    if (key == p.name) {
      Link link;
      link.kind = p.kind;
      link.bandwidth_gbps = p.gbps;
      link.latency_us = p.latency_us;
      link.peer_access = true;
      link.source = p.source;
      return link;
    }
  throw InvalidArgument("link", name, fmt::format("unknown link preset; known: {}", known_link_names()));
}

LinkKind infer_link_kind(double measured_gbps) {
  return measured_gbps > kNvlinkInferenceGbps ? LinkKind::nvlink : LinkKind::pcie;
}

Topology uniform_topology(const Link& link, int gpus, const std::string& description) {
  if (gpus < 1)
    throw InvalidArgument("gpus", std::to_string(gpus), "a topology has at least one GPU");
  Topology t;
  t.description = description;
  for (int i = 0; i < gpus; ++i) t.devices.push_back(i);
  Link self;
  self.kind = LinkKind::self;
  self.bandwidth_gbps = kInfinite;
  self.peer_access = true;
  self.source = "the same GPU";
  t.links.assign(gpus, std::vector<Link>(gpus, link));
  for (int i = 0; i < gpus; ++i) t.links[i][i] = self;
  // The host reaches a GPU over PCIe whatever joins the GPUs: Gen4 behind a Gen4 GPU link,
  // else Gen5 (H100/H200 SXM hosts are Gen5).
  t.host_links.assign(gpus, preset_link(link.kind == LinkKind::pcie && link.bandwidth_gbps <=
                                                preset_link("pcie4").bandwidth_gbps
                                            ? "pcie4"
                                            : "pcie5"));
  return t;
}

std::string describe_link(const Link& link) {
  return fmt::format("{} {:.0f} GB/s, {:.1f} us", to_string(link.kind), link.bandwidth_gbps,
                     link.latency_us);
}

}  // namespace multi
}  // namespace autogemm
