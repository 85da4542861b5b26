#pragma once
// Block-scaled FP8: the producer side of the scales. The second warp of the producer
// warpgroup walks the same tiles and k-blocks as the TMA thread and copies each k-block's
// scales into the stage's scale slot (gemm_layout.cuh) with cp.async: the BLOCK_M A scales of
// the tile's rows (one column of the row-major M x ceil(K/128) array, a gather, or for large M
// one contiguous run of the copy the launcher transposed: GemmParams' strides) and the B scales of the two 128-column blocks a tile can touch. Every lane then arrives
// on the stage's full barrier when its copies land, so a consumer that sees the stage full
// sees its scales too, and reads them from shared memory next to the tiles.
//
// Why not in the consumer: a global load per k-block in the consumer's loop put an L2 round
// trip on the promotion's critical path; ptxas sank the prefetch next to its use, and Nsight
// Compute counted the promotion's first FMUL among the consumer's top stalls (3.2% of its
// samples, plus 1.9% on the loads; 0.5% and 0.4% with the scales in shared memory).
#include "ptx/barrier.cuh"
#include "ptx/cp_async.cuh"
#include "sm90/gemm_common.cuh"
#include "sm90/tile_scheduler.cuh"

namespace autogemm::sm90 {

template <class Cfg>
__device__ void produce_scales(const SharedStorage<Cfg>& smem, const GemmParams& params,
                               unsigned cta_rank) {
  using G = Geometry<Cfg>;
  static_assert(G::kStagedScales, "only block-scaled FP8 stages its scales");
  static_assert(Cfg::block_m % G::kScaleCopyThreads == 0, "whole rows per lane");
  constexpr int kRowsPerLane = Cfg::block_m / G::kScaleCopyThreads;
  constexpr int kKBlocks = G::kNumKBlocks;   // columns of both scale arrays
  constexpr int kNBlocks = (Cfg::n + kScaleBlock - 1) / kScaleBlock;
  const int lane = threadIdx.x % 32;

  PipelineState write;
  TileScheduler<Cfg> scheduler(params, cta_rank);
  int m_tile, n_tile;
  while (scheduler.next_tile(m_tile, n_tile)) {
    const int k_begin = scheduler.k_begin(), k_end = scheduler.k_end();
    // Lane l copies rows l, l + 32, ... of the tile. Rows past M (and a cluster partner's tile
    // past the edge) copy row M - 1's scales: TMA zero-fills their A rows, so their sums are 0
    // whatever the scale, and no store reaches D for them. (No per-row valid flags: this warp
    // runs with 40 registers, and eight flags beside eight row pointers made ptxas spill.)
    // Grouped GEMM: A's scales are per stored row (the scheduler's row0), B's per group:
    // [groups, ceil(N/128), ceil(K/128)].
    const int row0 = Cfg::grouping == 0 ? m_tile * Cfg::block_m : scheduler.row0;
    const float* a_rows[kRowsPerLane];
#pragma unroll
    for (int i = 0; i < kRowsPerLane; ++i) {
      const int row = row0 + lane + i * static_cast<int>(G::kScaleCopyThreads);
      a_rows[i] = params.scale_a + min(row, params.m - 1) * params.scale_a_row_stride;
    }
    // Lane 0: the 128-column block the tile starts in; lane 1: the next one (clamped to the
    // last block, as a tile that does not straddle never reads it).
    const int first_block = min(n_tile * Cfg::block_n / kScaleBlock, kNBlocks - 1);
    const int b_block = min(first_block + (lane == 1 ? 1 : 0), kNBlocks - 1);
    const float* b_row =
        params.scale_b + (static_cast<long long>(scheduler.group) * kNBlocks + b_block) * kKBlocks;
#pragma unroll 1
    for (int k_block = k_begin; k_block < k_end; ++k_block) {
      ptx::mbarrier_wait(smem.empty(write.stage), write.phase ^ 1);
      float* a_dst = smem.scale_a(write.stage);
#pragma unroll
      for (int i = 0; i < kRowsPerLane; ++i)
        ptx::cp_async_4(a_dst + lane + i * G::kScaleCopyThreads,
                        a_rows[i] + k_block * params.scale_a_k_stride, true);
      if (lane < 2) ptx::cp_async_4(smem.scale_b(write.stage) + lane, b_row + k_block, true);
      ptx::cp_async_mbarrier_arrive_noinc(smem.full(write.stage));
      write.template advance<Cfg::num_stages>();
    }
  }
}

}  // namespace autogemm::sm90
