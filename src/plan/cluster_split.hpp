#pragma once
// Cluster split-K (GemmConfig::cluster_k): the CTAs of a cluster compute K ranges of one output
// tile and sum them in the first CTA's shared memory (kernels/sm90/cluster_reduce.cuh). It is
// split-K without a global workspace, for decode shapes whose output
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

// Whether plan_gemm offers cluster split-K. Off: it passes the GPU tests, but on the H100 no FP8
// decode row ran faster with it than without (docs/perf/notes.md section 17). 64 x 2112 x 7168:
// 64x32 ck2 13.6 us against 64x16 13.5, though each SM pulls 40% fewer bytes from L2, so that
// row is not bound by L2 -> SM traffic; 64x64 ck4 19.6 us, because only 30 clusters of 4 are
// resident (120 CTAs, not 132) and its 33 clusters take two waves; elsewhere ck2 ran 6-35%
// slower. A configuration given with "ckN" runs either way.
inline constexpr bool kPlanClusterSplitK = false;

// The cluster_k values the planner tries for a tile shape: 1, and splits that turn too few
// output tiles into about one wave of CTAs while each CTA keeps at least
// kMinKBlocksPerClusterSplit k-blocks.
inline constexpr int64_t kMinKBlocksPerClusterSplit = 4;
std::vector<int> cluster_k_choices(const GemmProblem& problem, int block_m, int block_n,
                                   int block_k, const GpuInfo& device);

}  // namespace autogemm::plan
