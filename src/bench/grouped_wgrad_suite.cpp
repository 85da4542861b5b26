// The grouped weight-gradient suite's rows (grouped_wgrad_suite.hpp), read with the GEMM suite's
// table rules.
#include "bench/grouped_wgrad_suite.hpp"

#include "autogemm/errors.hpp"
#include "autogemm/problem.hpp"
#include "bench/suite.hpp"

namespace autogemm::bench {

namespace {

const char* kHeaderRule =
    "the first non-comment line is the header and must name the columns m, n, tokens_per_group "
    "and groups (tag optional), e.g. \"m,n,tokens_per_group,groups,tag\"";

// The sizes' own rules (validate(): each < 2^31), reported with the file, line and column
// rather than later by the command as a bare "n".
void check_sizes(const std::string& source, const SuiteLine& line, const GroupedWgradCase& c) {
  GemmProblem sizes;
  sizes.m = c.m;
  sizes.n = c.n;
  sizes.k = c.tokens_per_group;
  try {
    validate(sizes);
  } catch (const InvalidArgument& e) {
    const std::string column = e.argument() == "k" ? "tokens_per_group" : e.argument();
    throw InvalidArgument(suite_field_place(source, line, column), e.value(), e.rule());
  }
}

}  // namespace

std::vector<GroupedWgradCase> parse_grouped_wgrad_suite(std::istream& in,
                                                        const std::string& source) {
  const SuiteTable table =
      read_suite_table(in, source, {"m", "n", "tokens_per_group", "groups"}, kHeaderRule);
  const std::optional<std::size_t> tag_col = table.column("tag");
  std::vector<GroupedWgradCase> cases;
  for (const SuiteLine& line : table.lines) {
    GroupedWgradCase c;
    c.m = suite_positive_integer(source, line, table, "m");
    c.n = suite_positive_integer(source, line, table, "n");
    c.tokens_per_group = suite_positive_integer(source, line, table, "tokens_per_group");
    c.groups = suite_positive_integer(source, line, table, "groups");
    check_sizes(source, line, c);
    if (tag_col) c.tag = line.fields[*tag_col];
    c.line = line.number;
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<GroupedWgradCase> load_grouped_wgrad_suite(const std::string& path) {
  std::ifstream file = open_suite_file("--wgrad", path);
  std::vector<GroupedWgradCase> cases = parse_grouped_wgrad_suite(file, path);
  if (cases.empty())
    throw InvalidArgument("--wgrad", path, "holds no rows (only a header, comments or nothing)");
  return cases;
}

bool is_grouped_wgrad_suite(const std::string& path) {
  std::ifstream file = open_suite_file("--wgrad", path);
  return read_suite_table(file, path, {}, "").column("groups").has_value();
}

}  // namespace autogemm::bench
