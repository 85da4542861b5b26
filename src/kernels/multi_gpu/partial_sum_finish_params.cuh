#pragma once
// Parameters of the split-K finish (multi_gpu/partial_sum_finish.cuh), shared by the host
// (src/multi/nccl_exec.cpp, g++) and NVRTC: plain C types only.

// D's element type.
enum PartialSumOutType {
  kPartialOutFp32 = 0,
  kPartialOutBf16 = 1,
  kPartialOutFp16 = 2,
};

// D[r][c] = alpha * partial[r][c] + beta * C[r][c] for rows x cols, row-major with the given
// leading dimensions (elements); C is read only when beta != 0.
struct PartialSumFinishParams {
  long long rows, cols;
  long long ld_partial, ldd, ldc;
  const float* partial;
  void* d;
  const void* c;
  float alpha, beta;
  int out_type;  // PartialSumOutType, for D and C
};
