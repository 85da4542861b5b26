#pragma once
// BF16/FP32 -> FP8 e4m3 with one scale per 1 x 128 group of a row (the activations' scaling,
// problem.hpp). One warp per group: lane l holds columns l, l + 32, l + 64, l + 96, so every
// load and store instruction of the warp touches one contiguous run. A tail group (cols not a
// multiple of 128) takes its scale from the columns that exist.
#include "quant/quant_common.cuh"

// block = 256 threads (8 groups at a time), grid-stride over all rows * ceil(cols / 128) groups.
extern "C" __global__ void __launch_bounds__(256)
autogemm_quantize_fp8_1x128(const QuantizeParams p) {
  using namespace autogemm::quant;
  const long long groups_per_row = (p.cols + kGroup - 1) / kGroup;
  const long long num_groups = p.rows * groups_per_row;
  const int lane = threadIdx.x % kWarp;
  const long long warps_per_block = blockDim.x / kWarp;
  const long long warps_in_grid = (long long)gridDim.x * warps_per_block;
  // `group` is warp-uniform, so the whole warp runs each iteration and the shuffles see it all.
  for (long long group = (long long)blockIdx.x * warps_per_block + threadIdx.x / kWarp;
       group < num_groups; group += warps_in_grid) {
    const long long row = group / groups_per_row;
    const long long first_col = (group - row * groups_per_row) * kGroup;
    float v[kPerLane];
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const long long col = first_col + lane + kWarp * j;
      v[j] = col < p.cols ? load_as_float(p.x, row * p.ld + col, p.x_type) : 0.0f;
      amax = fmaxf(amax, fabsf(v[j]));
    }
    const float scale = group_scale(warp_max(amax));
    const float inverse_scale = divide_rn(1.0f, scale);
    if (lane == 0) p.scales[group] = scale;  // row-major rows x groups_per_row: index == group
#pragma unroll
    for (int j = 0; j < kPerLane; j += 2) {
      const unsigned short pair = quantize_pair(v[j], v[j + 1], inverse_scale);
      const long long col = first_col + lane + kWarp * j;
      if (col < p.cols) p.q[row * p.cols + col] = (unsigned char)(pair & 0xFFu);
      if (col + kWarp < p.cols) p.q[row * p.cols + col + kWarp] = (unsigned char)(pair >> 8);
    }
  }
}
