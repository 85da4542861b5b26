#pragma once
// Which output tile a CTA computes next. Cluster tiles (cluster_m x cluster_n CTA tiles) are
// walked in grouped order: bands of `raster_group` cluster rows (along_m) or columns (along_n),
// column-major inside a band, so consecutive tiles of a wave reuse the same A rows and B
// columns from L2 (hopper-facts.md 8.2). A persistent grid strides over the tiles; a
// non-persistent grid has one CTA per tile and runs the loop once.
// Row-band signals (Cfg::band_signals): the groups are cut at the bands' ends, so the tiles run
// band by band and a band's last tile is handed out before the next band's first (the rules
// keep the order along M and the bands whole cluster rows).
// Stream-K (Cfg::stream_k, stream_k.cuh): after the whole tiles' waves, each CTA takes its equal
// run of the remaining tiles' k-blocks, a piece of a tile at a time.
// Plain index arithmetic on the parameters, nothing architecture-specific: a host test compiles
// this header too (tests/test_tile_scheduler.cpp) and checks every k-block of every tile is
// computed exactly once.
#include "sm90/gemm_params.cuh"
#include "sm90/stream_k.cuh"

namespace autogemm::sm90 {

template <class Cfg>
struct TileScheduler {
  static constexpr int kClusterSize = Cfg::cluster_m * Cfg::cluster_n;
  static constexpr int kNumNTiles = (Cfg::n + Cfg::block_n - 1) / Cfg::block_n;
  // Split-K: split s computes k-blocks [s * kKBlocksPerSplit, min(next, kNumKBlocks)); a split
  // left empty by the rounding still stores its (zero) partial tile.
  static constexpr int kNumKBlocks = (Cfg::k + Cfg::block_k - 1) / Cfg::block_k;
  static constexpr int kKBlocksPerSplit = (kNumKBlocks + Cfg::split_k - 1) / Cfg::split_k;

  const GemmParams& params;
  int next;
  int rank_m, rank_n;   // this CTA's position inside its cluster
  // What the last next_tile() returned:
  int split = 0;        // split-K: which K range of the tile; stream-K: which piece
  int splits = Cfg::split_k;   // how many the tile has (stream-K: 1 for a whole tile)
  int shared_tile = 0;  // stream-K: the tile's number among the shared tiles (its workspace)
  int k_first = 0, k_last = kNumKBlocks;
  // Grouped GEMM: the tile's group (its B is rows group x N of the [groups, N, K] B) and the
  // first row of D past the group's valid rows (masked layout: the epilogue stores no row at or
  // beyond it). Ungrouped: not set.
  int group = 0;
  int row_limit = 0;
  // The tile's first row of A and D (grouped; ungrouped it is m_tile x block_m, not set). In the
  // masked layout each group's tiles start at its first row (group x group_rows), so a tile
  // never holds two groups whatever block_m and max_m are; m_tile then numbers the tiles group
  // by group.
  int row0 = 0;
  // Groups along K (grouping 3): the tile's tokens [k_origin, k_stop); k-block i starts at token
  // k_origin + i x block_k and the last one may hold tokens past k_stop (the producer zeroes
  // them). A's rows are row0 - group x group_rows.
  int k_origin = 0, k_stop = 0;

  // Only the position is kept; the counts are recomputed from the kernel parameters (constant
  // memory) at each tile. The producer warps run with 40 registers, and the scale warp's eight
  // row pointers plus the counts kept live across its k-loop made ptxas spill.
  __device__ TileScheduler(const GemmParams& kernel_params, unsigned cta_rank)
      : params(kernel_params), next(blockIdx.x / kClusterSize) {
    rank_m = static_cast<int>(cta_rank) % Cfg::cluster_m;
    rank_n = static_cast<int>(cta_rank) / Cfg::cluster_m;
  }

