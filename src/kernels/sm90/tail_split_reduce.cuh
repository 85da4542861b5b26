#pragma once
// Tail-split finish: for each tile of the GEMM's last wave, sums its K ranges' fp32 partial
// tiles in a fixed order (deterministic, no atomics), applies alpha, beta and C, and writes the
// part of the tile inside M x N. Thread blocks [t * blocks_per_tile, (t + 1) * blocks_per_tile)
// share tile t; each thread reads four adjacent columns per range (16-byte loads: block_n is a
// multiple of 8).
#include "sm90/output_element.cuh"
#include "sm90/tail_split_params.cuh"

extern "C" __global__ void autogemm_tail_split_reduce(const TailSplitReduceParams p) {
  const int tile = blockIdx.x / p.blocks_per_tile;
  const int part = blockIdx.x % p.blocks_per_tile;
  if (tile >= p.tiles) return;
  const long long row0 = static_cast<long long>(p.coords[2 * tile]) * p.block_m;
  const long long col0 = static_cast<long long>(p.coords[2 * tile + 1]) * p.block_n;
  const int tile_floats = p.block_m * p.block_n;
  const float* first = p.partials + static_cast<long long>(tile) * p.splits * tile_floats;
  for (int q = part * blockDim.x + threadIdx.x; q < tile_floats / 4;
       q += p.blocks_per_tile * blockDim.x) {
    const int row = 4 * q / p.block_n, col = 4 * q % p.block_n;
    const long long grow = row0 + row;
    if (grow >= p.m || col0 + col >= p.n) continue;
    // Loads in groups of four before their adds, so four L2 round trips overlap instead of
    // one per range; the sum keeps range order (the result does not depend on the grouping).
    const float4* range = reinterpret_cast<const float4*>(first) + q;
    const int range_stride = tile_floats / 4;
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s = 0; s < p.splits; s += 4) {
      float4 v[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (s + u < p.splits) v[u] = range[static_cast<long long>(s + u) * range_stride];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        if (s + u < p.splits) {
          sum.x += v[u].x;
          sum.y += v[u].y;
          sum.z += v[u].z;
          sum.w += v[u].w;
        }
      }
    }
    const float sums[4] = {sum.x, sum.y, sum.z, sum.w};
    for (int e = 0; e < 4 && col0 + col + e < p.n; ++e) {
      autogemm::sm90::finish_output_element(p.out, sums[e], grow, col0 + col + e);
    }
  }
}
