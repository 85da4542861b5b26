#pragma once
// Cluster split-K (Cfg::cluster_k > 1): the cluster_k CTAs of a cluster compute K ranges of the
// same output tile (tile_scheduler.cuh), and their fp32 sums meet in the first CTA's shared
// memory instead of a global workspace read back by a second kernel (split_k_reduce.cuh).
//   rank r > 0: stores its fragment into slot r of rank 0's reduce buffer (distributed shared
//               memory, 16 B per store) and arrives on rank 0's reduce_full barrier with
//               release at cluster scope; it has no epilogue.
//   rank 0:     waits on reduce_full (acquire at cluster scope), adds slot 1, 2, ... to its own
//               sums in rank order, then stores the tile as any other.
// The order of the additions is fixed, so the result does not depend on which CTA finished
// first. Written because at decode sizes (M <= 128) every CTA of a narrow tile re-reads all of
// A for its few columns of B, and splitting K inside a cluster lets tiles be wider at the same
// CTA count. On the H100 that bought nothing: the decode rows are not bound by that L2 traffic
// (notes.md section 17), so the planner does not offer it (plan/cluster_split.hpp). The kernel
// is not persistent with cluster_k > 1 (one tile per cluster), so reduce_full completes exactly
// once, phase 0.
#include "ptx/barrier.cuh"
#include "sm90/gemm_common.cuh"

namespace autogemm::sm90 {

template <class Cfg>
struct ClusterReduce {
  using G = Geometry<Cfg>;
  static_assert(G::kAccum % 4 == 0, "fragments move in float4 (block_n is a multiple of 8)");
  // Float index of vector `v` of consumer thread `thread` in a slot: thread-minor, so each
  // warp's 16-byte accesses are contiguous (conflict-free shared-memory wavefronts).
  __device__ static int index(int v, int thread) { return (v * G::kConsumerThreads + thread) * 4; }

  // Barrier arrivals that complete reduce_full: every consumer thread of every other rank.
  static constexpr unsigned kArrivals = (Cfg::cluster_k - 1) * G::kConsumerThreads;

  // Rank `rank` > 0: sends this thread's fragment (ROWS_PER_CONSUMER, BLOCK_N) fp32 to rank 0.
  __device__ static void send(const float (&acc)[G::kSlabs][G::kAccum],
                              const SharedStorage<Cfg>& smem, int rank, int consumer_thread) {
    float* slot = smem.reduce_slot(rank);   // same offset in every CTA: mapped to rank 0's
#pragma unroll
    for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
      for (int r = 0; r < G::kAccum; r += 4)
        ptx::st_shared_cluster_v4(slot + index((s * G::kAccum + r) / 4, consumer_thread), 0,
                                  acc[s][r], acc[s][r + 1], acc[s][r + 2], acc[s][r + 3]);
    ptx::mbarrier_arrive_cluster_release(smem.reduce_full(), 0);
  }

  // Rank 0: adds every other rank's fragment to its own, in rank order.
  __device__ static void receive(float (&acc)[G::kSlabs][G::kAccum], const SharedStorage<Cfg>& smem,
                                 int consumer_thread) {
    ptx::mbarrier_wait_cluster(smem.reduce_full(), 0);
#pragma unroll 1
    for (int rank = 1; rank < Cfg::cluster_k; ++rank) {
      const float* slot = smem.reduce_slot(rank);
#pragma unroll
      for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
        for (int r = 0; r < G::kAccum; r += 4) {
          const float4 y = ptx::ld_shared_v4(slot + index((s * G::kAccum + r) / 4, consumer_thread));
          acc[s][r] += y.x;
          acc[s][r + 1] += y.y;
          acc[s][r + 2] += y.z;
          acc[s][r + 3] += y.w;
        }
    }
  }
};

}  // namespace autogemm::sm90
