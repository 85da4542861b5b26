// The grouped suite's rows (grouped_suite.hpp), read with the GEMM suite's table rules.
#include "bench/grouped_suite.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"
#include "bench/suite.hpp"

namespace autogemm::bench {

namespace {

Grouping parse_kind(const std::string& source, const SuiteLine& line, const SuiteTable& table) {
  const std::string& text = line.fields[*table.column("kind")];
  if (text == "contiguous") return Grouping::contiguous;
  if (text == "masked") return Grouping::masked;
  throw InvalidArgument(suite_field_place(source, line, "kind"), text,
                        "must be contiguous or masked (autogemm/grouped.hpp)");
}

// The sizes' own rules (validate(): each < 2^31), reported with the file, line and column
// rather than later by the command as a bare "n".
void check_sizes(const std::string& source, const SuiteLine& line, const GroupedCase& c) {
  GemmProblem sizes;
  sizes.m = c.m_per_group;
  sizes.n = c.n;
  sizes.k = c.k;
  try {
    validate(sizes);
  } catch (const InvalidArgument& e) {
    const std::string column = e.argument() == "m" ? "m_per_group" : e.argument();
    throw InvalidArgument(suite_field_place(source, line, column), e.value(), e.rule());
  }
}

}  // namespace

std::vector<GroupedCase> parse_grouped_suite(std::istream& in, const std::string& source) {
  const SuiteTable table = read_suite_table(
      in, source, {"kind", "groups", "m_per_group", "n", "k"},
      "the first non-comment line is the header and must name the columns kind, groups, "
      "m_per_group, n and k (tag optional), e.g. \"kind,groups,m_per_group,n,k,tag\"");
  const std::optional<std::size_t> tag_col = table.column("tag");
  std::vector<GroupedCase> cases;
  for (const SuiteLine& line : table.lines) {
    GroupedCase c;
    c.kind = parse_kind(source, line, table);
    c.groups = suite_positive_integer(source, line, table, "groups");
    c.m_per_group = suite_positive_integer(source, line, table, "m_per_group");
    c.n = suite_positive_integer(source, line, table, "n");
    c.k = suite_positive_integer(source, line, table, "k");
    check_sizes(source, line, c);
    if (tag_col) c.tag = line.fields[*tag_col];
    c.line = line.number;
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<GroupedCase> load_grouped_suite(const std::string& path) {
  std::ifstream file = open_suite_file("--grouped", path);
  std::vector<GroupedCase> cases = parse_grouped_suite(file, path);
  if (cases.empty())
    throw InvalidArgument("--grouped", path, "holds no rows (only a header, comments or nothing)");
  return cases;
}

}  // namespace autogemm::bench
