#pragma once
// `autogemm bench --grouped FILE --weights FORMAT`: the masked rows of a grouped suite as a MoE
// decode step with every expert's weight packed (autogemm/grouped.hpp, autogemm/weights.hpp),
// timed against our BF16 grouped GEMM on the same groups and against a bare read of every
// expert's packed bytes (values, scales, zeros), interleaved in one loop with the L2 flushed
// before each call. Each group gets m_per_group valid rows (a decode step's tokens per expert);
// three groups' rows (the first, the second, the last) are checked against float64 of A and
// their dequantised weights, and every row past masked_m must keep its poison.
#include <cstdint>
#include <string>
#include <vector>

#include "autogemm/weights.hpp"
#include "bench/bench_runner.hpp"
#include "bench/grouped_suite.hpp"

namespace autogemm::bench {

struct GroupedWeightsRow {
  GroupedCase shape;
  WeightFormat format = WeightFormat::int4_g128;
  int64_t max_m = 0;         // the masked layout's rows per group (m_per_group rounded to 64)
  std::string config;        // what our weight-only call ran
  double packed_bytes = 0;   // every expert's packed weight
  double time_us = 0;        // medians
  double bf16_us = 0;        // our BF16 grouped GEMM of the same groups
  double read_us = 0;        // a copy of half the packed bytes: their bytes through DRAM once
  double diff = 0;           // the worst of the checked groups against float64
  int64_t rows_touched = 0;  // elements past masked_m whose poison changed
  std::string failure;       // empty when right
  double speedup_over_bf16() const { return time_us > 0 ? bf16_us / time_us : 0; }
  double read_share() const { return time_us > 0 ? read_us / time_us : 0; }
};

// Measures every case on options.device (bf16 activations and output); contiguous rows fail
// with the rule (weight-only grouped GEMM takes the masked layout).
std::vector<GroupedWeightsRow> run_grouped_weights_bench(const std::vector<GroupedCase>& cases,
                                                         WeightFormat format,
                                                         const BenchOptions& options);

// The table and its summary (geomean over BF16, median and lowest read share), and the CSV.
std::string format_grouped_weights_table(const std::vector<GroupedWeightsRow>& rows,
                                         const std::string& device);
std::string grouped_weights_rows_to_csv(const std::vector<GroupedWeightsRow>& rows);

}  // namespace autogemm::bench
