// Text and JSON of a Topology (topology_report.hpp).
#include "cli/topology_report.hpp"

#include <fmt/format.h>

namespace autogemm::cli {

std::string format_topology(const Topology& t) {
  std::string out = t.description + "\n";
  if (t.gpus() < 2) return out;
  out += "  from \\ to";
  for (int d : t.devices) out += fmt::format(" {:>22}", fmt::format("GPU {}", d));
  out += "\n";
  for (int i = 0; i < t.gpus(); ++i) {
    out += fmt::format("  {:>9}", fmt::format("GPU {}", t.devices[i]));
    for (int j = 0; j < t.gpus(); ++j) {
      const Link& l = t.links[i][j];
      out += l.kind == LinkKind::self
                 ? fmt::format(" {:>22}", "-")
                 : fmt::format(" {:>22}", fmt::format("{} {:.0f} GB/s {:.1f} us", to_string(l.kind),
                                                      l.bandwidth_gbps, l.latency_us));
    }
    out += "\n";
  }
  if (t.measured) {
    out += "  peer access and cudaDevP2PAttrPerformanceRank (lower is better):\n";
    for (int i = 0; i < t.gpus(); ++i)
      for (int j = 0; j < t.gpus(); ++j)
        if (i != j)
          out += fmt::format("    GPU {} -> GPU {}: peer access {}, performance rank {}\n",
                             t.devices[i], t.devices[j], t.links[i][j].peer_access ? "yes" : "no",
                             t.links[i][j].performance_rank);
    out += fmt::format("  NVLink or PCIe is inferred from the bandwidth: the CUDA runtime does "
                       "not name the link, and NVML is not linked\n");
  }
  return out;
}

nlohmann::json topology_json(const Topology& t) {
  nlohmann::json links = nlohmann::json::array();
  for (int i = 0; i < t.gpus(); ++i)
    for (int j = 0; j < t.gpus(); ++j) {
      if (i == j) continue;
      const Link& l = t.links[i][j];
      links.push_back({{"from", t.devices[i]},
                       {"to", t.devices[j]},
                       {"kind", std::string(to_string(l.kind))},
                       {"bandwidth_gbps", l.bandwidth_gbps},
                       {"latency_us", l.latency_us},
                       {"peer_access", l.peer_access},
                       {"performance_rank", l.performance_rank},
                       {"source", l.source}});
    }
  return {{"gpus", t.gpus()},
          {"devices", t.devices},
          {"measured", t.measured},
          {"description", t.description},
          {"links", links}};
}

MachineLinks measure_machine_links(const GpuProfile& profile) {
  MachineLinks links;
  const std::size_t count = profile.gpus.size();
  if (count < 2) {
    links.reason = count == 0 ? fmt::format("no GPU ({})", profile.unavailable_reason)
                              : "1 GPU visible: peer links need 2 or more";
    return links;
  }
  std::vector<int> devices;
  for (const GpuInfo& g : profile.gpus) devices.push_back(g.ordinal);
  links.topology = measure_topology(devices);
  return links;
}

std::string format_machine_links(const MachineLinks& links) {
  if (!links.topology) return fmt::format("Peer links: none measured: {}\n", links.reason);
  return "Peer links (cudaMemcpyPeerAsync, rows send, columns receive)\n  " +
         format_topology(*links.topology);
}

nlohmann::json machine_links_json(const MachineLinks& links) {
  if (!links.topology) return {{"measured", false}, {"reason", links.reason}};
  return topology_json(*links.topology);
}

}  // namespace autogemm::cli
