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
#include "sm90/band_signal.cuh"
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
// consumer's loop could not hide: moving them by offsets took the FP8 128x128 k-block loop from
// ~154 to ~116 SASS instructions per warp and the tensor pipe from 65% to 75% active (H100).
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
  // second one made ptxas spill.
  unsigned base;
  int consumer_slab;   // this consumer's first m64 slab of A

  // The mask keeps the 18 address bits the field holds: in a cluster launch the shared-window
  // address also carries the CTA's rank from bit 24 (SASS: SR_CgaCtaId << 24), which would
  // otherwise carry into the leading-byte-offset field (ignored by swizzled K-major operands,
  // used by MN-major ones; found by GemmGpu.TwoAtomKBlocksEveryLayout, nn with cl2x1/b).
  __device__ Descriptors(const SharedStorage<Cfg>& smem, int consumer)
      : base((ptx::smem_addr(smem.a(0)) & 0x3FFFF) >> 4),
        consumer_slab(Cfg::pingpong ? 0 : consumer * G::kSlabs) {}

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
// Groups along K (grouping 3): the whole of warp 0 runs this, lane 0 issuing. A tile's k-blocks
// start at its run's first token, and a run's last k-block, when the run ends inside it, lands
// on the token-tail barrier instead of the stage's: the warp waits for it, zeroes the tokens
// past the run in both operands (zero_stage_tokens), makes those generic-proxy writes visible to
// wgmma's async proxy and only then completes the stage's full barrier by a plain arrival (its
// one expected arrival, no bytes). The producer then runs one round trip behind the tile's other
// k-blocks, which the ring's earlier stages cover.
template <class Cfg>
__device__ void produce_tiles(const SharedStorage<Cfg>& smem, const ptx::TensorMap* tmap_a,
                              const ptx::TensorMap* tmap_b, const GemmParams& params,
                              unsigned cta_rank) {
  static_assert(Cfg::grouping != 3 || (Geometry<Cfg>::kFullArrivals == 1 &&
                                       Geometry<Cfg>::kMulticastCtas == 1),
                "groups along K: one arrival per full barrier, no multicast (plan/rules.cpp)");
  constexpr bool kTokenRuns = Cfg::grouping == 3;
  const int lane = threadIdx.x % 32;   // 0 but for groups along K
  PipelineState write;
  unsigned tail_phase = 0;
  TileScheduler<Cfg> scheduler(params, cta_rank);
  int m_tile, n_tile;
  while (scheduler.next_tile(m_tile, n_tile)) {
    const int k_begin = scheduler.k_begin(), k_end = scheduler.k_end();
    // A's rows: groups along K share A's rows (each group's D rows are group x group_rows on).
    const int a_row0 = Cfg::grouping == 0 ? m_tile * Cfg::block_m
                       : kTokenRuns       ? scheduler.row0 - scheduler.group * params.group_rows
                                          : scheduler.row0;
    // Not unrolled: fully unrolled (16 k-blocks, e.g. K = 1024 bf16 / 2048 fp8) the loop needs
    // more than the producer's 40 registers and spills.
#pragma unroll 1
    for (int k_block = k_begin; k_block < k_end; ++k_block) {
      const int k0 = (kTokenRuns ? scheduler.k_origin : 0) + k_block * Cfg::block_k;
      // Groups along K: a run ending inside this k-block leaves `valid` of its tokens.
      const int valid = kTokenRuns ? min(scheduler.k_stop - k0, Cfg::block_k) : Cfg::block_k;
      const bool partial = valid < Cfg::block_k;
      const int stage = write.stage;
      if (lane == 0) {
        // A fresh barrier's "preceding phase" counts as complete, so the first lap never waits.
        ptx::mbarrier_wait(smem.empty(stage), write.phase ^ 1);
        issue_stage_loads(smem, stage, partial ? smem.token_tail() : smem.full(stage), tmap_a,
                          tmap_b, a_row0, b_tile_row0<Cfg>(n_tile, scheduler.group), k0,
                          cta_rank);
      }
      if constexpr (kTokenRuns) {
        if (partial) {
          ptx::mbarrier_wait(smem.token_tail(), tail_phase);   // every lane: TMA's bytes landed
          tail_phase ^= 1;
          zero_stage_tokens(smem, stage, valid, lane);
          ptx::fence_proxy_async_shared();   // generic-proxy zeros -> wgmma (async proxy) reads
          __syncwarp();
          if (lane == 0) ptx::mbarrier_arrive(smem.full(stage));
        }
      }
      write.template advance<Cfg::num_stages>();
    }
  }
}

