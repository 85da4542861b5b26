#pragma once
// Parameters of the unfused epilogue (bench/unfused_epilogue.cuh), shared by the host
// (src/bench/unfused_epilogue.cpp, g++) and NVRTC: plain C types only.

// D[r][c] = act(D[r][c] * row_scale[r] * col_scale[c] + bias[c]) in place, rows x cols,
// row-major with leading dimension ldd: what a second kernel after a plain GEMM does where the
// GEMM cannot fuse it (bench --epilogue's "unfused" row).
struct UnfusedEpilogueParams {
  void* d;
  long long rows, cols, ldd;
  int d_kind;           // 0 bf16, 1 fp16, 2 fp32 (the GEMM Config's out_kind)
  const void* bias;     // null: none
  int bias_kind;        // 1 bf16, 2 fp32 (fused_epilogue.cuh's codes)
  const float* row_scale;   // null: none
  const float* col_scale;   // null: none
  int activation;       // fused_epilogue.cuh's codes: 0 none .. 4 silu
};
