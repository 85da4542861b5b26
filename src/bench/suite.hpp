#pragma once
// Shape suites for the bench: files in the format of /work/shared/suites/gemm-public.csv.
// (--m/--n/--k lists are parsed by cli/size_list.hpp.)
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace autogemm::bench {

struct BenchCase {
  int64_t m = 0, n = 0, k = 0;
  std::string tag;  // "decode", "prefill", ... (empty when not from a suite)
  friend bool operator==(const BenchCase&, const BenchCase&) = default;
};

// Parses the suite format: '#' starts a comment (whole line or trailing), blank lines are
// skipped, the first remaining line is the header and must name m, n, k (in any order; tag
// optional, other columns ignored). Throws InvalidArgument naming `source`, the line number,
// the value and the rule for a malformed line.
std::vector<BenchCase> parse_suite(std::istream& in, const std::string& source);

// Reads and parses a suite file; InvalidArgument when it cannot be opened or has no cases.
std::vector<BenchCase> load_suite(const std::string& path);

}  // namespace autogemm::bench
