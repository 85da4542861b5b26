#pragma once
// Split-K summed inside the GEMM kernel (Cfg::split_k > 1). The split_k K ranges of a tile are
// separate work items (tile_scheduler.cuh), usually on different SMs. For each consumer
// warpgroup's rows of the tile:
//   every split: stores its fp32 fragment into its slot of the workspace, fences, and one
//                thread adds 1 to the rows' arrival counter (acquire-release at GPU scope);
//   the last to arrive: adds the slots in split order (its own from registers: the same
//                values, so the sum is bitwise the same whichever split arrives last), sets
//                the counter back to 0 for the next call on the stream, and runs the ordinary
//                epilogue (alpha, beta, C, D).
// No CTA waits for another, so any grid and any number of work items per CTA is safe. Written
// because a second kernel costs ~3.6-4.2 us on the H100 whatever it does (docs/perf/notes.md
// section 20), more than the split saves at decode sizes; this costs one L2 round trip.
//
// Workspace (runtime/split_k.cpp sizes it with the same formulas):
//   counters  one u32 per (CTA tile, consumer), tiles numbered m_tile * kPaddedNTiles + n_tile
//             over the cluster-padded grid; zero before the kernel, zero after it
//   partials  per counter, split_k slots of ROWS_PER_CONSUMER x BLOCK_N fp32, thread-minor
//             float4s (vector v of consumer thread t at float (v * 128 + t) * 4): coalesced
#include "ptx/barrier.cuh"
#include "sm90/gemm_common.cuh"

namespace autogemm::sm90 {

template <class Cfg>
struct SplitKReduce {
  using G = Geometry<Cfg>;
  static_assert(G::kAccum % 4 == 0, "fragments move in float4 (block_n is a multiple of 8)");
  static constexpr int kVectors = G::kSlabs * G::kAccum / 4;        // float4 per thread
  static constexpr int kSlotFloats = kVectors * 4 * 128;            // one consumer's rows
  static constexpr int kNumNTiles = (Cfg::n + Cfg::block_n - 1) / Cfg::block_n;
  static constexpr int kPaddedNTiles = (kNumNTiles + Cfg::cluster_n - 1) / Cfg::cluster_n * Cfg::cluster_n;

  // Vector v of a thread's fragment: registers 4 * (v mod (kAccum / 4)) .. + 3 of slab
  // v / (kAccum / 4). Every split groups its registers alike, so the grouping only sets the
  // slot layout, not which values are added.
  __device__ static float& element(float (&acc)[G::kSlabs][G::kAccum], int v, int e) {
    return acc[v / (G::kAccum / 4)][v % (G::kAccum / 4) * 4 + e];
  }

  // Publishes this split's sums of (m_tile, n_tile) and returns whether they are now the whole
  // tile's (this warpgroup arrived last), in which case `acc` holds the sum of every split.
  __device__ static bool sum_if_last(float (&acc)[G::kSlabs][G::kAccum], const GemmParams& params,
                                     int consumer, int m_tile, int n_tile, int split) {
    const int thread = threadIdx.x % 128;
    const long long counter =
        (static_cast<long long>(m_tile) * kPaddedNTiles + n_tile) * Cfg::num_consumers + consumer;
    float* slots = params.split_k_partials + counter * Cfg::split_k * kSlotFloats;
    float* mine = slots + split * kSlotFloats;
#pragma unroll
    for (int v = 0; v < kVectors; ++v) {
      ptx::st_global_v4(mine + (v * 128 + thread) * 4, element(acc, v, 0), element(acc, v, 1),
                        element(acc, v, 2), element(acc, v, 3));
    }
    // Each thread's stores before the count (release), then the warpgroup meets (named barrier
    // 1 + consumer, the epilogue's: the same 128 threads) and one thread counts for all.
    ptx::fence_acq_rel_gpu();
    ptx::named_barrier_sync(1 + consumer, 128);
    bool last = false;
    if (thread == 0) {
      last = ptx::atomic_add_acq_rel_gpu(params.split_k_counters + counter, 1) == Cfg::split_k - 1;
      if (last) params.split_k_counters[counter] = 0;   // every split has counted: reusable
    }
    if (!ptx::named_barrier_or(1 + consumer, 128, last)) return false;
    ptx::fence_acq_rel_gpu();   // the other splits' stores, seen through thread 0's acquire
#pragma unroll
    for (int v = 0; v < kVectors; ++v) {
      const float4 own = make_float4(element(acc, v, 0), element(acc, v, 1), element(acc, v, 2),
                                     element(acc, v, 3));
      float4 total = own;
#pragma unroll
      for (int s = 0; s < Cfg::split_k; ++s) {
        const float4 x = s == split ? own : ptx::ld_global_cg_v4(slots + s * kSlotFloats + (v * 128 + thread) * 4);
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
