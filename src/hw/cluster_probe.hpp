#pragma once
// The largest thread block cluster the driver's occupancy calculator allows on the current
// device, asked with a tiny hand-written PTX kernel (autogemm compiles no kernels at build
// time, so there is no function to ask about otherwise).
#include <string>

#include "autogemm/device.hpp"

namespace autogemm::hw {

struct ClusterSizeProbe {
  int max_cluster_size = 1;
  std::string source;  // "occupancy query", "no cluster launch", or "portable default (...)"
};

// The device must be current (cudaSetDevice) with its primary context initialised. Never
// throws: when the query cannot run it falls back to the portable size (8 on CC 9.0+) and
// says why in `source`.
ClusterSizeProbe probe_max_cluster_size(ComputeCapability cc, bool cluster_launch);

}  // namespace autogemm::hw
