#pragma once
// Weight gradients (issue 52). For a linear layer Y = X W^T, X [T, K] and W [N, K], the weight
// gradient over the T tokens is dW [N, K] = dY^T X, dY [T, N] and X [T, K] stored token-major
// as training keeps them, accumulated into fp32 over micro-batches (dW += ...). That is the GEMM
// of layout tn (A = dY^T, stored as dY; B = X, stored as X) with C = D: no new kernel, so it is
// planned, explained (`autogemm plan --wgrad`), cached and tuned like any GEMM. These helpers
// build that problem and its operands.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm {

// The weight gradient of `tokens` x `out_features` dY and `tokens` x `in_features` X (both
// `type`, bf16 or fp16, packed rows): m = out_features, n = in_features, k = tokens, layout tn,
// D of `dw_type`. accumulate: dW += dY^T X (reads_c; C is dW). Throws InvalidArgument: a
// 16-bit dW with accumulate (each micro-batch's sum would be rounded to it), FP8 inputs (1x128
// scales along the tokens on both operands are not built yet), sizes < 1.
GemmProblem weight_gradient_problem(int64_t tokens, int64_t out_features, int64_t in_features,
                                    DType type = DType::bf16, bool accumulate = true,
                                    DType dw_type = DType::fp32);

// dW (+)= dY^T X on `stream` through gemm(): dy [tokens, out_features], x [tokens,
// in_features], dw [out_features, in_features], device pointers, packed.
GemmReport weight_gradient(const GemmProblem& problem, const void* dy, const void* x, void* dw,
                           cudaStream_t stream, const GemmOptions& options = {});

}  // namespace autogemm
