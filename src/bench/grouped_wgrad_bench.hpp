#pragma once
// `autogemm bench --wgrad FILE` on a grouped suite (grouped_wgrad_suite.hpp): one
// mixture-of-experts layer's weight gradients per row, our grouped_weight_gradient() (every
// expert in one launch, the runs given on the device) against a loop of cuBLASLt calls, one per
// expert, captured in one CUDA graph (grouped_wgrad_baseline.hpp), on the same inputs in the same
// process, timed alike (timing.hpp), with a copy of the row's own bytes for the D-bound rows.
//
// A row's experts get their tokens drawn around tokens_per_group (uniform in [ceil(0.7 t),
// floor(1.3 t)], draw_group_rows of grouped_bench.hpp: the same generator as the grouped GEMM
// suite, seeded with (seed, row index)); the runs are concatenated in expert order: group_ends
// are the running sums, T their total. dY [T, m] and X [T, n] bf16 or fp16, random; dW
// [groups, m, n] fp32, accumulated into (dW += dY_g^T X_g), starting from random values (expert
// 0's; expert g's those times 1 + g / groups, made on the device).
//
// Checked once, before timing, from that starting dW: each expert's dW against the float64
// reference of its dense problem (dW0_g + dY_g^T X_g) on its first and last rows, as many as the
// reference's budget allows (grouped_checks.hpp reference_ranges), and the loop's dW against
// ours over every entry (on the device). Timed calls accumulate into dW again and again: fp32
// absorbs it, and no timed result is checked.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"
#include "bench/bench_runner.hpp"
#include "bench/grouped_bench.hpp"
#include "bench/grouped_wgrad_suite.hpp"
#include "bench/timing.hpp"

namespace autogemm::bench {

// One suite row made concrete: the problem and the drawn runs.
struct GroupedWgradItem {
  GroupedWgradCase source;            // the suite row (its line, for messages)
  std::size_t index = 0;              // its index among the suite's rows: the draws depend on it
  GemmProblem problem;                // grouped_weight_gradient_problem(T, m, n, groups, type,
                                      // accumulate, fp32, tokens_per_group)
  std::vector<int64_t> group_tokens;  // drawn tokens per expert
  std::vector<int64_t> group_ends;    // their running sums (what the kernel reads, as int32)
  uint64_t input_seed = 0;            // dY from it, X from it + 1, expert 0's starting dW from
                                      // it + 2 (fill_random)

  int64_t tokens() const { return problem.k; }
  // 2 m n T: every token's product once.
  double flops() const { return problem.flops(); }
  // dW's bytes: groups x m x n x 4.
  double d_bytes() const;
  // The bytes a grouped weight gradient must move: dY and X read once, dW read and written.
  double bytes() const;
};

// The item of suite row `index` with inputs of `in` (bf16 or fp16). Throws InvalidArgument for
// another type and for what grouped_weight_gradient_problem refuses (m not a multiple of 64).
GroupedWgradItem make_grouped_wgrad_item(const GroupedWgradCase& source, std::size_t index,
                                         DType in, uint64_t seed);
// Every row of a suite, each checked before any is measured; an error names `source`, the line
// and the rule ("wgrad-moe.csv line 9 (m) = 1000: ...").
std::vector<GroupedWgradItem> make_grouped_wgrad_items(const std::vector<GroupedWgradCase>& cases,
                                                       const std::string& source, DType in,
                                                       uint64_t seed);

// ---- the measured row ----------------------------------------------------------------------

struct GroupedWgradRow {
  GroupedWgradItem item;
  std::string config;           // GemmConfig::describe() of what ran
  std::string reason;           // GemmReport::reason
  TimingStats ours;
  double tflops = 0;            // flops() / median
  double gbps = 0;              // bytes() / median
  // The per-expert cuBLASLt loop: its time, its median / ours, and its dW against ours over
  // every entry (diff_to_ours; not under diff_limit fails the row: one of the two is wrong).
  GroupedBaseline loop;
  // The worst expert's DeepGEMM diff of our dW against the float64 reference on checked_rows
  // rows of each expert's dW; NaN when nothing was compared. diff_limit: 1e-5 (16-bit inputs).
  double diff = 0;
  int64_t worst_group = -1;
  double diff_limit = 0;
  int64_t checked_rows = 0;     // rows of each expert's dW the reference covered
  int64_t unwritten = 0;        // non-finite entries among them
  // A cudaMemcpy device to device moving bytes() (read half, write half), timed in the same
  // loop; its median / ours is the row's share of a copy of its own bytes (small experts are
  // bound by dW's fp32 read and write).
  std::optional<TimingStats> same_bytes_copy;
  std::string failure;          // why the row FAILED; empty when it did not
};

double same_bytes_share(const GroupedWgradRow& row);   // 0 without a same-bytes copy

// Measures one item on the current device. A row that fails (our call throws, a wrong or
// unwritten dW, a loop that disagrees with ours) is returned with `failure` set; a loop cuBLASLt
// declines is n/a with the reason. Throws CudaError only when the CUDA context is lost.
GroupedWgradRow run_grouped_wgrad_case(const GroupedWgradItem& item, const BenchOptions& options,
                                       L2Flusher& flusher);

// Every item on options.device; `progress(done, total, item)` before each row and once at the
// end. A lost CUDA context fails the row it happened in and marks the rest FAILED as not run.
std::vector<GroupedWgradRow> run_grouped_wgrad_bench(
    const std::vector<GroupedWgradItem>& items, const BenchOptions& options,
    const std::function<void(std::size_t, std::size_t, const GroupedWgradItem*)>& progress = {});

// Geometric mean of the loop's ratio over the rows where it ran and that did not fail; the rows
// where it was asked for and did not run; the rows that FAILED.
double grouped_wgrad_geomean_loop_ratio(const std::vector<GroupedWgradRow>& rows);
std::size_t grouped_wgrad_rows_without_loop(const std::vector<GroupedWgradRow>& rows);
std::size_t grouped_wgrad_failed_rows(const std::vector<GroupedWgradRow>& rows);

// ---- planning without a GPU ----------------------------------------------------------------

// Each item's plan on a device description (a preset), as `bench` shows one without a GPU
// (bench_runner.hpp plan_items; with `config`, that configuration's prediction).
std::vector<PlanRow> plan_grouped_wgrad_items(const std::vector<GroupedWgradItem>& items,
                                              const GpuInfo& device,
                                              const std::optional<GemmConfig>& config);

}  // namespace autogemm::bench
