#pragma once
// Swapped operands (GemmConfig::swap_ab): D^T (N x M) = B^T (N x K) A^T (K x M). wgmma's M is
// 64 rows per instruction while its N steps by 8 (hopper-facts.md 2.1), so a call with few rows
// of A wastes most of each 64-row wgmma (M = 32: half of it) unless those rows run along N. The
// kernel then sees the transposed problem: its A is the call's B, its B the call's A, its rows
// the call's columns; it stages D^T as the call's rows for the TMA store, or where TMA cannot
// store those rows writes it through the threads, each kernel row a column of the call's D
// (kernels/sm90/epilogue.cuh). Everything downstream of make_spec (tensor maps, the split-K
// workspace, the tile trace) works on that kernel problem; the launcher hands the kernel B's
// pointer as A and A's as B.
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

// The problem the kernel computes for `problem` with swapped operands: M and N, the types, the
// leading dimensions of A and B exchanged, each operand's storage letter flipped (B stored
// N x K is the kernel's A stored M x K: "nt" stays "nt", "nn" <-> "tt", "tn" stays "tn"); ldc and
// ldd stay the caller's row strides of C and D, which the kernel reads and writes transposed.
GemmProblem swapped_problem(const GemmProblem& problem);

// Whether TMA can store D^T for the swapped kernel problem `kernel_problem`: the caller's rows
// (the kernel's M columns) are what the unswapped rule judges (d_needs_thread_stores of the
// call), staged as the caller's rows (kernels/sm90/epilogue.cuh transposed_offset).
bool tma_stores_d_transposed(const GemmProblem& kernel_problem);

// The problem the kernels of `config` read for the call: A and B copied into TMA-describable
// rows where the caller's are not (plan/operand_copy.hpp), then swapped if config.swap_ab.
GemmProblem kernel_problem(const GemmProblem& call, const GemmConfig& config);

// Empty, or why `config` may not swap for the kernel problem (already swapped): the tile
// family only, ungrouped, no n-tail kernel (its column split is of the call's N, which the
// swapped kernel runs along M); block-scaled FP8 with block_n <= block_m (the call's rows'
// scales take the stage's row-scale slot) and not two consumers with two promotion
// temporaries (ptxas time).
std::string swap_ab_violation(const GemmProblem& kernel_problem, const KernelFields& fields);

// Whether the search offers swapped candidates: ungrouped calls with M <= 32, where half or
// more of each 64-row wgmma is padding (and the transposed stores are few: M x N outputs);
// and 16-bit calls of kSwapAbFitMinM..kSwapAbFitMaxM rows, N >= kSwapAbFitMinN, K >=
// kSwapAbFitMinK whose D rows TMA can store: wgmma's N steps by 8 where its M steps by 64, so
// the rows split into few tiles with little padding and the tile count can fill whole waves
// (what cuBLASLt runs on such shapes). Measured on an H200 (D^T stored by TMA): 2200 x 3000 x
// 6000 0.787 -> 0.946 of cuBLASLt, 1153 x 7168 x 2048 0.878 -> 0.942, 2049^3 59.7 -> 54.4 us;
// losses at 5000-5820 rows with K = 1000 (-7%, -25%) set the upper bound; the M = 128 rows of
// the public suite, not measured swapped, the lower.
// Measured on an H200 against the planner's best unswapped tile, cuBLASLt in the same run:
// BF16 at M = 17, 20, 24, 32 (seven shapes) 0.89-0.98 -> 1.02-1.12 of cuBLASLt; from M = 40
// the swapped tiles lost on three of four shapes (40 x 12288 x 4096 1.06 -> 0.99, 56 x 5120
// x 5120 0.96 -> 0.87, 63 x 4096 x 4096 1.09 -> 0.99; 48 x 8192 x 8192 0.96 -> 1.00).
// Block-scaled FP8 at M = 16 and 32 (the decode suite's ten rows): 2-14% faster than the
// unswapped picks on every row (16 x 4096 x 14336: 24.4 -> 21.3 us).
bool swap_ab_offered(const GemmProblem& call);
inline constexpr int64_t kSwapAbMaxM = 32;

