#pragma once
// BF16/FP32 -> FP8 e4m3 for weight gradients (issue 52): x is token-major (rows = tokens), and
// FP8 wgmma reads both operands K-major, K being the tokens. In one pass over x this writes x^T
// as e4m3 (cols x rows, each row 128 tokens of one column per scale) with one scale per column
// per 128 rows of x, the 1 x 128 layout of x^T (what the FP8 GEMM takes as its scales), and, when
// q is not null, x itself quantised 1 x 128 along its columns, exactly as
// autogemm_quantize_fp8_1x128 writes it (the forward pass's and the input gradient's operand).
//
// One block per 128 x 128 tile of x, 8 warps: warp w holds rows w, w + 8, ..., lane l columns l,
// l + 32, l + 64, l + 96 (the 1x128 kernel's lane order, so a row's warp maximum is its group
// amax), 64 values in registers. Column maxima go through shared memory; the transposed bytes
// are gathered in shared memory and leave as 16-byte runs of one column's tokens. Partial tiles
// at the edges use the elements that exist (their scales from those alone).
#include "quant/quant_common.cuh"

namespace autogemm::quant {

constexpr int kTileRowsPerWarp = kGroup / 8;   // 16 rows of the tile per warp

}  // namespace autogemm::quant

// grid: x = ceil(rows / 128) row tiles, y = ceil(cols / 128) column tiles; block = 256 threads.
extern "C" __global__ void __launch_bounds__(256)
autogemm_quantize_fp8_1x128_transposed(const QuantizeTransposedParams p) {
  using namespace autogemm::quant;
  __shared__ float column_max[8][kGroup];                 // per warp, per column of the tile
  __shared__ float column_inverse[kGroup];
  __shared__ __align__(16) unsigned char transposed[kGroup][kGroup + 16];  // [column][token]
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const long long row0 = (long long)blockIdx.x * kGroup, col0 = (long long)blockIdx.y * kGroup;
  const long long row_groups = (p.rows + kGroup - 1) / kGroup;
  const long long col_groups = (p.cols + kGroup - 1) / kGroup;

  float v[kTileRowsPerWarp][kPerLane];   // (16 rows, 4 columns) of this lane
  float lane_column_max[kPerLane] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int i = 0; i < kTileRowsPerWarp; ++i) {
    const long long row = row0 + warp + 8 * i;
    float row_amax = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const long long col = col0 + lane + kWarp * j;
      v[i][j] = row < p.rows && col < p.cols ? load_as_float(p.x, row * p.ld + col, p.x_type)
                                             : 0.0f;
      row_amax = fmaxf(row_amax, fabsf(v[i][j]));
      lane_column_max[j] = fmaxf(lane_column_max[j], fabsf(v[i][j]));
    }
    // x's own 1 x 128 groups: this row's 128 columns of the tile are one group.
    if (p.q != nullptr && row < p.rows) {
      const float scale = group_scale(warp_max(row_amax));
      const float inverse_scale = divide_rn(1.0f, scale);
      if (lane == 0) p.scales[row * col_groups + blockIdx.y] = scale;
#pragma unroll
      for (int j = 0; j < kPerLane; j += 2) {
        const unsigned short pair = quantize_pair(v[i][j], v[i][j + 1], inverse_scale);
        const long long col = col0 + lane + kWarp * j;
        if (col < p.cols) p.q[row * p.cols + col] = (unsigned char)(pair & 0xFFu);
        if (col + kWarp < p.cols) p.q[row * p.cols + col + kWarp] = (unsigned char)(pair >> 8);
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) column_max[warp][lane + kWarp * j] = lane_column_max[j];
  __syncthreads();

  // x^T's groups: each column's 128 tokens of the tile.
  if (threadIdx.x < kGroup) {
    float amax = 0.0f;
#pragma unroll
    for (int w = 0; w < 8; ++w) amax = fmaxf(amax, column_max[w][threadIdx.x]);
    const float scale = group_scale(amax);
    column_inverse[threadIdx.x] = divide_rn(1.0f, scale);
    const long long col = col0 + threadIdx.x;
    if (col < p.cols) p.scales_t[col * row_groups + blockIdx.x] = scale;
  }
  __syncthreads();
  // Rows r and r + 8 of one column share its scale: one conversion of the pair.
#pragma unroll
  for (int i = 0; i < kTileRowsPerWarp; i += 2)
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int c = lane + kWarp * j;
      const unsigned short pair = quantize_pair(v[i][j], v[i + 1][j], column_inverse[c]);
      transposed[c][warp + 8 * i] = (unsigned char)(pair & 0xFFu);
      transposed[c][warp + 8 * (i + 1)] = (unsigned char)(pair >> 8);
    }
  __syncthreads();

  // Out: x^T row `col` holds tokens row0 .. row0 + 127 at q_t[col * rows + row0 ..]. 16-byte
  // runs where the rows of x^T start 16-byte aligned (rows a multiple of 16, as TMA needs for
  // the GEMM), bytes otherwise.
  const long long tile_rows = min((long long)kGroup, p.rows - row0);
  const bool vector_rows =
      p.rows % 16 == 0 && reinterpret_cast<unsigned long long>(p.q_t) % 16 == 0;
  for (int chunk = threadIdx.x; chunk < kGroup * (kGroup / 16); chunk += blockDim.x) {
    const int c = chunk / (kGroup / 16), t0 = (chunk % (kGroup / 16)) * 16;
    const long long col = col0 + c;
    if (col >= p.cols || t0 >= tile_rows) continue;
    unsigned char* out = p.q_t + col * p.rows + row0 + t0;
    if (vector_rows && t0 + 16 <= tile_rows) {
      *reinterpret_cast<uint4*>(out) = *reinterpret_cast<const uint4*>(&transposed[c][t0]);
    } else {
      for (int t = 0; t < 16 && t0 + t < tile_rows; ++t) out[t] = transposed[c][t0 + t];
    }
  }
}
