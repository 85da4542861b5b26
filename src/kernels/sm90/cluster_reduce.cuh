#pragma once
// Partial tiles summed through shared memory: ClusterReduce across the CTAs of a cluster,
// ConsumerReduce across the two consumer warpgroups of one CTA.
//
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

// A slot holds the fragments of kSlotThreads threads, (ROWS_PER_CONSUMER, BLOCK_N) fp32 each
// consumer warpgroup.
template <class Cfg, int kSlotThreads>
struct FragmentSlot {
  using G = Geometry<Cfg>;
  static_assert(G::kAccum % 4 == 0, "fragments move in float4 (block_n is a multiple of 8)");
  // Float index of vector `v` of thread `thread` in a slot: thread-minor, so each warp's
  // 16-byte accesses are contiguous (conflict-free shared-memory wavefronts).
  __device__ static int index(int v, int thread) { return (v * kSlotThreads + thread) * 4; }

  // acc += the fragment of thread `thread` in `slot`.
  __device__ static void add(float (&acc)[G::kSlabs][G::kAccum], const float* slot, int thread) {
#pragma unroll
    for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
      for (int r = 0; r < G::kAccum; r += 4) {
        const float4 y = ptx::ld_shared_v4(slot + index((s * G::kAccum + r) / 4, thread));
        acc[s][r] += y.x;
        acc[s][r + 1] += y.y;
        acc[s][r + 2] += y.z;
        acc[s][r + 3] += y.w;
      }
  }
};

template <class Cfg>
struct ClusterReduce {
  using G = Geometry<Cfg>;
  using Slot = FragmentSlot<Cfg, G::kConsumerThreads>;

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
        ptx::st_shared_cluster_v4(slot + Slot::index((s * G::kAccum + r) / 4, consumer_thread), 0,
                                  acc[s][r], acc[s][r + 1], acc[s][r + 2], acc[s][r + 3]);
    ptx::mbarrier_arrive_cluster_release(smem.reduce_full(), 0);
  }

  // Rank 0: adds every other rank's fragment to its own, in rank order.
  __device__ static void receive(float (&acc)[G::kSlabs][G::kAccum], const SharedStorage<Cfg>& smem,
                                 int consumer_thread) {
    ptx::mbarrier_wait_cluster(smem.reduce_full(), 0);
#pragma unroll 1
    for (int rank = 1; rank < Cfg::cluster_k; ++rank)
      Slot::add(acc, smem.reduce_slot(rank), consumer_thread);
  }
};

// Consumers splitting K (Cfg::consumers_split_k, gemm_common.cuh): after a tile's main loop the
// second consumer stores its sums into the CTA's reduce slot and arrives on named barrier
// kReady; the first waits there, adds them to its own and arrives on kRead, which the second
// waits for before its next tile can overwrite the slot. Each barrier counts both warpgroups
// (PTX ISA "bar.arrive": arrive and sync over the same thread count), and both complete once
// per tile, so none is left half-arrived when the CTA exits. Barrier ids: 0 is __syncthreads,
// 1-2 the epilogue's, 3 the threads path's, 4-5 ordered issue's (not combined with this).
template <class Cfg>
struct ConsumerReduce {
  using G = Geometry<Cfg>;
  using Slot = FragmentSlot<Cfg, 128>;   // one warpgroup's fragments: both hold the same rows
  static constexpr unsigned kReady = 6, kRead = 7;
  static constexpr unsigned kThreads = 2 * 128;

  // Returns true for the consumer that goes on to store the tile (the first), with the
  // second's sums added to `acc`.
  __device__ static bool combine(float (&acc)[G::kSlabs][G::kAccum], const SharedStorage<Cfg>& smem,
                                 int consumer) {
    const int thread = threadIdx.x % 128;
    float* slot = smem.consumer_reduce_slot();
    if (consumer == 1) {
#pragma unroll
      for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
        for (int r = 0; r < G::kAccum; r += 4)
          ptx::st_shared_v4(slot + Slot::index((s * G::kAccum + r) / 4, thread), acc[s][r],
                            acc[s][r + 1], acc[s][r + 2], acc[s][r + 3]);
      ptx::named_barrier_arrive(kReady, kThreads);
      ptx::named_barrier_sync(kRead, kThreads);
      return false;
    }
    ptx::named_barrier_sync(kReady, kThreads);
    Slot::add(acc, slot, thread);
    ptx::named_barrier_arrive(kRead, kThreads);
    return true;
  }
};

}  // namespace autogemm::sm90
