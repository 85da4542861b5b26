#pragma once
// Block-scaled FP8, large M: the caller's A scales (M x ceil(K/128), row-major, the natural
// per-token layout) transposed to k-block-major, so the GEMM's scale warp copies each k-block's
// BLOCK_M scales from one contiguous run instead of gathering one word from each of BLOCK_M
// rows through L1 (128 sectors for 512 B; with the transposition 4096 x 7168 x 16384 went from
// 0.90 to 1.01 of cuBLASLt's speed). A 32 x 32 tile per block through shared memory: reads and
// writes both coalesced; the padding column keeps the transposed read free of bank
// conflicts. Memory-bound and small: 8 bytes per scale moved, 1.8 MB at M = 4096, K = 7168.
#include "sm90/scale_transpose_params.cuh"

extern "C" __global__ void autogemm_scale_a_transpose(const ScaleTransposeParams p) {
  constexpr int kTile = 32, kRowsPerPass = 8;   // block (32, 8)
  __shared__ float tile[kTile][kTile + 1];       // (rows, k-blocks) of the source
  const long long row0 = static_cast<long long>(blockIdx.x) * kTile;
  const long long kb0 = static_cast<long long>(blockIdx.y) * kTile;
  for (int r = threadIdx.y; r < kTile; r += kRowsPerPass) {
    const long long row = row0 + r, kb = kb0 + threadIdx.x;
    tile[r][threadIdx.x] = row < p.m && kb < p.k_blocks ? p.src[row * p.k_blocks + kb] : 0.0f;
  }
  __syncthreads();
  for (int c = threadIdx.y; c < kTile; c += kRowsPerPass) {
    const long long kb = kb0 + c, row = row0 + threadIdx.x;
    if (kb < p.k_blocks && row < p.dst_ld) p.dst[kb * p.dst_ld + row] = tile[threadIdx.x][c];
  }
}
