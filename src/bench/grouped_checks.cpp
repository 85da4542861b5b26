// The grouped bench's checks on host data (grouped_checks.hpp).
#include "bench/grouped_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "autogemm/errors.hpp"
#include "bench/bench_runner.hpp"

namespace autogemm::bench {

int64_t reference_rows_per_group(int64_t groups, int64_t n, int64_t k) {
  if (groups < 1 || n < 1 || k < 1)
    throw InvalidArgument("groups, n, k", fmt::format("{}, {}, {}", groups, n, k),
                          "must all be >= 1");
  const double per_row = double(groups) * double(n) * double(k);
  return std::max<int64_t>(kReferenceMinRowsPerGroup, int64_t(kReferenceCheckMaxFmas / per_row));
}

std::vector<RowRange> reference_ranges(int64_t rows, int64_t budget) {
  if (rows < 0) throw InvalidArgument("rows", std::to_string(rows), "must be >= 0");
  if (budget < 2) throw InvalidArgument("budget", std::to_string(budget), "must be >= 2 rows");
  if (rows == 0) return {};
  if (rows <= budget) return {RowRange{0, rows}};
  const int64_t tail = budget / 2;
  return {RowRange{0, budget - tail}, RowRange{rows - tail, tail}};
}

int64_t count_non_finite(std::span<const double> values) {
  return std::count_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); });
}

PoisonCount count_not_poison(std::span<const unsigned char> bytes,
                             std::span<const unsigned char> poison) {
  const std::size_t width = poison.size();
  if (width == 0) throw InvalidArgument("poison", "0 bytes", "must be one element's bytes");
  if (bytes.size() % width != 0)
    throw InvalidArgument("bytes", fmt::format("{} bytes", bytes.size()),
                          fmt::format("must be whole elements of {} bytes", width));
  PoisonCount count;
  for (std::size_t e = 0; e < bytes.size() / width; ++e) {
    if (std::memcmp(bytes.data() + e * width, poison.data(), width) == 0) continue;
    if (count.changed++ == 0) count.first = int64_t(e);
  }
  return count;
}

void take_worse(WorstGroup& worst, double diff, int64_t group) {
  // The first NaN stays the worst: nothing is worse than a group with no comparable result.
  const bool worse =
      worst.group < 0 || (!std::isnan(worst.diff) && (std::isnan(diff) || diff > worst.diff));
  if (!worse) return;
  worst.diff = diff;
  worst.group = group;
}

}  // namespace autogemm::bench
