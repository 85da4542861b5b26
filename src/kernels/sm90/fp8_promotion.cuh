#pragma once
// FP8 promotion (two-level accumulation): each k-block's wgmmas (4 x k32 = 128 elements of K)
// write a temporary FP32 fragment, and after the wait the consumer adds it, scaled, into the
// real accumulators:
//     acc += temp * scale_a(row, k_block) * scale_b(column block, k_block)
// Hopper's FP8 matrix units accumulate with reduced precision (DeepGEMM README; hopper-facts.md
// 2.2), so promoting every 128 elements of K also makes the accuracy independent of K. The first
// k32 step of a k-block passes scale-d = 0 (D = A*B), so temp is never zeroed by normal
// instructions, which would serialise the wgmma pipeline (ptxas C7515, hopper-facts.md 2.4).
//
// Per-tensor scaling takes the same path with one constant scale (scale_a[0] * scale_b[0],
// read once): the promotion FMA costs the same as an add, scaling needs no epilogue change, and
// the result does not lose precision with K (cuBLASLt's default, without FAST_ACCUM, promotes
// too).
//
// With Cfg::promotion_buffers = 2 there are two temporaries: k-block i+1's wgmmas write one
// while k-block i's sums are read from the other, so the FMAs of the promotion overlap the
// matrix units instead of waiting for them (one wgmma group stays in flight, wait_group 1).
// It costs a third fragment of registers (accumulators + 2 temporaries).
//
// Block scales reach the consumer through the pipeline: the producer copies each k-block's A
// and B scales into the stage (fp8_scale_copy.cuh) and the consumer reads them from shared
// memory right after the stage's full barrier (read_stage_scales).
//
// With Cfg::ordered_issue and one temporary ("slab waves"), a consumer with several m64 slabs
// issues, waits for and promotes one slab at a time, so the temporary is one slab's fragment
// (DeepGEMM's 256-row tiles): 256 x 128 fits 64 + 128 registers. The other consumer's turn keeps
// the tensor pipe busy while this one promotes (gemm_kernel.cuh, IssueTurns).
//
// The consumer loop (gemm_kernel.cuh) calls these hooks; for 16-bit inputs Promotion is empty
// and mma() is Cfg::mma on the accumulators, so the BF16/FP16 kernel is unchanged.
#include "ptx/wgmma.cuh"
#include "sm90/fp8_scales.cuh"
#include "sm90/gemm_common.cuh"

namespace autogemm::sm90 {

namespace fp8_detail {

// A per-tensor scale, read once per consumer (or 0 when `valid` is false). Scales are
// read-only for the whole kernel, so the non-coherent path (ld.global.nc) is allowed (PTX ISA
// "ld.global.nc"). Block scales come through shared memory instead (fp8_scale_copy.cuh).
__device__ __forceinline__ float load_scale(const float* p, bool valid) {
  float v;
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\tmov.b32 %0, 0;\n\t"
      "@p ld.global.nc.f32 %0, [%1];\n\t}"
      : "=f"(v)
      : "l"(p), "r"(static_cast<int>(valid)));
  return v;
}

}  // namespace fp8_detail

// 16-bit inputs: wgmma accumulates straight into acc.
template <class Cfg, bool kScaled = (Cfg::scaling != kScalingNone)>
struct Promotion {
  using G = Geometry<Cfg>;
  static constexpr bool kEnabled = false;
  static constexpr int kBuffers = 1;
  static constexpr bool kSlabWaves = false;
  __device__ Promotion(const GemmParams&, int) {}
  __device__ void start_tile(int, int) {}
  template <int kBuffer>
  __device__ void read_stage_scales(const SharedStorage<Cfg>&, int) {}
  template <int kBuffer>
  __device__ void mma(float (&acc)[G::kAccum], int, int, ptx::u64 desc_a, ptx::u64 desc_b) {
    Cfg::mma(acc, desc_a, desc_b);
  }
  __device__ void fence_operands() {}
  template <int kBuffer>
  __device__ void promote(float (&)[G::kSlabs][G::kAccum]) {}
  template <int kBuffer>
  __device__ void promote_slab(float (&)[G::kSlabs][G::kAccum], int) {}
};

