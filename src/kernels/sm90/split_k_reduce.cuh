#pragma once
// Split-K summed inside the GEMM kernel (Cfg::split_k > 1), and stream-K's cut tiles
// (Cfg::stream_k, stream_k.cuh: a tile's pieces are its splits, 1 to 32 of them, known at run
// time). The split_k K ranges of a tile are separate work items (tile_scheduler.cuh), usually on
// different SMs. For each consumer
// warpgroup's rows of the tile, right after its main loop:
//   every split:  counts its arrival on the rows' counter (one relaxed atomic, one L2 round trip)
//                 and learns whether it is the last;
//   the others:   store their fp32 fragment into their slot of the workspace and raise their
//                 ready flag (release); they have no epilogue;
//   the last:     waits for the others' flags (acquire), adds the slots in split order (its own
//                 from registers: the same values, so D is bitwise the same whichever split
//                 arrives last), sets the counter and flags back to 0 for the next call on the
//                 stream, and runs the ordinary epilogue (alpha, beta, C, D).
// The last split only waits for splits that have already counted, which are running and store
// without waiting for anything, so any grid and any number of work items per CTA is safe.
// Counting first keeps the last split's path to three L2 round trips (count, flags, loads); storing
// and fencing before counting made it five, ~700 cycles each under load: the last split's
// reduction and epilogue took 2.3-3.3 us where a plain epilogue takes 0.33 (64 x 2112 x 7168
// FP8). A second kernel costs ~3.6-4.2 us on the H100 whatever it does (a one-tile GEMM 3.62 us,
// cuBLASLt's split-K reduce 4.16).
//
// Workspace (plan/kernel_spec.cpp split_k_layout sizes it with the same formulas):
//   counters  one u32 per (CTA tile, consumer), tiles numbered m_tile * kPaddedNTiles + n_tile
//             over the cluster-padded grid (stream-K: the shared tiles, in their order), then
//             split_k (stream-K: stream_k_max_pieces) ready flags per counter: zero before the
//             kernel and after it
//   partials  per counter, as many slots of ROWS_PER_CONSUMER x BLOCK_N fp32, thread-minor
//             float4s (vector v of consumer thread t at float (v * 128 + t) * 4): coalesced
#include "ptx/barrier.cuh"
#include "sm90/gemm_common.cuh"
#include "sm90/tile_scheduler.cuh"

namespace autogemm::sm90 {

template <class Cfg>
struct SplitKReduce {
  using G = Geometry<Cfg>;
  static_assert(G::kAccum % 4 == 0, "fragments move in float4 (block_n is a multiple of 8)");
  // One polling lane per split (stream-K's pieces: plan/rules.cpp stream_k_violation).
  static_assert(Cfg::split_k <= 32, "one polling lane per split");
  static constexpr int kVectors = G::kSlabs * G::kAccum / 4;        // float4 per thread
  static constexpr int kSlotFloats = kVectors * 4 * 128;            // one consumer's rows
  // CTA tiles per row of the cluster-padded grid the scheduler walks.
  static constexpr int kPaddedNTiles = TileScheduler<Cfg>::kNumNClusterTiles * Cfg::cluster_n;

  // Vector v of a thread's fragment: registers 4 * (v mod (kAccum / 4)) .. + 3 of slab
  // v / (kAccum / 4). Every split groups its registers alike, so the grouping only sets the
  // slot layout, not which values are added.
  __device__ static float& element(float (&acc)[G::kSlabs][G::kAccum], int v, int e) {
    return acc[v / (G::kAccum / 4)][v % (G::kAccum / 4) * 4 + e];
  }

