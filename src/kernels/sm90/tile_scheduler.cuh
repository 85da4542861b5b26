#pragma once
// Which output tile a CTA computes next. Cluster tiles (cluster_m x cluster_n CTA tiles) are
// walked in grouped order: bands of `raster_group` cluster rows (along_m) or columns (along_n),
// column-major inside a band, so consecutive tiles of a wave reuse the same A rows and B
// columns from L2 (hopper-facts.md 8.2). A persistent grid strides over the tiles; a
// non-persistent grid has one CTA per tile and runs the loop once.
#include "ptx/common.cuh"

namespace autogemm::sm90 {

template <class Cfg>
struct TileScheduler {
  static constexpr int kClusterSize = Cfg::cluster_m * Cfg::cluster_n;
  static constexpr int kNumNTiles = (Cfg::n + Cfg::block_n - 1) / Cfg::block_n;
  // Split-K: split s computes k-blocks [s * kKBlocksPerSplit, min(next, kNumKBlocks)); a split
  // left empty by the rounding still stores its (zero) partial tile.
  static constexpr int kNumKBlocks = (Cfg::k + Cfg::block_k - 1) / Cfg::block_k;
  static constexpr int kKBlocksPerSplit = (kNumKBlocks + Cfg::split_k - 1) / Cfg::split_k;

  int num_m_cluster_tiles;
  int num_n_cluster_tiles;
  int total;
  int next;
  int stride;
  int rank_m, rank_n;   // this CTA's position inside its cluster
  int split = 0;        // split-K: which K range of the tile the last next_tile() returned

  __device__ TileScheduler(int m, unsigned cta_rank) {
    const int num_m_tiles = (m + Cfg::block_m - 1) / Cfg::block_m;
    num_m_cluster_tiles = (num_m_tiles + Cfg::cluster_m - 1) / Cfg::cluster_m;
    num_n_cluster_tiles = (kNumNTiles + Cfg::cluster_n - 1) / Cfg::cluster_n;
    total = num_m_cluster_tiles * num_n_cluster_tiles * Cfg::split_k;
    next = blockIdx.x / kClusterSize;
    stride = gridDim.x / kClusterSize;
    rank_m = static_cast<int>(cta_rank) % Cfg::cluster_m;
    rank_n = static_cast<int>(cta_rank) / Cfg::cluster_m;
  }

  // The k-blocks [k_begin(), k_end()) of the work item the last next_tile() returned.
  __device__ int k_begin() const { return split * kKBlocksPerSplit; }
  __device__ int k_end() const { return min(kNumKBlocks, k_begin() + kKBlocksPerSplit); }

  // Both CTAs of a cluster get the same cluster tile, so they iterate equally often; a CTA tile
  // past the edge (odd tile counts) still runs, with TMA zero-filling its loads and dropping
  // its stores, so multicast partners stay in step.
  __device__ bool next_tile(int& m_tile, int& n_tile) {
    if (next >= total) return false;
    // Split-K: the splits of one tile are consecutive work items (they read disjoint K ranges
    // of the same A rows and B columns, so they share L2 lines of neither).
    split = next % Cfg::split_k;
    const int item = next / Cfg::split_k;
    int major_count = Cfg::raster_along_n ? num_n_cluster_tiles : num_m_cluster_tiles;
    int minor_count = Cfg::raster_along_n ? num_m_cluster_tiles : num_n_cluster_tiles;
    const int group = Cfg::raster_group;
    const int band_span = group * minor_count;
    const int band = item / band_span;
    const int first = band * group;
    const int band_rows = min(group, major_count - first);
    const int within = item % band_span;
    const int major = first + within % band_rows;
    const int minor = within / band_rows;
    const int cm = Cfg::raster_along_n ? minor : major;
    const int cn = Cfg::raster_along_n ? major : minor;
    m_tile = cm * Cfg::cluster_m + rank_m;
    n_tile = cn * Cfg::cluster_n + rank_n;
    next += stride;
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
};

}  // namespace autogemm::sm90
