// The kernel's tile scheduler (src/kernels/sm90/tile_scheduler.cuh) run on the host: for grids
// of CTAs as the launcher sizes them, every k-block of every output tile inside M x N is
// computed exactly once, whole tiles and split-K splits cover their K ranges (and each split
// of each tile has its own split-K workspace slot inside the allocated size), and cluster
// partners walk the same cluster tiles, in both raster orders. Index arithmetic only, so the
// device header compiles here with three shims.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "plan/kernel_spec.hpp"

namespace {
struct Dim3Shim {
  unsigned x = 0;
};
Dim3Shim blockIdx, gridDim;
}  // namespace
using std::max;
using std::min;
#define __device__
#include "kernels/sm90/tile_scheduler.cuh"
#undef __device__

namespace {

using autogemm::sm90::GemmParams;
using autogemm::sm90::TileScheduler;

template <int BM, int BN, int BK, int CM, int CN, int N, int K, int SPLIT_K, bool ALONG_N,
          int GROUP, int GROUPING = 0, bool BANDS = false, bool STREAM_K = false>
struct TestConfig {
  static constexpr int grouping = GROUPING;
  static constexpr int block_m = BM, block_n = BN, block_k = BK;
  static constexpr int cluster_m = CM, cluster_n = CN;
  static constexpr int n = N, k = K, split_k = SPLIT_K;
  static constexpr bool stream_k = STREAM_K;
  static constexpr bool raster_along_n = ALONG_N;
  static constexpr int raster_group = GROUP;
  static constexpr bool band_signals = BANDS;
};

// The split-K or stream-K workspace plan/kernel_spec.cpp sizes for Cfg on `slots` CTAs (one
// consumer).
template <class Cfg>
autogemm::SplitKWorkspaceLayout workspace_of(int m, int64_t slots) {
  autogemm::GemmProblem problem;
  problem.m = m;
  problem.n = Cfg::n;
  problem.k = Cfg::k;
  autogemm::GemmConfig config;
  config.block_m = Cfg::block_m;
  config.block_n = Cfg::block_n;
  config.block_k = Cfg::block_k;
  config.cluster_m = Cfg::cluster_m;
  config.cluster_n = Cfg::cluster_n;
  config.num_consumers = 1;
  config.split_k = Cfg::split_k;
  config.stream_k = Cfg::stream_k;
  return autogemm::plan::split_k_layout(problem, config, slots);
}

// Runs the scheduler of every CTA of the grid the launcher would launch on `slots` cluster
// slots and checks coverage.
template <class Cfg>
void check_schedule(int m, int64_t slots, const std::vector<int>& band_ends = {}) {
  constexpr int cluster = Cfg::cluster_m * Cfg::cluster_n;
  const int m_tiles = (m + Cfg::block_m - 1) / Cfg::block_m;
  constexpr int n_tiles = (Cfg::n + Cfg::block_n - 1) / Cfg::block_n;
  constexpr int k_blocks = (Cfg::k + Cfg::block_k - 1) / Cfg::block_k;
  const int64_t cluster_tiles = int64_t((m_tiles + Cfg::cluster_m - 1) / Cfg::cluster_m) *
                                ((n_tiles + Cfg::cluster_n - 1) / Cfg::cluster_n) * Cfg::split_k;
  // launch.cpp: grid = min(work items, slots) clusters.
  const int64_t grid_clusters = std::min<int64_t>(cluster_tiles, slots);

  GemmParams params{};
  params.m = m;
  params.band_count = int(band_ends.size());
  for (std::size_t b = 0; b < band_ends.size(); ++b) params.band_end[b] = band_ends[b];
  auto band_of = [&](int m_tile) {
    int b = 0;
    while (b + 1 < int(band_ends.size()) && m_tile * Cfg::block_m >= band_ends[b]) ++b;
    return b;
  };
  gridDim.x = static_cast<unsigned>(grid_clusters * cluster);

  std::map<std::pair<int, int>, std::vector<int>> covered;   // (m_tile, n_tile) -> k-block counts
  // Split-K: (counter, split) as split_k_reduce.cuh numbers them (one consumer), each once, all
  // inside what runtime/split_k.cpp allocates.
  const auto split_size = workspace_of<Cfg>(m, slots);
  constexpr int padded_n_tiles = (n_tiles + Cfg::cluster_n - 1) / Cfg::cluster_n * Cfg::cluster_n;
  std::set<std::pair<int64_t, int>> split_slots;
  // cluster id -> sequence of (cluster m, cluster n, split) per rank, to compare partners.
  std::map<int, std::vector<std::vector<std::tuple<int, int, int>>>> walks;
  for (int cta = 0; cta < static_cast<int>(gridDim.x); ++cta) {
    blockIdx.x = static_cast<unsigned>(cta);
    const unsigned rank = static_cast<unsigned>(cta % cluster);
    TileScheduler<Cfg> scheduler(params, rank);
    std::vector<std::tuple<int, int, int>> walk;
    int m_tile = 0, n_tile = 0, last_band = 0;
    while (scheduler.next_tile(m_tile, n_tile)) {
      if (!band_ends.empty()) {   // band signals: every CTA walks the bands in order
        EXPECT_GE(band_of(m_tile), last_band) << "CTA " << cta << " tile (" << m_tile << ", " << n_tile << ")";
        last_band = band_of(m_tile);
      }
      walk.emplace_back(m_tile / Cfg::cluster_m, n_tile / Cfg::cluster_n, scheduler.split);
      EXPECT_LE(0, scheduler.k_begin());
      EXPECT_LT(scheduler.k_begin(), scheduler.k_end()) << "empty range";
      EXPECT_LE(scheduler.k_end(), k_blocks);
      if (Cfg::split_k == 1) {
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
  if (Cfg::split_k > 1) EXPECT_EQ(int64_t(split_slots.size()), split_size.flags);
  for (const auto& [id, ranks] : walks)
    for (const auto& walk : ranks) EXPECT_EQ(walk, ranks.front()) << "cluster " << id;
}

// Stream-K (stream_k.cuh): on a grid of `slots` CTAs (always the whole grid), every k-block of
// every tile once; a cut tile's pieces numbered 0..splits - 1 once each, all with the same piece
// count and workspace row, inside what split_k_layout sizes; every CTA the same k-blocks within
// one.
template <class Cfg>
void check_stream_k(int m, int slots) {
  const int m_tiles = (m + Cfg::block_m - 1) / Cfg::block_m;
  constexpr int n_tiles = (Cfg::n + Cfg::block_n - 1) / Cfg::block_n;
  constexpr int k_blocks = (Cfg::k + Cfg::block_k - 1) / Cfg::block_k;
  GemmParams params{};
  params.m = m;
  gridDim.x = static_cast<unsigned>(slots);
  const auto workspace = workspace_of<Cfg>(m, slots);
  const int shared = autogemm::sm90::stream_k_tiles(m_tiles * n_tiles, slots);
  EXPECT_EQ(workspace.counters, shared);
  std::map<std::pair<int, int>, std::vector<int>> covered;
  struct Cut {
    int splits = 0, row = -1;
    std::set<int> pieces;
  };
  std::map<std::pair<int, int>, Cut> cuts;
  int least = k_blocks * m_tiles * n_tiles, most = 0;
  for (int cta = 0; cta < slots; ++cta) {
    blockIdx.x = static_cast<unsigned>(cta);
    TileScheduler<Cfg> scheduler(params, 0);
    int m_tile = 0, n_tile = 0, done = 0;
    while (scheduler.next_tile(m_tile, n_tile)) {
      ASSERT_LT(scheduler.k_begin(), scheduler.k_end()) << "CTA " << cta << ": an empty run";
      ASSERT_LT(m_tile, m_tiles);
      ASSERT_LT(n_tile, n_tiles);
      done += scheduler.k_end() - scheduler.k_begin();
      auto& counts = covered[{m_tile, n_tile}];
      counts.resize(k_blocks);
      for (int kb = scheduler.k_begin(); kb < scheduler.k_end(); ++kb) ++counts[kb];
      if (scheduler.splits == 1) {
        EXPECT_EQ(scheduler.k_begin(), 0);
        EXPECT_EQ(scheduler.k_end(), k_blocks);
        continue;
      }
      Cut& cut = cuts[{m_tile, n_tile}];
      if (cut.splits == 0) {
        cut.splits = scheduler.splits;
        cut.row = scheduler.shared_tile;
      }
      EXPECT_EQ(scheduler.splits, cut.splits);
      EXPECT_EQ(scheduler.shared_tile, cut.row);
      EXPECT_LE(scheduler.splits, scheduler.max_pieces());
      EXPECT_LE(scheduler.splits, 32);
      EXPECT_LT(int64_t(scheduler.shared_tile), workspace.counters);
      EXPECT_LT(int64_t(scheduler.shared_tile + 1) * scheduler.max_pieces(),
                workspace.flags + 1);
      EXPECT_TRUE(cut.pieces.insert(scheduler.split).second) << "piece " << scheduler.split << " twice";
    }
    least = std::min(least, done);
    most = std::max(most, done);
  }
  EXPECT_EQ(int64_t(covered.size()), int64_t(m_tiles) * n_tiles);
  for (const auto& [tile, counts] : covered)
    for (int kb = 0; kb < k_blocks; ++kb)
      EXPECT_EQ(counts[kb], 1) << "tile (" << tile.first << ", " << tile.second << ") k-block " << kb;
  std::set<int> rows;
  for (const auto& [tile, cut] : cuts) {
    EXPECT_EQ(int(cut.pieces.size()), cut.splits);
    EXPECT_EQ(*cut.pieces.rbegin(), cut.splits - 1);
    EXPECT_TRUE(rows.insert(cut.row).second) << "workspace row " << cut.row << " twice";
  }
  if (shared > 0) EXPECT_LE(most - least, 1) << "runs of unequal length";
}

}  // namespace

TEST(TileScheduler, StreamKCoversEveryKBlockOnceInEqualRuns) {
  // The middle's swapped tiles (64 k-blocks), a partial wave of 128x128 tiles along N, short K
  // (5 k-blocks: runs of one or two), and 128x256 tiles whose remainder is under half a wave.
  using Swapped = TestConfig<128, 168, 64, 1, 1, 6144, 4096, 1, false, 8, 0, false, true>;
  using AlongN = TestConfig<128, 128, 64, 1, 1, 12288, 4096, 1, true, 8, 0, false, true>;
  using ShortK = TestConfig<64, 64, 64, 1, 1, 1000, 300, 1, false, 1, 0, false, true>;
  using Wide = TestConfig<128, 256, 64, 1, 1, 12288, 7168, 1, false, 8, 0, false, true>;
  for (int m : {1, 164, 400, 852, 3000})
    for (int slots : {132, 114, 7}) {
      SCOPED_TRACE(::testing::Message() << "M " << m << ", " << slots << " slots");
      check_stream_k<Swapped>(m, slots);
      check_stream_k<AlongN>(m, slots);
      check_stream_k<Wide>(m, slots);
      const int tiles = (m + 63) / 64 * ((1000 + 63) / 64);
      const int shared = autogemm::sm90::stream_k_tiles(tiles, slots);
      if (shared == 0 || shared * 5 >= slots) check_stream_k<ShortK>(m, slots);   // the rule
    }
  // The shared tiles: below a wave all; else the remainder, plus a wave where it is under half.
  EXPECT_EQ(autogemm::sm90::stream_k_tiles(48, 132), 48);
  EXPECT_EQ(autogemm::sm90::stream_k_tiles(264, 132), 0);
  EXPECT_EQ(autogemm::sm90::stream_k_tiles(200, 132), 68);
  EXPECT_EQ(autogemm::sm90::stream_k_tiles(140, 132), 8 + 132);
}

TEST(TileScheduler, WholeTilesCoverEveryKBlockOnce) {
  // The FP8 prefill tiles: 128 x 128 in 2 x 1 clusters, and 256 x 128 along N; K = 7000 leaves
  // a partial k-block.
  using Fp8Tile = TestConfig<128, 128, 128, 2, 1, 2112, 7168, 1, false, 8>;
  using Fp8Wide = TestConfig<256, 128, 128, 2, 1, 2112, 7000, 1, true, 16>;
  using Tile = TestConfig<128, 128, 64, 1, 1, 1100, 1000, 1, false, 8>;      // 16 k-blocks
  using Narrow = TestConfig<64, 32, 128, 1, 2, 2100, 7040, 1, false, 1>;    // cluster 1x2
  using Whole = TestConfig<128, 256, 64, 2, 1, 4096, 4096, 1, true, 8>;
  for (int m : {1, 64, 77, 100, 300, 2200, 4000, 4096, 6000})
    for (int64_t slots : {132, 114, 66, 57, 33, 7}) {
      SCOPED_TRACE(::testing::Message() << "M " << m << ", " << slots << " slots");
      check_schedule<Fp8Tile>(m, slots);
      check_schedule<Fp8Wide>(m, slots);
      check_schedule<Tile>(m, slots);
      check_schedule<Narrow>(m, slots);
      check_schedule<Whole>(m, slots);
    }
}

TEST(TileScheduler, SplitKCoversEveryKBlockOnce) {
  using SplitK = TestConfig<64, 64, 128, 1, 1, 2112, 7168, 3, false, 8>;
  // 2 x 1 clusters with split-K: odd tile counts put partners past the edge, which count and
  // store into the padded workspace too (runtime/split_k.cpp).
  using SplitKCluster = TestConfig<64, 128, 64, 2, 1, 2112, 7168, 2, false, 8>;
  // 1 x 2 clusters rastered along N (55 k-blocks in 4 splits), and uneven short splits (5
  // k-blocks in 2).
  using SplitKClusterN = TestConfig<64, 32, 128, 1, 2, 2100, 7040, 4, true, 4>;
  using SplitKShort = TestConfig<128, 64, 64, 1, 1, 1000, 300, 2, true, 1>;
  for (int m : {1, 64, 77, 128, 300, 4096, 5000})
    for (int64_t slots : {132, 66, 7}) {
      SCOPED_TRACE(::testing::Message() << "M " << m << ", " << slots << " slots");
      check_schedule<SplitK>(m, slots);
      check_schedule<SplitKCluster>(m, slots);
      check_schedule<SplitKClusterN>(m, slots);
      check_schedule<SplitKShort>(m, slots);
    }
}

TEST(TileScheduler, NonPersistentGridRunsEachTileOnce) {
  // One cluster per work item (slots = work items), as the launcher sizes a non-persistent grid.
  using Tile = TestConfig<128, 128, 64, 2, 1, 4096, 4096, 1, false, 8>;
  using SplitK = TestConfig<64, 64, 128, 1, 1, 2112, 7168, 4, true, 8>;
  for (int m : {1, 64, 128, 300}) {
    SCOPED_TRACE(::testing::Message() << "M " << m);
    check_schedule<Tile>(m, ((m + 255) / 256) * 32);
    check_schedule<SplitK>(m, ((m + 63) / 64) * 33 * 4);
  }
}

// Grouped GEMM: every tile holding valid rows is visited exactly once over the grid, with its
// group and the row its stores stop at; tiles of padding rows (contiguous) or past a group's
// masked_m (masked) are never returned.
TEST(TileScheduler, GroupedSkipsTilesWithoutValidRows) {
  using Contiguous = TestConfig<128, 128, 64, 1, 2, 1000, 512, 1, false, 8, 1>;
  using Masked = TestConfig<64, 128, 64, 1, 1, 1000, 512, 1, true, 8, 2>;
  constexpr int n_tiles = (1000 + 127) / 128;
  // Contiguous: groups of 1, 0, 200 and 128 rows in runs padded to 128 rows, and a spare run
  // of padding rows (tile 3) before group 3.
  std::vector<int> group_index(128 * 5, -1);
  group_index[0] = 0;
  for (int r = 0; r < 200; ++r) group_index[128 + r] = 2;
  for (int r = 0; r < 128; ++r) group_index[512 + r] = 3;
  // Masked: max_m = 192 rows per group, masked_m of 0, 1, 65, 192 and 500 (past max_m); and
  // max_m = 100 (two 64-row tiles per group, the second ending past the group).
  const std::vector<int> masked_m{0, 1, 65, 192, 500};
  {
    GemmParams params{};
    params.group_rows = 100;
    params.m = 100 * 5;
    params.masked_m = masked_m.data();
    std::map<std::pair<int, int>, int> seen;
    gridDim.x = 7;
    for (int cta = 0; cta < 7; ++cta) {
      blockIdx.x = static_cast<unsigned>(cta);
      TileScheduler<Masked> scheduler(params, 0);
      int m_tile = 0, n_tile = 0;
      while (scheduler.next_tile(m_tile, n_tile)) {
        const int group = m_tile / 2;
        EXPECT_EQ(scheduler.group, group);
        EXPECT_EQ(scheduler.row0, group * 100 + (m_tile % 2) * 64);
        EXPECT_EQ(scheduler.row_limit, group * 100 + std::min(masked_m[group], 100));
        ++seen[{m_tile, n_tile}];
      }
    }
    // Valid tiles: group 1: 1, group 2: 2, groups 3 and 4: 2 each (clamped to max_m).
    EXPECT_EQ(seen.size(), size_t(7 * n_tiles));
  }
  for (int64_t slots : {132, 7, 3}) {
    {
      GemmParams params{};
      params.m = 128 * 5;
      params.group_index = group_index.data();
      std::map<std::pair<int, int>, int> seen;
      gridDim.x = static_cast<unsigned>(std::min<int64_t>(slots, 5 * 4) * 2);
      for (int cta = 0; cta < static_cast<int>(gridDim.x); ++cta) {
        blockIdx.x = static_cast<unsigned>(cta);
        TileScheduler<Contiguous> scheduler(params, static_cast<unsigned>(cta % 2));
        int m_tile = 0, n_tile = 0;
        while (scheduler.next_tile(m_tile, n_tile)) {
          EXPECT_EQ(scheduler.group, group_index[m_tile * 128]);
          if (n_tile < n_tiles) ++seen[{m_tile, n_tile}];
        }
      }
      // m tiles 0 (group 0), 1, 2 (group 2), 4 (group 3); tile 3 starts with padding rows.
      EXPECT_EQ(seen.size(), size_t(4 * n_tiles));
      for (const auto& [tile, count] : seen) {
        EXPECT_EQ(count, 1) << tile.first << "," << tile.second;
        EXPECT_NE(tile.first, 3);
      }
    }
    {
      GemmParams params{};
      params.group_rows = 192;
      params.m = 192 * 5;
      params.masked_m = masked_m.data();
      std::map<std::pair<int, int>, int> seen;
      gridDim.x = static_cast<unsigned>(std::min<int64_t>(slots, 15 * n_tiles));
      for (int cta = 0; cta < static_cast<int>(gridDim.x); ++cta) {
        blockIdx.x = static_cast<unsigned>(cta);
        TileScheduler<Masked> scheduler(params, 0);
        int m_tile = 0, n_tile = 0;
        while (scheduler.next_tile(m_tile, n_tile)) {
          const int group = m_tile * 64 / 192;
          EXPECT_EQ(scheduler.group, group);
          EXPECT_EQ(scheduler.row_limit, group * 192 + std::min(masked_m[group], 192));
          EXPECT_LT(m_tile * 64, scheduler.row_limit);
          ++seen[{m_tile, n_tile}];
        }
      }
      // Valid tiles: group 1: 1, group 2: 2, group 3: 3, group 4: 3 (clamped to max_m).
      EXPECT_EQ(seen.size(), size_t(9 * n_tiles));
      for (const auto& [tile, count] : seen) EXPECT_EQ(count, 1);
    }
  }
}

// Groups along K (grouping 3, autogemm/wgrad.hpp): every tile of every group with tokens is
// walked once over exactly its run, [ends[g - 1], ends[g]) clamped to [0, K), from token
// k_origin in k-blocks whose last may end past k_stop; groups without tokens (empty, out of
// order) are skipped.
TEST(TileScheduler, GroupsAlongKWalkEachRunOnce) {
  using KGrouped = TestConfig<128, 192, 64, 1, 1, 1000, 3000, 1, false, 8, 3>;
  constexpr int kRows = 256;   // each group's rows of D
  const std::vector<std::vector<int>> cases = {
      {3000},                          // one group, all tokens
      {64, 64, 1000, 1001, 3000},      // a one-token run, an empty one
      {100, 50, 5000},                 // out of order (empty), past K (clamped)
      {0, 0, 2999, 3000},              // empty first groups
  };
  for (const auto& ends : cases)
    for (int slots : {132, 5}) {
      const int groups = int(ends.size());
      GemmParams params{};
      params.m = groups * kRows;
      params.group_rows = kRows;
      params.group_ends = ends.data();
      constexpr int n_tiles = (KGrouped::n + KGrouped::block_n - 1) / KGrouped::block_n;
      const int tiles = groups * kRows / KGrouped::block_m * n_tiles;
      gridDim.x = unsigned(std::min(tiles, slots));
      std::map<std::pair<int, int>, int> seen;
      for (int cta = 0; cta < int(gridDim.x); ++cta) {
        blockIdx.x = unsigned(cta);
        TileScheduler<KGrouped> scheduler(params, 0);
        int m_tile = 0, n_tile = 0;
        while (scheduler.next_tile(m_tile, n_tile)) {
          const int g = scheduler.group;
          const int start = g == 0 ? 0 : std::clamp(ends[g - 1], 0, KGrouped::k);
          const int stop = std::clamp(ends[g], start, KGrouped::k);
          EXPECT_EQ(g, m_tile * KGrouped::block_m / kRows);
          EXPECT_EQ(scheduler.row0, m_tile * KGrouped::block_m);
          EXPECT_EQ(scheduler.k_origin, start);
          EXPECT_EQ(scheduler.k_stop, stop);
          EXPECT_EQ(scheduler.k_begin(), 0);
          EXPECT_EQ(scheduler.k_end(), (stop - start + KGrouped::block_k - 1) / KGrouped::block_k);
          EXPECT_GT(stop, start) << "group " << g << " has no tokens";
          ++seen[{m_tile, n_tile}];
        }
      }
      int expected = 0;
      for (int g = 0; g < groups; ++g) {
        const int start = g == 0 ? 0 : std::clamp(ends[g - 1], 0, KGrouped::k);
        if (std::clamp(ends[g], start, KGrouped::k) > start)
          expected += kRows / KGrouped::block_m * n_tiles;
      }
      EXPECT_EQ(int(seen.size()), expected);
      for (const auto& [tile, count] : seen) EXPECT_EQ(count, 1);
    }
}

namespace {

// Ping-pong consumers (gemm_kernel.cuh Consumer::run): the CTA's work items alternate between
// the two consumers, and each steps its ring position past the other's k-blocks with
// PipelineState::advance_by. Each consumer must then wait on exactly the (stage, phase) the
// producer filled for each k-block of its own items.
template <class Cfg, int kStages>
void check_pingpong_positions(const GemmParams& params, int ctas) {
  using autogemm::sm90::PipelineState;
  gridDim.x = unsigned(ctas);
  for (int cta = 0; cta < ctas; ++cta) {
    blockIdx.x = unsigned(cta);
    std::vector<std::vector<std::pair<int, unsigned>>> filled;   // per item, as the producer
    {
      TileScheduler<Cfg> scheduler(params, 0);
      PipelineState write;
      int m_tile = 0, n_tile = 0;
      while (scheduler.next_tile(m_tile, n_tile)) {
        filled.emplace_back();
        for (int kb = scheduler.k_begin(); kb < scheduler.k_end(); ++kb) {
          filled.back().emplace_back(write.stage, write.phase);
          write.template advance<kStages>();
        }
      }
    }
    for (int consumer = 0; consumer < 2; ++consumer) {
      TileScheduler<Cfg> scheduler(params, 0);
      PipelineState read;
      int m_tile = 0, n_tile = 0, item = 0, owner = 0;
      while (scheduler.next_tile(m_tile, n_tile)) {
        const bool others = owner != consumer;
        owner ^= 1;
        if (others) {
          read.template advance_by<kStages>(scheduler.k_end() - scheduler.k_begin());
        } else {
          for (int kb = scheduler.k_begin(); kb < scheduler.k_end(); ++kb) {
            EXPECT_EQ(std::make_pair(read.stage, read.phase), filled[item][kb - scheduler.k_begin()])
                << "CTA " << cta << ", consumer " << consumer << ", item " << item << ", k-block "
                << kb;
            read.template advance<kStages>();
          }
        }
        ++item;
      }
      EXPECT_EQ(item, int(filled.size()));
    }
  }
}

}  // namespace

TEST(TileScheduler, PingPongConsumersReadTheStagesTheProducerFilled) {
  // advance_by(n) is n single steps, across any number of laps.
  for (int start = 0; start < 5; ++start)
    for (int n = 0; n < 40; ++n) {
      autogemm::sm90::PipelineState one, many;
      for (int i = 0; i < start; ++i) one.advance<5>(), many.advance<5>();
      for (int i = 0; i < n; ++i) one.advance<5>();
      many.advance_by<5>(n);
      EXPECT_EQ(std::make_pair(one.stage, one.phase), std::make_pair(many.stage, many.phase))
          << start << " + " << n;
    }
  // Dense weight-gradient tiles (64 k-blocks each) and experts' runs of uneven lengths.
  GemmParams dense{};
  dense.m = 1000;
  for (int ctas : {132, 7, 1})
    check_pingpong_positions<TestConfig<128, 128, 64, 1, 1, 1000, 4096, 1, false, 8>, 5>(dense,
                                                                                       ctas);
  using KGrouped = TestConfig<128, 128, 64, 1, 1, 1000, 3000, 1, false, 8, 3>;
  const std::vector<int> ends = {0, 1, 64, 127, 192, 192, 1000, 1065, 3000};
  GemmParams experts{};
  experts.m = int(ends.size()) * 256;
  experts.group_rows = 256;
  experts.group_ends = ends.data();
  for (int ctas : {132, 5, 1}) check_pingpong_positions<KGrouped, 3>(experts, ctas);
}

// Row-band signals: the groups are cut at the bands' ends, so every CTA meets the bands in order
// (a band's tiles are all handed out before the next band's), and every tile is still computed
// once: the tensor-parallel cuts (1024/1024/1024/768 rows and a thin one) in 2 x 1 clusters.
TEST(TileScheduler, BandSignalsWalkTheBandsInOrder) {
  using Bands = TestConfig<128, 256, 64, 2, 1, 28672, 4096, 1, false, 8, 0, true>;
  using Plain = TestConfig<128, 224, 64, 1, 1, 28672, 4096, 1, false, 8, 0, true>;
  for (int64_t slots : {132, 66, 7}) {
    SCOPED_TRACE(::testing::Message() << slots << " slots");
    check_schedule<Bands>(3840, slots, {1024, 2048, 3072, 3840});
    check_schedule<Bands>(4096, slots, {4096});
    check_schedule<Plain>(4096, slots, {1024, 2048, 3072, 3840, 4096});
    check_schedule<Plain>(2048, slots, {128, 2048});
  }
}
