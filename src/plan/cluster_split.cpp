#include "plan/cluster_split.hpp"

#include <fmt/format.h>

namespace autogemm::plan {

std::string cluster_k_violation(const GemmProblem& problem, const GemmConfig& c) {
  if (c.cluster_k < 1 || c.cluster_k > kMaxClusterK)
    return fmt::format("cluster_k = {}: must be 1..{} (the portable cluster size)", c.cluster_k,
                       kMaxClusterK);
  if (c.cluster_k == 1) return {};
  const auto name = [&] { return fmt::format("cluster_k = {}", c.cluster_k); };
  if (c.cluster_m * c.cluster_n > 1)
    return fmt::format("{} with cluster {}x{}: a cluster either splits K or multicasts, not both",
                       name(), c.cluster_m, c.cluster_n);
  if (c.split_k > 1 || c.tail_split > 1)
    return fmt::format("{} with split_k = {}, tail_split = {}: one way of splitting K at a time",
                       name(), c.split_k, c.tail_split);
  if (c.persistent)
    return fmt::format("{} with a persistent grid: each cluster computes one tile (its first "
                       "CTA's receive buffer and barrier are used once)",
                       name());
  if (!c.warp_specialized || c.load_path != LoadPath::tma)
    return fmt::format("{}: needs the warp-specialised kernel with TMA loads", name());
  const int64_t k_blocks = (problem.k + c.block_k - 1) / c.block_k;
  if (k_blocks < c.cluster_k)
    return fmt::format("{} with K = {} ({} k-blocks of {}): every CTA needs at least one k-block",
                       name(), problem.k, k_blocks, c.block_k);
  return {};
}

std::vector<int> cluster_k_choices(const GemmProblem& problem, int block_m, int block_n,
                                   int block_k, const GpuInfo& device) {
  std::vector<int> choices{1};
  if (!kPlanClusterSplitK || !device.caps.clusters) return choices;
  const int64_t tiles = ((problem.m + block_m - 1) / block_m) * ((problem.n + block_n - 1) / block_n);
  const int64_t k_blocks = (problem.k + block_k - 1) / block_k;
  for (int split : {2, 4, 8})
    if (tiles * 2 <= device.sm_count && tiles * split <= int64_t(device.sm_count) &&
        k_blocks >= kMinKBlocksPerClusterSplit * split)
      choices.push_back(split);
  return choices;
}

}  // namespace autogemm::plan