// Consumer warpgroup `consumer`: for each tile, the k-loop of wgmmas, then the epilogue. Per
// k-block: wait for the stage, issue its wgmmas, wait for the wgmmas, release the stage (to the
// producer, or to this warpgroup's own thread 0 without warp specialisation), promote (FP8).
// Every step is a member forced inline, so the whole loop compiles as one function body.
// Consumer holds the kernel's constants by value and the warpgroup's mutable state by
// reference: consume_tiles owns that state, one object each (why: there).
template <class Cfg>
struct Consumer {
  using G = Geometry<Cfg>;
  using D = Descriptors<Cfg>;

  // With TMA the wgmmas of one k-block stay in flight while the next k-block's are issued
  // (wgmma.wait_group 1), and a stage is released one k-block late, when the wait proves
  // its wgmmas are done (hopper-facts.md 2.4). A single stage (or the threads path, which
  // refills the stage in place) must wait for everything before the refill.
  // FP8 promotes each k-block's sums after its wgmmas. With one temporary it waits for all of
  // them; the second consumer can keep the tensor cores busy meanwhile only if the two take
  // turns (ordered issue, below): left alone they issue together, finish together and
  // promote together (128x128 FP8 at 4096x7168x16384 on an H100: 970 TFLOP/s, 1205 with
  // turns). With two temporaries it promotes k-block i - 1 while k-block i's wgmmas run. ptxas
  // only proves a wait_group 1 retired a group issued in the same loop iteration (otherwise it
  // serialises every wgmma, C7514), so the k-loop runs in chunks of up to kChunk k-blocks that
  // end with wait_group 0 and the last promotion: one promotion in kChunk is not overlapped.
  // (Starting the second consumer's chunks two k-blocks later was slower, 1111 against 1170
  // TFLOP/s at 4096x7168x16384: a lagging consumer holds every stage longer.)
  static constexpr bool kOverlapPromotion = Promotion<Cfg>::kBuffers == 2;
  static constexpr int kChunk = 8;
  static constexpr int kGroupsInFlight =
      (Cfg::tma_load && Cfg::num_stages > 1 && (!Promotion<Cfg>::kEnabled || kOverlapPromotion))
          ? 1 : 0;
  static_assert(!Cfg::ordered_issue || (Cfg::num_consumers == 2 && Cfg::warp_specialized &&
                                        Promotion<Cfg>::kEnabled),
                "ordered issue: two FP8 consumer warpgroups fed by the producer");
  static_assert(!kOverlapPromotion || kGroupsInFlight == 1,
                "overlapped promotion keeps one wgmma group in flight (TMA, >= 2 stages)");
  // Ordered issue's and ping-pong's named barriers: 4 and 5 (1-2 are the epilogue's, 3 the
  // threads path's); ping-pong's staging turns 6 and 7.
  static constexpr unsigned kTurnBarrier = 4;
  static constexpr unsigned kStoreTurnBarrier = 6;
  static constexpr unsigned kStoreTurnThreads = 128 + 32;

  // The work item in progress: an output tile, its k-blocks [k_begin, k_end) (all of K, or one
  // split-K split), and, with one wgmma group in flight, the stage whose release waits for the
  // next wgmma wait (-1: none). Grouped GEMM: the tile's group and the row its stores stop at.
  struct WorkItem {
    int m_tile, n_tile, k_begin, k_end;
    int pending_stage;
    int group, row0, row_limit;
  };

  // Values: constants of the kernel and of the thread. References: the warpgroup's state, which
  // consume_tiles owns.
  const SharedStorage<Cfg>& smem;
  const ptx::TensorMap* tmap_a;
  const ptx::TensorMap* tmap_b;
  const EpilogueMaps maps;
  const GemmParams& params;
  const int consumer;
  const unsigned cta_rank;
  const D descriptors;
  float (&acc)[G::kSlabs][G::kAccum];   // (ROWS_PER_CONSUMER, BLOCK_N) fp32 fragment
  Promotion<Cfg>& promotion;            // FP8: per-k-block scaled accumulation
  typename Epilogue<Cfg>::Fused& vectors;   // the fused epilogue's bias and scales for the tile
  PipelineState& read;
  PipelineState& write;                 // the inline producer of the non-specialised path
  unsigned& c_phase;                    // parity of this consumer's C-loaded barrier
  const int lane;
  const int consumer_thread;
  const bool inline_producer;           // thread 0 of the non-specialised TMA path fills the ring
  bool& first_turn;                     // ordered issue: consumer 0 issues the first group unasked
  bool& first_store;                    // ping-pong: consumer 0 stages the first tile unasked
  TileTraceRecorder& trace;
  const bool trace_recorder;
  WorkItem& work;                       // the tile in progress
  BandSignal<Cfg>& band_signal;         // row-band signals: the leader's count (band_signal.cuh)

