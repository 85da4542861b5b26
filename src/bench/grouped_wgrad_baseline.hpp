#pragma once
// The grouped weight-gradient bench's baseline (grouped_wgrad_bench.hpp): a loop of cuBLASLt
// calls, one per expert with tokens, each dW_g += dY_g^T X_g in fp32 with beta 1: the dense
// weight gradient's GEMM (wgrad.hpp weight_gradient_problem: layout tn, C = D = dW_g) on the
// expert's run of the concatenated tokens. It is given each expert's tokens on the host, which
// ours is not (it reads group_ends on the device: no host synchronisation, CUDA-graph
// capturable): a real caller of the loop would first copy the ends back from the GPU. That is the
// baseline's advantage, and the bench does not charge it for it. The bench captures the loop in
// one CUDA graph (grouped_baselines.hpp CapturedWork), so that the host's cost of enqueuing 32
// calls is not timed either.
#include <cuda_runtime_api.h>

#include <vector>

#include "autogemm/gemm.hpp"
#include "bench/grouped_wgrad_bench.hpp"

namespace autogemm::bench {

class CublasLtWgradLoop {
 public:
  // dy [T, m], x [T, n] and dw [groups, m, n] as the item lays them out (packed).
  CublasLtWgradLoop(const GroupedWgradItem& item, const void* dy, const void* x, void* dw);
  // One cuBLASLt call per expert with tokens, in expert order. Throws what cublaslt_gemm throws
  // (a runtime::CublasLtRefusal when cuBLASLt declines an expert).
  void operator()(cudaStream_t stream) const;

 private:
  std::vector<GemmProblem> problems_;
  std::vector<GemmOperands> operands_;
};

}  // namespace autogemm::bench