template <class Cfg>
struct Promotion<Cfg, true> {
  using G = Geometry<Cfg>;
  static constexpr bool kEnabled = true;
  static constexpr int kBuffers = Cfg::promotion_buffers;
  // One temporary shared by the slabs, each promoted before the next is issued.
  static constexpr bool kSlabWaves = kBuffers == 1 && Cfg::ordered_issue;
  static constexpr int kTempSlabs = kSlabWaves ? 1 : G::kSlabs;
  static constexpr bool kBlockScaled = Cfg::scaling == kScalingBlock;
  static constexpr int kGroups = Cfg::block_n / 8;   // 8-column groups, 4 registers each per slab
  // Which B scale a column takes: the tile lies inside one scale block (block_n divides 128),
  // or splits at a fixed column (block_n a multiple of 128: tiles start on block boundaries),
  // or splits at a column known at tile start (e.g. 96, 160).
  static constexpr bool kOneBScale = kScaleBlock % Cfg::block_n == 0;
  static constexpr bool kFixedSplit = Cfg::block_n % kScaleBlock == 0;
  // Swapped operands (Cfg::d_transposed, plan/swap_ab.hpp): the tile's rows are the call's
  // columns, scaled per 128 x 128 block (one scale per m64 slab: a slab never straddles two),
  // and its columns the call's rows, scaled one by one (fp8_scale_copy.cuh
  // produce_swapped_scales).
  static constexpr bool kSwapped = kBlockScaled && Cfg::d_transposed;
  // 1x128 scales on both operands (weight gradients): a scale per row, as block scaling's A, and
  // one per column of the tile, read like the swapped columns' (fp8_scale_copy.cuh).
  static constexpr bool kColumnScaled = Cfg::scaling == kScalingBlock1x128;
  static constexpr bool kPerColumn = kSwapped || kColumnScaled;

  static_assert(Cfg::block_k * G::kInBytes == kScaleBlock, "a k-block is one 128-element scale block");
  static_assert(kBuffers == 1 || kBuffers == 2, "one or two promotion temporaries");
  static_assert(Cfg::tma_load, "FP8 tiles arrive by TMA (the threads path copies 16-bit elements)");
  static_assert(Cfg::a_k_major && Cfg::b_k_major, "wgmma reads FP8 operands K-major only");
  static_assert(!kBlockScaled || kSwapped ||
                    max_b_scale_blocks_per_tile(Cfg::block_n) <= kMaxBScaleBlocksPerTile,
                "a tile may touch at most two 128-column B scale blocks");
  static_assert((kBlockScaled || kColumnScaled) == G::kStagedScales,
                "block and 1x128 scales arrive with the stage");
  static_assert(!kColumnScaled || (!Cfg::d_transposed && kBuffers == 1 &&
                                   (!Cfg::ordered_issue || G::kSlabs == 1)),
                "1x128 B scales: unswapped, one temporary (each holds 2 x block_n / 8 column "
                "scales in registers), turns with one slab a consumer (plan/rules.cpp)");
  static_assert(!kSwapped || Cfg::block_n <= Cfg::block_m,
                "swapped block scales: the block_n column scales take the slot's BLOCK_M row "
                "scales' place");
  static_assert(!kBlockScaled || kSwapped || kBuffers == 1 || !b_scale_split_varies(Cfg::block_n),
                "overlapped promotion with a per-tile B scale split: minutes in ptxas, spills "
                "(plan/rules.cpp)");

