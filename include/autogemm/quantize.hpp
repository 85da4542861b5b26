#pragma once
// FP8 e4m3 quantisation with the block scales the FP8 GEMM takes (Scaling::block_1x128_128x128,
// problem.hpp), and back. From BF16 tensors to the GEMM in two calls:
//   quantize_fp8_1x128(a_bf16, DType::bf16, M, K, K, a_fp8, a_scales, stream);    // activations
//   quantize_fp8_128x128(b_bf16, DType::bf16, N, K, K, b_fp8, b_scales, stream);  // weights
//   then gemm() with a_type = b_type = e4m3, layout nt, scale_a = a_scales, scale_b = b_scales.
//
// The rule, per group of 1 x 128 or 128 x 128 elements (partial groups at the right and bottom
// edges use the elements that exist):
//   scale = max(amax / 448, 2^-126)    amax = largest |x| of the group, 448 = largest finite
//                                      e4m3; IEEE float division. The floor (the smallest normal
//                                      float) guards an all-zero group (amax = 0, scale 2^-126,
//                                      every q exactly 0) and groups whose amax / 448 would
//                                      underflow.
//   q = e4m3(x * (1 / scale))          the reciprocal by IEEE float division (once per group),
//                                      one float multiply, then round to nearest even, saturated
//                                      to +-448 (OCP FP8 E4M3FN; NaN stays NaN). Within a float
//                                      rounding of x / scale, and memory-bound.
// Dequantisation: y = float(q) * scale (one float multiply, round to nearest even), then for BF16
// one more round to nearest even. Inputs should be finite: an infinity makes its group's scale
// infinite.
//
// Layouts, all row-major: x is rows x cols with leading dimension ld (elements); q is rows x cols
// e4m3, packed (leading dimension cols); 1 x 128 scales are rows x ceil(cols/128) floats,
// 128 x 128 scales ceil(rows/128) x ceil(cols/128) floats. The calls are asynchronous on
// `stream`; the kernels are compiled for the current device on first use (sm_89 or later: the
// e4m3 conversions need it). Arguments are checked (InvalidArgument naming argument, value and
// rule) before anything is launched.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "autogemm/problem.hpp"

namespace autogemm {

// Elements per scale group along the columns (and rows per 128 x 128 block).
inline constexpr int64_t kFp8ScaleGroup = 128;

// Number of floats the scales of a rows x cols tensor take.
int64_t fp8_scale_count_1x128(int64_t rows, int64_t cols);    // rows * ceil(cols/128)
int64_t fp8_scale_count_128x128(int64_t rows, int64_t cols);  // ceil(rows/128) * ceil(cols/128)

// x_type: bf16 or fp32. q: rows * cols bytes. scales: fp8_scale_count_*(rows, cols) floats.
void quantize_fp8_1x128(const void* x, DType x_type, int64_t rows, int64_t cols, int64_t ld,
                        void* q, float* scales, cudaStream_t stream = nullptr);
void quantize_fp8_128x128(const void* x, DType x_type, int64_t rows, int64_t cols, int64_t ld,
                          void* q, float* scales, cudaStream_t stream = nullptr);

// Weight gradients (autogemm/wgrad.hpp): x is token-major (rows = tokens), and FP8 wgmma reads
// both of a weight gradient's operands K-major, K being the tokens. One pass over x writes q_t,
// x^T as e4m3 (cols x rows, packed), and scales_t, one per column of x per 128 of its rows (cols x
// ceil(rows/128) floats: the 1 x 128 layout of x^T, so q_t and scales_t are an FP8 operand
// scaled along the tokens); and, when q and scales are given (both or neither), x's own 1 x 128
// output exactly as quantize_fp8_1x128 writes it, for the forward pass or the input gradient.
// The same rule as above per group. rows a multiple of 16 and q_t 16-byte aligned (what TMA needs
// of the GEMM's operand) let the transposed rows leave in 16-byte stores.
void quantize_fp8_1x128_transposed(const void* x, DType x_type, int64_t rows, int64_t cols,
                                   int64_t ld, void* q_t, float* scales_t, void* q = nullptr,
                                   float* scales = nullptr, cudaStream_t stream = nullptr);

// y_type: bf16 or fp32; y is rows x cols with leading dimension ld.
void dequantize_fp8_1x128(const void* q, const float* scales, int64_t rows, int64_t cols,
                          void* y, DType y_type, int64_t ld, cudaStream_t stream = nullptr);
void dequantize_fp8_128x128(const void* q, const float* scales, int64_t rows, int64_t cols,
                            void* y, DType y_type, int64_t ld, cudaStream_t stream = nullptr);

}  // namespace autogemm
