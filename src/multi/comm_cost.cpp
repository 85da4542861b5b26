// Communication time formulas (comm_cost.hpp).
#include "multi/comm_cost.hpp"

#include <cmath>

namespace autogemm::multi {

double transfer_us(double bytes, double gbps) {
  if (bytes <= 0 || std::isinf(gbps)) return 0;
  return bytes / (gbps * 1e3);  // 1 GB/s = 1e3 bytes/us
}

double ring_all_gather_us(double bytes, const Topology& t) {
  const int g = t.gpus();
  if (g < 2 || bytes <= 0) return 0;
  return kNcclCallUs + (g - 1) * t.ring_latency_us() +
         transfer_us(bytes * (g - 1) / g, t.ring_bandwidth_gbps());
}

double ring_reduce_scatter_us(double bytes, const Topology& t) { return ring_all_gather_us(bytes, t); }

double ring_all_reduce_us(double bytes, const Topology& t) {
  // A reduce-scatter then an all-gather, in one NCCL operation.
  const double both = 2 * ring_all_gather_us(bytes, t);
  return both > 0 ? both - kNcclCallUs : 0;
}

double chain_broadcast_us(double bytes, const Topology& t) {
  const int g = t.gpus();
  if (g < 2 || bytes <= 0) return 0;
  return kNcclCallUs + (g - 1) * t.ring_latency_us() + transfer_us(bytes, t.ring_bandwidth_gbps());
}

double chain_reduce_us(double bytes, const Topology& t) { return chain_broadcast_us(bytes, t); }

double root_gather_us(double moved, const Topology& t, int root) {
  if (t.gpus() < 2 || moved <= 0) return 0;
  return kNcclCallUs + t.root_latency_us(root) + transfer_us(moved, t.root_bandwidth_gbps(root));
}

double root_scatter_us(double moved, const Topology& t, int root) { return root_gather_us(moved, t, root); }

}  // namespace autogemm::multi
