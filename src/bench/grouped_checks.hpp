#pragma once
// What the grouped bench checks of a D, as plain host functions (grouped_bench.cpp feeds them
// the downloaded rows): which rows the float64 reference covers, the worst group's diff, the
// valid entries not written, and the masked rows that must still hold the poison bit for bit.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace autogemm::bench {

// Rows [first, first + count) of one group (counted from the group's first row).
struct RowRange {
  int64_t first = 0;
  int64_t count = 0;
  friend bool operator==(const RowRange&, const RowRange&) = default;
};

// The float64 reference (one thread per output) costs about a second per 2^36 multiply-adds on
// an H100 (bench_runner.hpp kReferenceCheckMaxFmas); a row gets that budget, split evenly over
// its groups, but never fewer than this many rows per group (a 64-row tile at each edge).
inline constexpr int64_t kReferenceMinRowsPerGroup = 64;

// Rows of each group the reference checks on a row of `groups` groups of N x K.
int64_t reference_rows_per_group(int64_t groups, int64_t n, int64_t k);

// The ranges of a group of `rows` valid rows that the reference checks with a budget of `budget`
// rows: the whole group when it fits, else its first budget - budget / 2 rows and its last
// budget / 2: the group's two edges, where tiles meet the group boundaries and the padding.
std::vector<RowRange> reference_ranges(int64_t rows, int64_t budget);

// Non-finite entries of `values` (the poison is NaN: an entry our kernel never wrote stays NaN).
int64_t count_non_finite(std::span<const double> values);

// Elements of `bytes` (whole elements of poison.size() bytes each) whose bytes differ from
// `poison`, and the index of the first such element (-1 when none).
struct PoisonCount {
  int64_t changed = 0;
  int64_t first = -1;
};
PoisonCount count_not_poison(std::span<const unsigned char> bytes,
                             std::span<const unsigned char> poison);

// One group's diff against its reference, per group; the worst (largest, NaN first: a NaN is
// never under a limit) and which group it was.
struct WorstGroup {
  double diff = 0;
  int64_t group = -1;
};
void take_worse(WorstGroup& worst, double diff, int64_t group);

}  // namespace autogemm::bench
