#pragma once
// Parameters of the split-K finalize kernel, shared by the host (src/runtime/split_k.cpp, g++)
// and the device (split_k_reduce.cuh, NVRTC): plain C types only.

#include "sm90/finish_params.cuh"

// workspace: split_k planes of M x N fp32 partial sums (plane s = k-blocks of split s).
// D = alpha * sum over planes + beta * C, converted to d_kind (0 bf16, 1 fp16, 2 fp32).
struct SplitKReduceParams {
  const float* workspace;
  long long m, n;
  long long workspace_ld;   // floats per workspace row (N rounded up to 16 bytes)
  int split_k;
  FinishOutputParams out;   // alpha, beta, C and D
};
