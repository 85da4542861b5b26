// The kernel's tile scheduler (src/kernels/sm90/tile_scheduler.cuh) run on the host: for grids
// of CTAs as the launcher sizes them, every k-block of every output tile inside M x N is
// computed exactly once, whole tiles and split-K splits cover their K ranges (and each split
// of each tile has its own split-K workspace slot inside the allocated size), a tail split's
// ranges land in distinct workspace slots, each tail CTA gets at most one range (the split wave
// is one wave), cluster partners walk the same cluster tiles, and the CTAs of a cluster split-K
// cluster split one tile's K by rank. Index arithmetic only, so the
// device header compiles here with three shims.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "plan/tail_split.hpp"
#include "runtime/split_k.hpp"

namespace {
struct Dim3Shim {
  unsigned x = 0;
};
Dim3Shim blockIdx, gridDim;
}  // namespace
using std::min;
#define __device__
#include "kernels/sm90/tile_scheduler.cuh"
#undef __device__

namespace {

using autogemm::sm90::GemmParams;
using autogemm::sm90::TileScheduler;

template <int BM, int BN, int BK, int CM, int CN, int N, int K, int SPLIT_K, int TAIL_SPLIT,
          bool ALONG_N, int GROUP, int CLUSTER_K = 1>
struct TestConfig {
  static constexpr int block_m = BM, block_n = BN, block_k = BK;
  static constexpr int cluster_m = CM, cluster_n = CN, cluster_k = CLUSTER_K;
  static constexpr int n = N, k = K, split_k = SPLIT_K, tail_split = TAIL_SPLIT;
  static constexpr bool raster_along_n = ALONG_N;
  static constexpr int raster_group = GROUP;
};

// Runs the scheduler of every CTA of the grid the launcher would launch on `slots` cluster
// slots, checks coverage, and returns the tail split used.
template <class Cfg>
autogemm::plan::TailSplit check_schedule(int m, int64_t slots) {
  constexpr int cluster = Cfg::cluster_m * Cfg::cluster_n * Cfg::cluster_k;
  const int m_tiles = (m + Cfg::block_m - 1) / Cfg::block_m;
  constexpr int n_tiles = (Cfg::n + Cfg::block_n - 1) / Cfg::block_n;
  constexpr int k_blocks = (Cfg::k + Cfg::block_k - 1) / Cfg::block_k;
  const int64_t cluster_tiles = int64_t((m_tiles + Cfg::cluster_m - 1) / Cfg::cluster_m) *
                                ((n_tiles + Cfg::cluster_n - 1) / Cfg::cluster_n) * Cfg::split_k;
  const auto tail = autogemm::plan::plan_tail_split(cluster_tiles, slots, Cfg::tail_split, k_blocks);
  // launch.cpp: grid = min(work items, slots) clusters.
  const int64_t grid_clusters = std::min<int64_t>(tail.work_items(), slots);

  GemmParams params{};
  params.m = m;
  params.tail_tiles = static_cast<int>(tail.tail_tiles);
  params.tail_splits = tail.splits;
  gridDim.x = static_cast<unsigned>(grid_clusters * cluster);

  std::map<std::pair<int, int>, std::vector<int>> covered;   // (m_tile, n_tile) -> k-block counts
  std::set<int64_t> slots_used;
  // Split-K: (counter, split) as split_k_reduce.cuh numbers them (one consumer), each once, all
  // inside what runtime/split_k.cpp allocates.
  autogemm::GemmProblem problem;
  problem.m = m;
  problem.n = Cfg::n;
  problem.k = Cfg::k;
  autogemm::GemmConfig config;
  config.block_m = Cfg::block_m;
  config.block_n = Cfg::block_n;
  config.cluster_m = Cfg::cluster_m;
  config.cluster_n = Cfg::cluster_n;
  config.num_consumers = 1;
  config.split_k = Cfg::split_k;
  const auto split_size = autogemm::runtime::split_k_workspace_size(problem, config);
  constexpr int padded_n_tiles = (n_tiles + Cfg::cluster_n - 1) / Cfg::cluster_n * Cfg::cluster_n;
  std::set<std::pair<int64_t, int>> split_slots;
  std::map<std::pair<int, int>, int> tail_items_per_cta;      // CTA -> tail ranges it ran
  // cluster id -> sequence of (cluster m, cluster n, split) per rank, to compare partners.
  std::map<int, std::vector<std::vector<std::tuple<int, int, int>>>> walks;
  for (int cta = 0; cta < static_cast<int>(gridDim.x); ++cta) {
    blockIdx.x = static_cast<unsigned>(cta);
    const unsigned rank = static_cast<unsigned>(cta % cluster);
    TileScheduler<Cfg> scheduler(params, rank);
    std::vector<std::tuple<int, int, int>> walk;
    int m_tile = 0, n_tile = 0;
    while (scheduler.next_tile(m_tile, n_tile)) {
      // Cluster split-K partners share the tile but not the K range.
      walk.emplace_back(m_tile / Cfg::cluster_m, n_tile / Cfg::cluster_n,
                        Cfg::cluster_k > 1 ? -1 : scheduler.split);
      if (Cfg::cluster_k > 1) EXPECT_EQ(scheduler.split, int(rank));
      EXPECT_LE(0, scheduler.k_begin());
      EXPECT_LT(scheduler.k_begin(), scheduler.k_end()) << "empty range";
      EXPECT_LE(scheduler.k_end(), k_blocks);
      if (scheduler.partial) {
        EXPECT_GT(tail.splits, 1);
        const int64_t slot = int64_t(scheduler.tail_index) * tail.splits + scheduler.split;
        EXPECT_TRUE(slots_used.insert(slot).second) << "workspace slot " << slot << " twice";
        EXPECT_LT(slot, tail.tail_tiles * cluster * tail.splits);
        ++tail_items_per_cta[{cta, 0}];
      } else if (Cfg::split_k == 1 && Cfg::cluster_k == 1) {
        EXPECT_EQ(scheduler.k_begin(), 0);
        EXPECT_EQ(scheduler.k_end(), k_blocks);
      }
      if (Cfg::split_k > 1) {   // partners past the edge count and store too
        const int64_t counter = int64_t(m_tile) * padded_n_tiles + n_tile;
        EXPECT_LT(counter, split_size.counters);
        EXPECT_TRUE(split_slots.insert({counter, scheduler.split}).second)
            << "split-K counter " << counter << " split " << scheduler.split << " twice";
      }
      if (m_tile >= m_tiles || n_tile >= n_tiles) continue;   // a cluster partner past the edge
      auto& counts = covered[{m_tile, n_tile}];
      counts.resize(k_blocks);
      for (int kb = scheduler.k_begin(); kb < scheduler.k_end(); ++kb) ++counts[kb];
    }
    walks[cta / cluster].push_back(walk);
  }
  EXPECT_EQ(int64_t(covered.size()), int64_t(m_tiles) * n_tiles);
  for (const auto& [tile, counts] : covered)
    for (int kb = 0; kb < k_blocks; ++kb)
      EXPECT_EQ(counts[kb], 1) << "tile (" << tile.first << ", " << tile.second << ") k-block " << kb;
  EXPECT_EQ(int64_t(slots_used.size()), tail.tail_tiles * cluster * tail.splits);
  if (Cfg::split_k > 1) EXPECT_EQ(int64_t(split_slots.size()), split_size.flags);
  for (const auto& [cta, count] : tail_items_per_cta) EXPECT_EQ(count, 1) << "CTA " << cta.first;
  for (const auto& [id, ranks] : walks)
    for (const auto& walk : ranks) EXPECT_EQ(walk, ranks.front()) << "cluster " << id;
  return tail;
}

}  // namespace

