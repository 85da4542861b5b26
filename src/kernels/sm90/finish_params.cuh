#pragma once
// How the tail split's second kernel finishes D (tail_split_params.cuh): shared by the host (runtime/finish_output.hpp, g++) and the device
// (output_element.cuh, NVRTC), plain C types only.

// D[row, col] = alpha * sum + beta * C[row, col] (C not read when beta is 0), as d_kind.
struct FinishOutputParams {
  float alpha, beta;
  const void* c;
  long long ldc;
  void* d;
  long long ldd;
  int d_kind;   // 0 bf16, 1 fp16, 2 fp32 (C has D's type)
};
