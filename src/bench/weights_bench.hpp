#pragma once
// `autogemm bench --weights FORMAT`: weight-only GEMMs (autogemm/weights.hpp) timed against our
// BF16 kernel and cuBLASLt BF16 on the same shape, and against a bare read of the packed bytes
// (values, scales, zeros), all interleaved in one loop with the L2 flushed before each call.
// Each row's D is checked against a float64 product of A and the dequantised weight.
#include <cstdint>
#include <string>
#include <vector>

#include "autogemm/gemm.hpp"
#include "autogemm/weights.hpp"
#include "bench/bench_runner.hpp"
#include "bench/suite.hpp"
#include "bench/tensors.hpp"

namespace autogemm::bench {

// A packed weight copied to the device as it is (values, scales, zeros), for GemmOperands.
struct DeviceWeight {
  DeviceBuffer q, scales, zeros;   // zeros empty unless the format has them
  // b, b_scales and b_zeros of `operands` set to these buffers.
  void set_operands(GemmOperands& operands) const;
};
DeviceWeight upload_weight(const PackedWeight& w);

// A weight [n, k] with values like a trained layer's (uniform, +-0.05), from `seed`: xorshift,
// fast enough for the largest decode rows (58.7 M values). quantize_weight packs it.
std::vector<float> random_weight(int64_t n, int64_t k, uint64_t seed);

// The float64 reference of the first `rows` rows of D = A W^T: A row-major [rows, k] as
// doubles, W the dequantised [n, k] values (dequantize_weight); [rows, n] row-major.
std::vector<double> weight_reference(const std::vector<double>& a, const std::vector<float>& w,
                                     int64_t rows, int64_t n, int64_t k);

struct WeightsRow {
  BenchCase shape;
  WeightFormat format = WeightFormat::int4_g128;
  std::string config;        // what our weight-only call ran
  double packed_bytes = 0;   // B as packed: values, scales, zeros
  double time_us = 0;        // medians
  double bf16_us = 0;        // our planner's BF16 GEMM of the same shape
  double cublaslt_us = 0;    // cuBLASLt BF16; 0 where it declined
  double read_us = 0;        // a copy of half the packed bytes: their bytes through DRAM once
  double diff = 0;           // against float64 of the first checked rows
  int64_t checked_rows = 0;
  int64_t unwritten = 0;
  std::string failure;       // empty when right
  double speedup_over_bf16() const { return time_us > 0 ? bf16_us / time_us : 0; }
  double ratio_to_cublaslt() const { return time_us > 0 ? cublaslt_us / time_us : 0; }
  double read_share() const { return time_us > 0 ? read_us / time_us : 0; }
};

// Measures every case on options.device (bf16 activations and output).
std::vector<WeightsRow> run_weights_bench(const std::vector<BenchCase>& cases, WeightFormat format,
                                          const BenchOptions& options);

// The table, and the summary lines: geometric means of the speedup over BF16 (all rows, and rows
// whose BF16 weight is at least 64 MB), of the ratio to cuBLASLt, and the read shares.
std::string format_weights_table(const std::vector<WeightsRow>& rows, const std::string& device);
std::string weights_rows_to_csv(const std::vector<WeightsRow>& rows);
// The table's last lines: the median and lowest share of a bare read of the packed bytes
// (`shares`, fractions; none: no line) and how many rows failed (0: no line).
std::string read_share_footer(const std::vector<double>& shares, int failed);

}  // namespace autogemm::bench
