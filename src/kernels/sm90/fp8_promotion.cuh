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
// The consumer loop (gemm_kernel.cuh) calls these hooks; for 16-bit inputs Promotion is empty
// and mma() is Cfg::mma on the accumulators, so the BF16/FP16 kernel is unchanged.
#include "ptx/wgmma.cuh"
#include "sm90/fp8_scales.cuh"
#include "sm90/gemm_common.cuh"

namespace autogemm::sm90 {

namespace fp8_detail {

// A scale, or 0 when `valid` is false (rows past M). Scales are read-only for the whole kernel,
// so the non-coherent path (ld.global.nc, L1-cached) is allowed (PTX ISA "ld.global.nc").
// volatile keeps the load where it is issued (one k-block ahead of its use), not sunk to the
// use after the wgmma wait.
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
  __device__ Promotion(const GemmParams&, int) {}
  __device__ void start_tile(int, int, int) {}
  template <int kBuffer>
  __device__ void mma(float (&acc)[G::kAccum], int, int, ptx::u64 desc_a, ptx::u64 desc_b) {
    Cfg::mma(acc, desc_a, desc_b);
  }
  __device__ void fence_operands() {}
  __device__ void prefetch_scales(int) {}
  template <int kBuffer>
  __device__ void promote(float (&)[G::kSlabs][G::kAccum]) {}
};

template <class Cfg>
struct Promotion<Cfg, true> {
  using G = Geometry<Cfg>;
  static constexpr bool kEnabled = true;
  static constexpr int kBuffers = Cfg::promotion_buffers;
  static constexpr bool kBlockScaled = Cfg::scaling == kScalingBlock;
  static constexpr int kKBlocks = G::kNumKBlocks;   // = ceil(K / 128): columns of both scale arrays
  static constexpr int kNBlocks = (Cfg::n + kScaleBlock - 1) / kScaleBlock;   // rows of scale_b
  static constexpr int kGroups = Cfg::block_n / 8;   // 8-column groups, 4 registers each per slab
  // Which B scale a column takes: the tile lies inside one scale block (block_n divides 128),
  // or splits at a fixed column (block_n a multiple of 128: tiles start on block boundaries),
  // or splits at a column known at tile start (e.g. 96, 160).
  static constexpr bool kOneBScale = kScaleBlock % Cfg::block_n == 0;
  static constexpr bool kFixedSplit = Cfg::block_n % kScaleBlock == 0;

  static_assert(Cfg::block_k * G::kInBytes == kScaleBlock, "a k-block is one 128-element scale block");
  static_assert(kBuffers == 1 || kBuffers == 2, "one or two promotion temporaries");
  static_assert(Cfg::tma_load, "FP8 tiles arrive by TMA (the threads path copies 16-bit elements)");
  static_assert(Cfg::a_k_major && Cfg::b_k_major, "wgmma reads FP8 operands K-major only");
  static_assert(!kBlockScaled ||
                    max_b_scale_blocks_per_tile(Cfg::block_n) <= kMaxBScaleBlocksPerTile,
                "a tile may touch at most two 128-column B scale blocks");

  float temp[kBuffers][G::kSlabs][G::kAccum];   // k-block partial sums (wgmma accumulators)
  const float* scale_a;
  const float* scale_b;
  int m;
  int thread_row;        // first row of this thread's fragment, relative to the tile
  float tensor_scale;    // per-tensor: scale_a[0] * scale_b[0]
  // Per tile (block scaling):
  const float* a_scales;     // scale_a row of `thread_row` in this tile
  int rows_left;             // rows of A from thread_row to M
  const float* b_first;      // scale_b row of the 128-column block the tile starts in
  const float* b_second;     // and of the next one (clamped to the last block)
  int first_groups;          // 8-column groups j < first_groups take b_first
  float a_now[G::kSlabs][2], a_next[G::kSlabs][2];   // rows g and g + 8 of each m64 slab
  float b_now[2], b_next[2];

  __device__ Promotion(const GemmParams& params, int consumer)
      : scale_a(params.scale_a), scale_b(params.scale_b), m(params.m) {
    // Accumulator fragment (hopper-facts.md 2.3): thread (warp w, lane l) holds rows
    // 16w + l/4 and 16w + l/4 + 8 of each m64 slab.
    const int thread = threadIdx.x % 128;
    thread_row = consumer * G::kRowsPerConsumer + 16 * (thread / 32) + (thread % 32) / 4;
    if constexpr (!kBlockScaled)
      tensor_scale = fp8_detail::load_scale(scale_a, true) * fp8_detail::load_scale(scale_b, true);
  }

