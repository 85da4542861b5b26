#pragma once
// Tail split: the last, partial wave of a persistent grid. When the output tiles are not a
// multiple of the CTAs that fit at once, the last wave keeps only a few SMs busy for a whole
// tile's time (4096 x 2112 x 7168 FP8, 128 x 128 tiles: 544 tiles on 132 SMs, the fifth wave
// 16 tiles). Splitting just those tiles' K ranges over the idle SMs shortens that wave to
// 1/splits of a tile, at the price of fp32 partial tiles and a small second kernel that sums
// them (runtime/tail_split.cpp). The full waves stay whole-K ("data parallel") tiles.
//
// One function decides the shape, so the cost model, the launcher and the kernel's parameters
// agree; the kernel only reads the result (GemmParams::tail_tiles, tail_splits).
#include <cstdint>
#include <string>

#include "autogemm/config.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

// Each K range keeps at least this many k-blocks, so its pipeline fills (split-K uses 4 too).
inline constexpr int64_t kMinKBlocksPerTailSplit = 4;

struct TailSplit {
  int64_t whole_tiles = 0;   // cluster tiles computed whole, first (full waves)
  int64_t tail_tiles = 0;    // cluster tiles of the last wave, each split into `splits`
  int splits = 1;            // 1: no tail split (every tile whole)
  int64_t work_items() const { return whole_tiles + tail_tiles * splits; }
};

// `cluster_tiles` output tiles (in clusters) on `slots` clusters that fit at once, at most
// `max_splits` K ranges of `k_blocks` k-blocks. The last wave's tiles get
// min(max_splits, slots / tail tiles, k_blocks / kMinKBlocksPerTailSplit) ranges, so the split
// wave is one wave; with fewer than 2 there is no split.
TailSplit plan_tail_split(int64_t cluster_tiles, int64_t slots, int max_splits, int64_t k_blocks);

// The same for `config` on `problem` (its cluster tiles, times split_k, and k-blocks), with
// at most config.tail_split ranges: what the cost model and the launcher use.
TailSplit plan_tail_split(const GemmProblem& problem, const GemmConfig& config, int64_t slots);

// Work items before any tail split: ceil(M / block_m) x ceil(N / block_n) tiles in clusters,
// times split_k.
int64_t cluster_work_items(const GemmProblem& problem, const GemmConfig& config);

// Why `config.tail_split` cannot be used with the rest of `config`, or empty.
std::string tail_split_violation(const GemmConfig& config);

}  // namespace autogemm::plan
