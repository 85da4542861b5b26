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
#include "bench/grouped_bench.hpp"
#include "bench/tensors.hpp"

namespace autogemm::bench {

// (a) The per-group cuBLASLt loop (runtime/cublaslt.hpp), row-major NT mapped as cublaslt.cpp
// maps it. `a`, `b`, `d`: the item's A, B ([groups, N, K]) and a D laid out as ours.
class CublasLtGroupLoop {
 public:
  CublasLtGroupLoop(const GroupedItem& item, const void* a, const void* b, void* d);
  // One cublaslt_gemm per group with valid rows, in group order. Throws what cublaslt_gemm
  // throws (a runtime::CublasLtRefusal when cuBLASLt declines a group).
  void operator()(cudaStream_t stream) const;

 private:
  std::vector<GemmProblem> problems_;
  std::vector<GemmOperands> operands_;
};

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
