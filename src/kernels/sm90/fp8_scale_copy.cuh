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

// Swapped operands (Cfg::d_transposed, plan/swap_ab.hpp): the kernel's A is the call's B,
// whose scales are per 128 x 128 block, so a tile's rows take one scale per 128 of them (two
// blocks at most: block_m <= 256, tiles start at multiples of block_m); its B is the call's A,
// whose scales are per row, so each of the tile's block_n columns takes its own. The slot
// holds the block_n column scales where the unswapped kernel keeps its BLOCK_M row scales
// (the rules ask block_n <= block_m), and the row blocks' two where it keeps the column
// blocks'. Columns past the call's M copy its last row's scales: TMA zero-fills their B rows.
template <class Cfg>
__device__ __forceinline__ void produce_swapped_scales(const SharedStorage<Cfg>& smem,
                                                       const GemmParams& params,
                                                       const TileScheduler<Cfg>& scheduler,
                                                       PipelineState& write, int m_tile,
                                                       int n_tile, int lane) {
  using G = Geometry<Cfg>;
  constexpr int kColumnsPerLane = (Cfg::block_n + 31) / 32;
  const int k_begin = scheduler.k_begin(), k_end = scheduler.k_end();
  const float* columns[kColumnsPerLane];
#pragma unroll
  for (int i = 0; i < kColumnsPerLane; ++i) {
    const int column = min(n_tile * Cfg::block_n + lane + 32 * i, Cfg::n - 1);
    columns[i] = params.scale_a + column * params.scale_a_row_stride;
  }
  const int row_blocks = (params.m + kScaleBlock - 1) / kScaleBlock;
  const int block = min(m_tile * Cfg::block_m / kScaleBlock + (lane == 1 ? 1 : 0), row_blocks - 1);
  const float* row_block = params.scale_b + static_cast<long long>(block) * G::kNumKBlocks;
#pragma unroll 1
  for (int k_block = k_begin; k_block < k_end; ++k_block) {
    ptx::mbarrier_wait(smem.empty(write.stage), write.phase ^ 1);
#pragma unroll
    for (int i = 0; i < kColumnsPerLane; ++i)
      if (lane + 32 * i < Cfg::block_n)
        ptx::cp_async_4(smem.scale_a(write.stage) + lane + 32 * i,
                        columns[i] + k_block * params.scale_a_k_stride, true);
    if (lane < 2) ptx::cp_async_4(smem.scale_b(write.stage) + lane, row_block + k_block, true);
    ptx::cp_async_mbarrier_arrive_noinc(smem.full(write.stage));
    write.template advance<Cfg::num_stages>();
  }
}

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
    if constexpr (Cfg::d_transposed) {
      produce_swapped_scales(smem, params, scheduler, write, m_tile, n_tile, lane);
      continue;
    }
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
    // Block scaling: lane 0 the 128-column block the tile starts in, lane 1 the next one
    // (clamped to the last block, as a tile that does not straddle never reads it). 1x128 B
    // scales: lane l the columns l, l + 32, ... of the tile, those past N copying column N - 1's
    // (TMA zero-fills their B rows). Both are rows of kKBlocks floats.
    constexpr bool kColumnScales = Cfg::scaling == kScalingBlock1x128;
    constexpr int kBPerLane = kColumnScales ? (Cfg::block_n + 31) / 32 : 1;
    const float* b_rows[kBPerLane];
    if constexpr (kColumnScales) {
#pragma unroll
      for (int i = 0; i < kBPerLane; ++i)
        b_rows[i] = params.scale_b +
                    static_cast<long long>(min(n_tile * Cfg::block_n + lane + 32 * i, Cfg::n - 1)) *
                        kKBlocks;
    } else {
      const int first_block = min(n_tile * Cfg::block_n / kScaleBlock, kNBlocks - 1);
      const int b_block = min(first_block + (lane == 1 ? 1 : 0), kNBlocks - 1);
      b_rows[0] = params.scale_b +
                  (static_cast<long long>(scheduler.group) * kNBlocks + b_block) * kKBlocks;
    }
#pragma unroll 1
    for (int k_block = k_begin; k_block < k_end; ++k_block) {
      ptx::mbarrier_wait(smem.empty(write.stage), write.phase ^ 1);
      float* a_dst = smem.scale_a(write.stage);
#pragma unroll
      for (int i = 0; i < kRowsPerLane; ++i)
        ptx::cp_async_4(a_dst + lane + i * G::kScaleCopyThreads,
                        a_rows[i] + k_block * params.scale_a_k_stride, true);
      if constexpr (kColumnScales) {
#pragma unroll
        for (int i = 0; i < kBPerLane; ++i)
          if (lane + 32 * i < Cfg::block_n)
            ptx::cp_async_4(smem.scale_b(write.stage) + lane + 32 * i, b_rows[i] + k_block, true);
      } else if (lane < 2) {
        ptx::cp_async_4(smem.scale_b(write.stage) + lane, b_rows[0] + k_block, true);
      }
      ptx::cp_async_mbarrier_arrive_noinc(smem.full(write.stage));
      write.template advance<Cfg::num_stages>();
    }
  }
}

}  // namespace autogemm::sm90