  float temp[kBuffers][kTempSlabs][G::kAccum];   // k-block partial sums (wgmma accumulators)
  // Block scaling: scale_a * scale_b of the k-block whose sums temp[b] holds, for rows g and
  // g + 8 of each m64 slab and the tile's first (and second) 128-column B block; read from the
  // stage's scale slot before the stage is released. Stored as products: fewer registers than
  // the factors when the tile has one B scale, and the multiply is off the promotion's path.
  static constexpr int kBScales = kOneBScale || kColumnScaled ? 1 : 2;
  float scale[kBuffers][kSwapped ? 1 : G::kSlabs][2][kBScales];
  // Swapped: the k-block's row-block scale of each slab and the scales of the thread's columns
  // 8j + 2p and 8j + 2p + 1 (p = lane % 4) of each 8-column group j. 1x128 scaled: the same
  // column scales, and the rows' in `scale` (kBScales = 1).
  float row_scale[kBuffers][kSwapped ? G::kSlabs : 1];
  float column_scale[kBuffers][kPerColumn ? kGroups : 1][2];
  int thread_row;        // first row of this thread's fragment, relative to the tile
  int thread_column;     // first column of this thread's fragment in each 8-column group
  int tile_row_in_block; // swapped, per tile: the tile's first row inside its 128-row scale
                         // block (0, or 64 for a 64-row tile at an odd index)
  int first_groups;      // per tile: 8-column groups j < first_groups take the first B scale
  float tensor_scale;    // per-tensor: scale_a[0] * scale_b[0]; rowwise: 1 (the epilogue scales)

  __device__ Promotion(const GemmParams& params, int consumer) {
    // Accumulator fragment (hopper-facts.md 2.3): thread (warp w, lane l) holds rows
    // 16w + l/4 and 16w + l/4 + 8 of each m64 slab.
    const int thread = threadIdx.x % 128;
    thread_row = G::consumer_row0(consumer) + 16 * (thread / 32) + (thread % 32) / 4;
    thread_column = 2 * (thread % 4);
    if constexpr (Cfg::scaling == kScalingRowwise)
      tensor_scale = 1.0f;
    else if constexpr (!kBlockScaled && !kColumnScaled)
      tensor_scale = fp8_detail::load_scale(params.scale_a, true) *
                     fp8_detail::load_scale(params.scale_b, true);
  }

  // Per tile: where its columns pass to the next 128-column B scale block (swapped: where its
  // rows start inside their 128-row block).
  __device__ void start_tile(int m_tile, int n_tile) {
    if constexpr (kSwapped) {
      tile_row_in_block = m_tile * Cfg::block_m % kScaleBlock;
      return;
    }
    if constexpr (kBlockScaled && !kOneBScale && !kFixedSplit)
      first_groups = (kScaleBlock - n_tile * Cfg::block_n % kScaleBlock) / 8;   // n0 % 8 == 0
  }

