#pragma once
// Grouped GEMM (mixture-of-experts): many GEMMs that share N and K but not M, one per group
// (expert), in one launch of the tile family: D_g = alpha * A_g B_g^T (layout nt), B stored as
// [num_groups, N, K]. The persistent scheduler walks the tiles of every group as one wave plan;
// no host loop over groups, no host synchronisation (CUDA-graph capturable).
//
// Two layouts of A and D (GemmProblem::grouping):
//   contiguous  A is the groups' rows concatenated along M: [m, K], D [m, N]. Each group's rows
//               form one run that starts at a multiple of kGroupedRowAlignment (128) rows;
//               runs are padded to that alignment with rows whose group index is -1.
//               `group_index[row]` (int32, device memory, m entries) names each row's group
//               (0..num_groups-1) or -1 for a padding row. A tile of block_m (64 or 128) rows
//               takes the group of its first row; a tile whose first row is padding is skipped
//               (its D rows are not written). Padding rows inside a computed tile get values of
//               that tile's group: D's padding rows are unspecified.
//   masked      A is [num_groups, max_m, K], D [num_groups, max_m, N] (problem.m = max_m, a
//               multiple of 64). `masked_m[g]` (int32, device memory) says how many leading rows
//               of group g are valid; the kernel reads it, so the host needs only max_m and an
//               expected M for planning. Rows at or beyond masked_m[g] are neither read into D
//               nor written: D keeps whatever they held. Device-side rule: masked_m[g] > max_m
//               is treated as max_m (rows beyond max_m are ignored); negative as 0.
//
// Types: BF16 or FP16 inputs, or block-scaled FP8 (e4m3, scales below), with BF16, FP16 or
// FP32 output.
// Checked on the host before anything runs (InvalidArgument naming the argument, its value and
// the rule): sizes, types, layout nt, max_m alignment, null pointers, 16-byte aligned rows and
// bases. Group indices and masked_m live on the device and are not checked there; the rules
// above say what the kernel does with values out of range. A caller that knows the groups'
// sizes on the host can check them with check_contiguous_groups().
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm {

// Contiguous layout: every group's run of rows starts at a multiple of this many rows, so a
// 64- or 128-row tile never holds two groups (DeepGEMM's contiguous layout uses the same 128).
inline constexpr int64_t kGroupedRowAlignment = 128;
// Groups along K (Grouping::k_contiguous, autogemm/wgrad.hpp): each group's D has m rows, a
// multiple of this, so a 64-row tile never stores into the next group's D.
inline constexpr int64_t kKGroupedRowMultiple = 64;
// Masked layout: max_m is a multiple of this (a 64-row tile never crosses into the next group).
inline constexpr int64_t kMaskedMaxMAlignment = 64;

struct GroupedOperands {
  const void* a = nullptr;            // contiguous [m, K]; masked [num_groups, max_m, K]
  const void* b = nullptr;            // [num_groups, N, K]
  void* d = nullptr;                  // contiguous [m, N]; masked [num_groups, max_m, N]
  const int32_t* group_index = nullptr;   // contiguous: m entries (device memory)
  const int32_t* masked_m = nullptr;      // masked: num_groups entries (device memory)
  float alpha = 1.0f;
  // Block-scaled FP8 (e4m3 inputs, problem.scaling = block_1x128_128x128), row-major floats:
  // scale_a one per stored row of A per 128 of K ([stored rows, ceil(K/128)]: the layout
  // quantize_fp8_1x128 writes for A as one matrix), scale_b one per 128 x 128 block of each
  // group's B ([groups, ceil(N/128), ceil(K/128)]: quantize_fp8_128x128 of each group).
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  // Weight-only B (problem.weight_format, masked layout only; autogemm/weights.hpp): b is every
  // group's packed values ([num_groups, N, packed K]), b_scales and b_zeros every group's
  // scales and zeros, each group's as gemm() takes them, one after another.
  const void* b_scales = nullptr;
  const void* b_zeros = nullptr;
  // The fused epilogue (problem.epilogue, autogemm/epilogue.hpp), per group: bias and col_scale
  // [num_groups, N] (each group's N entries, bf16 or fp32 bias, fp32 scales), row_scale one
  // fp32 per stored row of A and D (contiguous: m; masked: num_groups x max_m). Null when the
  // problem's epilogue does not read them.
  const void* bias = nullptr;
  const float* row_scale = nullptr;
  const float* col_scale = nullptr;
};

// problem.grouping must be contiguous or masked; problem.num_groups >= 1; problem.m is the
// rows of A and D (contiguous) or max_m (masked); problem.expected_m the expected valid rows
// per group (planning only; 0 = m / num_groups for contiguous, max_m for masked). lda/ldb/ldd
// must be 0 (packed). Asynchronous on `stream`. options.config forces a configuration (the
// same rules refuse an illegal one); options.autotune is not supported (InvalidArgument).
GemmReport grouped_gemm(const GemmProblem& problem, const GroupedOperands& operands,
                        cudaStream_t stream, const GemmOptions& options = {});

// The rows of A and D the contiguous layout takes for groups of these sizes: every group's run
// padded to kGroupedRowAlignment (an empty group takes none), summed. Throws InvalidArgument
// naming the group for a negative size.
int64_t contiguous_rows(std::span<const int64_t> group_rows);

// Host-side check of a contiguous layout the caller knows: group_rows[g] = rows of group g
// (before padding). Throws InvalidArgument naming the group and the rule when the padded runs
// do not add up to problem.m, and returns the row where each group's run starts.
std::vector<int64_t> check_contiguous_groups(const GemmProblem& problem,
                                             std::span<const int64_t> group_rows);
// The group_index array of that layout (problem.m entries, -1 on padding rows), to copy to
// the device: what a router that sorts tokens by expert produces.
std::vector<int32_t> contiguous_group_index(const GemmProblem& problem,
                                            std::span<const int64_t> group_rows);

}  // namespace autogemm