TEST(TileScheduler, TailSplitCoversEveryKBlockOnce) {
  // The FP8 prefill case: 4096 x 2112 x 7168 with 128 x 128 tiles in 2 x 1 clusters, and with
  // 256 x 128 tiles; K = 7000 leaves a partial k-block.
  using Fp8Tile = TestConfig<128, 128, 128, 2, 1, 2112, 7168, 1, 16, false, 8>;
  using Fp8Wide = TestConfig<256, 128, 128, 2, 1, 2112, 7000, 1, 16, true, 16>;
  const auto t = check_schedule<Fp8Tile>(4096, 66);
  EXPECT_EQ(t.tail_tiles, 8);
  EXPECT_EQ(t.splits, 8);
  EXPECT_GT(check_schedule<Fp8Wide>(4096, 66).splits, 1);
  for (int m : {1, 100, 2200, 4000, 4096, 6000})
    for (int64_t slots : {66, 57, 33}) {
      SCOPED_TRACE(::testing::Message() << "M " << m << ", " << slots << " slots");
      check_schedule<Fp8Tile>(m, slots);
      check_schedule<Fp8Wide>(m, slots);
    }
}

TEST(TileScheduler, TailSplitWithoutClustersAndShortK) {
  using Tile = TestConfig<128, 128, 64, 1, 1, 1100, 1000, 1, 8, false, 8>;     // 16 k-blocks
  using Narrow = TestConfig<64, 32, 128, 1, 2, 2100, 7040, 1, 16, false, 1>;   // cluster 1x2
  EXPECT_EQ(check_schedule<Tile>(2000, 132).splits, 4);   // 144 tiles: 12 left, 4 ranges
  for (int m : {1, 64, 300, 2500, 9000})
    for (int64_t slots : {132, 114, 7}) {
      SCOPED_TRACE(::testing::Message() << "M " << m << ", " << slots << " slots");
      check_schedule<Tile>(m, slots);
      check_schedule<Narrow>(m, slots);
    }
}

