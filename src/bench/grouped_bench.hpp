#pragma once
// `autogemm bench --grouped`: one grouped GEMM per suite row (grouped_suite.hpp), our
// grouped_gemm() against (a) a loop of cuBLASLt calls, one per group, and (b) cuBLAS's
// cublasGemmGroupedBatchedEx (grouped_baselines.hpp), and against our own dense kernel on one
// GEMM of the same valid rows (grouped_dense.hpp), on the same inputs in the same process,
// timed alike (timing.hpp), each group checked against the float64 reference. Inputs bf16, fp16
// or block-scaled FP8 (e4m3 quantised from BF16 data, grouped_inputs.hpp; checked against the
// float64 product of the unquantised data).
//
// A row's groups get M drawn around m_per_group (uniform in [ceil(0.7 m), floor(1.3 m)]) from
// std::mt19937_64 seeded with (seed, row index), so each row is reproducible on its own:
//   contiguous  runs of M_g rows, each padded to kGroupedRowAlignment (128); problem.m is the sum
//               of the padded runs; group_index from contiguous_group_index();
//   masked      max_m = the largest M_g rounded up to kMaskedMaxMAlignment (64), problem.m =
//               max_m, masked_m = the drawn M_g;
// and expected_m = m_per_group (what the planner is told).
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "autogemm/problem.hpp"
#include "bench/bench_runner.hpp"
#include "bench/grouped_suite.hpp"
#include "bench/timing.hpp"

namespace autogemm::bench {

// Block-scaled FP8 (e4m3 inputs, Scaling::block_1x128_128x128): the bench's FP8 rows.
bool block_scaled_fp8(const GemmProblem& problem);

// ---- the drawn layout of one row (no GPU) ----------------------------------------------------

// The valid rows of each of `groups` groups, drawn as the file comment says. The generator is
// std::mt19937_64 over std::seed_seq{seed (two words), row_index (two words)}, and each draw is
// lo + (rng() * span >> 64) (span = hi - lo + 1): every step is specified by the C++ standard,
// so the draws are the same on every platform. m_per_group >= 1; each M is >= 1.
std::vector<int64_t> draw_group_rows(int64_t groups, int64_t m_per_group, uint64_t seed,
                                     uint64_t row_index);

// The masked layout's max_m: the largest group rounded up to kMaskedMaxMAlignment.
int64_t masked_max_m(std::span<const int64_t> group_rows);

// A dense GEMM of `rows` rows with a grouped problem's N, K, types and scaling (layout nt,
// packed): one group of the cuBLASLt loop, or all valid rows for the dense comparison.
GemmProblem dense_problem(const GemmProblem& grouped, int64_t rows);

// One suite row made concrete: the grouped problem and the drawn groups.
struct GroupedItem {
  GroupedCase source;              // the suite row (its line, for messages)
  std::size_t index = 0;           // its index among the suite's rows: the draws depend on it
  GemmProblem problem;             // grouping, num_groups, m (padded rows or max_m), n, k,
                                   // expected_m = m_per_group, the types; layout nt, packed
  std::vector<int64_t> group_rows; // drawn valid rows per group (masked: masked_m)
  std::vector<int64_t> row_starts; // first row of each group in A and D
  uint64_t input_seed = 0;         // A from it, B from it + 1 (fill_random)