  __device__ __forceinline__ Consumer(const SharedStorage<Cfg>& smem_,
                                      const ptx::TensorMap* tmap_a_, const ptx::TensorMap* tmap_b_,
                                      const EpilogueMaps& maps_, const GemmParams& params_,
                                      int consumer_, unsigned cta_rank_,
                                      float (&acc_)[G::kSlabs][G::kAccum],
                                      Promotion<Cfg>& promotion_,
                                      typename Epilogue<Cfg>::Fused& vectors_, PipelineState& read_,
                                      PipelineState& write_, unsigned& c_phase_, bool& first_turn_,
                                      bool& first_store_,
                                      TileTraceRecorder& trace_, WorkItem& work_,
                                      BandSignal<Cfg>& band_signal_)
      : smem(smem_), tmap_a(tmap_a_), tmap_b(tmap_b_), maps(maps_),
        params(params_), consumer(consumer_), cta_rank(cta_rank_), descriptors(smem_, consumer_),
        acc(acc_), promotion(promotion_), vectors(vectors_), read(read_), write(write_),
        c_phase(c_phase_),
        lane(threadIdx.x % 32), consumer_thread(threadIdx.x - (Cfg::warp_specialized ? 128 : 0)),
        inline_producer(!Cfg::warp_specialized && Cfg::tma_load && threadIdx.x == 0),
        first_turn(first_turn_), first_store(first_store_), trace(trace_),
        trace_recorder(kTileTrace && consumer_ == 0 &&
                       threadIdx.x - (Cfg::warp_specialized ? 128 : 0) == 0),
        work(work_), band_signal(band_signal_) {}

  // The consumer's whole life: every work item the scheduler hands it, then the teardown.
  // Ping-pong: the CTA's work items alternate between the consumers (consumer 0 the first).
  // The producer fills the ring in work-item order, so a consumer steps its read position past
  // the other's k-blocks without waiting, and each consumer's epilogue runs beside the other's
  // k-loop. The k-loops take turns (wait_tile_turn): a consumer waits on a stage's full barrier
  // only after the other has waited on every stage before it, so it is never more than one
  // phase ahead of the barrier, which a parity wait cannot tell from the phase before.
  __device__ __forceinline__ void run() {
    TileScheduler<Cfg> scheduler(params, cta_rank);
    int m_tile, n_tile;
    int owner = 0;        // ping-pong: the consumer of this work item
    bool any_item = false;
    while (scheduler.next_tile(m_tile, n_tile)) {
      if constexpr (Cfg::pingpong) {
        const bool others = owner != consumer;
        owner ^= 1;
        any_item = true;
        if (others) {
          read.template advance_by<Cfg::num_stages>(scheduler.k_end() - scheduler.k_begin());
          continue;
        }
      }
      work = WorkItem{m_tile,          n_tile,           scheduler.k_begin(),
                      scheduler.k_end(), -1,              scheduler.group,
                      scheduler.row0,  scheduler.row_limit};
      begin_tile();
      wait_tile_turn();
      main_loop();
      if constexpr (kTileTrace) trace.main_loop_done(trace_recorder);
      if constexpr (Cfg::band_signals)
        if (store_leader()) band_signal.before_store(params, tile_row0());
      const bool stored = store_tile(scheduler);
      if constexpr (Cfg::band_signals)
        if (store_leader() && stored) band_signal.stored(tile_row0(), n_tile, params.m);
      if constexpr (kTileTrace)
        trace.end(trace_recorder, params, m_tile, n_tile, work.k_begin, work.k_end, !stored);
    }
    // Ping-pong: the last k-loop's turn went to the owner of the item after the last.
    finish(Cfg::pingpong && any_item && owner == consumer);
  }

  // --- one tile -------------------------------------------------------------------------------

  // The tile's first row of A and D. Recomputed from m_tile when ungrouped: with
  // the stored row0 read back instead, the threads path's ladder steps kept the work item in a
  // 512-byte stack frame (KernelCompile.EveryLadderStep).
  __device__ __forceinline__ int tile_row0() const {
    if constexpr (Cfg::grouping == 0) return work.m_tile * Cfg::block_m;
    else return work.row0;
  }
  // The tile's group (grouped GEMM; 0 otherwise, where work.group is not kept).
  __device__ __forceinline__ int tile_group() const {
    if constexpr (Cfg::grouping == 0) return 0;
    else return work.group;
  }

  // Without warp specialisation thread 0 fills the first num_stages stages; the fragment and
  // the promotion start from zero.
  __device__ __forceinline__ void begin_tile() {
    if constexpr (kTileTrace) trace.begin(trace_recorder);
    if (inline_producer)
      for (int k_block = work.k_begin; k_block < min(work.k_begin + Cfg::num_stages, work.k_end);
           ++k_block)
        produce_k_block(k_block);
    __syncwarp();

#pragma unroll
    for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
      for (int r = 0; r < G::kAccum; ++r) acc[s][r] = 0.0f;
    promotion.start_tile(work.m_tile, work.n_tile);
    if constexpr (kVectorsAhead) load_vectors();
  }

