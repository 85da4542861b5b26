// A suite run's summary (bench/bench_summary.hpp).
#include "bench/bench_summary.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "bench/timing.hpp"

namespace autogemm::bench {

SuiteSummary summarize_suite(const std::vector<BenchRow>& rows) {
  SuiteSummary s;
  std::vector<double> errors;
  for (const BenchRow& r : rows) {
    if (!r.failure.empty()) continue;
    if (r.baseline) {
      ++s.compared;
      s.below_low += r.ratio < kLowRatio ? 1 : 0;
      if (s.lowest_shape.empty() || r.ratio < s.lowest_ratio) {
        s.lowest_ratio = r.ratio;
        s.lowest_shape = fmt::format("{}x{}x{}{}", r.problem.m, r.problem.n, r.problem.k,
                                     r.tag.empty() ? "" : " (" + r.tag + ")");
      }
    }
    // The model predicts our kernels only: cuBLASLt rows have no prediction.
    if (r.predicted_us > 0 && r.ours.samples > 0 && r.ours.median_us > 0 && !r.used_vendor)
      errors.push_back(std::abs(r.predicted_us - r.ours.median_us) / r.ours.median_us);
  }
  s.geomean_ratio = geomean_ratio(rows);
  s.predicted = errors.size();
  s.median_prediction_error = median(std::move(errors));
  return s;
}

EpilogueSummary summarize_epilogue(const std::vector<BenchRow>& rows) {
  EpilogueSummary s;
  std::vector<double> speedups;
  for (const BenchRow& r : rows) {
    if (!r.failure.empty() || !r.plain || !r.unfused || r.ours.median_us <= 0) continue;
    speedups.push_back(r.unfused->median_us / r.ours.median_us);
    if (r.problem.m < kEpilogueComputeBoundMinM) continue;
    const double overhead = r.ours.median_us / r.plain->median_us - 1;
    if (s.compute_bound_rows++ == 0 || overhead > s.max_compute_bound_overhead) {
      s.max_compute_bound_overhead = overhead;
      s.max_overhead_shape = fmt::format("{}x{}x{}", r.problem.m, r.problem.n, r.problem.k);
    }
  }
  s.rows = speedups.size();
  s.geomean_unfused_over_fused = geometric_mean(speedups);
  return s;
}

nlohmann::json summary_json(const SuiteSummary& s) {
  nlohmann::json j = {{"rows_compared", s.compared},
                      {"geomean_ratio", s.geomean_ratio},
                      {"low_ratio", kLowRatio},
                      {"rows_below_low_ratio", s.below_low},
                      {"rows_predicted", s.predicted},
                      {"median_prediction_error", s.median_prediction_error}};
  if (!s.lowest_shape.empty()) {
    j["lowest_ratio"] = s.lowest_ratio;
    j["lowest_shape"] = s.lowest_shape;
  }
  return j;
}

std::string format_suite_summary(const SuiteSummary& s) {
  std::string out;
  if (s.compared > 0)
    out += fmt::format("lowest ratio {:.3f} at {}; {} of {} row{} below {:.2f}\n", s.lowest_ratio,
                       s.lowest_shape, s.below_low, s.compared, s.compared == 1 ? "" : "s",
                       kLowRatio);
  if (s.predicted > 0)
    out += fmt::format("median prediction error (|predicted - measured| / measured, our "
                       "kernels): {:.1f}% over {} row{}\n",
                       100 * s.median_prediction_error, s.predicted, s.predicted == 1 ? "" : "s");
  return out;
}

}  // namespace autogemm::bench
