#pragma once
// Block-scaled FP8: the A scales' layout the GEMM kernel reads (kernels/sm90/fp8_scale_copy.cuh).
// Callers pass them row-major (M x ceil(K/128)); where the spec says so
// (KernelSpec::a_scales_k_block_major) the launcher copies them to k-block-major inside the
// call, so each k-block's BLOCK_M scales are one contiguous run.
#include <cuda_runtime_api.h>

#include "autogemm/problem.hpp"

namespace autogemm::runtime {

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
