#pragma once
// FP8 e4m3 + block scales -> BF16/FP32: y = float(q) * scale, one FP32 multiply (round to nearest
// even), then, for BF16, one more rounding to nearest even. Serves both scalings: a scale covers
// block_rows rows (1 or 128) by 128 columns.
#include "quant/quant_common.cuh"

// grid = (ceil(cols / 256), min(rows, 65535)), block = 256 threads; rows are grid-strided.
extern "C" __global__ void __launch_bounds__(256)
autogemm_dequantize_fp8(const DequantizeParams p) {
  using namespace autogemm::quant;
  const long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= p.cols) return;
  const long long scales_per_row = (p.cols + kGroup - 1) / kGroup;
  for (long long row = blockIdx.y; row < p.rows; row += gridDim.y) {
    const float scale = p.scales[(row / p.block_rows) * scales_per_row + col / kGroup];
    const float value = autogemm::ptx::e4m3_to_float(p.q[row * p.cols + col]) * scale;
    store_from_float(p.y, row * p.ld + col, p.y_type, value);
  }
}
