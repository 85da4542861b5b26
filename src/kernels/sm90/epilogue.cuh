#pragma once
// Epilogue of one consumer warpgroup: D = alpha * acc + beta * C for its rows of the tile, or
// with the fused epilogue (fused_epilogue.cuh, Cfg::epilogue) D = act(alpha * acc * scales +
// bias) + beta * C; gated, D = act(gate) * up over half the columns; with FP8 output (out_kind
// 3) quantised per row and 128 columns of D, its scales written beside it (stage_fp8).
// Accumulator fragment (hopper-facts.md 2.3, verified on H100): in slab s, register r of thread
// (warp w, lane l) holds row s*64 + 16w + l/4 + 8*((r>>1)&1), column 8*(r>>2) + 2*(l%4) + (r&1);
// registers r, r+1 (r even) are two adjacent columns, stored together.
#include "ptx/barrier.cuh"
#include "ptx/convert.cuh"
#include "ptx/tma.cuh"
#include "sm90/fused_epilogue.cuh"
#include "sm90/gemm_common.cuh"
#include "quant/quant_common.cuh"

namespace autogemm::sm90 {

// One output element as an unsigned integer of its size (the staged store's edge elements).
template <int Bytes>
struct StagedElement {
  using type = unsigned;
};
template <>
struct StagedElement<2> {
  using type = unsigned short;
};

// The TMA descriptors of C and D: the 128-byte main slabs' and the tail slab's boxes
// (gemm_layout.cuh d_main_boxes). Without C (beta == 0) the C maps repeat D's.
struct EpilogueMaps {
  const ptx::TensorMap* c;
  const ptx::TensorMap* c_tail;
  const ptx::TensorMap* d;
  const ptx::TensorMap* d_tail;
};

template <class Cfg>
struct Epilogue {
  using G = Geometry<Cfg>;
  static_assert(!Cfg::d_transposed || !Cfg::staged_store,
                "D^T goes out by TMA (transposed_offset) or from registers, not in staged rows");
  static_assert(!(Cfg::tma_store && Cfg::staged_store), "one store path");
  static_assert(!G::kGated || !Cfg::d_transposed, "a gated tile's gate and up are its columns");
  static_assert(Cfg::out_kind != 3 || Cfg::tma_store, "FP8 output leaves by TMA (stage_fp8)");
  static constexpr int kStoreThreads = 128;
  using Fused = TileEpilogue<Cfg, G::kSlabs>;

  // Accumulator registers per 8 columns of D: one 8-column step, or a gated tile's gate step and
  // its up step (B's rows interleaved in runs of 8, autogemm/epilogue.hpp).
  static constexpr int kStepRegs = G::kGated ? 8 : 4;

  // Visits every pair of D the thread holds: f(slab, register index, row in consumer rows,
  // column of D in the tile). Slab by slab, or, when the fused epilogue reads column vectors,
  // column step by column step (fused_epilogue.cuh TileEpilogue::kColumnStepOuter). The pair's
  // values are pair_values(slab, register index).
  template <class F>
  __device__ __forceinline__ static void for_each_pair(F&& f) {
    const int thread = threadIdx.x % 128, warp = thread / 32, lane = thread % 32;
    const auto visit = [&](int slab, int j, int half) {
      f(slab, kStepRegs * j + 2 * half, slab * 64 + 16 * warp + lane / 4 + 8 * half,
        8 * j + 2 * (lane % 4));
    };
    if constexpr (Fused::kColumnStepOuter) {
#pragma unroll
      for (int j = 0; j < G::kDCols / 8; ++j)
#pragma unroll
        for (int slab = 0; slab < G::kSlabs; ++slab)
#pragma unroll
          for (int half = 0; half < 2; ++half) visit(slab, j, half);
    } else {
#pragma unroll
      for (int slab = 0; slab < G::kSlabs; ++slab)
#pragma unroll
        for (int j = 0; j < G::kDCols / 8; ++j)
#pragma unroll
          for (int half = 0; half < 2; ++half) visit(slab, j, half);
    }
  }

