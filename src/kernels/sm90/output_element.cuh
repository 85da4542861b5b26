#pragma once
// One element of C or D by the run-time output kind (0 bf16, 1 fp16, 2 fp32), for the second
// kernel that finishes tail-split GEMMs (tail_split_reduce.cuh).
#include "ptx/convert.cuh"
#include "sm90/finish_params.cuh"

namespace autogemm::sm90 {

__device__ __forceinline__ float load_output_element(const void* base, long long index, int kind) {
  if (kind == 2) return static_cast<const float*>(base)[index];
  const unsigned short bits = static_cast<const unsigned short*>(base)[index];
  return kind == 1 ? ptx::f16_to_float(bits) : ptx::bf16_to_float(bits);
}

__device__ __forceinline__ void store_output_element(void* base, long long index, int kind, float v) {
  if (kind == 2) static_cast<float*>(base)[index] = v;
  else if (kind == 1) static_cast<unsigned short*>(base)[index] = ptx::float_to_f16(v);
  else static_cast<unsigned short*>(base)[index] = ptx::float_to_bf16(v);
}

// D[row, col] = alpha * sum + beta * C[row, col] (finish_params.cuh).
__device__ __forceinline__ void finish_output_element(const FinishOutputParams& out, float sum,
                                                      long long row, long long col) {
  float v = out.alpha * sum;
  if (out.beta != 0.0f) v += out.beta * load_output_element(out.c, row * out.ldc + col, out.d_kind);
  store_output_element(out.d, row * out.ldd + col, out.d_kind, v);
}

}  // namespace autogemm::sm90
