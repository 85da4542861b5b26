#include "plan/tail_split.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace autogemm::plan {

TailSplit plan_tail_split(int64_t cluster_tiles, int64_t slots, int max_splits, int64_t k_blocks) {
  TailSplit t;
  t.whole_tiles = cluster_tiles;
  if (max_splits < 2 || slots < 1 || cluster_tiles < 1) return t;
  const int64_t tail = cluster_tiles % slots;   // 0: the waves are all full
  if (tail == 0) return t;
  const int64_t splits =
      std::min<int64_t>({max_splits, slots / tail, k_blocks / kMinKBlocksPerTailSplit});
  if (splits < 2) return t;
  t.whole_tiles = cluster_tiles - tail;
  t.tail_tiles = tail;
  t.splits = static_cast<int>(splits);
  return t;
}

int64_t cluster_work_items(const GemmProblem& p, const GemmConfig& c) {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  return ceil_div(ceil_div(p.m, c.block_m), c.cluster_m) *
         ceil_div(ceil_div(p.n, c.block_n), c.cluster_n) * c.split_k;
}

TailSplit plan_tail_split(const GemmProblem& p, const GemmConfig& c, int64_t slots) {
  return plan_tail_split(cluster_work_items(p, c), slots, c.tail_split,
                         (p.k + c.block_k - 1) / c.block_k);
}

std::string tail_split_violation(const GemmConfig& c) {
  if (c.tail_split < 1) return fmt::format("tail_split = {}: must be >= 1 (1 = none)", c.tail_split);
  if (c.tail_split == 1) return {};
  if (c.split_k > 1)
    return fmt::format("tail_split = {} with split_k = {}: one way of splitting K at a time",
                       c.tail_split, c.split_k);
  if (!c.persistent)
    return fmt::format("tail_split = {} without a persistent grid: the tail is the last wave of "
                       "the resident CTAs",
                       c.tail_split);
  if (!c.warp_specialized || c.load_path != LoadPath::tma)
    return fmt::format("tail_split = {}: needs the warp-specialised kernel with TMA loads",
                       c.tail_split);
  return {};
}

}  // namespace autogemm::plan
