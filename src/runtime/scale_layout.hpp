#pragma once
// Block-scaled FP8: the A scales' layout the GEMM kernel reads (kernels/sm90/fp8_scale_copy.cuh).
// Callers pass them row-major (M x ceil(K/128)); for large M the launcher copies them to
// k-block-major inside the call, so each k-block's BLOCK_M scales are one contiguous run.
#include <cuda_runtime_api.h>

#include "autogemm/config.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

// When the launcher transposes: M of at least kTransposedAScalesMinM (below it the GEMM is a
// few tile rows and the extra launch, ~3-4 us with its allocation, is a visible share of the
// call), and a tile's A-scale rows (block_m x ceil(K/128) x 4 B) at least kL1ScaleRowsBytes,
// the L1 left beside the stages (256 KB minus a ~220 KB shared-memory carve-out). Below that
// the gather's sectors stay in L1 after their first k-block and the transposition only cost:
// 4096x2112x7168 (128-row tiles, 28 KB of scale rows) went 0.958 -> 0.926 of cuBLASLt with it,
// 4096x7168x16384 (256 rows, 128 KB) 0.90 -> 1.01.
inline constexpr int64_t kTransposedAScalesMinM = 1024;
inline constexpr int64_t kL1ScaleRowsBytes = 32 * 1024;

bool transposes_a_scales(const GemmProblem& p, const GemmConfig& c);

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
