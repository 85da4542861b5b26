#pragma once
// Split-K summed inside the GEMM kernel (Cfg::split_k > 1). The split_k K ranges of a tile are
// separate work items (tile_scheduler.cuh), usually on different SMs. For each consumer
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
//             over the cluster-padded grid, then split_k ready flags per counter: zero before
//             the kernel and after it
//   partials  per counter, split_k slots of ROWS_PER_CONSUMER x BLOCK_N fp32, thread-minor
//             float4s (vector v of consumer thread t at float (v * 128 + t) * 4): coalesced
#include "ptx/barrier.cuh"
#include "sm90/gemm_common.cuh"
#include "sm90/tile_scheduler.cuh"

namespace autogemm::sm90 {

template <class Cfg>
struct SplitKReduce {
  using G = Geometry<Cfg>;
  static_assert(G::kAccum % 4 == 0, "fragments move in float4 (block_n is a multiple of 8)");
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

  // Hands this split's sums of (m_tile, n_tile) over, or, for the last split to arrive, gathers
  // every split's: returns true when `acc` now holds the whole tile's sums.
  __device__ static bool sum_if_last(float (&acc)[G::kSlabs][G::kAccum], const GemmParams& params,
                                     int consumer, int m_tile, int n_tile, int split) {
    const int thread = threadIdx.x % 128;
    const unsigned barrier_id = 1 + consumer;   // the epilogue's: the same 128 threads
    const long long rows =
        (static_cast<long long>(m_tile) * kPaddedNTiles + n_tile) * Cfg::num_consumers + consumer;
    unsigned* counter = params.split_k_counters + rows;
    unsigned* flags = params.split_k_flags + rows * Cfg::split_k;
    float* slots = params.split_k_partials + rows * Cfg::split_k * kSlotFloats;

    bool last = false;
    if (thread == 0) last = ptx::atomic_add_relaxed_gpu(counter, 1) == Cfg::split_k - 1;
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
    if (thread < Cfg::split_k && thread != split) {
      while (ptx::load_acquire_gpu(flags + thread) == 0) {
      }
      flags[thread] = 0;
    }
    if (thread == 0) *counter = 0;
    ptx::named_barrier_sync(barrier_id, 128);
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
