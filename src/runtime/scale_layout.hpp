#pragma once
// Block-scaled FP8: the A scales' layout the GEMM kernel reads (kernels/sm90/fp8_scale_copy.cuh).
// Callers pass them row-major (M x ceil(K/128)); for large M the launcher copies them to
// k-block-major inside the call, so each k-block's BLOCK_M scales are one contiguous run.
#include <cuda_runtime_api.h>

#include "autogemm/problem.hpp"

namespace autogemm::runtime {

// M from which the launcher transposes: below it the GEMM is a few tile rows, the gather of
// BLOCK_M words per k-block is cheap, and the extra launch (~2-3 us) would be a visible share of
// a 10-50 us call (notes.md section 14).
inline constexpr int64_t kTransposedAScalesMinM = 1024;

bool transposes_a_scales(const GemmProblem& p);

// Strides of scale_a(row, k_block) in floats, as the kernel's GemmParams takes them.
struct AScaleStrides {
  long long row = 0, k_block = 0;
};

// The caller's layout: (ceil(K/128), 1).
AScaleStrides natural_a_scale_strides(const GemmProblem& p);

// Allocates (cudaMallocAsync on `stream`) and fills the k-block-major copy of `scale_a`;
// returns it with its strides. The caller frees it with cudaFreeAsync on the same stream after
// the GEMM's launch.
float* transpose_a_scales(const GemmProblem& p, const float* scale_a, cudaStream_t stream,
                          AScaleStrides& strides);

}  // namespace autogemm::runtime
