#pragma once
// A suite run in four numbers (issue 49): the geometric-mean ratio to cuBLASLt, the lowest row,
// how many rows are below 0.95 of cuBLASLt, and the cost model's median error on our rows.
// `autogemm bench` prints them under the table and writes them as "summary" in --json.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_runner.hpp"

namespace autogemm::bench {

// A row below this ratio (cuBLASLt time / ours) counts as losing to cuBLASLt beyond noise: the
// bench's run-to-run spread on one shape is 1-3%, so 0.95 is a loss the next run would repeat.
inline constexpr double kLowRatio = 0.95;

struct SuiteSummary {
  std::size_t compared = 0;        // rows with a cuBLASLt baseline that did not fail
  double geomean_ratio = 0;        // over those rows; 0 without any
  std::string lowest_shape;        // "64x2112x7168 (decode)"; empty without any
  double lowest_ratio = 0;
  std::size_t below_low = 0;       // rows with ratio < kLowRatio
  std::size_t predicted = 0;       // our rows with a prediction and a measured time
  // Median of |predicted - measured| / measured of our time over those rows; 0 without any.
  double median_prediction_error = 0;
};

SuiteSummary summarize_suite(const std::vector<BenchRow>& rows);

// A fused-epilogue run (issue 50's cost targets): what fusing saves (the unfused sequence's time
// over the fused call's, geomean) and what it costs on compute-bound rows (fused over our plain
// GEMM, the largest), over the rows that did not fail.
inline constexpr int64_t kEpilogueComputeBoundMinM = 4096;
struct EpilogueSummary {
  std::size_t rows = 0;
  double geomean_unfused_over_fused = 0;
  std::size_t compute_bound_rows = 0;        // M >= kEpilogueComputeBoundMinM
  double max_compute_bound_overhead = 0;     // fused / plain - 1
  std::string max_overhead_shape;
};
EpilogueSummary summarize_epilogue(const std::vector<BenchRow>& rows);
nlohmann::json summary_json(const SuiteSummary& summary);
// The lines under the table for it (empty when no row has a baseline or a prediction).
std::string format_suite_summary(const SuiteSummary& summary);

}  // namespace autogemm::bench
