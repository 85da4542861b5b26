#pragma once
// Shape suites for the bench: files in the format of /work/shared/suites/gemm-public.csv.
// (--m/--n/--k lists are parsed by cli/size_list.hpp.) The table reading below is shared with
// the grouped suite (grouped_suite.hpp), whose rows have other columns.
#include <cstdint>
#include <fstream>
#include <istream>
#include <optional>
#include <string>
#include <string_view>
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

// ---- the table under both suite formats -------------------------------------------------------

// One data line: its number in the file (from 1), its text without the comment, and its
// fields (trimmed), one per header column.
struct SuiteLine {
  int number = 0;
  std::string text;
  std::vector<std::string> fields;
};

struct SuiteTable {
  std::vector<std::string> columns;   // the header's names, lower-cased
  std::vector<SuiteLine> lines;
  // Index of the column named `name` (lower case), if the header has it.
  std::optional<std::size_t> column(std::string_view name) const;
};

// The comment, blank-line and header rules of parse_suite, for any columns: the header must
// name every column in `required` (else InvalidArgument("<source> line N", header, header_rule))
// and every data line must have as many fields as the header.
SuiteTable read_suite_table(std::istream& in, const std::string& source,
                            const std::vector<std::string>& required,
                            const std::string& header_rule);

// "<source> line N column NAME": where a field's error points.
std::string suite_field_place(const std::string& source, const SuiteLine& line,
                              std::string_view column);

// The field of `column` on `line` as a positive integer; InvalidArgument(suite_field_place(...),
// text, "must be a positive integer") otherwise.
int64_t suite_positive_integer(const std::string& source, const SuiteLine& line,
                               const SuiteTable& table, std::string_view column);

// The file at `path` opened for reading; InvalidArgument(option, path, why) when it is a
// directory or cannot be opened (the OS's reason).
std::ifstream open_suite_file(const std::string& option, const std::string& path);

}  // namespace autogemm::bench
