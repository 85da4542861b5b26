#pragma once
// Stream-K (GemmConfig::stream_k): how the work of a GEMM whose tiles do not fill whole waves is
// shared out. Compiled by the host (plan/kernel_spec.cpp sizes the workspace, the cost model
// prices it, tests/test_tile_scheduler.cpp checks it) and by NVRTC (tile_scheduler.cuh), so the
// two can never disagree.
//
// With T output tiles of kb k-blocks each on P resident CTAs (slots):
//   data-parallel  the first T - S tiles, whole, in the usual persistent waves (T - S is a
//                  multiple of P, so every slot runs the same number);
//   stream-K       the last S tiles' S x kb k-blocks ("units") laid end to end and cut into P
//                  equal runs, one per slot: slot p computes units [begin(p), begin(p + 1)).
// A tile whose units lie in several slots' runs is summed like split-K's splits
// (split_k_reduce.cuh): its pieces, numbered by slot, count their arrival, and the last one adds
// all pieces in piece order and stores the tile. So every slot does the same work, where a
// partial last wave would leave SMs idle. The planner offers it where that measured faster
// (plan/gemm_search.hpp stream_k_offered); a run's k-blocks, each CTA at its own k, run slower
// than a wave's, so elsewhere it lost.
// S = T below one wave; else the remainder T mod P, or the remainder plus one wave where the
// remainder alone is under half a wave (each slot would take less than half a tile's k-loop in
// pieces, each paying a partial store and a wait; with the wave, 1 to 1.5 tiles a slot).
// The rules (plan/rules.cpp stream_k_violation) keep every run at least one unit long (an empty
// run inside a tile's pieces would never arrive: its last piece would wait for ever), the pieces
// of a tile at most 32 (one polling lane each) and S x kb x P below 2^31 (32-bit arithmetic).

#include "sm90/gemm_layout.cuh"   // AUTOGEMM_HD

namespace autogemm::sm90 {

// The tiles shared out as units (S above).
AUTOGEMM_HD constexpr int stream_k_tiles(int tiles, int slots) {
  if (tiles <= 0 || slots <= 0) return 0;
  if (tiles < slots) return tiles;
  const int rest = tiles % slots;
  if (rest == 0) return 0;
  return 2 * rest >= slots ? rest : rest + slots;
}

// The first unit of slot p's run: floor(p x units / slots).
AUTOGEMM_HD constexpr int stream_k_run_begin(int slot, int units, int slots) {
  return static_cast<int>(static_cast<long long>(slot) * units / slots);
}

// The slot whose run holds `unit`: the largest p with floor(p x units / slots) <= unit, i.e.
// p x units < (unit + 1) x slots.
AUTOGEMM_HD constexpr int stream_k_slot_of(int unit, int units, int slots) {
  return static_cast<int>((static_cast<long long>(unit + 1) * slots - 1) / units);
}

// The most pieces any stream-K tile is cut into (the workspace's slots per tile): a tile's kb
// units meet at most (kb - 1) / shortest run + 2 runs. 1 where no tile is cut.
AUTOGEMM_HD constexpr int stream_k_max_pieces(int tiles, int slots, int k_blocks) {
  const int shared = stream_k_tiles(tiles, slots);
  if (shared == 0) return 1;
  const int units = shared * k_blocks;
  const int shortest = units / slots;
  const int bound = shortest == 0 ? slots : (k_blocks - 1) / shortest + 2;
  return bound < slots ? bound : slots;
}

// The scheduler's work items: the whole tiles, then each shared tile once per piece.
AUTOGEMM_HD constexpr int stream_k_work_items(int tiles, int slots, int k_blocks) {
  const int shared = stream_k_tiles(tiles, slots);
  int items = tiles - shared;
  const int units = shared * k_blocks;
  for (int t = 0; t < shared; ++t)
    items += stream_k_slot_of(t * k_blocks + k_blocks - 1, units, slots) -
             stream_k_slot_of(t * k_blocks, units, slots) + 1;
  return items;
}

}  // namespace autogemm::sm90
