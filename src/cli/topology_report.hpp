#pragma once
// The links between GPUs as `autogemm profile` and `autogemm plan --gpus` print them: a peer
// matrix (bandwidth and latency per ordered pair, the link kind) and its JSON form.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "autogemm/multi_gpu.hpp"

namespace autogemm::cli {

// Lines of text, each ending in '\n': the description, then a matrix of "kind GB/s / us"
// (rows send, columns receive) when there are two GPUs or more.
std::string format_topology(const Topology& topology);

nlohmann::json topology_json(const Topology& topology);

// `autogemm profile`'s links: measured between all of this machine's GPUs when there are two
// or more, else the reason there is nothing to measure.
struct MachineLinks {
  std::optional<Topology> topology;
  std::string reason;
};
MachineLinks measure_machine_links(const GpuProfile& profile);
std::string format_machine_links(const MachineLinks& links);  // a titled section
nlohmann::json machine_links_json(const MachineLinks& links);

}  // namespace autogemm::cli
