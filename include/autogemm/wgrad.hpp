#pragma once
// Weight gradients (issue 52). For a linear layer Y = X W^T, X [T, K] and W [N, K], the weight
// gradient over the T tokens is dW [N, K] = dY^T X, dY [T, N] and X [T, K] stored token-major
// as training keeps them, accumulated into fp32 over micro-batches (dW += ...). That is the GEMM
// of layout tn (A = dY^T, stored as dY; B = X, stored as X) with C = D: no new kernel, so it is
// planned, explained (`autogemm plan --wgrad`), cached and tuned like any GEMM. These helpers
// build that problem and its operands.
//
// FP8 (e4m3 with one scale per 128 tokens on both operands, DeepGEMM's "1D1D") takes the
// transposed copies quantize_fp8_1x128_transposed writes (Fp8WeightGradientOperands).
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
// `type`, packed rows): m = out_features, n = in_features, k = tokens, D of `dw_type`.
// accumulate: dW += dY^T X (reads_c; C is dW).
//   bf16 or fp16: layout tn, dY and X as stored.
//   e4m3: FP8 with 1x128 scales along the tokens on both operands (Scaling::block_1x128_1x128,
//     layout nt): FP8 wgmma reads both operands K-major, K being the tokens, so the operands are
//     dY^T and X^T as quantize_fp8_1x128_transposed writes them (one pass over each, which can
//     also write the forward pass's own 1x128 copy). tokens a multiple of 16 (the transposed
//     copies' rows are tokens bytes, which TMA needs in 16-byte units).
// Throws InvalidArgument: a 16-bit dW with accumulate (each micro-batch's sum would be rounded
// to it), other types, sizes < 1, FP8 tokens not a multiple of 16.
GemmProblem weight_gradient_problem(int64_t tokens, int64_t out_features, int64_t in_features,
                                    DType type = DType::bf16, bool accumulate = true,
                                    DType dw_type = DType::fp32);

// dW (+)= dY^T X on `stream` through gemm(): dy [tokens, out_features], x [tokens,
// in_features], dw [out_features, in_features], device pointers, packed. bf16 or fp16 problems.
GemmReport weight_gradient(const GemmProblem& problem, const void* dy, const void* x, void* dw,
                           cudaStream_t stream, const GemmOptions& options = {});

// FP8 operands of a weight gradient, as quantize_fp8_1x128_transposed writes them from dY and
// X: dy_t = dY^T e4m3 [out_features, tokens] with dy_t_scales [out_features, ceil(tokens/128)]
// floats, x_t = X^T e4m3 [in_features, tokens] with x_t_scales [in_features, ceil(tokens/128)];
// device pointers, packed.
struct Fp8WeightGradientOperands {
  const void* dy_t = nullptr;
  const float* dy_t_scales = nullptr;
  const void* x_t = nullptr;
  const float* x_t_scales = nullptr;
};

// dW (+)= dY^T X from FP8 operands (a weight_gradient_problem of type e4m3) on `stream`:
//   quantize_fp8_1x128_transposed(dy, bf16, tokens, out_features, out_features, dy_t, dy_t_scales);
//   quantize_fp8_1x128_transposed(x, bf16, tokens, in_features, in_features, x_t, x_t_scales);
//   weight_gradient(problem, {dy_t, dy_t_scales, x_t, x_t_scales}, dw, stream);
GemmReport weight_gradient(const GemmProblem& problem, const Fp8WeightGradientOperands& operands,
                           void* dw, cudaStream_t stream, const GemmOptions& options = {});

// The weight gradients of `num_groups` experts whose `tokens` tokens are concatenated in dY
// [tokens, out_features] and X [tokens, in_features]: m = out_features, n = in_features, k =
// tokens, grouping k_contiguous, layout tn, dW [num_groups, out_features, in_features] of
// `dw_type`. expected_tokens: the tokens a group is expected to have, for planning (0: tokens /
// num_groups). Throws InvalidArgument for what weight_gradient_problem refuses, num_groups < 1,
// out_features not a multiple of kKGroupedRowMultiple (64), and FP8 (experts' FP8 gradients are
// not built).
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
