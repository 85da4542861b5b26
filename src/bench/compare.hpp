#pragma once
// Comparing results. DeepGEMM's measure: diff = 1 - 2*sum(x*y) / sum(x*x + y*y), in float64.
#include <cstdint>
#include <string>
#include <vector>

namespace autogemm::bench {

double gemm_diff(const std::vector<double>& x, const std::vector<double>& y);

// gemm_diff's two sums, for callers that stream the values (or add up partial sums from
// several threads) instead of holding two float64 vectors.
struct DiffSums {
  double cross = 0, squares = 0;
  void add(double x, double y) {
    cross += x * y;
    squares += x * x + y * y;
  }
  void add(const DiffSums& o) {
    cross += o.cross;
    squares += o.squares;
  }
  double diff() const { return squares == 0 ? 0 : 1.0 - 2.0 * cross / squares; }  // 0: both zero
};

struct CheckReport {
  double diff = 0;            // gemm_diff over all elements
  int64_t unwritten = 0;      // elements that are still NaN (poison) or non-finite
  int64_t spot_failures = 0;  // sampled entries outside the tolerance
  std::string first_failure;  // "(row, col): got x, want y" for the first bad entry
};

// Compares a result (M x N, row-major with leading dimension ld) with a float64 reference
// (M x N, ld = N): counts non-finite entries, computes diff, and checks `samples` random entries
// against |got - want| <= atol + rtol * |want|.
CheckReport check_result(const std::vector<double>& got, int64_t ld, const std::vector<double>& ref,
                         int64_t m, int64_t n, double atol, double rtol, int samples, uint64_t seed);

}  // namespace autogemm::bench