  __device__ int num_m_cluster_tiles() const {
    // Groups along K: params.m is every group's rows of D, whole tiles (the rules).
    const int num_m_tiles = Cfg::grouping == 2
                                ? params.m / params.group_rows * masked_tiles_per_group()
                                : (params.m + Cfg::block_m - 1) / Cfg::block_m;
    return (num_m_tiles + Cfg::cluster_m - 1) / Cfg::cluster_m;
  }
  static constexpr int kNumNClusterTiles = (kNumNTiles + Cfg::cluster_n - 1) / Cfg::cluster_n;

  // Stream-K: the workspace's slots per shared tile (stream_k_max_pieces), recomputed where
  // needed (the epilogue) rather than kept.
  __device__ int max_pieces() const {
    return stream_k_max_pieces(num_m_cluster_tiles() * kNumNClusterTiles,
                               static_cast<int>(gridDim.x) / kClusterSize, kNumKBlocks);
  }

  // The k-blocks [k_begin(), k_end()) of the work item the last next_tile() returned.
  __device__ int k_begin() const { return k_first; }
  __device__ int k_end() const { return k_last; }

  // Grouped GEMM: the next work item with rows to compute. Tiles whose rows are all padding
  // (contiguous: the first row's group index is -1), past the group's valid rows (masked:
  // masked_m[g], clamped to 0..group_rows) or of a group without tokens (along K) are skipped
  // by every warp alike, since each walks the same sequence. The rules keep clusters along M at
  // 1 for grouped problems, so both CTAs of a cluster (side by side along N) skip together.
  __device__ bool next_tile(int& m_tile, int& n_tile) {
    while (next_item(m_tile, n_tile)) {
      // Ungrouped: group, row0 and row_limit are not kept (the producer warps run with 40
      // registers, and three more live values made the FP8 64-row tiles spill); the kernel
      // uses m_tile x block_m and params.m.
      if constexpr (Cfg::grouping == 0) {
        return true;
      } else if constexpr (Cfg::grouping == 3) {
        row0 = m_tile * Cfg::block_m;
        row_limit = params.m;
        if (row0 >= params.m) continue;
        group = row0 / params.group_rows;
        // Clamped so no run reaches outside [0, K) or ends before it starts (wgrad.hpp).
        k_origin = group == 0 ? 0 : min(max(params.group_ends[group - 1], 0), Cfg::k);
        k_stop = min(max(params.group_ends[group], k_origin), Cfg::k);
        k_first = 0;
        k_last = (k_stop - k_origin + Cfg::block_k - 1) / Cfg::block_k;
        if (k_last > 0) return true;
      } else if constexpr (Cfg::grouping == 1) {
        row0 = m_tile * Cfg::block_m;
        row_limit = params.m;
        // A CTA tile past the last row: no group (cluster padding cannot happen along M here).
        if (row0 >= params.m) continue;
        group = params.group_index[row0];
        if (group >= 0) return true;
      } else {
        group = m_tile / masked_tiles_per_group();
        const int first = (m_tile - group * masked_tiles_per_group()) * Cfg::block_m;
        const int valid = min(max(params.masked_m[group], 0), params.group_rows);
        row0 = group * params.group_rows + first;
        row_limit = group * params.group_rows + valid;
        if (first < valid) return true;
      }
    }
    return false;
  }

  // Masked layout: tiles per group, each group's rows starting a tile.
  __device__ int masked_tiles_per_group() const {
    return (params.group_rows + Cfg::block_m - 1) / Cfg::block_m;
  }

