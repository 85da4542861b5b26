#pragma once
// The sm90 GEMM family: D (M x N) = alpha * op(A) op(B) + beta * C, FP32 accumulation in
// registers, wgmma from 128B-swizzled shared memory. One kernel; every technique of the ladder
// (TMA, pipelining, persistence, warp specialisation, clusters with multicast, two consumers)
// is a field of Cfg (gemm_common.cuh).
//
// Warp-specialised: warpgroup 0 is the producer (one thread issues TMA into an
// num_stages-deep ring of full/empty mbarriers), warpgroups 1..num_consumers compute and store.
// Otherwise the consumer warpgroups also fill the ring themselves (thread 0 issues TMA ahead
// of use, or all threads load synchronously on the threads path).
#include "ptx/wgmma.cuh"
#include "sm90/epilogue.cuh"
#include "sm90/fp8_promotion.cuh"
#include "sm90/fp8_scale_copy.cuh"
#include "sm90/loads.cuh"
#include "sm90/split_k_reduce.cuh"
#include "sm90/tile_scheduler.cuh"
#include "sm90/tile_trace.cuh"

namespace autogemm::sm90 {

// wgmma descriptors (hopper-facts.md 1.4, 1.5; layout code 1 = 128B swizzle). Each one is
// built once, for stage 0 of this consumer's rows, and moved by byte offsets: the stage's
// (run time, once per k-block) and the slab's and k16 step's (compile time). Rebuilding a
// descriptor from its address costs about ten integer instructions per wgmma, which the
// consumer's loop could not hide (notes.md section 13).
template <class Cfg>
struct Descriptors {
  using G = Geometry<Cfg>;
  static constexpr unsigned kSwizzle128 = 1;
  static constexpr unsigned kGroupStride = 8 * G::kAtomBytes;             // 8 rows x 128 B
  static constexpr unsigned kMnAtomStride = Cfg::block_k * G::kAtomBytes;  // next 64 M/N columns

  // High word (stride byte offset in bits 32-45, layout in bits 62-63; make_smem_desc): the
  // same constant for both operands of every wgmma of the configuration.
  static constexpr unsigned kHi = (kGroupStride >> 4) | (kSwizzle128 << 30);
  // Low-word fields of the leading byte offset (bits 16-29) of each operand.
  static constexpr unsigned kALbo = ((Cfg::a_k_major ? 16u : kMnAtomStride) >> 4) << 16;
  static constexpr unsigned kBLbo = ((Cfg::b_k_major ? 16u : kMnAtomStride) >> 4) << 16;
  // Start-address field of the first A stage. One register serves both operands and every
  // stage: the consumer's loop runs at the register limit with two promotion temporaries, and a
  // second one made ptxas spill (notes.md section 13).
  unsigned base;
  int consumer_slab;   // this consumer's first m64 slab of A

  // The mask keeps the 18 address bits the field holds: in a cluster launch the shared-window
  // address also carries the CTA's rank from bit 24 (SASS: SR_CgaCtaId << 24), which would
  // otherwise carry into the leading-byte-offset field (ignored by swizzled K-major operands,
  // used by MN-major ones; found by GemmGpu.TwoAtomKBlocksEveryLayout, nn with cl2x1/b).
  __device__ Descriptors(const SharedStorage<Cfg>& smem, int consumer)
      : base((ptx::smem_addr(smem.a(0)) & 0x3FFFF) >> 4), consumer_slab(consumer * G::kSlabs) {}

  // Byte offset of m64 slab `slab` at k16 step `k_step` inside one A stage.
  __device__ static constexpr unsigned a_offset(int slab, int k_step) {
    if constexpr (Cfg::a_k_major) {   // [atom][BLOCK_M][128 B]: next slab +64 rows, k16 +32 B
      return (k_step / G::kKStepsPerAtom) * Cfg::block_m * G::kAtomBytes + slab * 64 * G::kAtomBytes +
             (k_step % G::kKStepsPerAtom) * 32;
    } else {                          // [BLOCK_M/64][BLOCK_K][128 B]: next slab +BLOCK_K rows
      return slab * kMnAtomStride + k_step * 16 * G::kAtomBytes;
    }
  }
  // Byte offset of all BLOCK_N columns at k16 step `k_step` inside one B stage.
  __device__ static constexpr unsigned b_offset(int k_step) {
    if constexpr (Cfg::b_k_major)     // [atom][BLOCK_N][128 B]
      return (k_step / G::kKStepsPerAtom) * Cfg::block_n * G::kAtomBytes + (k_step % G::kKStepsPerAtom) * 32;
    else
      return k_step * 16 * G::kAtomBytes;
  }