  // The fused epilogue's vectors (bias, scales) are read at the tile's start, so their L2 latency
  // passes under the k-loop (not yet a bf16 bias's: its conversion to float still waits for the read
  // before the first k-block; probes/vector-bits.patch). Read by the epilogue itself, the first
  // column step waited for them: a bias cost a 128x256 two-consumer tile 2,170 cycles more than the
  // plain epilogue's 880 at 4096 x 32768 x 512 (H200 tile traces), where its ~150 instructions a
  // thread account for about 300. Measured (H200, public suite, BF16): bias times x0.986, bias +
  // gelu_tanh x0.980, rows with M <= 128 -2..-5%. Not with FP8's promotion temporaries: held through
  // the k-loop beside them, the vectors spilled 892 bytes (grouped 64x128x128 s8 pb2).
  static constexpr bool kVectorsAhead =
      Epilogue<Cfg>::Fused::kReadsVectors && !Promotion<Cfg>::kEnabled;
  __device__ __forceinline__ void load_vectors() {
    if constexpr (Epilogue<Cfg>::Fused::kReadsVectors)
      vectors.load(params, tile_row0() + G::consumer_row0(consumer), work.n_tile * Cfg::block_n,
                   tile_group());
  }

  // Every k-block of the tile, and the drain that leaves no wgmma in flight.
  __device__ __forceinline__ void main_loop() {
    static_assert(!(kOverlapPromotion && Epilogue<Cfg>::kCAhead), "C ahead is 16-bit only");
    if constexpr (kOverlapPromotion) {
      int k_block = work.k_begin;
      for (; k_block + kChunk <= work.k_end; k_block += kChunk) consume_chunk<kChunk>(k_block);
      if (work.k_end - k_block >= 4) {
        consume_chunk<4>(k_block);
        k_block += 4;
      }
      switch (work.k_end - k_block) {
        case 3: consume_chunk<3>(k_block); break;
        case 2: consume_chunk<2>(k_block); break;
        case 1: consume_chunk<1>(k_block); break;
        default: break;
      }
    } else {
      // C ahead: issued before the k-block kCLeadKBlocks from the loop's end; -1: after the
      // loop, by the epilogue (c_ahead_issue_block).
      const int c_issue = c_ahead_issue_block();
      for (int k_block = work.k_begin; k_block < work.k_end; ++k_block) {
        if constexpr (Epilogue<Cfg>::kCAhead)
          if (k_block == c_issue) issue_c_ahead();
        consume_k_block<0, false>(k_block);
      }
      pass_tile_turn();   // every stage waited for; the last wgmma group may still run
      drain(work.k_end - 1);
    }
  }

  // The epilogue. Split-K and stream-K: only the piece that completes the tile's sum stores it.
  // Returns whether this work item stored D.
  __device__ __forceinline__ bool store_tile(const TileScheduler<Cfg>& at) {
    if constexpr (Cfg::split_k > 1) {
      const long long tile_row =
          static_cast<long long>(work.m_tile) * SplitKReduce<Cfg>::kPaddedNTiles + work.n_tile;
      if (!SplitKReduce<Cfg>::sum_if_last(acc, params, consumer, tile_row, at.split,
                                          Cfg::split_k, Cfg::split_k))
        return false;
    } else if constexpr (Cfg::stream_k) {
      // A tile inside one CTA's run is whole; a cut one's counters are numbered among the
      // shared tiles, stream_k_max_pieces slots each (plan/kernel_spec.cpp split_k_layout).
      if (at.splits > 1 &&
          !SplitKReduce<Cfg>::sum_if_last(acc, params, consumer, at.shared_tile, at.split,
                                          at.splits, at.max_pieces()))
        return false;
    }
    if constexpr (!kVectorsAhead) load_vectors();   // in flight while the store path waits
    // C issued during the k-loop (issue_c_ahead; never for FP8 output). Band-gated C that was
    // not: the leader waits for its band before the epilogue loads it.
    const bool c_issued_ahead = Epilogue<Cfg>::kCAhead && c_ahead_issue_block() >= 0;
    if constexpr (Cfg::band_signals)
      if (store_leader() && params.beta != 0.0f && !c_issued_ahead)
        band_signal.wait_c(params, tile_row0());
    // Masked grouped GEMM: a tile that runs past its group's valid rows is stored by the
    // threads, which stop at the limit (TMA would clip only at the matrix's edge, and the rows
    // past masked_m must keep what they hold). Consumers whose rows are all valid use TMA.
    if constexpr (Cfg::out_kind == 3) {   // FP8 output: TMA only, never grouped (the rules)
      Epilogue<Cfg>::store_tma(acc, smem, maps, params, consumer, tile_row0(), work.n_tile,
                               c_phase, vectors, false);
      return true;
    } else if constexpr (Cfg::tma_store) {
      if (Cfg::grouping != 2 ||
          tile_row0() + G::consumer_row0(consumer) + G::kRowsPerConsumer <= work.row_limit) {
        wait_store_turn();
        Epilogue<Cfg>::store_tma(acc, smem, maps, params, consumer, tile_row0(), work.n_tile,
                                 c_phase, vectors, c_issued_ahead);
        pass_store_turn();
        return true;
      }
    }
    if constexpr (Cfg::out_kind != 3) {
      const int row_limit = Cfg::grouping == 2 ? work.row_limit : params.m;
      if constexpr (Cfg::staged_store)
        Epilogue<Cfg>::store_staged(acc, smem, params, consumer, tile_row0(), work.n_tile,
                                    row_limit, vectors);
      else
        Epilogue<Cfg>::store_threads(acc, params, consumer, tile_row0(), work.n_tile, row_limit,
                                     vectors);
    }
    return true;
  }

