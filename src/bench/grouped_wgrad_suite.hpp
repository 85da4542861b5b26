#pragma once
// The grouped weight-gradient suite (bench/suites/wgrad-moe.csv), one mixture-of-experts layer's
// weight gradients per row:
//   m,n,tokens_per_group,groups,tag
//   4096,7168,512,32,dsv3-gateup-E32-T512
// m = out features, n = in features, groups the experts, tokens_per_group the tokens an expert is
// expected to get (the bench draws each expert's tokens around it: grouped_wgrad_bench.hpp).
// `bench --wgrad FILE` takes either this suite or the dense one (m,n,k: wgrad-dense.csv); the
// header tells them apart (a groups column). The comment, blank-line and header rules are the
// GEMM suite's (suite.hpp): '#' comments, columns in any order, tag optional.
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace autogemm::bench {

struct GroupedWgradCase {
  int64_t m = 0, n = 0;
  int64_t tokens_per_group = 0;
  int64_t groups = 0;
  std::string tag;
  int line = 0;   // where it stands in its file, for messages
  friend bool operator==(const GroupedWgradCase&, const GroupedWgradCase&) = default;
};

// Parses a grouped weight-gradient suite. Throws InvalidArgument naming `source`, the line, the
// column, the value and the rule for a malformed line: a count or size that is not a positive
// integer, a size past the problem rules (validate(): < 2^31), a line with too many or too few
// fields, a header without the four columns. The rules of the problem itself (m a multiple of
// 64) are grouped_weight_gradient_problem's, checked when the bench makes the row.
std::vector<GroupedWgradCase> parse_grouped_wgrad_suite(std::istream& in,
                                                        const std::string& source);

// Reads and parses the file at `path` (the --wgrad option's value); InvalidArgument("--wgrad",
// path, why) when it cannot be opened or has no rows.
std::vector<GroupedWgradCase> load_grouped_wgrad_suite(const std::string& path);

// Whether the --wgrad suite at `path` is grouped: its header names a groups column. Throws
// InvalidArgument("--wgrad", path, why) when it cannot be opened, and the table errors of
// read_suite_table (a line with another number of fields than the header).
bool is_grouped_wgrad_suite(const std::string& path);

}  // namespace autogemm::bench
