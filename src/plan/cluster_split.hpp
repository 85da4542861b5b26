#pragma once
// Cluster split-K (GemmConfig::cluster_k): the CTAs of a cluster compute K ranges of one output
// tile and sum them in the first CTA's shared memory (kernels/sm90/cluster_reduce.cuh). It is
// split-K without the fp32 workspace and the second kernel, for decode shapes whose output
// tiles alone leave SMs idle or whose narrow tiles re-read A once per few columns of B.
#include <cstdint>
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

// The portable cluster size on sm_90 (CUDA's cudaClusterSchedulingPolicy docs and
// driver_types.h: "The portable cluster size for sm_90 is 8 blocks per cluster").
inline constexpr int kMaxClusterK = 8;

// Why `config.cluster_k` cannot be used with the rest of `config` on `problem`, or empty.
std::string cluster_k_violation(const GemmProblem& problem, const GemmConfig& config);

// The cluster_k values the planner tries for a tile shape: 1, and splits that turn too few
// output tiles into about one wave of CTAs while each CTA keeps at least
// kMinKBlocksPerClusterSplit k-blocks.
inline constexpr int64_t kMinKBlocksPerClusterSplit = 4;
std::vector<int> cluster_k_choices(const GemmProblem& problem, int block_m, int block_n,
                                   int block_k, const GpuInfo& device);

}  // namespace autogemm::plan