  // Both CTAs of a cluster get the same cluster tile, so they iterate equally often; a CTA tile
  // past the edge (odd tile counts) still runs, with TMA zero-filling its loads and dropping
  // its stores, so multicast partners stay in step.
  __device__ bool next_item(int& m_tile, int& n_tile) {
    const int num_m_cluster_tiles = this->num_m_cluster_tiles();
    const int num_n_cluster_tiles = kNumNClusterTiles;
    const int total = num_m_cluster_tiles * num_n_cluster_tiles * Cfg::split_k;
    int item;
    if constexpr (Cfg::stream_k) {
      // `next` walks the whole tiles (< whole), then, past whole + slots, holds whole + slots +
      // the next unit of this slot's run (the first step past the whole tiles lands in
      // [whole, whole + slots) and starts the run).
      const int slots = static_cast<int>(gridDim.x) / kClusterSize;
      const int shared = stream_k_tiles(total, slots);
      const int whole = total - shared;
      if (next < whole) {
        item = next;
        next += slots;
        splits = 1;
        k_first = 0;
        k_last = kNumKBlocks;
      } else {
        const int units = shared * kNumKBlocks;
        const int slot = static_cast<int>(blockIdx.x) / kClusterSize;
        const int unit = next < whole + slots ? stream_k_run_begin(slot, units, slots)
                                              : next - whole - slots;
        const int run_end = stream_k_run_begin(slot + 1, units, slots);
        if (unit >= run_end) return false;
        shared_tile = unit / kNumKBlocks;
        const int tile_unit0 = shared_tile * kNumKBlocks;
        k_first = unit - tile_unit0;
        k_last = min(kNumKBlocks, run_end - tile_unit0);
        const int first_slot = stream_k_slot_of(tile_unit0, units, slots);
        split = slot - first_slot;
        splits = stream_k_slot_of(tile_unit0 + kNumKBlocks - 1, units, slots) - first_slot + 1;
        next = whole + slots + tile_unit0 + k_last;
        item = whole + shared_tile;
      }
    } else {
      if (next >= total) return false;
      // Split-K: the splits of one tile are consecutive work items (they read disjoint K ranges
      // of the same A rows and B columns, so they share L2 lines of neither).
      split = next % Cfg::split_k;
      item = next / Cfg::split_k;
      k_first = split * kKBlocksPerSplit;
      k_last = min(kNumKBlocks, k_first + kKBlocksPerSplit);
      next += gridDim.x / kClusterSize;
    }
    int major_count = Cfg::raster_along_n ? num_n_cluster_tiles : num_m_cluster_tiles;
    int minor_count = Cfg::raster_along_n ? num_m_cluster_tiles : num_n_cluster_tiles;
    int major_base = 0;   // the band's first cluster row (band signals)
    if constexpr (Cfg::band_signals) {
      static_assert(!Cfg::raster_along_n, "band signals walk the bands along M (plan/rules.cpp)");
      constexpr int kClusterRows = Cfg::block_m * Cfg::cluster_m;
      for (int b = 0; b < params.band_count; ++b) {
        const int end = params.band_end[b] / kClusterRows;
        const int items = (end - major_base) * minor_count;
        if (item < items || b == params.band_count - 1) {
          major_count = end - major_base;
          break;
        }
        item -= items;
        major_base = end;
      }
    }
    const int group = Cfg::raster_group;
    const int band_span = group * minor_count;
    const int band = item / band_span;
    const int first = band * group;
    const int band_rows = min(group, major_count - first);
    const int within = item % band_span;
    const int major = major_base + first + within % band_rows;
    const int minor = within / band_rows;
    const int cm = Cfg::raster_along_n ? minor : major;
    const int cn = Cfg::raster_along_n ? major : minor;
    m_tile = cm * Cfg::cluster_m + rank_m;
    n_tile = cn * Cfg::cluster_n + rank_n;
    return true;
  }
};

// Position in the shared-memory ring: stage index and the parity of its current phase. Both
// sides advance it identically across k-blocks and tiles (hopper-facts.md 4.3).
struct PipelineState {
  int stage = 0;
  unsigned phase = 0;
  template <int kNumStages>
  __device__ void advance() {
    if (++stage == kNumStages) {
      stage = 0;
      phase ^= 1;
    }
  }
  // `count` steps at once: past the k-blocks of a tile the other consumer takes (ping-pong).
  template <int kNumStages>
  __device__ void advance_by(int count) {
    const int steps = stage + count;
    stage = steps % kNumStages;
    phase ^= (steps / kNumStages) & 1;
  }
};

}  // namespace autogemm::sm90