  // The pair of D at (slab, r) of for_each_pair before C: alpha * acc through the fused
  // epilogue, or, gated, act(gate) * up from registers r and r + 4. Every lane calls it for the
  // same pair (the column vectors are shuffled).
  __device__ __forceinline__ static float2 pair_values(float (&acc)[G::kSlabs][G::kAccum],
                                                       Fused& fused, float alpha, int slab,
                                                       int r) {
    if constexpr (G::kGated) {
      return fused.gated_pair(slab, r, alpha * acc[slab][r], alpha * acc[slab][r + 1],
                              alpha * acc[slab][r + 4], alpha * acc[slab][r + 5]);
    } else {
      float v0 = alpha * acc[slab][r], v1 = alpha * acc[slab][r + 1];
      fused.apply_pair(slab, r, v0, v1);
      return make_float2(v0, v1);
    }
  }

  // FP8 output (out_kind 3): the consumer's rows of the tile quantised to e4m3 with one scale
  // per row per 128 columns of D, staged for the TMA store. A row's 128 columns lie with the 4
  // lanes of a quad (for_each_pair: 16 steps of 8 columns, 2 per lane each), so its amax is the
  // lanes' own maximum and two shuffles. The values wait in acc between the passes (a gated
  // pair's in its gate registers). The scale rule and the rounding are quantize_fp8's
  // (quant/quant_common.cuh), so the GEMM's output equals quantising its BF16-free fp32 values.
  static constexpr int kScaleGroups = G::kDCols / 128;
  __device__ static void stage_fp8(float (&acc)[G::kSlabs][G::kAccum], Fused& fused,
                                   const GemmParams& params, unsigned char* staging, int row_base,
                                   long long m0, int d_n0) {
    static_assert(Cfg::out_bytes == 1 && G::kDCols % 128 == 0 && !Cfg::d_transposed,
                  "FP8 output: whole 128-column scale groups of D, not transposed");
    constexpr int kGroupRegs = kStepRegs * 16;   // registers of one 128-column group
    float amax[G::kSlabs][2][kScaleGroups];
#pragma unroll
    for (int slab = 0; slab < G::kSlabs; ++slab)
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int g = 0; g < kScaleGroups; ++g) amax[slab][half][g] = 0.0f;
    for_each_pair([&](int slab, int r, int, int) {
      const float2 v = pair_values(acc, fused, params.alpha, slab, r);
      acc[slab][r] = v.x;
      acc[slab][r + 1] = v.y;
      float& a = amax[slab][(r >> 1) & 1][r / kGroupRegs];
      a = fmaxf(a, fmaxf(fabsf(v.x), fabsf(v.y)));
    });
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    float inverse[G::kSlabs][2][kScaleGroups];
#pragma unroll
    for (int slab = 0; slab < G::kSlabs; ++slab)
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int g = 0; g < kScaleGroups; ++g) {
          float a = amax[slab][half][g];
          a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, 1));
          a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, 2));
          const float scale = quant::group_scale(a);
          inverse[slab][half][g] = quant::divide_rn(1.0f, scale);
          const long long row = m0 + slab * 64 + 16 * warp + lane / 4 + 8 * half;
          const int group = d_n0 / 128 + g;
          if (lane % 4 == 0 && row < params.m && group * 128 < G::kDN)
            params.d_scale[row * params.d_scale_ld + group] = scale;
        }
    for_each_pair([&](int slab, int r, int row, int col) {
      *reinterpret_cast<unsigned short*>(staging + staging_offset(row_base + row, col)) =
          quant::quantize_pair(acc[slab][r], acc[slab][r + 1],
                               inverse[slab][(r >> 1) & 1][r / kGroupRegs]);
    });
  }

  __device__ __forceinline__ static float load_c_value(const unsigned char* p) {
    if constexpr (Cfg::out_kind == 0) return ptx::bf16_to_float(*reinterpret_cast<const unsigned short*>(p));
    else if constexpr (Cfg::out_kind == 1) return ptx::f16_to_float(*reinterpret_cast<const unsigned short*>(p));
    else return *reinterpret_cast<const float*>(p);
  }

  // Writes two adjacent output values (columns col, col+1) at p.
  __device__ __forceinline__ static void store_pair(unsigned char* p, float v0, float v1) {
    if constexpr (Cfg::out_kind == 0) *reinterpret_cast<unsigned*>(p) = ptx::pack_bf16x2(v0, v1);
    else if constexpr (Cfg::out_kind == 1) *reinterpret_cast<unsigned*>(p) = ptx::pack_f16x2(v0, v1);
    else *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
  }

  // Byte offset of (row in tile, column in tile) inside the D staging buffer: kDMainBoxes slabs
  // of (BLOCK_M, kDMainCols), 128-byte swizzle, then the (BLOCK_M, kDTailCols) tail slab, swizzled
  // with its row's span or dense (gemm_layout.cuh d_main_boxes). Every slab is one TMA box per
  // consumer. D in chunks: the staging holds one chunk's kDStagedBoxes slabs, a column's slab
  // taken modulo that. `col` is a multiple of 8 plus the lane's even offset, so the slab it
  // falls in is known at compile time in the unrolled loops.
  __device__ __forceinline__ static int staging_offset(int row, int col) {
    constexpr int kMainColsTotal = G::kDMainBoxes * G::kDMainCols;
    if (col < kMainColsTotal) {
      const int linear = row * kSwizzleSpanBytes + (col % G::kDMainCols) * Cfg::out_bytes;
      return col / G::kDMainCols % G::kDStagedBoxes * Cfg::block_m * kSwizzleSpanBytes +
             swizzle_offset(linear, kSwizzleSpanBytes);
    }
    const int linear = row * G::kDTailBytes + (col - kMainColsTotal) * Cfg::out_bytes;
    return G::kDStagedBoxes * Cfg::block_m * kSwizzleSpanBytes +
           (G::kDTailSwizzle != 0 ? swizzle_offset(linear, G::kDTailSwizzle) : linear);
  }

  // D^T (Cfg::d_transposed) staged for TMA. The kernel's rows are the caller's columns, so the
  // buffer holds the caller's D tile: one box of (BLOCK_N caller rows, kTransposedBoxRows
  // caller columns = 128 bytes, 128-byte swizzle) per kTransposedBoxRows kernel rows, boxes
  // back to back (block_n x 128 B each: whole 1024-byte swizzle repeats, block_n % 8 == 0).
  // A thread's column pair is two caller rows: two element writes, which for a warp land in 4
  // caller rows 2 apart, 8 consecutive elements each, different 16-byte chunks after the
  // swizzle, so no bank conflict. Storing D^T from registers instead took 3.5-4.5 us a tile
  // where this path's normal-D twin takes 0.5-0.7 (H200 tile traces, 128x176 and 128x208).
  // stage_matrices in store_tma: 16-bit D in the kernel's orientation (D^T goes out an element
  // at a time, fp32 D is 32-bit).
  static constexpr bool kStoresMatrices = !Cfg::d_transposed && Cfg::out_bytes == 2;
  static constexpr int kTransposedBoxRows = kSwizzleSpanBytes / Cfg::out_bytes;
  static constexpr int kTransposedBoxBytes = Cfg::block_n * kSwizzleSpanBytes;
  static_assert(!Cfg::d_transposed || G::kRowsPerConsumer % kTransposedBoxRows == 0,
                "a consumer's rows are whole D^T boxes");
  __device__ __forceinline__ static int transposed_offset(int row, int col) {
    const int linear = col * kSwizzleSpanBytes + row % kTransposedBoxRows * Cfg::out_bytes;
    return row / kTransposedBoxRows * kTransposedBoxBytes +
           swizzle_offset(linear, kSwizzleSpanBytes);
  }

  // Issues one TMA operation per slab of this consumer's rows of chunk `chunk` (all of them
  // unchunked): main slabs through `main_map`, the tail slab through `tail_map`. f(map, staging
  // slab address, first column of the slab).
  template <class F>
  __device__ __forceinline__ static void for_each_box(const ptx::TensorMap* main_map,
                                                      const ptx::TensorMap* tail_map, int row_base,
                                                      int chunk, F&& f) {
#pragma unroll
    for (int box = 0; box < G::kDStagedBoxes; ++box) {
      const int col = (chunk * G::kDStagedBoxes + box) * G::kDMainCols;
      f(main_map, staging_offset(row_base, col), col);
    }
    if constexpr (G::kDTailCols > 0)
      f(tail_map, staging_offset(row_base, G::kDMainBoxes * G::kDMainCols),
        G::kDMainBoxes * G::kDMainCols);
  }

  // C loaded ahead (gemm_layout.cuh c_loaded_ahead; the run-time beta whether C is read at
  // all): the consumer's store leader issues the tile's C into the staging buffer during the
  // tile's k-loop (Consumer::issue_c_ahead), so the load runs under the k-loop instead of after
  // it. Why (H200, C read, ratio to cuBLASLt): 64 x 32768 x 512 0.793 -> 0.945, 128 x 24576 x
  // 1536 0.890 -> 0.935, 128 x 32768 x 512 0.818 -> 0.879.
  static constexpr bool kCAhead = c_loaded_ahead(Cfg::tma_store, Cfg::warp_specialized,
                                                 Cfg::pingpong, Cfg::in_bytes,
                                                 Cfg::split_k == 1 && !Cfg::stream_k,
                                                 Cfg::grouping, Cfg::out_kind, Cfg::d_chunk_boxes);

  // One TMA operation per box of this consumer's rows of the tile's chunk `chunk` (0: the tile
  // unchunked): f(map, staging offset, coordinates). D^T's boxes are (BLOCK_N caller rows,
  // 128-byte caller columns) from (m0 + r, n0).
  template <class F>
  __device__ __forceinline__ static void each_box(const ptx::TensorMap* main_map,
                                                  const ptx::TensorMap* tail_map, int consumer,
                                                  int row0, int n_tile, int chunk, F&& f) {
    const int row_base = G::consumer_row0(consumer);
    const int m0 = row0 + row_base, n0 = n_tile * Cfg::block_n, d_n0 = n_tile * G::kDCols;
    if constexpr (Cfg::d_transposed) {
#pragma unroll
      for (int r = 0; r < G::kRowsPerConsumer; r += kTransposedBoxRows)
        f(main_map, transposed_offset(row_base + r, 0), m0 + r, n0);
    } else {
      for_each_box(main_map, tail_map, row_base, chunk,
                   [&](const ptx::TensorMap* map, int offset, int col) {
                     f(map, offset, d_n0 + col, m0);
                   });
    }
  }

  // The leader: C's boxes of this consumer's rows of the tile (of its chunk `chunk`) into the
  // staging buffer, which no bulk store still reads; completion on the consumer's C-loaded
  // barrier.
  __device__ __forceinline__ static void issue_c_load(const SharedStorage<Cfg>& smem,
                                                      const EpilogueMaps& maps, int consumer,
                                                      int row0, int n_tile, int chunk = 0) {
    unsigned char* staging = smem.d();
    ptx::u64* bar = smem.c_loaded(consumer);
    ptx::mbarrier_arrive_expect_tx(bar, G::kRowsPerConsumer * G::kDChunkCols * Cfg::out_bytes);
    each_box(maps.c, maps.c_tail, consumer, row0, n_tile, chunk,
             [&](const ptx::TensorMap* map, int offset, int x, int y) {
               ptx::tma_load_2d(staging + offset, map, bar, x, y);
             });
  }

  // `row0` is the tile's first row of D (the scheduler's; m_tile x block_m but in the masked
  // grouped layout).
  // Through shared memory and TMA: the tile's rows of this consumer are staged (optionally
  // pre-loaded with C by TMA), then one thread stores them with TMA, which also clips the tile
  // at the matrix edges. `c_phase` flips each time C is loaded.
  __device__ static void store_tma(float (&acc)[G::kSlabs][G::kAccum], const SharedStorage<Cfg>& smem,
                                   const EpilogueMaps& maps, const GemmParams& params,
                                   int consumer, int row0, int n_tile, unsigned& c_phase,
                                   Fused& fused, bool c_issued_ahead) {
    const bool leader = threadIdx.x % 128 == 0;
    const unsigned barrier_id = 1 + consumer;   // 0 is __syncthreads
    const int row_base = G::consumer_row0(consumer);
    // d_n0: the tile's first column of D.
    const int m0 = row0 + row_base, d_n0 = n_tile * G::kDCols;
    unsigned char* staging = smem.d();

    const bool read_c = params.beta != 0.0f;
    // D in chunks (G::kDChunked): the staging holds one chunk of boxes, so each chunk is loaded
    // (C), staged and stored in turn; unchunked, one pass over the whole tile. The loop is
    // unrolled, so each pass keeps only its own columns' pairs.
#pragma unroll
    for (int chunk = 0; chunk < G::kDChunks; ++chunk) {
      // The previous store (the last tile's, or this tile's previous chunk) must have read the
      // staging buffer before it is rewritten.
      if (leader) ptx::tma_store_wait_read<0>();
      ptx::named_barrier_sync(barrier_id, kStoreThreads);
      if (read_c) {
        // c_issued_ahead: issued during the k-loop (Consumer::issue_c_ahead; never in chunks).
        if (!c_issued_ahead && leader) issue_c_load(smem, maps, consumer, row0, n_tile, chunk);
        ptx::mbarrier_wait(smem.c_loaded(consumer), c_phase);
        c_phase ^= 1;
      }
      // Two copies of the loop, chosen once per tile. With one loop and `if (read_c)` inside,
      // ptxas (CUDA 13.0) keeps every C load, predicated off when beta == 0, in the common path
      // and waits on each before its store: +1.2 us per 128 x 256 bf16 tile, 18% of a K = 512
      // GEMM (4096 x 32768 x 512: 259 against 219 us).
      const auto stage = [&](auto with_c) {
        for_each_pair([&](int slab, int r, int row, int col) {
          // A pair's 8-column step lies in one chunk (chunks are whole 128-byte boxes), so
          // every lane of the quad skips it or not alike (pair_values shuffles).
          if (G::kDChunked && col / G::kDChunkCols != chunk) return;
          const float2 v = pair_values(acc, fused, params.alpha, slab, r);
          float v0 = v.x, v1 = v.y;
          if constexpr (Cfg::d_transposed) {
            // An opaque copy per pair: with row_base itself, ptxas (CUDA 13.0) computed every
            // pair's two D^T offsets before the loop and spilled them (128x144 one-consumer
            // swapped tiles 340 bytes, 128x168 532), and the tile traces of 142 x 10240 x 8192
            // show an 11,700-cycle epilogue a tile. With the copy: 0 bytes.
            int pair_row_base = row_base;
            asm volatile("" : "+r"(pair_row_base));
            unsigned char* p0 = staging + transposed_offset(pair_row_base + row, col);
            unsigned char* p1 = staging + transposed_offset(pair_row_base + row, col + 1);
            if constexpr (decltype(with_c)::value) {
              v0 += params.beta * load_c_value(p0);
              v1 += params.beta * load_c_value(p1);
            }
            store_value(p0, v0);
            store_value(p1, v1);
          } else {
            unsigned char* p = staging + staging_offset(row_base + row, col);
            if constexpr (decltype(with_c)::value) {
              v0 += params.beta * load_c_value(p);
              v1 += params.beta * load_c_value(p + Cfg::out_bytes);
            }
            store_pair(p, v0, v1);
          }
        });
      };
      // 16-bit D without C: both halves of an 8-column step leave as two 8x8 matrices, one
      // stmatrix, where stage() writes a pair at a time; and with alpha 1 (a plain GEMM's) the
      // values are the accumulators as they are. 322 -> 185 instructions a thread (128x256),
      // 4096 x 32768 x 512 214.8 -> 210.5 us (H200, alternated A/B).
      const auto stage_matrices = [&](auto alpha_one) {
        const float alpha = decltype(alpha_one)::value ? 1.0f : params.alpha;
        const int matrix_row = row_base + 16 * ((threadIdx.x % 128) / 32) + threadIdx.x % 16;
        unsigned half0 = 0;
        for_each_pair([&](int slab, int r, int, int col) {
          if (G::kDChunked && col / G::kDChunkCols != chunk) return;
          const float2 v = pair_values(acc, fused, alpha, slab, r);
          const unsigned packed = Cfg::out_kind == 0 ? ptx::pack_bf16x2(v.x, v.y)
                                                     : ptx::pack_f16x2(v.x, v.y);
          if (((r >> 1) & 1) == 0) {   // the step's first half: rows 0-7 of its two matrices
            half0 = packed;
            return;
          }
          const int step_col = col - 2 * (threadIdx.x % 4);
          const int matrix_offset = staging_offset(matrix_row + slab * 64, step_col);
          ptx::stmatrix_x2(ptx::smem_addr(staging + matrix_offset), half0, packed);
        });
      };
      if constexpr (Cfg::out_kind == 3) {   // no C (validate: FP8 output has none); unchunked
        stage_fp8(acc, fused, params, staging, row_base, m0, d_n0);
      } else if constexpr (kStoresMatrices) {
        if (read_c) stage(IntConstant<1>{});
        else if (params.alpha == 1.0f) stage_matrices(IntConstant<1>{});
        else stage_matrices(IntConstant<0>{});
      } else {
        if (read_c) stage(IntConstant<1>{});
        else stage(IntConstant<0>{});
      }
      ptx::fence_proxy_async_shared();
      ptx::named_barrier_sync(barrier_id, kStoreThreads);
      if (leader) {
        each_box(maps.d, maps.d_tail, consumer, row0, n_tile, chunk,
                 [&](const ptx::TensorMap* map, int offset, int x, int y) {
                   ptx::tma_store_2d(map, staging + offset, x, y);
                 });
        ptx::tma_store_commit_group();
      }
    }
  }

  // 16 bytes starting `shift` bytes (even, < 16) into the 32 bytes lo:hi. Q = shift / 4 is a
  // template argument so the word indices are constants (no local-memory array).
  template <int Q>
  __device__ __forceinline__ static uint4 shifted_chunk(const unsigned (&w)[8], unsigned bits) {
    return make_uint4(__funnelshift_r(w[Q], w[Q + 1], bits),
                      __funnelshift_r(w[Q + 1], w[Q + 2], bits),
                      __funnelshift_r(w[Q + 2], w[Q + 3], bits),
                      __funnelshift_r(w[Q + 3], w[Q + 4], bits));
  }
  __device__ __forceinline__ static uint4 shifted_chunk(uint4 lo, uint4 hi, int shift) {
    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const unsigned bits = 8 * (shift % 4);
    switch (shift / 4) {
      case 0: return shifted_chunk<0>(w, bits);
      case 1: return shifted_chunk<1>(w, bits);
      case 2: return shifted_chunk<2>(w, bits);
      default: return shifted_chunk<3>(w, bits);
    }
  }

  // Rows TMA cannot store (ldd, ldc or the rows' end off 16 bytes), not transposed: the tile is
  // staged as for TMA (alpha * acc + beta * C, C read by the threads from the caller's rows),
  // then each warp writes 16 of the consumer's rows. Per row, the elements before the caller's
  // first 16-byte boundary (`head`) and after its last go out one by one; every chunk between is
  // one aligned 16-byte store, assembled from the two staged chunks it straddles (the staging
  // buffer's chunks sit at multiples of 16 bytes from the tile's first column). One 2-byte store
  // per element ran at 1.4 TB/s in a plain write kernel and 0.6 TB/s in the register epilogue,
  // where 16-byte stores reach 4.1 (H200, 264 MB).
  __device__ static void store_staged(float (&acc)[G::kSlabs][G::kAccum],
                                      const SharedStorage<Cfg>& smem, const GemmParams& params,
                                      int consumer, int row0, int n_tile, int row_limit,
                                      Fused& fused) {
    constexpr int kChunkElems = 16 / Cfg::out_bytes;
    constexpr int kChunksPerRow = G::kDCols / kChunkElems;
    constexpr int kRowsPerWarp = G::kRowsPerConsumer / 4;
    constexpr int kEdgeSlots = 2 * (kChunkElems - 1);   // head and tail elements of one row
    static_assert(G::kDCols % kChunkElems == 0, "staged rows are whole 16-byte chunks");
    const int thread = threadIdx.x % 128, warp = thread / 32, lane = thread % 32;
    const unsigned barrier_id = 1 + consumer;   // 0 is __syncthreads
    const int row_base = G::consumer_row0(consumer);
    const long long m0 = row0 + row_base;
    const int d_n0 = n_tile * G::kDCols;   // D's columns from d_n0
    const int cols = G::kDN - d_n0 < G::kDCols ? G::kDN - d_n0 : G::kDCols;
    unsigned char* staging = smem.d();
    unsigned char* d = static_cast<unsigned char*>(params.d);
    const unsigned char* c = static_cast<const unsigned char*>(params.c);

    // The previous tile's rows must have been read out before they are rewritten.
    ptx::named_barrier_sync(barrier_id, kStoreThreads);
    const auto stage = [&](auto with_c) {
      for_each_pair([&](int slab, int r, int row, int col) {
        const float2 v = pair_values(acc, fused, params.alpha, slab, r);
        float v0 = v.x, v1 = v.y;
        if constexpr (decltype(with_c)::value) {
          const long long grow = m0 + row;
          const int gcol = d_n0 + col;
          if (grow < row_limit && gcol < G::kDN) {
            const unsigned char* pc = c + (grow * params.ldc + gcol) * Cfg::out_bytes;
            v0 += params.beta * load_c_value(pc);
            if (gcol + 1 < G::kDN) v1 += params.beta * load_c_value(pc + Cfg::out_bytes);
          }
        }
        store_pair(staging + staging_offset(row_base + row, col), v0, v1);
      });
    };
    if (params.beta != 0.0f) stage(IntConstant<1>{});
    else stage(IntConstant<0>{});
    ptx::named_barrier_sync(barrier_id, kStoreThreads);

    // Where row `row` (of this warp's rows) starts in the caller's D, and its head length.
    const auto row_start = [&](int row, unsigned char*& dst, int& head) {
      dst = d + ((m0 + row) * params.ldd + d_n0) * Cfg::out_bytes;
      const int misalign = int(reinterpret_cast<unsigned long long>(dst) % 16);
      head = misalign == 0 ? 0 : (16 - misalign) / Cfg::out_bytes;
      if (head > cols) head = cols;
    };
    const int first_row = warp * kRowsPerWarp;
    // Each lane's chunks in batches: the batch's shared-memory loads are all issued before its
    // stores (one load, then its store, waited out each load's latency in turn).
    constexpr int kBatch = 4;
    // Rows of 28 to 31 chunks (224 to 248 bf16 columns) go a row per step, a chunk per lane, so
    // the row's address, head and shift are the warp's (no divergence in shifted_chunk). Cut
    // flat, a warp's 32 tasks straddle two rows of different shifts, and the loop was
    // issue-bound (9428 x 2354 x 26, 128x240, ncu: 53 us of stores against TMA's 23). A row per
    // step: 65.1 -> 53.7 us there, 2545 x 5953 x 23 -15% (H200). Narrower rows keep the flat
    // cut, which takes up to 44% fewer steps (16 rows of 18 chunks: 9 against 16); 32 chunks
    // are a row a step either way.
    constexpr bool kRowPerStep = kChunksPerRow >= 28 && kChunksPerRow < 32;
    constexpr int kChunkTasks = kRowsPerWarp * kChunksPerRow;
    constexpr int kSteps = kRowPerStep ? kRowsPerWarp : (kChunkTasks + 31) / 32;
#pragma unroll 1
    for (int first = 0; first < kSteps; first += kBatch) {
      uint4 out[kBatch];
      unsigned char* dst[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        dst[b] = nullptr;
        int row = first_row + first + b, chunk = lane;
        if constexpr (kRowPerStep) {
          if (first + b >= kSteps || m0 + row >= row_limit) continue;
        } else {
          const int idx = lane + 32 * (first + b);
          if (first + b >= kSteps || idx >= kChunkTasks) continue;
          row = first_row + idx / kChunksPerRow, chunk = idx % kChunksPerRow;
          if (m0 + row >= row_limit) continue;
        }
        unsigned char* row_dst;
        int head;
        row_start(row, row_dst, head);
        if (chunk >= (cols - head) / kChunkElems) continue;
        // The staged chunk holding the first element, and the next one when the chunk straddles.
        const uint4 lo = *reinterpret_cast<const uint4*>(
            staging + staging_offset(row_base + row, chunk * kChunkElems));
        out[b] = lo;
        if (head != 0) {
          const uint4 hi = *reinterpret_cast<const uint4*>(
              staging + staging_offset(row_base + row, (chunk + 1) * kChunkElems));
          out[b] = shifted_chunk(lo, hi, head * Cfg::out_bytes);
        }
        dst[b] = row_dst + (head + chunk * kChunkElems) * Cfg::out_bytes;
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b)
        if (dst[b] != nullptr) *reinterpret_cast<uint4*>(dst[b]) = out[b];
    }
    // The head and tail elements, all of a lane's at once.
    using Element = typename StagedElement<Cfg::out_bytes>::type;
    constexpr int kEdgeTasks = kRowsPerWarp * kEdgeSlots;
    constexpr int kEdgeIters = (kEdgeTasks + 31) / 32;
    Element value[kEdgeIters];
    Element* edge_dst[kEdgeIters];
#pragma unroll
    for (int i = 0; i < kEdgeIters; ++i) {
      edge_dst[i] = nullptr;
      const int idx = lane + 32 * i;
      if (idx >= kEdgeTasks) continue;
      const int row = first_row + idx / kEdgeSlots, slot = idx % kEdgeSlots;
      if (m0 + row >= row_limit) continue;
      unsigned char* row_dst;
      int head;
      row_start(row, row_dst, head);
      const int tail_begin = head + (cols - head) / kChunkElems * kChunkElems;
      const int col = slot < head ? slot : tail_begin + (slot - head);
      if (slot >= head && col >= cols) continue;
      value[i] = *reinterpret_cast<const Element*>(staging + staging_offset(row_base + row, col));
      edge_dst[i] = reinterpret_cast<Element*>(row_dst + col * Cfg::out_bytes);
    }
#pragma unroll
    for (int i = 0; i < kEdgeIters; ++i)
      if (edge_dst[i] != nullptr) *edge_dst[i] = value[i];
  }

  __device__ __forceinline__ static void store_value(unsigned char* p, float v) {
    if constexpr (Cfg::out_kind == 0) *reinterpret_cast<unsigned short*>(p) = ptx::float_to_bf16(v);
    else if constexpr (Cfg::out_kind == 1) *reinterpret_cast<unsigned short*>(p) = ptx::float_to_f16(v);
    else *reinterpret_cast<float*>(p) = v;
  }

  // Straight from registers to global memory with bounds checks: the teaching steps (no TMA),
  // masked grouped tiles past their group's valid rows (with the TMA store), and D^T
  // (Cfg::d_transposed). Rows TMA cannot store otherwise go through store_staged. No row at or
  // beyond `row_limit` (params.m, or the group's limit) is written.
  __device__ static void store_threads(float (&acc)[G::kSlabs][G::kAccum], const GemmParams& params,
                                       int consumer, int row0, int n_tile, int row_limit,
                                       Fused& fused) {
    const int m0 = row0 + G::consumer_row0(consumer);
    const int d_n0 = n_tile * G::kDCols;   // the tile's first column of D
    unsigned char* d = static_cast<unsigned char*>(params.d);
    const unsigned char* c = static_cast<const unsigned char*>(params.c);
    const bool read_c = params.beta != 0.0f;
    for_each_pair([&](int slab, int r, int row, int col) {
      const float2 v = pair_values(acc, fused, params.alpha, slab, r);   // every lane: it shuffles
      float v0 = v.x, v1 = v.y;
      const long long grow = m0 + row;
      const int gcol = d_n0 + col;
      if (grow >= row_limit || gcol >= G::kDN) return;
      const bool both = gcol + 1 < G::kDN;
      if constexpr (Cfg::d_transposed) {
        // The kernel's (row, column) is the caller's (column, row): the pair is two rows of
        // the caller's D, ldd apart. A warp's store covers 8 kernel rows (16 contiguous bytes
        // of bf16) in each of 4 of the caller's rows.
        const long long first = (long long)gcol * params.ldd + grow;
        if (read_c) {
          const long long first_c = (long long)gcol * params.ldc + grow;
          v0 += params.beta * load_c_value(c + first_c * Cfg::out_bytes);
          if (both) v1 += params.beta * load_c_value(c + (first_c + params.ldc) * Cfg::out_bytes);
        }
        store_value(d + first * Cfg::out_bytes, v0);
        if (both) store_value(d + (first + params.ldd) * Cfg::out_bytes, v1);
        return;
      }
      if (read_c) {
        const unsigned char* pc = c + (grow * params.ldc + gcol) * Cfg::out_bytes;
        v0 += params.beta * load_c_value(pc);
        if (both) v1 += params.beta * load_c_value(pc + Cfg::out_bytes);
      }
      unsigned char* p = d + (grow * params.ldd + gcol) * Cfg::out_bytes;
      // The pair goes out as one store where its address is aligned to the pair's size: with
      // an odd ldd every other row is not (a misaligned access faults, PTX ISA "Addresses").
      if (both && reinterpret_cast<unsigned long long>(p) % (2 * Cfg::out_bytes) == 0) {
        store_pair(p, v0, v1);
      } else {
        store_value(p, v0);
        if (both) store_value(p + Cfg::out_bytes, v1);
      }
    });
  }
};

}  // namespace autogemm::sm90
