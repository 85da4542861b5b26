#pragma once
// The grouped bench's two baselines, on the same operands as our grouped_gemm() call:
//   (a) a loop of cuBLASLt calls, one per group with that group's M, on one stream;
//   (b) cuBLAS's cublasGemmGroupedBatchedEx, one call for every group.
// Both are given each group's M on the host, which ours is not (it reads group_index or masked_m
// on the device, so it needs no host synchronisation and can be captured in a CUDA graph): a
// real caller of either would first have to copy the sizes back from the GPU. That is the
// baselines' advantage, and the bench does not charge them for it.
#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/grouped.hpp"
#include "bench/grouped_bench.hpp"
#include "bench/tensors.hpp"

namespace autogemm::bench {

// (a) The per-group cuBLASLt loop (runtime/cublaslt.hpp), row-major NT mapped as cublaslt.cpp
// maps it, on the row's inputs into the baselines' D (GroupedOperands: a, b, d; FP8 also
// scale_a and scale_b in grouped_gemm's layouts).
//
// Block-scaled FP8 runs cuBLASLt's block-scaled path (VEC128 A scales, BLK128x128 B scales),
// each group's scales converted into cuBLASLt's layout once, by the constructor, so that a timed
// call is the matmuls alone (as `bench --dtype fp8` times it). That path needs M and N multiples
// of 4, so each group's call computes its M rounded up to a multiple of 4 (cublaslt_loop_rows):
// the extra rows exist (a contiguous run is padded to 128 rows, a masked group has max_m, a
// multiple of 64), they are rows of the baselines' own D, and they are not compared.
class CublasLtGroupLoop {
 public:
  // Throws what cuBLASLt's scale conversion throws (a runtime::CublasLtRefusal when cuBLASLt
  // declines block-scaled FP8: no block scaling before cuBLAS 12.9, N not a multiple of 4).
  CublasLtGroupLoop(const GroupedItem& item, const GroupedOperands& operands,
                    cudaStream_t stream);
  // One cublaslt_gemm per group with valid rows, in group order. Throws what cublaslt_gemm
  // throws (a runtime::CublasLtRefusal when cuBLASLt declines a group).
  void operator()(cudaStream_t stream) const;

 private:
  std::vector<GemmProblem> problems_;
  std::vector<GemmOperands> operands_;
  std::vector<DeviceBuffer> cublaslt_scales_;   // FP8: two per group, in cuBLASLt's layout
  bool scales_in_cublaslt_layout_ = false;
};

// The M of each group's call in the cuBLASLt loop: its valid rows; for block-scaled FP8 rounded
// up to a multiple of 4 (cuBLASLt's rule; no more than the rows the layout stores for the
// group). 0: the group has no rows and gets no call.
std::vector<int64_t> cublaslt_loop_rows(const GroupedItem& item);

// A sequence of stream work captured once into a CUDA graph and replayed with one
// cudaGraphLaunch, so that timing it measures the GPU's work rather than the host's cost of
// enqueuing it call by call (a 32-group loop of cuBLASLt calls costs the host 10-20 us a call,
// more than many of its GEMMs take): the loop baseline at its best.
class CapturedWork {
 public:
  // Captures work(stream) (cudaStreamCaptureModeThreadLocal) and instantiates the graph. When
  // the work cannot be captured, the capture is ended and the error (CudaError) is thrown.
  CapturedWork(const std::function<void(cudaStream_t)>& work, cudaStream_t stream);
  ~CapturedWork();
  CapturedWork(const CapturedWork&) = delete;
  CapturedWork& operator=(const CapturedWork&) = delete;
  void launch(cudaStream_t stream) const;

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// cuBLAS declining cublasGemmGroupedBatchedEx for the row: CUBLAS_STATUS_NOT_SUPPORTED (its
// documented types are bf16 -> bf16, fp16 -> fp16 and fp32 -> fp32 with CUBLAS_COMPUTE_32F, so
// an fp32 D from bf16 inputs is declined), or a cuBLAS without the function (before 12.5). The
// baseline is n/a with this message; any other error fails the row.
class CublasGroupedDeclined : public CudaError {
 public:
  using CudaError::CudaError;
};

// Why cublasGemmGroupedBatchedEx cannot take the row at all, "" when it may: it has no scale
// arguments, so no block-scaled FP8 (its documented types with CUBLAS_COMPUTE_32F are bf16 ->
// bf16, fp16 -> fp16 and fp32 -> fp32). Such a row's batched baseline is n/a with this reason.
std::string grouped_batched_unavailable(const GemmProblem& problem);

// (b) cublasGemmGroupedBatchedEx over the item's groups (cuBLAS docs, "cublasGemmGroupedBatchedEx":
// the sizes, leading dimensions, transposes and scalars are host arrays of one entry per
// cuBLAS group; the matrix pointers are device arrays). Our row-major D_g = A_g B_g^T is the
// column-major D_g^T = B_g A_g^T, as cublaslt.cpp maps it: cuBLAS A = our B_g (transposed,
// ld K), cuBLAS B = our A_g (ld K), C = our D_g (ld N), m = N, n = M_g, k = K; one cuBLAS group
// of one problem per group of ours. The constructor uploads the pointer arrays (outside any
// timing) and makes the cuBLAS handle.
class CublasGroupedBatched {
 public:
  CublasGroupedBatched(const GroupedItem& item, const void* a, const void* b, void* d);
  ~CublasGroupedBatched();
  CublasGroupedBatched(const CublasGroupedBatched&) = delete;
  CublasGroupedBatched& operator=(const CublasGroupedBatched&) = delete;
  // Throws CublasGroupedDeclined (n/a) or CudaError.
  void operator()(cudaStream_t stream) const;

 private:
  struct Arrays;
  std::unique_ptr<Arrays> arrays_;
};

}  // namespace autogemm::bench