  int64_t valid_rows() const;      // sum of group_rows
  // Useful work: 2 * valid rows * N * K (no padding, no rows beyond masked_m).
  double useful_flops() const;
  // The bytes a grouped GEMM must move: the valid rows of A, every group's B, and the valid
  // rows of D written; for FP8 also the scales of those rows of A and of every group's B.
  double bytes() const;
};

// The item of suite row `index` with inputs of `in` (bf16, fp16, or e4m3: block-scaled FP8) and
// D of `out` (bf16, fp16 or fp32). Throws InvalidArgument for another input type, and for a
// problem grouped_gemm's rules refuse (validate()).
GroupedItem make_grouped_item(const GroupedCase& source, std::size_t index, DType in, DType out,
                              uint64_t seed);
// Every row of a suite, each checked before any is measured; an error names `source`, the line
// and the rule ("grouped-moe.csv line 9 (num_groups x n) = ...").
std::vector<GroupedItem> make_grouped_items(const std::vector<GroupedCase>& cases,
                                            const std::string& source, DType in, DType out,
                                            uint64_t seed);

// ---- the measured row ----------------------------------------------------------------------

// One baseline's outcome on a row.
struct GroupedBaseline {
  std::optional<TimingStats> time;   // its median etc.; empty when it did not run
  double ratio = 0;                  // its median / ours (> 1: we are faster); 0 without a time
  std::string unavailable;           // why it did not run although asked for (shown as n/a)
  std::string note;                  // how it was timed, when not as usual
  // Its D against ours over every valid row, the worst group's DeepGEMM diff; NaN when not
  // compared. Not under the row's diff_limit fails the row: one of the two is wrong.
  double diff_to_ours = 0;
};

// Our dense kernel on the row's dense twin (grouped_dense.hpp), timed in the same loop.
struct GroupedDense {
  std::optional<TimingStats> time;   // empty when it did not run
  double tflops = 0;                 // the row's useful flops / its median
  // Our grouped TFLOP/s over its TFLOP/s (= its median / ours: the same flops); 0 without a time.
  // Issue 23's target: >= 0.9 on FP8 contiguous prefill rows.
  double ratio = 0;
  std::string config;                // GemmConfig::describe() of what gemm() ran
  std::string unavailable;           // why it did not run (gemm() threw: the reason)
};

struct GroupedRow {
  GroupedItem item;
  std::string config;           // GemmConfig::describe() of what ran
  std::string reason;           // GemmReport::reason
  TimingStats ours;
  double tflops = 0;            // useful_flops / median
  double gbps = 0;              // bytes / median
  GroupedBaseline loop;         // the per-group cuBLASLt loop
  GroupedBaseline batched;      // cublasGemmGroupedBatchedEx (n/a for FP8)
  GroupedDense dense;           // our dense kernel on the same valid rows (every row)
  // The worst group's DeepGEMM diff of our D against the float64 reference (on checked_rows of
  // the groups' rows: grouped_checks.hpp reference_ranges; FP8: the product of the unquantised
  // BF16 data), NaN when nothing was compared. diff_limit: diff_limit(problem), 1e-3 for FP8.
  double diff = 0;
  int64_t worst_group = -1;
  double diff_limit = 0;
  int64_t checked_rows = 0;
  int64_t unwritten = 0;        // non-finite entries (the poison left) in valid rows of our D
  int64_t poison_changed = 0;   // masked: entries of rows at or past masked_m[g] not the poison
  // Masked rows: a cudaMemcpy device to device moving bytes() (read half, write half), timed in
  // the same loop; its median / ours is the row's share of a copy of its own bytes.
  std::optional<TimingStats> same_bytes_copy;
  std::string failure;          // why the row FAILED; empty when it did not
};

double same_bytes_share(const GroupedRow& row);   // 0 without a same-bytes copy

// Measures one item on the current device. A row that fails (our call throws, a wrong or
// unwritten D, rows past masked_m touched, a baseline that disagrees with ours) is returned with
// `failure` set; a baseline the library declines is n/a with the reason, as is a dense twin
// gemm() does not run (the row is still timed and checked). Throws CudaError only when the CUDA
// context is lost (nothing later could run).
GroupedRow run_grouped_case(const GroupedItem& item, const BenchOptions& options,
                            L2Flusher& flusher);

// Every item on options.device; `progress(done, total, item)` before each row and once at the
// end. A lost CUDA context fails the row it happened in and marks the rest FAILED as not run.
std::vector<GroupedRow> run_grouped_bench(
    const std::vector<GroupedItem>& items, const BenchOptions& options,
    const std::function<void(std::size_t, std::size_t, const GroupedItem*)>& progress = {});

// ---- the suite's figures ----------------------------------------------------------------------

// Geometric mean of the loop's (batched's) ratio over the rows where it ran and that did not fail.
double geomean_loop_ratio(const std::vector<GroupedRow>& rows);
double geomean_batched_ratio(const std::vector<GroupedRow>& rows);
// Rows where a baseline was asked for and did not run (either), and rows that FAILED.
std::size_t grouped_rows_without_baseline(const std::vector<GroupedRow>& rows);
std::size_t grouped_failed_rows(const std::vector<GroupedRow>& rows);
// Our grouped TFLOP/s over our dense kernel's (GroupedDense::ratio) on the contiguous rows with
// a dense time that did not fail: the geometric mean (0 without such rows), and the row with the
// lowest (nullptr without).
double geomean_dense_ratio_contiguous(const std::vector<GroupedRow>& rows);
const GroupedRow* lowest_dense_ratio_contiguous(const std::vector<GroupedRow>& rows);

}  // namespace autogemm::bench
