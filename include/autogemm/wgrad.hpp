#pragma once
// Weight gradients (issue 52). For a linear layer Y = X W^T, X [T, K] and W [N, K], the weight
// gradient over the T tokens is dW [N, K] = dY^T X, dY [T, N] and X [T, K] stored token-major
// as training keeps them, accumulated into fp32 over micro-batches (dW += ...). That is the GEMM
// of layout tn (A = dY^T, stored as dY; B = X, stored as X) with C = D: no new kernel, so it is
// planned, explained (`autogemm plan --wgrad`), cached and tuned like any GEMM. These helpers
// build that problem and its operands.
//
// Mixture of experts: expert g's tokens are a run of the concatenated tokens, and its gradient
// dW_g = dY_g^T X_g is reduced over that run alone: groups along K (Grouping::k_contiguous), all
// of them in one launch. The runs are given on the device as group_ends (int32, num_groups
// entries): group g is tokens [group_ends[g - 1], group_ends[g]) (group 0 from token 0), so the
// call is CUDA-graph capturable. Any run length works: the last k-block of a run has the tokens
// past it zeroed in shared memory before the tensor cores read it. dW is [num_groups,
// out_features, in_features].
//   Device-side rule (the kernel never reads or writes out of bounds): a group starts at
//   clamp(group_ends[g - 1], 0, tokens) and ends at clamp(group_ends[g], its start, tokens), so a
//   run out of order is empty and one past the tokens stops at the last. A group with no tokens
//   is not computed: its dW is left as it was (with accumulate that is dW += 0).
//   check_group_ends() refuses such ends on the host, naming the group.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

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

// The weight gradients of `num_groups` experts whose `tokens` tokens are concatenated in dY
// [tokens, out_features] and X [tokens, in_features]: m = out_features, n = in_features, k =
// tokens, grouping k_contiguous, layout tn, dW [num_groups, out_features, in_features] of
// `dw_type`. expected_tokens: the tokens a group is expected to have, for planning (0: tokens /
// num_groups). Throws InvalidArgument for what weight_gradient_problem refuses, num_groups < 1,
// and out_features not a multiple of kKGroupedRowMultiple (64).
GemmProblem grouped_weight_gradient_problem(int64_t tokens, int64_t out_features,
                                            int64_t in_features, int64_t num_groups,
                                            DType type = DType::bf16, bool accumulate = true,
                                            DType dw_type = DType::fp32,
                                            int64_t expected_tokens = 0);

// dW_g (+)= dY_g^T X_g for every group on `stream`, one launch: dy, x, dw as above (device
// pointers, packed), group_ends num_groups int32 in device memory. Asynchronous; options.config
// forces a configuration, options.autotune is refused (the groups' sizes live on the device).
GemmReport grouped_weight_gradient(const GemmProblem& problem, const void* dy, const void* x,
                                   void* dw, const int32_t* group_ends, cudaStream_t stream,
                                   const GemmOptions& options = {});

// Host check of group ends the caller knows: one entry per group, each >= the one before (>= 0
// for the first) and <= problem.k. Throws InvalidArgument naming the group and the rule.
void check_group_ends(const GemmProblem& problem, std::span<const int64_t> group_ends);

}  // namespace autogemm