  __device__ __forceinline__ void finish(bool tile_turn_pending) {
    // Consumer 1's last turn hand-off is still pending on consumer 0's barrier (ping-pong: the
    // last one's on the other's): take it, so no named barrier is left half-arrived when the CTA
    // exits.
    if constexpr (Cfg::ordered_issue)
      if (consumer == 0 && !first_turn) ptx::named_barrier_sync(kTurnBarrier, G::kConsumerThreads);
    if constexpr (Cfg::pingpong)
      if (tile_turn_pending) {
        ptx::named_barrier_sync(kTurnBarrier + consumer, G::kConsumerThreads);
        ptx::named_barrier_sync(kStoreTurnBarrier + consumer, kStoreTurnThreads);
      }
    // Bulk stores read shared memory asynchronously; it must stay valid until they finish.
    if constexpr (Cfg::tma_store)
      if (threadIdx.x % 128 == 0) ptx::tma_store_wait_all<0>();
    if constexpr (Cfg::band_signals)
      if (store_leader()) band_signal.publish(params);
  }

  // The thread that issues this consumer's TMA stores (Epilogue::store_tma's leader).
  __device__ __forceinline__ bool store_leader() const { return consumer_thread % 128 == 0; }

  // C ahead (Epilogue::kCAhead), where c_ahead_issue_block says: the store leader waits for the
  // last tile's bulk store to have read the staging buffer (long done by then), then issues this
  // tile's C into it, to land under the k-loop's last k-blocks. Not at the tile's start: there
  // the wait met the store just issued, and C's load took bandwidth from the pipeline's fill
  // (two consumers lost up to 8.6%).
  __device__ __forceinline__ void issue_c_ahead() {
    if (params.beta != 0.0f && store_leader()) {
      ptx::tma_store_wait_read<0>();
      if constexpr (Cfg::band_signals) band_signal.wait_c(params, tile_row0());
      Epilogue<Cfg>::issue_c_load(smem, maps, consumer, tile_row0(), work.n_tile);
    }
  }

  // The k-block before which C ahead is issued, or -1 for none (the epilogue loads C after the
  // k-loop). Two consumers whose k-loop is no longer than the lead would issue it at the loop's
  // start, where it takes DRAM from the pipeline's fill: 4096 x 32768 x 512 (C read, 8 k-blocks)
  // went 0.926 -> 0.836 of cuBLASLt on an H200; one consumer gained there (64 x 32768 x 512 0.793
  // -> 0.945), its fill being half the bytes.
  __device__ __forceinline__ int c_ahead_issue_block() const {
    if (Cfg::num_consumers == 2 && work.k_end - work.k_begin <= kCLeadKBlocks) return -1;
    return max(work.k_begin, work.k_end - kCLeadKBlocks);
  }

  // --- two promotion temporaries: chunks ------------------------------------------------------

  // kCount (1..kChunk) k-blocks from k_first, alternating the temporaries, each promoting its
  // predecessor's sums; then the drain and the last k-block's promotion.
  template <int kCount>
  __device__ __forceinline__ void consume_chunk(int k_first) {
    static_assert(kCount >= 1 && kCount <= kChunk, "a chunk is 1..kChunk k-blocks");
    consume_k_block<0, false>(k_first);
    consume_chunk_from<1, kCount>(k_first);
    drain(k_first + kCount - 1);
    promotion.template promote<(kCount - 1) % 2>(acc);
  }
  template <int kIndex, int kCount>
  __device__ __forceinline__ void consume_chunk_from(int k_first) {
    if constexpr (kIndex < kCount) {
      consume_k_block<kIndex % 2, true>(k_first + kIndex);
      consume_chunk_from<kIndex + 1, kCount>(k_first);
    }
  }

