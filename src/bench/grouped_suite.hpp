#pragma once
// The grouped (mixture-of-experts) suite: files in the format of
// /work/shared/suites/grouped-moe.csv, one grouped GEMM per row:
//   kind,groups,m_per_group,n,k,tag
//   contiguous,8,4096,4096,7168,moe-prefill
// kind is contiguous or masked (autogemm/grouped.hpp); m_per_group the expected valid rows of a
// group, around which the bench draws each group's M (grouped_bench.hpp). The comment, blank-line
// and header rules are those of the GEMM suite (suite.hpp): '#' comments, columns in any order,
// tag optional.
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "autogemm/problem.hpp"

namespace autogemm::bench {

struct GroupedCase {
  Grouping kind = Grouping::contiguous;   // contiguous or masked
  int64_t groups = 0;
  int64_t m_per_group = 0;
  int64_t n = 0, k = 0;
  std::string tag;
  int line = 0;   // where it stands in its file, for messages
  friend bool operator==(const GroupedCase&, const GroupedCase&) = default;
};

// Parses a grouped suite. Throws InvalidArgument naming `source`, the line, the column, the
// value and the rule for a malformed line: a kind other than contiguous or masked, a count or
// size that is not a positive integer, a size past the problem rules (validate(): < 2^31), a
// line with too many or too few fields, a header without the five columns.
std::vector<GroupedCase> parse_grouped_suite(std::istream& in, const std::string& source);

// Reads and parses a grouped suite file (the --grouped option's value); InvalidArgument
// ("--grouped", path, why) when it cannot be opened or has no rows.
std::vector<GroupedCase> load_grouped_suite(const std::string& path);

}  // namespace autogemm::bench
