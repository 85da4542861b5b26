#pragma once
// cuBLASLt: the vendor path for GPUs or problems our kernel does not serve, and the baseline
// the bench compares against in the same process on the same inputs.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

// D = alpha * op(A) op(B) + beta * C with our row-major conventions (problem.hpp), mapped onto
// column-major cuBLASLt by computing D^T = op(B)^T op(A)^T. FP8 block scaling maps to
// VEC128_32F (A) / BLK128x128_32F (B). Throws CudaError when cuBLASLt has no algorithm (with
// cuBLASLt's own error log and version in the message), InvalidArgument for the documented limits
// of its FP8 path on Hopper: layout nt only (validate() holds FP8 to it); block scaling needs M
// and N multiples of 4 and scale tensors on 16-byte boundaries. FP8 runs with fast accumulation off (cublaslt.cpp says why).
// When `per_tensor_fp8` is set for an FP8 problem, runs the per-tensor-scaled variant instead.
void cublaslt_gemm(const GemmProblem& problem, const GemmOperands& operands, cudaStream_t stream,
                   bool per_tensor_fp8 = false);

// ---- additions (bench owner) ---------------------------------------------------------------

// Empty when the loaded cuBLASLt has FP8 128-element / 128x128 block scaling (cuBLAS 12.9 and
// later; it runs on sm_90 only); otherwise the reason, naming the library version.
std::string cublaslt_block_scaling_unavailable();

struct CublasLtOptions {
  // FP8 only: one float scale per operand (operands.scale_a[0], scale_b[0]) whatever
  // problem.scaling says; the bench times this variant next to the block-scaled one.
  bool per_tensor_fp8 = false;
  // FP8 block scaling only: operands.scale_a / scale_b already hold the cuBLASLt layout written
  // by to_cublaslt_block_scales, so the call launches nothing but the matmul (the bench times
  // it that way). When false, the call converts our layout into stream-ordered scratch first.
  bool scales_in_cublaslt_layout = false;
};

void cublaslt_gemm(const GemmProblem& problem, const GemmOperands& operands, cudaStream_t stream,
                   const CublasLtOptions& options);

// Block scales in cuBLASLt's layout (layout of PyTorch's checks for its cuBLASLt DeepSeek path,
// aten/src/ATen/native/cuda/ScaledBlas.cpp; cuBLAS docs, "1D/2D block scaling"):
//  - our A (1 x 128, cuBLAS "B", VEC128_32F): ceil(K/128) rows of M floats (M contiguous);
//  - our B (128 x 128, cuBLAS "A", BLK128x128_32F): ceil(N/128) rows of
//    round_up(ceil(K/128), 4) floats (K blocks contiguous, rows padded to 16 bytes).
// Ours (problem.hpp, the kernel and the reference): A scales M x ceil(K/128) row-major,
// B scales ceil(N/128) x ceil(K/128) row-major.
struct CublasLtBlockScaleSizes {
  std::size_t a_floats = 0;
  std::size_t b_floats = 0;
};
CublasLtBlockScaleSizes cublaslt_block_scale_sizes(const GemmProblem& problem);

// Converts block scales from our layout into cuBLASLt's (buffers of cublaslt_block_scale_sizes),
// asynchronously on `stream`.
void to_cublaslt_block_scales(const GemmProblem& problem, const float* scale_a,
                              const float* scale_b, float* cublaslt_scale_a,
                              float* cublaslt_scale_b, cudaStream_t stream);

}  // namespace autogemm::runtime