  // --- one k-block ----------------------------------------------------------------------------

  // kBuffer picks the FP8 promotion temporary the k-block's wgmmas write; with two,
  // kPromotePrevious says whether the other one holds k_block - 1's sums.
  template <int kBuffer, bool kPromotePrevious>
  __device__ __forceinline__ void consume_k_block(int k_block) {
    const int stage = read.stage;
    wait_for_stage(stage, k_block);
    const unsigned a_stage_lo = descriptors.a_stage(stage), b_stage_lo = descriptors.b_stage(stage);
    if constexpr (Promotion<Cfg>::kSlabWaves) {
      consume_k_block_by_slab(stage, k_block, a_stage_lo, b_stage_lo);
    } else {
      issue_wgmmas<kBuffer>(a_stage_lo, b_stage_lo);
      // One temporary: this stage is released below, before the promotion, so its scales are
      // read now.
      if constexpr (!kOverlapPromotion) promotion.template read_stage_scales<kBuffer>(smem, stage);
      wait_for_wgmmas<kGroupsInFlight>();
      release_consumed_stage(stage, k_block);
      promote<kBuffer, kPromotePrevious>(stage);
    }
    read.template advance<Cfg::num_stages>();
  }

  // TMA: waits for the stage's full barrier. Threads path: the consumer threads fill the stage
  // themselves.
  __device__ __forceinline__ void wait_for_stage(int stage, int k_block) {
    if constexpr (Cfg::tma_load) {
      ptx::mbarrier_wait(smem.full(stage), read.phase);
      if constexpr (kTileTrace) trace.data_ready(trace_recorder);
    } else {
      load_tile_threads<Cfg>(smem.a(stage), params.a, params.lda, params.m,
                             tile_row0(), k_block * Cfg::block_k, Cfg::block_m,
                             consumer_thread, G::kConsumerThreads);
      load_tile_threads<Cfg>(smem.b(stage), params.b, params.ldb, Cfg::n,
                             work.n_tile * Cfg::block_n, k_block * Cfg::block_k, Cfg::block_n,
                             consumer_thread, G::kConsumerThreads);
      ptx::fence_proxy_async_shared();   // generic-proxy writes -> wgmma (async proxy) reads
      ptx::named_barrier_sync(3, G::kConsumerThreads);
    }
  }

  // One wgmma group: every k16 (k32 FP8) step of the stage for every m64 slab, into the
  // fragment (16-bit) or promotion temporary kBuffer (FP8).
  template <int kBuffer>
  __device__ __forceinline__ void issue_wgmmas(unsigned a_stage_lo, unsigned b_stage_lo) {
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
  }

  // After the wgmma wait: the stage it proved read is released. With one group in flight that
  // is the previous k-block's stage; this one stays pending until the next wait.
  __device__ __forceinline__ void release_consumed_stage(int stage, int k_block) {
    if constexpr (Cfg::tma_load && kGroupsInFlight == 0) {
      release_stage(stage, k_block + Cfg::num_stages);
    } else if constexpr (Cfg::tma_load) {
      if (work.pending_stage >= 0)
        release_stage(work.pending_stage, k_block - 1 + Cfg::num_stages);
      work.pending_stage = stage;
    } else {
      ptx::named_barrier_sync(3, G::kConsumerThreads);   // all reads done before the next fill
    }
  }

  // FP8, after the release: the producer refills the stage meanwhile.
  template <int kBuffer, bool kPromotePrevious>
  __device__ __forceinline__ void promote(int stage) {
    if constexpr (kOverlapPromotion) {
      // The wait proved k_block - 1's wgmmas done; k_block's still write the other buffer.
      if constexpr (kPromotePrevious) promotion.template promote<1 - kBuffer>(acc);
      // This stage stays held until the next k-block's wait (work.pending_stage): its scales
      // are read after the promotion, when the previous temporary's registers are free again.
      promotion.template read_stage_scales<kBuffer>(smem, stage);
    } else {
      promotion.template promote<0>(acc);
    }
  }