  // Low words of this consumer's descriptors for `stage` (offsets in 16-byte units).
  __device__ unsigned a_stage(int stage) const {
    return base + kALbo + (stage * G::kSmem.a_stage_bytes + a_offset(consumer_slab, 0)) / 16;
  }
  __device__ unsigned b_stage(int stage) const {
    return base + kBLbo + (G::kSmem.b_offset - G::kSmem.a_offset + stage * G::kSmem.b_stage_bytes) / 16;
  }
  // The descriptors of one wgmma: slab `slab` and k16 step `k_step` of the stage.
  __device__ static ptx::u64 a(unsigned a_stage_lo, int slab, int k_step) {
    return ptx::smem_desc_join(a_stage_lo + a_offset(slab, k_step) / 16, kHi);
  }
  __device__ static ptx::u64 b(unsigned b_stage_lo, int k_step) {
    return ptx::smem_desc_join(b_stage_lo + b_offset(k_step) / 16, kHi);
  }
};

// Producer warpgroup: one thread walks the same tiles as the consumers and keeps the ring full.
template <class Cfg>
__device__ void produce_tiles(const SharedStorage<Cfg>& smem, const ptx::TensorMap* tmap_a,
                              const ptx::TensorMap* tmap_b, const GemmParams& params,
                              unsigned cta_rank) {
  using G = Geometry<Cfg>;
  PipelineState write;
  TileScheduler<Cfg> scheduler(params, cta_rank);
  int m_tile, n_tile;
  while (scheduler.next_tile(m_tile, n_tile)) {
    const int k_begin = scheduler.k_begin(), k_end = scheduler.k_end();
    // Not unrolled: fully unrolled (16 k-blocks, e.g. K = 1024 bf16 / 2048 fp8) the loop needs
    // more than the producer's 40 registers and spills.
#pragma unroll 1
    for (int k_block = k_begin; k_block < k_end; ++k_block) {
      // A fresh barrier's "preceding phase" counts as complete, so the first lap never waits.
      ptx::mbarrier_wait(smem.empty(write.stage), write.phase ^ 1);
      issue_stage_loads(smem, write.stage, tmap_a, tmap_b, m_tile, n_tile, k_block, cta_rank);
      write.template advance<Cfg::num_stages>();
    }
  }
}

// Consumer warpgroup `consumer`: for each tile, the k-loop of wgmmas, then the epilogue.
template <class Cfg>
__device__ void consume_tiles(const SharedStorage<Cfg>& smem, const ptx::TensorMap* tmap_a,
                              const ptx::TensorMap* tmap_b, const ptx::TensorMap* tmap_c,
                              const ptx::TensorMap* tmap_d, const GemmParams& params,
                              int consumer, unsigned cta_rank) {
  using G = Geometry<Cfg>;
  using D = Descriptors<Cfg>;
  const D descriptors(smem, consumer);
  float acc[G::kSlabs][G::kAccum];   // (ROWS_PER_CONSUMER, BLOCK_N) fp32 fragment
  Promotion<Cfg> promotion(params, consumer);   // FP8: per-k-block scaled accumulation
  PipelineState read, write;         // write: the inline producer of the non-specialised path
  unsigned c_phase = 0;
  const int lane = threadIdx.x % 32;
  const int consumer_thread = threadIdx.x - (Cfg::warp_specialized ? 128 : 0);
  const bool inline_producer = !Cfg::warp_specialized && Cfg::tma_load && threadIdx.x == 0;

  auto produce_one = [&](int m_tile, int n_tile, int k_block) {
    ptx::mbarrier_wait(smem.empty(write.stage), write.phase ^ 1);
    issue_stage_loads(smem, write.stage, tmap_a, tmap_b, m_tile, n_tile, k_block, cta_rank);
    write.template advance<Cfg::num_stages>();
  };

  constexpr unsigned kTurnBarrier = 4;   // ordered issue's named barriers: 4 and 5
  bool first_turn = consumer == 0;       // consumer 0 issues the kernel's first group unasked

  TileScheduler<Cfg> scheduler(params, cta_rank);
  TileTraceRecorder trace;
  const bool trace_recorder = kTileTrace && consumer == 0 && consumer_thread == 0;
  int m_tile, n_tile;
  while (scheduler.next_tile(m_tile, n_tile)) {
    const int k_begin = scheduler.k_begin(), k_end = scheduler.k_end();
    if constexpr (kTileTrace) trace.begin(trace_recorder);
    if (inline_producer)
      for (int k_block = k_begin; k_block < min(k_begin + Cfg::num_stages, k_end); ++k_block)
        produce_one(m_tile, n_tile, k_block);
    __syncwarp();

#pragma unroll
    for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
      for (int r = 0; r < G::kAccum; ++r) acc[s][r] = 0.0f;
    promotion.start_tile(n_tile);

    // With TMA the wgmmas of one k-block stay in flight while the next k-block's are issued
    // (wgmma.wait_group 1), and a stage is released one k-block late, when the wait proves
    // its wgmmas are done (hopper-facts.md 2.4). A single stage (or the threads path, which
    // refills the stage in place) must wait for everything before the refill.
    // FP8 promotes each k-block's sums after its wgmmas. With one temporary it waits for all of
    // them; the second consumer can keep the tensor cores busy meanwhile only if the two take
    // turns (ordered issue, below): left alone they issue together, finish together and
    // promote together (970 against 1205 TFLOP/s with turns, notes.md section 14). With two
    // temporaries it promotes k-block i - 1 while k-block i's wgmmas run. ptxas only proves a
    // wait_group 1 retired a group issued in the same loop iteration (otherwise it serialises
    // every wgmma, C7514), so the k-loop runs in chunks of up to kChunk k-blocks that end with
    // wait_group 0 and the last promotion: one promotion in kChunk is not overlapped. (Starting
    // the second consumer's chunks half a chunk later was slower: 1111 against 1170 TFLOP/s,
    // notes.md section 9; a lagging consumer holds every stage longer.)
    constexpr bool kOverlapPromotion = Promotion<Cfg>::kBuffers == 2;
    static_assert(!Cfg::ordered_issue || (Cfg::num_consumers == 2 && Cfg::warp_specialized &&
                                          Promotion<Cfg>::kEnabled),
                  "ordered issue: two FP8 consumer warpgroups fed by the producer");
    constexpr int kChunk = 8;
    constexpr int kGroupsInFlight =
        (Cfg::tma_load && Cfg::num_stages > 1 && (!Promotion<Cfg>::kEnabled || kOverlapPromotion))
            ? 1 : 0;
    static_assert(!kOverlapPromotion || kGroupsInFlight == 1,
                  "overlapped promotion keeps one wgmma group in flight (TMA, >= 2 stages)");
    int pending_stage = -1;
    auto release = [&](int stage, int refill_k_block) {
      if constexpr (G::kMulticastCtas == 1) {
        if (lane == 0) ptx::mbarrier_arrive(smem.empty(stage));
      } else {
        // The leader's multicast writes into every CTA's copy of the stage.
        if (lane < G::kMulticastCtas) ptx::mbarrier_arrive_cluster(smem.empty(stage), lane);
      }
      if (inline_producer && refill_k_block < k_end)
        produce_one(m_tile, n_tile, refill_k_block);
      __syncwarp();
    };
    auto fence_fragments = [&] {
#pragma unroll
      for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
        for (int r = 0; r < G::kAccum; ++r) ptx::fence_operand(acc[s][r]);
      promotion.fence_operands();
    };
    // Ordered issue (Cfg::ordered_issue, FP8 with two consumers): the consumers take turns
    // issuing wgmma groups, consumer 0 first. The matrix units run a consumer's group while the
    // other consumer promotes its last one, so they never both promote while the units idle
    // (the two would otherwise issue together and finish, and promote, together). Consumer c
    // waits on named barrier kTurnBarrier + c and passes the turn by arriving on the other's;
    // each barrier counts both warpgroups (PTX ISA "bar.arrive"). 1-2 are the epilogue's, 3 the
    // threads path's.
    auto wait_turn = [&] {
      if constexpr (Cfg::ordered_issue) {
        if (!first_turn) ptx::named_barrier_sync(kTurnBarrier + consumer, G::kConsumerThreads);
        first_turn = false;
      }
    };
    auto pass_turn = [&] {
      if constexpr (Cfg::ordered_issue)
        ptx::named_barrier_arrive(kTurnBarrier + 1 - consumer, G::kConsumerThreads);
    };
    // Waits for every wgmma of the tile so far and frees the stage still held.
    auto drain = [&](int last_k_block) {
      if constexpr (Cfg::tma_load && kGroupsInFlight > 0) {
        ptx::wgmma_wait_group<0>();
        fence_fragments();
        if (pending_stage >= 0) release(pending_stage, last_k_block + Cfg::num_stages);
        pending_stage = -1;
      }
    };
    // One k-block. `buffer` (compile-time 0 or 1) picks the FP8 promotion temporary its wgmmas
    // write; with two, `promote_previous` says whether the other one holds k_block - 1's sums.
    auto consume_k_block = [&](int k_block, auto buffer, auto promote_previous) {
      constexpr int kBuffer = decltype(buffer)::value;
      const int stage = read.stage;
      if constexpr (Cfg::tma_load) {
        ptx::mbarrier_wait(smem.full(stage), read.phase);
        if constexpr (kTileTrace) trace.data_ready(trace_recorder);
      } else {
        load_tile_threads<Cfg>(smem.a(stage), params.a, params.lda, params.m, m_tile * Cfg::block_m,
                               k_block * Cfg::block_k, Cfg::block_m, consumer_thread,
                               G::kConsumerThreads);
        load_tile_threads<Cfg>(smem.b(stage), params.b, params.ldb, Cfg::n, n_tile * Cfg::block_n,
                               k_block * Cfg::block_k, Cfg::block_n, consumer_thread,
                               G::kConsumerThreads);
        ptx::fence_proxy_async_shared();   // generic-proxy writes -> wgmma (async proxy) reads
        ptx::named_barrier_sync(3, G::kConsumerThreads);
      }
      const unsigned a_stage_lo = descriptors.a_stage(stage), b_stage_lo = descriptors.b_stage(stage);
      if constexpr (Promotion<Cfg>::kSlabWaves) {
        // One temporary, one slab at a time: issue, pass the turn, wait, promote. The stage is
        // released after its last slab's wgmmas (and the scales were read before).
        promotion.template read_stage_scales<0>(smem, stage);
#pragma unroll
        for (int s = 0; s < G::kSlabs; ++s) {
          wait_turn();
          fence_fragments();
          ptx::wgmma_fence();
#pragma unroll
          for (int k_step = 0; k_step < G::kKSteps; ++k_step)
            promotion.template mma<0>(acc[s], s, k_step, D::a(a_stage_lo, s, k_step),
                                      D::b(b_stage_lo, k_step));
          ptx::wgmma_commit_group();
          pass_turn();
          ptx::wgmma_wait_group<0>();
          fence_fragments();
          if (s == G::kSlabs - 1) release(stage, k_block + Cfg::num_stages);
          promotion.template promote_slab<0>(acc, s);
        }
        read.template advance<Cfg::num_stages>();
        return;
      }
      wait_turn();
      fence_fragments();
      ptx::wgmma_fence();
#pragma unroll
      for (int k_step = 0; k_step < G::kKSteps; ++k_step)
#pragma unroll
        for (int s = 0; s < G::kSlabs; ++s)
          promotion.template mma<kBuffer>(acc[s], s, k_step, D::a(a_stage_lo, s, k_step),
                                          D::b(b_stage_lo, k_step));
      ptx::wgmma_commit_group();
      pass_turn();
      // One temporary: this stage is released below, before the promotion, so its scales are
      // read now.
      if constexpr (!kOverlapPromotion) promotion.template read_stage_scales<kBuffer>(smem, stage);
      ptx::wgmma_wait_group<kGroupsInFlight>();
      fence_fragments();

      if constexpr (Cfg::tma_load && kGroupsInFlight == 0) {
        release(stage, k_block + Cfg::num_stages);
      } else if constexpr (Cfg::tma_load) {
        if (pending_stage >= 0) release(pending_stage, k_block - 1 + Cfg::num_stages);
        pending_stage = stage;
      } else {
        ptx::named_barrier_sync(3, G::kConsumerThreads);   // all reads done before the next fill
      }
      // After the release: the producer refills the stage meanwhile.
      if constexpr (kOverlapPromotion) {
        // The wait proved k_block - 1's wgmmas done; k_block's still write the other buffer.
        if constexpr (decltype(promote_previous)::value) promotion.template promote<1 - kBuffer>(acc);
        // This stage stays held until the next k-block's wait (pending_stage): its scales are
        // read after the promotion, when the previous temporary's registers are free again.
        promotion.template read_stage_scales<kBuffer>(smem, stage);
      } else {
        promotion.template promote<0>(acc);
      }
      read.template advance<Cfg::num_stages>();
    };
    using Buffer0 = IntConstant<0>;
    using Buffer1 = IntConstant<1>;
    using Yes = IntConstant<1>;
    using No = IntConstant<0>;
    if constexpr (kOverlapPromotion) {
      // `count` (compile-time 1..kChunk) k-blocks from k_first, then the drain.
      auto consume_chunk = [&](int k_first, auto count) {
        constexpr int kCount = decltype(count)::value;
        consume_k_block(k_first, Buffer0{}, No{});
        if constexpr (kCount > 1) consume_k_block(k_first + 1, Buffer1{}, Yes{});
        if constexpr (kCount > 2) consume_k_block(k_first + 2, Buffer0{}, Yes{});
        if constexpr (kCount > 3) consume_k_block(k_first + 3, Buffer1{}, Yes{});
        if constexpr (kCount > 4) consume_k_block(k_first + 4, Buffer0{}, Yes{});
        if constexpr (kCount > 5) consume_k_block(k_first + 5, Buffer1{}, Yes{});
        if constexpr (kCount > 6) consume_k_block(k_first + 6, Buffer0{}, Yes{});
        if constexpr (kCount > 7) consume_k_block(k_first + 7, Buffer1{}, Yes{});
        static_assert(kCount <= kChunk && kChunk == 8, "the chunk is spelled out for 8");
        drain(k_first + kCount - 1);
        promotion.template promote<(kCount - 1) % 2>(acc);
      };
      int k_block = k_begin;
      for (; k_block + kChunk <= k_end; k_block += kChunk) consume_chunk(k_block, IntConstant<kChunk>{});
      if (k_end - k_block >= 4) {
        consume_chunk(k_block, IntConstant<4>{});
        k_block += 4;
      }
      switch (k_end - k_block) {
        case 3: consume_chunk(k_block, IntConstant<3>{}); break;
        case 2: consume_chunk(k_block, IntConstant<2>{}); break;
        case 1: consume_chunk(k_block, IntConstant<1>{}); break;
        default: break;
      }
    } else {
      for (int k_block = k_begin; k_block < k_end; ++k_block)
        consume_k_block(k_block, Buffer0{}, No{});
      drain(k_end - 1);
    }

    if constexpr (kTileTrace) trace.main_loop_done(trace_recorder);
    if constexpr (Cfg::split_k > 1) {
      // Split-K: only the split that completes the tile's sum stores it.
      if (!SplitKReduce<Cfg>::sum_if_last(acc, params, consumer, m_tile, n_tile, scheduler.split)) {
        if constexpr (kTileTrace)
          trace.end(trace_recorder, params, m_tile, n_tile, k_begin, k_end, true);
        continue;
      }
    }
    if constexpr (Cfg::tma_store)
      Epilogue<Cfg>::store_tma(acc, smem, tmap_c, tmap_d, params, consumer, m_tile, n_tile,
                               c_phase);
    else
      Epilogue<Cfg>::store_threads(acc, params, consumer, m_tile, n_tile);
    if constexpr (kTileTrace)
      trace.end(trace_recorder, params, m_tile, n_tile, k_begin, k_end, false);
  }
  // Consumer 1's last turn hand-off is still pending on consumer 0's barrier: take it, so no
  // named barrier is left half-arrived when the CTA exits.
  if constexpr (Cfg::ordered_issue)
    if (consumer == 0 && !first_turn) ptx::named_barrier_sync(kTurnBarrier, G::kConsumerThreads);
  // Bulk stores read shared memory asynchronously; it must stay valid until they finish.
  if constexpr (Cfg::tma_store)
    if (threadIdx.x % 128 == 0) ptx::tma_store_wait_all<0>();
}

template <class Cfg>
__global__ void __launch_bounds__(Geometry<Cfg>::kThreads, 1)
    gemm_kernel(const __grid_constant__ ptx::TensorMap tmap_a,
                const __grid_constant__ ptx::TensorMap tmap_b,
                const __grid_constant__ ptx::TensorMap tmap_c,
                const __grid_constant__ ptx::TensorMap tmap_d, const GemmParams params) {
  using G = Geometry<Cfg>;
  extern __shared__ unsigned char smem_raw[];
  const SharedStorage<Cfg> smem(smem_raw);
  const unsigned cta_rank = G::kClusterSize > 1 ? ptx::cluster_cta_rank() : 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::num_stages; ++s) {
      ptx::mbarrier_init(smem.full(s), G::kFullArrivals);
      ptx::mbarrier_init(smem.empty(s), G::kEmptyArrivals);
    }
    for (int c = 0; c < kMaxConsumers; ++c) ptx::mbarrier_init(smem.c_loaded(c), 1);
    ptx::fence_mbarrier_init();
    if constexpr (Cfg::tma_load) {
      ptx::tma_prefetch_descriptor(&tmap_a);
      ptx::tma_prefetch_descriptor(&tmap_b);
    }
    if constexpr (Cfg::tma_store) ptx::tma_prefetch_descriptor(&tmap_d);
  }
  // Barrier initialisation must be visible to every thread (and the peer CTA) before use.
  if constexpr (G::kClusterSize > 1) ptx::cluster_sync();
  else __syncthreads();
  // The n-tail kernel (plan/n_tail.hpp) may start as soon as every CTA of this grid is
  // resident: it writes other columns of D and only reads the inputs, and its CTAs take the
  // SMs this grid frees as it finishes.
  if constexpr (Cfg::launch_dependents) ptx::grid_launch_dependents();

  // The warpgroup index broadcast from lane 0, so the compiler keeps it (and the descriptors
  // built from it) in uniform registers.
  const int warpgroup = ptx::warp_index_uniform() / 4;
  if constexpr (Cfg::warp_specialized) {
    if (warpgroup == 0) {
      ptx::setmaxnreg_dec<Cfg::producer_regs>();
      if (threadIdx.x == 0) produce_tiles(smem, &tmap_a, &tmap_b, params, cta_rank);
      if constexpr (G::kStagedScales)
        if (ptx::warp_index_uniform() == 1) produce_scales(smem, params, cta_rank);
      __syncwarp();
    } else {
      ptx::setmaxnreg_inc<Cfg::consumer_regs>();
      consume_tiles(smem, &tmap_a, &tmap_b, &tmap_c, &tmap_d, params, warpgroup - 1, cta_rank);
    }
  } else {
    consume_tiles(smem, &tmap_a, &tmap_b, &tmap_c, &tmap_d, params, warpgroup, cta_rank);
  }
  // No CTA may exit while its cluster peer can still multicast into its shared memory or
  // arrive on its barriers (hopper-facts.md 4.3, teardown).
  if constexpr (G::kClusterSize > 1) ptx::cluster_sync();
  // The n-tail kernel needs nothing from the main kernel, but it must not finish first: its
  // programmatic launch relaxes the stream order between the two, so waiting here makes its
  // completion also mean the main kernel's (and its stores') for whatever follows on the
  // stream.
  if constexpr (Cfg::waits_for_primary) ptx::grid_dependency_wait();
}

}  // namespace autogemm::sm90