TEST(TileScheduler, WholeTilesAndSplitKCoverEveryKBlockOnce) {
  using Whole = TestConfig<128, 256, 64, 2, 1, 4096, 4096, 1, 1, true, 8>;
  using SplitK = TestConfig<64, 64, 128, 1, 1, 2112, 7168, 3, 1, false, 8>;
  // 2 x 1 clusters with split-K: odd tile counts put partners past the edge, which count and
  // store into the padded workspace too (runtime/split_k.cpp).
  using SplitKCluster = TestConfig<64, 128, 64, 2, 1, 2112, 7168, 2, 1, false, 8>;
  for (int m : {1, 77, 4096, 5000})
    for (int64_t slots : {66, 132}) {
      SCOPED_TRACE(::testing::Message() << "M " << m << ", " << slots << " slots");
      EXPECT_EQ(check_schedule<Whole>(m, slots).splits, 1);
      EXPECT_EQ(check_schedule<SplitK>(m, slots).splits, 1);
      EXPECT_EQ(check_schedule<SplitKCluster>(m, slots).splits, 1);
    }
}

TEST(TileScheduler, ClusterSplitKCoversEveryKBlockOnce) {
  // Non-persistent (one cluster per tile: slots = tiles), as the launcher runs cluster_k > 1.
  using Ck4 = TestConfig<64, 64, 128, 1, 1, 2112, 7168, 1, 1, false, 8, 4>;     // 56 k-blocks
  using Ck8 = TestConfig<64, 128, 128, 1, 1, 4096, 7040, 1, 1, false, 8, 8>;    // 55: uneven
  using Ck2 = TestConfig<128, 64, 64, 1, 1, 1000, 200, 1, 1, true, 1, 2>;       // 4 k-blocks
  for (int m : {1, 64, 128, 300}) {
    SCOPED_TRACE(::testing::Message() << "M " << m);
    check_schedule<Ck4>(m, ((m + 63) / 64) * 33);
    check_schedule<Ck8>(m, ((m + 63) / 64) * 32);
    check_schedule<Ck2>(m, ((m + 127) / 128) * 16);
  }
}