  // Ordered issue with one temporary, one slab at a time: issue, pass the turn, wait, promote.
  // The stage is released after its last slab's wgmmas (and the scales were read before).
  __device__ __forceinline__ void consume_k_block_by_slab(int stage, int k_block,
                                                          unsigned a_stage_lo,
                                                          unsigned b_stage_lo) {
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
      wait_for_wgmmas<0>();
      if (s == G::kSlabs - 1) release_stage(stage, k_block + Cfg::num_stages);
      promotion.template promote_slab<0>(acc, s);
    }
  }

  // --- the ring -------------------------------------------------------------------------------

  // Frees `stage` for the producer: one arrival per consumer warp, on every CTA the stage's
  // multicast wrote into. Without warp specialisation thread 0 then refills it with
  // `refill_k_block`, if the tile has one.
  __device__ __forceinline__ void release_stage(int stage, int refill_k_block) {
    // Block-scaled FP8: every lane read the stage's scales with plain shared loads, and only
    // lane 0 arrives. __syncwarp orders all lanes' reads before that release-arrive (CUDA C++
    // Programming Guide, "__syncwarp": memory ordering among the participating threads), so
    // the scale warp's next cp.async into the slot cannot overtake them (FP8 suite unchanged:
    // 1.175 -> 1.1755 of cuBLASLt, H200).
    if constexpr (G::kStagedScales) __syncwarp();
    if constexpr (G::kMulticastCtas == 1) {
      if (lane == 0) ptx::mbarrier_arrive(smem.empty(stage));
    } else {
      // The leader's multicast writes into every CTA's copy of the stage.
      if (lane < G::kMulticastCtas) ptx::mbarrier_arrive_cluster(smem.empty(stage), lane);
    }
    if (inline_producer && refill_k_block < work.k_end) produce_k_block(refill_k_block);
    __syncwarp();
  }

  // The inline producer (thread 0, non-specialised TMA path): waits for the next free stage and
  // issues its loads.
  __device__ __forceinline__ void produce_k_block(int k_block) {
    ptx::mbarrier_wait(smem.empty(write.stage), write.phase ^ 1);
    issue_stage_loads(smem, write.stage, smem.full(write.stage), tmap_a, tmap_b, tile_row0(),
                      b_tile_row0<Cfg>(work.n_tile, work.group), k_block * Cfg::block_k,
                      cta_rank);
    write.template advance<Cfg::num_stages>();
  }

  // Waits for every wgmma of the tile so far and frees the stage still held.
  __device__ __forceinline__ void drain(int last_k_block) {
    if constexpr (Cfg::tma_load && kGroupsInFlight > 0) {
      wait_for_wgmmas<0>();
      if (work.pending_stage >= 0)
        release_stage(work.pending_stage, last_k_block + Cfg::num_stages);
      work.pending_stage = -1;
    }
  }

  // --- warpgroup ------------------------------------------------------------------------------

  // Waits until at most kPending of this warpgroup's wgmma groups are still running; the
  // fragments the others wrote can then be read.
  template <int kPending>
  __device__ __forceinline__ void wait_for_wgmmas() {
    ptx::wgmma_wait_group<kPending>();
    fence_fragments();
  }

  // Keeps the compiler from moving fragment accesses across the asynchronous wgmmas that read
  // and write them (wgmma.fence covers the hardware side).
  __device__ __forceinline__ void fence_fragments() {
#pragma unroll
    for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
      for (int r = 0; r < G::kAccum; ++r) ptx::fence_operand(acc[s][r]);
    promotion.fence_operands();
  }

  // Turns between the two consumers: consumer c waits on named barrier `base` + c and passes
  // the turn by arriving on the other's; `first` lets consumer 0 take its first turn unasked.
  // `threads` counts the waiting warpgroup and the arriving threads (PTX ISA "bar.arrive").
  __device__ __forceinline__ void take_turn(unsigned base, unsigned threads, bool& first) {
    if (!first) ptx::named_barrier_sync(base + consumer, threads);
    first = false;
  }
  __device__ __forceinline__ void hand_turn(unsigned base, unsigned threads) {
    ptx::named_barrier_arrive(base + 1 - consumer, threads);
  }

  // Ordered issue (Cfg::ordered_issue, FP8 with two consumers): the consumers take turns
  // issuing wgmma groups, consumer 0 first. The matrix units run a consumer's group while the
  // other consumer promotes its last one, so they never both promote while the units idle
  // (the two would otherwise issue together and finish, and promote, together).
  __device__ __forceinline__ void wait_turn() {
    if constexpr (Cfg::ordered_issue) take_turn(kTurnBarrier, G::kConsumerThreads, first_turn);
  }
  __device__ __forceinline__ void pass_turn() {
    if constexpr (Cfg::ordered_issue) hand_turn(kTurnBarrier, G::kConsumerThreads);
  }
  // Ping-pong (Cfg::pingpong): the same two barriers, one turn per k-loop (run() says why).
  __device__ __forceinline__ void wait_tile_turn() {
    if constexpr (Cfg::pingpong) take_turn(kTurnBarrier, G::kConsumerThreads, first_turn);
  }
  __device__ __forceinline__ void pass_tile_turn() {
    if constexpr (Cfg::pingpong) hand_turn(kTurnBarrier, G::kConsumerThreads);
  }
  // Ping-pong: D's one staging buffer in turn, in the k-loops' order. A consumer stages (C's
  // load included) once the other's last store has read the buffer: that one's leader waits
  // for its bulk store's reads, then its warp passes the turn (barriers kStoreTurnBarrier + c).
  __device__ __forceinline__ void wait_store_turn() {
    if constexpr (Cfg::pingpong) take_turn(kStoreTurnBarrier, kStoreTurnThreads, first_store);
  }
  __device__ __forceinline__ void pass_store_turn() {
    if constexpr (Cfg::pingpong) {
      if (consumer_thread % 128 < 32) {
        if (consumer_thread % 128 == 0) ptx::tma_store_wait_read<0>();
        __syncwarp();
        hand_turn(kStoreTurnBarrier, kStoreTurnThreads);
      }
    }
  }
};

