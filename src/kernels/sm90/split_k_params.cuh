#pragma once
// Parameters of the split-K finalize kernel, shared by the host (src/runtime/split_k.cpp, g++)
// and the device (split_k_reduce.cuh, NVRTC): plain C types only.

// workspace: split_k planes of M x N fp32 partial sums (plane s = k-blocks of split s).
// D = alpha * sum over planes + beta * C, converted to d_kind (0 bf16, 1 fp16, 2 fp32).
struct SplitKReduceParams {
  const float* workspace;
  long long m, n;
  long long workspace_ld;   // floats per workspace row (N rounded up to 16 bytes)
  int split_k;
  float alpha, beta;
  const void* c;
  long long ldc;
  void* d;
  long long ldd;
  int d_kind;
};
