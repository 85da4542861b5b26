#pragma once
// Split-K finalize: sums the fp32 partial tiles of every split in a fixed order (deterministic,
// no atomics), applies alpha, beta and C, and converts to D's type. One thread per pair of
// columns; memory-bound and small next to the GEMM (split_k x M x N x 4 bytes read).
#include "sm90/output_element.cuh"
#include "sm90/split_k_params.cuh"

extern "C" __global__ void autogemm_split_k_reduce(const SplitKReduceParams p) {
  const long long pairs_per_row = (p.n + 1) / 2;
  const long long total = p.m * pairs_per_row;
  const long long plane = p.m * p.workspace_ld;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long row = i / pairs_per_row;
    const long long col0 = (i % pairs_per_row) * 2;
    for (int e = 0; e < 2 && col0 + e < p.n; ++e) {
      const long long col = col0 + e;
      float sum = 0.0f;
      for (int s = 0; s < p.split_k; ++s) sum += p.workspace[s * plane + row * p.workspace_ld + col];
      autogemm::sm90::finish_output_element(p.out, sum, row, col);
    }
  }
}