template <class Cfg>
__device__ void consume_tiles(const SharedStorage<Cfg>& smem, const ptx::TensorMap* tmap_a,
                              const ptx::TensorMap* tmap_b, const EpilogueMaps& maps,
                              const GemmParams& params, int consumer, unsigned cta_rank) {
  using G = Geometry<Cfg>;
  // The consumer's mutable state, one object each, as the lambdas this loop was written with
  // captured it; Consumer refers to them. As members of Consumer they were one object to LLVM's
  // SROA, which then promoted them to registers later and in another order. With the fragment
  // and the promotion temporaries inside (indexed with variables until the loops are unrolled,
  // so SROA cannot split the object before), the scalars stayed in memory through the loop
  // passes, which saw a k-loop of unknown trip count: 128x256 bf16 lost its unroll by two (1632
  // SASS instructions instead of 1672), 128x128 FP8 pb2 the pruning of its remainder chunks
  // (3336 instead of 2176). With only the scalars inside, the PTX's instructions were the same
  // but not their order, and 256x128 FP8 oi in 2x1 clusters spilled 4 B. As it is, the PTX of
  // every configuration checked is the earlier one up to register names.
  float acc[G::kSlabs][G::kAccum];
  Promotion<Cfg> promotion(params, consumer);
  typename Epilogue<Cfg>::Fused vectors;
  PipelineState read, write;
  unsigned c_phase = 0;
  bool first_turn = consumer == 0;
  bool first_store = consumer == 0;
  TileTraceRecorder trace;
  typename Consumer<Cfg>::WorkItem work;
  BandSignal<Cfg> band_signal;
  Consumer<Cfg>(smem, tmap_a, tmap_b, maps, params, consumer, cta_rank, acc, promotion, vectors,
                read, write, c_phase, first_turn, first_store, trace, work, band_signal)
      .run();
}

template <class Cfg>
__global__ void __launch_bounds__(Geometry<Cfg>::kThreads, 1)
    gemm_kernel(const __grid_constant__ ptx::TensorMap tmap_a,
                const __grid_constant__ ptx::TensorMap tmap_b,
                const __grid_constant__ ptx::TensorMap tmap_c,
                const __grid_constant__ ptx::TensorMap tmap_d,
                const __grid_constant__ ptx::TensorMap tmap_c_tail,
                const __grid_constant__ ptx::TensorMap tmap_d_tail, const GemmParams params) {
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
    if constexpr (Cfg::grouping == 3) ptx::mbarrier_init(smem.token_tail(), 1);
    ptx::fence_mbarrier_init();
    if constexpr (Cfg::tma_load) {
      ptx::tma_prefetch_descriptor(&tmap_a);
      ptx::tma_prefetch_descriptor(&tmap_b);
    }
    if constexpr (Cfg::tma_store) {
      if constexpr (G::kDMainBoxes > 0) ptx::tma_prefetch_descriptor(&tmap_d);
      if constexpr (G::kDTailCols > 0) ptx::tma_prefetch_descriptor(&tmap_d_tail);
    }
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
  const EpilogueMaps maps{&tmap_c, &tmap_c_tail, &tmap_d, &tmap_d_tail};
  if constexpr (Cfg::warp_specialized) {
    if (warpgroup == 0) {
      ptx::setmaxnreg_dec<Cfg::producer_regs>();
      // Groups along K: the whole warp, which zeroes a run's last tokens (produce_tiles).
      if (Cfg::grouping == 3 ? threadIdx.x < 32 : threadIdx.x == 0)
        produce_tiles(smem, &tmap_a, &tmap_b, params, cta_rank);
      if constexpr (G::kStagedScales)
        if (ptx::warp_index_uniform() == 1) produce_scales(smem, params, cta_rank);
      __syncwarp();
    } else {
      ptx::setmaxnreg_inc<Cfg::consumer_regs>();
      consume_tiles(smem, &tmap_a, &tmap_b, maps, params, warpgroup - 1, cta_rank);
    }
  } else {
    consume_tiles(smem, &tmap_a, &tmap_b, maps, params, warpgroup, cta_rank);
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
