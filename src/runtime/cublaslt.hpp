#pragma once
// cuBLASLt: the vendor path for GPUs or problems our kernel does not serve, and the baseline
// the bench compares against in the same process on the same inputs.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

// The workspace each device's cuBLASLt path allocates once. 32-64 MiB lets cuBLASLt pick
// split-K and stream-K algorithms for every suite shape (baselines.md); more buys nothing
// measurable.
inline constexpr std::size_t kCublasLtWorkspaceBytes = std::size_t(64) << 20;

// ---- cuBLASLt declining a problem ----------------------------------------------------------
//
// cuBLASLt serves most problems, not all: a documented limit of a path (block-scaled FP8 needs M
// and N multiples of 4), a library without the feature (block scaling before cuBLAS 12.9), or a
// heuristic that finds no algorithm (CUBLAS_STATUS_NOT_SUPPORTED, or no result) means "cuBLASLt
// cannot serve this problem", not "something broke": D is not written and the CUDA context is
// untouched, so a caller with another way to get the result may take it (the bench shows such a
// baseline as n/a and checks ours against the float64 reference). Those refusals are thrown as
// one of the two classes below, both a CublasLtRefusal, each also the Error subclass callers
// already catch (InvalidArgument for a documented limit, naming the argument; CudaError for the
// library's own refusal). Every other error of the path (a CUDA error, a failed launch, an invalid
// value, a null pointer) is not a CublasLtRefusal.
class CublasLtRefusal {
 public:
  virtual ~CublasLtRefusal() = default;
  // The whole message, as what() gives it: what was declined and why.
  virtual const char* reason() const noexcept = 0;
};

// A documented limit of cuBLASLt's path: "m = 1531: cuBLASLt block-scaled FP8 needs M and N
// multiples of 4 (...)".
class CublasLtLimit final : public InvalidArgument, public CublasLtRefusal {
 public:
  using InvalidArgument::InvalidArgument;
  const char* reason() const noexcept override { return what(); }
};

// cuBLASLt itself has no algorithm, or no such feature, for the problem.
class CublasLtUnsupported final : public CudaError, public CublasLtRefusal {
 public:
  using CudaError::CudaError;
  const char* reason() const noexcept override { return what(); }
};

// Whether a cuBLASLt status declines the request (CUBLAS_STATUS_NOT_SUPPORTED; ARCH_MISMATCH,
// a feature this GPU lacks) rather than reporting a failure.
bool cublaslt_status_is_refusal(cublasStatus_t status);
// Whether a heuristic query that returned `status` and `algorithms_found` results declines the
// problem: a refusing status, or success with no algorithm.
bool cublaslt_heuristic_declined(cublasStatus_t status, int algorithms_found);

// D = alpha * op(A) op(B) + beta * C with our row-major conventions (problem.hpp), mapped onto
// column-major cuBLASLt by computing D^T = op(B)^T op(A)^T. FP8 block scaling maps to
// VEC128_32F (A) / BLK128x128_32F (B). Throws CublasLtUnsupported when cuBLASLt has no
// algorithm (with cuBLASLt's own error log and version in the message), CublasLtLimit for the
// documented limits of its block-scaled FP8 path on Hopper (M and N multiples of 4), and plain
// InvalidArgument for arguments no cuBLASLt call could take: FP8 in another layout than nt
// (validate() holds FP8 to it), null pointers, scale tensors in cuBLASLt's layout off 16-byte
// boundaries. FP8 runs with fast accumulation off (cublaslt.cpp says why).
// When `per_tensor_fp8` is set for an FP8 problem, runs the per-tensor-scaled variant instead.
void cublaslt_gemm(const GemmProblem& problem, const GemmOperands& operands, cudaStream_t stream,
                   bool per_tensor_fp8 = false);

// ---- additions (bench owner) ---------------------------------------------------------------

// Empty when cuBLASLt can fuse the problem's epilogue (a bias, relu or gelu_tanh; with an
// activation only at beta = 0, since cuBLASLt adds beta * C before it), else why not.
// cublaslt_gemm runs the epilogue it can fuse (the bias from operands.bias) and declines the
// others with CublasLtLimit naming "epilogue".
std::string cublaslt_epilogue_unavailable(const Epilogue& epilogue, float beta);

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
  // Run this algorithm (autotuning's winner, runtime/cublaslt_algo.hpp) instead of the
  // heuristic's first. One that does not check out for the call (cublasLtMatmulAlgoCheck: another
  // cuBLASLt, alignment, workspace) is logged once (level 2) and the heuristic's first runs.
  std::optional<VendorAlgo> algo;
};

void cublaslt_gemm(const GemmProblem& problem, const GemmOperands& operands, cudaStream_t stream,
                   const CublasLtOptions& options);

// Autotuning's cuBLASLt candidates: up to `count` (at most 8) of the heuristic's algorithms
// for the call, its first (what cublaslt_gemm runs by default) first. Throws as cublaslt_gemm does
// where cuBLASLt declines the call.
std::vector<VendorAlgo> cublaslt_algorithms(const GemmProblem& problem,
                                            const GemmOperands& operands, int count);
// Whether `algo` rebuilt checks out for the call (cublasLtMatmulAlgoCheck), logged when not.
bool cublaslt_algorithm_usable(const GemmProblem& problem, const GemmOperands& operands,
                               const VendorAlgo& algo);

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
// asynchronously on `stream`. The layout exists only for the block-scaled matmul, so a problem
// that matmul declines up front (M or N not a multiple of 4, a library without block scaling) is
// declined here too, as the matmul would (CublasLtLimit, CublasLtUnsupported), before any work.
void to_cublaslt_block_scales(const GemmProblem& problem, const float* scale_a,
                              const float* scale_b, float* cublaslt_scale_a,
                              float* cublaslt_scale_b, cudaStream_t stream);

}  // namespace autogemm::runtime
