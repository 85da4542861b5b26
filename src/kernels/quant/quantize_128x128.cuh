#pragma once
// BF16/FP32 -> FP8 e4m3 with one scale per 128 x 128 block (the weights' scaling, problem.hpp).
// One thread block per 128 x 128 block: warp w holds rows w, w + 8, ..., w + 120, lane l the
// columns l, l + 32, l + 64, l + 96 of each, all 64 values in registers between the two passes
// (block maximum, then conversion). Partial blocks at the bottom and right edges take their
// scale from the elements that exist.
#include "quant/quant_common.cuh"

namespace autogemm::quant {
constexpr int kBlockThreads = 256;
constexpr int kBlockWarps = kBlockThreads / kWarp;
constexpr int kRowsPerWarp = kGroup / kBlockWarps;  // 16
}  // namespace autogemm::quant

// grid = ceil(rows / 128) * ceil(cols / 128) blocks (block b: block row b / col_blocks, block
// column b % col_blocks), block = 256 threads.
extern "C" __global__ void __launch_bounds__(256)
autogemm_quantize_fp8_128x128(const QuantizeParams p) {
  using namespace autogemm::quant;
  __shared__ float warp_amax[kBlockWarps];
  const long long col_blocks = (p.cols + kGroup - 1) / kGroup;
  const long long block_row = blockIdx.x / col_blocks;
  const long long block_col = blockIdx.x - block_row * col_blocks;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const long long first_col = block_col * kGroup + lane;

  float v[kRowsPerWarp][kPerLane];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const long long row = block_row * kGroup + warp + kBlockWarps * i;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const long long col = first_col + kWarp * j;
      v[i][j] = (row < p.rows && col < p.cols) ? load_as_float(p.x, row * p.ld + col, p.x_type)
                                               : 0.0f;
      amax = fmaxf(amax, fabsf(v[i][j]));
    }
  }
  amax = warp_max(amax);
  if (lane == 0) warp_amax[warp] = amax;
  __syncthreads();
  amax = warp_amax[0];
#pragma unroll
  for (int w = 1; w < kBlockWarps; ++w) amax = fmaxf(amax, warp_amax[w]);
  const float scale = group_scale(amax);
  const float inverse_scale = divide_rn(1.0f, scale);
  if (threadIdx.x == 0) p.scales[blockIdx.x] = scale;  // row-major row_blocks x col_blocks

#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const long long row = block_row * kGroup + warp + kBlockWarps * i;
    if (row >= p.rows) break;
#pragma unroll
    for (int j = 0; j < kPerLane; j += 2) {
      const unsigned short pair = quantize_pair(v[i][j], v[i][j + 1], inverse_scale);
      const long long col = first_col + kWarp * j;
      if (col < p.cols) p.q[row * p.cols + col] = (unsigned char)(pair & 0xFFu);
      if (col + kWarp < p.cols) p.q[row * p.cols + col + kWarp] = (unsigned char)(pair >> 8);
    }
  }
}
