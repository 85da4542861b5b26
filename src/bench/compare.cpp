// Result checking: DeepGEMM's diff measure, unwritten (non-finite) outputs, spot checks.
#include "bench/compare.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "autogemm/errors.hpp"

namespace autogemm::bench {

double gemm_diff(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    throw InvalidArgument("y.size()", std::to_string(y.size()),
                          fmt::format("must equal x.size() = {} to compare", x.size()));
  // diff = 1 - 2 sum(xy) / sum(x^2 + y^2): 0 for x == y, 1 for orthogonal, 2 for x == -y;
  // insensitive to where the error sits, close to the mean relative squared error for small
  // errors (DeepGEMM's calc_diff).
  DiffSums sums;
  for (std::size_t i = 0; i < x.size(); ++i) sums.add(x[i], y[i]);
  return sums.diff();
}

CheckReport check_result(const std::vector<double>& got, int64_t ld, const std::vector<double>& ref,
                         int64_t m, int64_t n, double atol, double rtol, int samples,
                         uint64_t seed) {
  if (m < 1 || n < 1)
    throw InvalidArgument(m < 1 ? "m" : "n", std::to_string(m < 1 ? m : n), "must be >= 1");
  if (ld < n) throw InvalidArgument("ld", std::to_string(ld), fmt::format("must be >= n = {}", n));
  const std::size_t got_needed = std::size_t((m - 1) * ld + n);
  if (got.size() < got_needed)
    throw InvalidArgument("got.size()", std::to_string(got.size()),
                          fmt::format("must hold (m - 1) * ld + n = {} elements", got_needed));
  if (ref.size() < std::size_t(m * n))
    throw InvalidArgument("ref.size()", std::to_string(ref.size()),
                          fmt::format("must hold m * n = {} elements", m * n));

  CheckReport report;
  std::vector<double> packed(std::size_t(m * n));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const double v = got[std::size_t(r * ld + c)];
      if (!std::isfinite(v)) ++report.unwritten;
      packed[std::size_t(r * n + c)] = v;
    }
  report.diff = gemm_diff(packed, ref);

  auto check_entry = [&](int64_t r, int64_t c) {
    const double g = packed[std::size_t(r * n + c)];
    const double w = ref[std::size_t(r * n + c)];
    const bool ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);  // false for NaN
    if (ok) return;
    ++report.spot_failures;
    if (report.first_failure.empty())
      report.first_failure = fmt::format("({}, {}): got {}, want {}", r, c, g, w);
  };
  // The four corners catch edge-tile bugs that random samples of a large matrix rarely hit.
  for (int64_t r : {int64_t(0), m - 1}) {
    for (int64_t c : {int64_t(0), n - 1}) {
      check_entry(r, c);
      if (n == 1) break;  // one column: (r, 0) is also (r, n - 1)
    }
    if (m == 1) break;
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> row(0, m - 1), col(0, n - 1);
  for (int s = 0; s < samples; ++s) check_entry(row(rng), col(rng));
  return report;
}

}  // namespace autogemm::bench