  // Stream-K's last piece: the pieces' sum in piece order, built in `acc` a piece at a time, so
  // a piece's loads are all in flight at once whatever the (run-time) piece count. The last
  // piece to arrive is usually piece 0 (the end of the slot before's run; the other pieces
  // start their slots' runs), whose sums are the first term already. Any other first stores its
  // own sums in its slot (this thread reads them back: program order) and starts from piece 0's.
  __device__ static void add_pieces_in_place(float (&acc)[G::kSlabs][G::kAccum], float* slots,
                                             int thread, int split, int splits) {
    if (split != 0) {
      float* mine = slots + split * kSlotFloats;
#pragma unroll
      for (int v = 0; v < kVectors; ++v) {
        ptx::st_global_v4(mine + (v * 128 + thread) * 4, element(acc, v, 0), element(acc, v, 1),
                          element(acc, v, 2), element(acc, v, 3));
      }
#pragma unroll
      for (int v = 0; v < kVectors; ++v) {
        const float4 x = ptx::ld_global_cg_v4(slots + (v * 128 + thread) * 4);
        element(acc, v, 0) = x.x;
        element(acc, v, 1) = x.y;
        element(acc, v, 2) = x.z;
        element(acc, v, 3) = x.w;
      }
    }
#pragma unroll 1
    for (int s = 1; s < splits; ++s) {
#pragma unroll
      for (int v = 0; v < kVectors; ++v) {
        const float4 x = ptx::ld_global_cg_v4(slots + s * kSlotFloats + (v * 128 + thread) * 4);
        element(acc, v, 0) += x.x;
        element(acc, v, 1) += x.y;
        element(acc, v, 2) += x.z;
        element(acc, v, 3) += x.w;
      }
    }
  }

  // Hands this split's sums of its tile over, or, for the last split to arrive, gathers every
  // split's: returns true when `acc` now holds the whole tile's sums. `tile_row`: the tile's
  // counter row (the header's numbering); split `split` of `splits`; `slots_per_row` slots a
  // counter.
  __device__ static bool sum_if_last(float (&acc)[G::kSlabs][G::kAccum], const GemmParams& params,
                                     int consumer, long long tile_row, int split, int splits,
                                     int slots_per_row) {
    const int thread = threadIdx.x % 128;
    const unsigned barrier_id = 1 + consumer;   // the epilogue's: the same 128 threads
    const long long rows = tile_row * Cfg::num_consumers + consumer;
    unsigned* counter = params.split_k_counters + rows;
    unsigned* flags = params.split_k_flags + rows * slots_per_row;
    float* slots = params.split_k_partials + rows * slots_per_row * kSlotFloats;

    bool last = false;
    if (thread == 0) last = ptx::atomic_add_relaxed_gpu(counter, 1) == unsigned(splits - 1);
    last = ptx::named_barrier_or(barrier_id, 128, last);

    if (!last) {
      float* mine = slots + split * kSlotFloats;
#pragma unroll
      for (int v = 0; v < kVectors; ++v)
        ptx::st_global_v4(mine + (v * 128 + thread) * 4, element(acc, v, 0), element(acc, v, 1),
                          element(acc, v, 2), element(acc, v, 3));
      // Every thread's stores, then one release for all of them (PTX ISA memory model:
      // bar.sync orders them before thread 0's fence; the fence is cumulative).
      ptx::named_barrier_sync(barrier_id, 128);
      if (thread == 0) ptx::store_release_gpu(flags + split, 1);
      return false;
    }

    // Lane s of the first warp waits for split s (which has counted, so it is storing), then
    // clears its flag; thread 0 clears the counter. The barrier hands the acquires to all.
    if (thread < splits && thread != split) {
      while (ptx::load_acquire_gpu(flags + thread) == 0) {
      }
      flags[thread] = 0;
    }
    if (thread == 0) *counter = 0;
    ptx::named_barrier_sync(barrier_id, 128);
    if constexpr (Cfg::stream_k) {
      add_pieces_in_place(acc, slots, thread, split, splits);
      return true;
    }
#pragma unroll
    for (int v = 0; v < kVectors; ++v) {
      const float4 own = make_float4(element(acc, v, 0), element(acc, v, 1), element(acc, v, 2),
                                     element(acc, v, 3));
      float4 total = own;
#pragma unroll
      for (int s = 0; s < Cfg::split_k; ++s) {
        const float4 x =
            s == split ? own : ptx::ld_global_cg_v4(slots + s * kSlotFloats + (v * 128 + thread) * 4);
        if (s == 0) {
          total = x;
        } else {
          total.x += x.x;
          total.y += x.y;
          total.z += x.z;
          total.w += x.w;
        }
      }
      element(acc, v, 0) = total.x;
      element(acc, v, 1) = total.y;
      element(acc, v, 2) = total.z;
      element(acc, v, 3) = total.w;
    }
    return true;
  }
};

}  // namespace autogemm::sm90
