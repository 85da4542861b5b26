#pragma once
// Parameters of the tail-split finish kernel, shared by the host (src/runtime/tail_split.cpp,
// g++) and the device (tail_split_reduce.cuh, NVRTC): plain C types only.

#include "sm90/finish_params.cuh"

// partials: `tiles` CTA tiles x `splits` K ranges, each a block_m x block_n row-major fp32
// tile (tile t, range s at (t * splits + s) * block_m * block_n); coords[2t], coords[2t + 1]:
// tile t's (m_tile, n_tile). D = alpha * sum over ranges + beta * C inside M x N.
struct TailSplitReduceParams {
  const float* partials;
  const int* coords;
  int tiles, splits;
  int block_m, block_n;
  int blocks_per_tile;   // thread blocks sharing one tile
  long long m, n;
  FinishOutputParams out;   // alpha, beta, C and D
};