  // An empty split-K range may start past the last k-block: nothing is read then.
  __device__ void load_block_scales(int k_block, float (&a)[G::kSlabs][2], float (&b)[2]) const {
    const bool in_range = k_block < kKBlocks;
#pragma unroll
    for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        constexpr long long kRowStride = kKBlocks;
        const int row = s * 64 + 8 * half;
        a[s][half] = fp8_detail::load_scale(a_scales + row * kRowStride + k_block,
                                               in_range && row < rows_left);
      }
    b[0] = fp8_detail::load_scale(b_first + k_block, in_range);
    if constexpr (!kOneBScale) b[1] = fp8_detail::load_scale(b_second + k_block, in_range);
  }

  // `first_k_block`: where this tile's k-range starts (0, or the split's first block).
  __device__ void start_tile(int m_tile, int n_tile, int first_k_block) {
    if constexpr (kBlockScaled) {
      const int row0 = m_tile * Cfg::block_m + thread_row;
      rows_left = m - row0;
      a_scales = scale_a + static_cast<long long>(min(row0, m - 1)) * kKBlocks;
      // A cluster partner's tile past the N edge still runs (tile_scheduler.cuh): clamp, its
      // columns are dropped by the store anyway.
      const int n0 = n_tile * Cfg::block_n;
      const int first_block = min(n0 / kScaleBlock, kNBlocks - 1);
      b_first = scale_b + static_cast<long long>(first_block) * kKBlocks;
      b_second = scale_b + static_cast<long long>(min(first_block + 1, kNBlocks - 1)) * kKBlocks;
      first_groups = (kScaleBlock - n0 % kScaleBlock) / 8;   // n0 is a multiple of 8
      load_block_scales(first_k_block, a_now, b_now);
    }
  }

  // One k32 wgmma of slab `slab` into temporary kBuffer: the first step of the k-block
  // overwrites it.
  template <int kBuffer>
  __device__ void mma(float (&)[G::kAccum], int slab, int k_step, ptx::u64 desc_a, ptx::u64 desc_b) {
    Cfg::mma(temp[kBuffer][slab], desc_a, desc_b, k_step != 0 ? 1 : 0);
  }

  __device__ void fence_operands() {
#pragma unroll
    for (int b = 0; b < kBuffers; ++b)
#pragma unroll
      for (int s = 0; s < G::kSlabs; ++s)
#pragma unroll
        for (int r = 0; r < G::kAccum; ++r) ptx::fence_operand(temp[b][s][r]);
  }

  // Loads k_block + 1's scales into the `next` set. One buffer: issued right after k_block's
  // wgmmas, used one k-block later. Two buffers: issued after k_block - 1's promotion, used
  // after k_block + 1's wgmmas are issued.
  __device__ void prefetch_scales(int k_block) {
    if constexpr (kBlockScaled)
      if (k_block + 1 < kKBlocks) load_block_scales(k_block + 1, a_next, b_next);
  }

  // After the wait for the k-block's wgmmas: acc += temp[kBuffer] * scale, then the prefetched
  // scales become current.
  template <int kBuffer>
  __device__ void promote(float (&acc)[G::kSlabs][G::kAccum]) {
#pragma unroll
    for (int s = 0; s < G::kSlabs; ++s) {
      float top_first, bottom_first, top_second = 0.f, bottom_second = 0.f;
      if constexpr (kBlockScaled) {
        top_first = a_now[s][0] * b_now[0];
        bottom_first = a_now[s][1] * b_now[0];
        if constexpr (!kOneBScale) {
          top_second = a_now[s][0] * b_now[1];
          bottom_second = a_now[s][1] * b_now[1];
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
        const float* t = temp[kBuffer][s];
        acc[s][4 * j + 0] += t[4 * j + 0] * top;      // row g
        acc[s][4 * j + 1] += t[4 * j + 1] * top;
        acc[s][4 * j + 2] += t[4 * j + 2] * bottom;   // row g + 8
        acc[s][4 * j + 3] += t[4 * j + 3] * bottom;
      }
    }
    if constexpr (kBlockScaled) {
#pragma unroll
      for (int s = 0; s < G::kSlabs; ++s) {
        a_now[s][0] = a_next[s][0];
        a_now[s][1] = a_next[s][1];
      }
      b_now[0] = b_next[0];
      if constexpr (!kOneBScale) b_now[1] = b_next[1];
    }
  }
};

}  // namespace autogemm::sm90