  // After the stage's full barrier, before it is released: this k-block's scales, for the
  // promotion of temp[kBuffer]. Rows g and g + 8 of a warp are 8 consecutive words each, so a
  // warp reads 16 words in two broadcast-free wavefronts.
  template <int kBuffer>
  __device__ void read_stage_scales(const SharedStorage<Cfg>& smem, int stage) {
    if constexpr (kSwapped) {
      const float* columns = smem.scale_a(stage) + thread_column;
      const float* row_blocks = smem.scale_b(stage);
      // The slot's first row block is the one the tile starts in; slab s's rows, all in one
      // block (slabs start at multiples of 64), are those of this thread's row in it.
#pragma unroll
      for (int s = 0; s < G::kSlabs; ++s)
        row_scale[kBuffer][s] =
            ptx::ld_shared_f32(row_blocks + (tile_row_in_block + thread_row + 64 * s) / kScaleBlock);
#pragma unroll
      for (int j = 0; j < kGroups; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) column_scale[kBuffer][j][e] = ptx::ld_shared_f32(columns + 8 * j + e);
    } else if constexpr (kColumnScaled) {
      const float* a = smem.scale_a(stage) + thread_row;
      const float* columns = smem.scale_b(stage) + thread_column;
#pragma unroll
      for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
        for (int half = 0; half < 2; ++half)
          scale[kBuffer][s][half][0] = ptx::ld_shared_f32(a + s * 64 + 8 * half);
#pragma unroll
      for (int j = 0; j < kGroups; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) column_scale[kBuffer][j][e] = ptx::ld_shared_f32(columns + 8 * j + e);
    } else if constexpr (kBlockScaled) {
      const float* a = smem.scale_a(stage) + thread_row;
      const float* b = smem.scale_b(stage);
      float b_value[kBScales];
#pragma unroll
      for (int i = 0; i < kBScales; ++i) b_value[i] = ptx::ld_shared_f32(b + i);
#pragma unroll
      for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const float a_value = ptx::ld_shared_f32(a + s * 64 + 8 * half);
#pragma unroll
          for (int i = 0; i < kBScales; ++i) scale[kBuffer][s][half][i] = a_value * b_value[i];
        }
    }
  }

  // One k32 wgmma of slab `slab` into temporary kBuffer: the first step of the k-block
  // overwrites it.
  template <int kBuffer>
  __device__ void mma(float (&)[G::kAccum], int slab, int k_step, ptx::u64 desc_a, ptx::u64 desc_b) {
    Cfg::mma(temp[kBuffer][kSlabWaves ? 0 : slab], desc_a, desc_b, k_step != 0 ? 1 : 0);
  }

  __device__ void fence_operands() {
#pragma unroll
    for (int b = 0; b < kBuffers; ++b)
#pragma unroll
      for (int s = 0; s < kTempSlabs; ++s)
#pragma unroll
        for (int r = 0; r < G::kAccum; ++r) ptx::fence_operand(temp[b][s][r]);
  }

  // After the wait for the k-block's wgmmas: acc += temp[kBuffer] * scale.
  template <int kBuffer>
  __device__ void promote(float (&acc)[G::kSlabs][G::kAccum]) {
#pragma unroll
    for (int s = 0; s < G::kSlabs; ++s) promote_slab<kBuffer>(acc, s);
  }

  // The same for slab `s` (compile-time after unrolling) alone.
  template <int kBuffer>
  __device__ void promote_slab(float (&acc)[G::kSlabs][G::kAccum], int s) {
    if constexpr (kSwapped) {
      // Registers 4j + e and 4j + 2 + e are rows g and g + 8 of column 8j + 2p + e.
      const float* t = temp[kBuffer][kSlabWaves ? 0 : s];
#pragma unroll
      for (int j = 0; j < kGroups; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float product = row_scale[kBuffer][s] * column_scale[kBuffer][j][e];
          acc[s][4 * j + e] += t[4 * j + e] * product;
          acc[s][4 * j + 2 + e] += t[4 * j + 2 + e] * product;
        }
      return;
    }
    if constexpr (kColumnScaled) {
      // Registers 4j + e (row g) and 4j + 2 + e (row g + 8) of column 8j + 2p + e.
      const float* t = temp[kBuffer][kSlabWaves ? 0 : s];
      const float top = scale[kBuffer][s][0][0], bottom = scale[kBuffer][s][1][0];
#pragma unroll
      for (int j = 0; j < kGroups; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float column = column_scale[kBuffer][j][e];
          acc[s][4 * j + e] += t[4 * j + e] * (top * column);
          acc[s][4 * j + 2 + e] += t[4 * j + 2 + e] * (bottom * column);
        }
      return;
    }
    float top_first, bottom_first, top_second = 0.f, bottom_second = 0.f;
    if constexpr (kBlockScaled) {
      top_first = scale[kBuffer][s][0][0];
      bottom_first = scale[kBuffer][s][1][0];
      if constexpr (!kOneBScale) {
        top_second = scale[kBuffer][s][0][kBScales - 1];
        bottom_second = scale[kBuffer][s][1][kBScales - 1];
      }
    } else {
      top_first = bottom_first = tensor_scale;
    }
#pragma unroll
    for (int j = 0; j < kGroups; ++j) {
      // Uniform over the CTA and over j-ranges: a select, not a branch.
      bool first = true;
      if constexpr (kBlockScaled && !kOneBScale)
        first = kFixedSplit ? (j < kScaleBlock / 8) : (j < first_groups);
      const float top = first ? top_first : top_second;
      const float bottom = first ? bottom_first : bottom_second;
      const float* t = temp[kBuffer][kSlabWaves ? 0 : s];
      acc[s][4 * j + 0] += t[4 * j + 0] * top;      // row g
      acc[s][4 * j + 1] += t[4 * j + 1] * top;
      acc[s][4 * j + 2] += t[4 * j + 2] * bottom;   // row g + 8
      acc[s][4 * j + 3] += t[4 * j + 3] * bottom;
    }
  }
};

}  // namespace autogemm::sm90
