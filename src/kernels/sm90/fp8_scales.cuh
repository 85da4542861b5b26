#pragma once
// Geometry of FP8 scales, shared by the host (the rules in plan/rules.cpp) and the
// kernel (NVRTC), like gemm_layout.cuh, so both sides agree on which tiles the promotion
// handles.
//
// Block scaling (DeepSeek-V3 / DeepGEMM convention): A (M x K) has one FP32 scale per row per
// 128 elements of K, stored M x ceil(K/128) row-major; B (N x K) has one per 128 x 128 block,
// stored ceil(N/128) x ceil(K/128) row-major. A k-block of the kernel is exactly 128 FP8
// elements of K (one 128-byte swizzle row), so each k-block has one scale per row of A and one
// per 128 columns of B. 1x128 scaling on both (weight gradients, whose K is the tokens: both
// operands quantised per token group, DeepGEMM's "1D1D"): B too has one scale per row per 128 of
// K, stored N x ceil(K/128) row-major, so each k-block has one scale per column of D.
// No includes: the host reaches this file as "kernels/sm90/...", NVRTC as "sm90/...".
#ifndef AUTOGEMM_HD
#if defined(__CUDACC__)
#define AUTOGEMM_HD __host__ __device__
#else
#define AUTOGEMM_HD
#endif
#endif

namespace autogemm::sm90 {

constexpr int kScaleBlock = 128;   // elements of K (and of N for B) per scale

// Scaling kinds as the generated Config spells them (Cfg::scaling).
constexpr int kScalingNone = 0;        // 16-bit inputs
constexpr int kScalingPerTensor = 1;   // one FP32 scale for A, one for B
constexpr int kScalingBlock = 2;       // 1x128 for A, 128x128 for B
// One FP32 scale per row of A and per row of B (per column of D): the main loop sums unscaled
// products, and the fused epilogue multiplies by both (fused_epilogue.cuh, Cfg::epilogue).
constexpr int kScalingRowwise = 3;
constexpr int kScalingBlock1x128 = 4;   // 1x128 for A and for B

// B scales in a stage's scale slot (gemm_layout.cuh) for a Cfg::scaling: block scaling's two
// 128-column blocks, or 1x128's one per column of the tile; 0 where no scales are staged.
AUTOGEMM_HD constexpr int staged_b_scales(int scaling, int block_n) {
  return scaling == kScalingBlock ? 2 : scaling == kScalingBlock1x128 ? block_n : 0;
}

AUTOGEMM_HD constexpr int gcd_int(int a, int b) { return b == 0 ? a : gcd_int(b, a % b); }

// The most 128-column scale blocks of B one tile of `block_n` columns can touch. Tiles start at
// multiples of block_n, so their offset inside a scale block is a multiple of
// gcd(block_n, 128), at most 128 - gcd; the tile then ends at most 128 - gcd + block_n columns
// after the block start. E.g. 64 -> 1, 96 -> 2, 160 -> 2, 256 -> 2, 152 -> 3.
AUTOGEMM_HD constexpr int max_b_scale_blocks_per_tile(int block_n) {
  const int worst_end = kScaleBlock - gcd_int(block_n, kScaleBlock) + block_n;
  return (worst_end + kScaleBlock - 1) / kScaleBlock;
}

// Whether the column where a tile passes from one 128-column B scale block to the next differs
// from tile to tile (block_n neither divides 128 nor is a multiple of it, e.g. 96, 112, 160):
// the promotion then selects each 8-column group's scale at run time.
AUTOGEMM_HD constexpr bool b_scale_split_varies(int block_n) {
  return kScaleBlock % block_n != 0 && block_n % kScaleBlock != 0;
}

// The promotion selects between two B scales per tile (the block the tile starts in and the
// next one), so a tile may touch at most two.
constexpr int kMaxBScaleBlocksPerTile = 2;

}  // namespace autogemm::sm90
