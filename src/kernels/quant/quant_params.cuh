#pragma once
// Parameters of the FP8 quantisation kernels, shared by the host (src/quant/quantize.cpp, g++)
// and the device (quant/*.cuh, NVRTC). Plain C types only, so both compilers lay the structs out
// identically and NVRTC needs no standard headers.

// Element types of the high-precision side (codes, not autogemm::DType, which NVRTC cannot see).
enum QuantElementType {
  kQuantFp32 = 0,
  kQuantBf16 = 1,
};

// Elements per scale group along the columns, and rows per 2D block: DeepSeek-V3's 1 x 128
// activation groups and 128 x 128 weight blocks (problem.hpp, Scaling::block_1x128_128x128).
#define AUTOGEMM_QUANT_GROUP 128

// x (rows x cols, leading dimension ld, type x_type) -> q (rows x cols e4m3, packed) and scales
// (row-major, ceil(cols/128) per row of scale groups: one row per row of x for 1 x 128, one per
// 128 rows of x for 128 x 128).
struct QuantizeParams {
  long long rows, cols, ld;
  const void* x;
  unsigned char* q;
  float* scales;
  int x_type;   // QuantElementType
};

// Token-major x (rows = tokens) for weight gradients (quantize_1x128_transposed.cuh): q_t (cols
// x rows e4m3, packed: x^T) with scales_t (cols x ceil(rows/128), row-major: x^T's 1 x 128
// groups), and when q is not null x's own 1 x 128 output, q and scales, as QuantizeParams says.
struct QuantizeTransposedParams {
  long long rows, cols, ld;
  const void* x;
  unsigned char* q;
  float* scales;
  unsigned char* q_t;
  float* scales_t;
  int x_type;   // QuantElementType
};

// q (rows x cols e4m3, packed) and scales -> y (rows x cols, leading dimension ld, type y_type).
struct DequantizeParams {
  long long rows, cols, ld;
  const unsigned char* q;
  const float* scales;
  void* y;
  int y_type;      // QuantElementType
  int block_rows;  // rows of x sharing one scale: 1 (1 x 128 groups) or 128 (128 x 128 blocks)
};