// The weight-bound middle (issue 49): ungrouped calls of kSwapAbMaxM + 1 .. kWeightBoundMaxM rows
// whose B is at least kWeightBoundMinShare of the bytes, so a good kernel takes about a read of
// B. There swapped tiles that hold all the call's rows in one tile column (block_n >= M) with
// 128 weight rows (`middle_swap_tile`, its consumers below) stream each row of B once and compute
// no padded 64-row slabs. The planner runs only those (`keep_middle_swap_tiles`, and never a
// swapped tile of two or more columns, which rereads B) where the bench/suites/gemm-middle.csv
// sweep on an H200 (54 rows, each type, cuBLASLt in the same run) found them faster:
//   - 16-bit rows whose unswapped 64-row slabs pad at least kMiddleSwapMinPadShare of their
//     rows, or of more than 128 rows (whose unswapped picks took clusters or two-column swaps:
//     146 x 29568 x 8192 238.9 -> 148.5 us, 150 x 7168 x 16384 102.2 -> 79.8);
//   - block-scaled FP8 rows of at most kMiddleSwapFp8MaxM rows padding that share (37 x 8192 x
//     8192 26.3 -> 22.5 us); past it the one-column FP8 tiles are 256-row two-consumer ones
//     (the 128-row tiles run out of registers) and ran 0.72-0.84 of the unswapped picks.
// Rows padding less (M = 49..64: 64x64 tiles pad at most 15 rows) kept their tiles: the swap
// ran 0.72-0.98 of them. BF16 middle geomean 0.886 -> 0.953 of cuBLASLt (predicted 0.950), FP8
// (13 rows cuBLASLt runs) 1.112 -> 1.137 (predicted 1.140). The cost model rates all these tiles alike (DRAM time dominates
// each prediction; it does not see what separates them), hence a rule.
inline constexpr int64_t kWeightBoundMaxM = 256;
inline constexpr double kWeightBoundMinShare = 0.9;
inline constexpr int kMiddleSwapBlockM = 128;
inline constexpr int64_t kWgmmaSlabRows = 64;  // wgmma's M
inline constexpr double kMiddleSwapMinPadShare = 0.25;
inline constexpr int64_t kMiddleSwapFp8MaxM = 64;
bool weight_bound(const GemmProblem& call);  // M <= kWeightBoundMaxM, B's share of the bytes
bool weight_bound_middle(const GemmProblem& call);  // the rows the rule above applies to
// Consumers of a middle swapped tile: two on 16-bit tiles wider than
// kMiddleSwapOneConsumerMaxN that one consumer's registers also hold (up to 176 columns), one
// otherwise and with stream-K. The same tiles, one consumer -> two (H200, gemm-middle.csv
// alternated twice, us): 164 x 6144 x 4096 128x168 sk2 29.0 -> 26.0, 145 x 5120 x 5120 128x152
// sk3 28.3 -> 25.5, 131 x 4096 x 14336 128x136 43.8 -> 41.3 (sk3 -> sk4), 157 x 7168 x 16384
// 128x160 sk2 72.8 -> 70.2, 142 x 24576 x 1536 128x144 30.6 -> 30.2, 166 x 16384 x 53248
// 128x168 455.6 -> 452.7; one row slower, 146 x 29568 x 8192 128x152 131.3-137.3 -> 136.3-136.7
// (its two before runs 4.6% apart). At block_n <= 128 two lost (forced: 92 x 24576 x 1536 128x96 27.7 ->
// 28.4, 95 x 28672 x 4096 66.0 -> 68.7). Two consumers on wider tiles, which one consumer
// cannot hold, would make middle tiles of rows that have none today, and lost to their
// unswapped picks: 188 x 6144 x 4096 128x192 21.4 -> 27.6, 220 x 10240 x 8192 128x224 58.6 ->
// 105.1, 244 x 18432 x 7168 128x248 111.7 -> 182.9, 256 x 7168 x 7168 45.2 -> 58.2.
inline constexpr int kMiddleSwapOneConsumerMaxN = 128;
int middle_swap_consumers(const GemmProblem& call, const GemmConfig& config);
bool middle_swap_tile(const GemmProblem& call, const GemmConfig& config);
// In the weight-bound middle: drops two-column swapped tiles, and when a middle_swap_tile is
// among `candidates`, every other tile. Elsewhere leaves them as they are.
void keep_middle_swap_tiles(const GemmProblem& call, std::vector<Candidate>& candidates);
inline constexpr int64_t kSwapAbFitMinM = 129;
inline constexpr int64_t kSwapAbFitMaxM = 2560;
inline constexpr int64_t kSwapAbFitMinN = 1024;
inline constexpr int64_t kSwapAbFitMinK = 512;

}  // namespace autogemm::plan
