#include "bench/suite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "autogemm/errors.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::bench {

namespace {

std::string trim(std::string_view s) {
  std::size_t begin = 0, end = s.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(s[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(s[end - 1]))) --end;
  return std::string(s.substr(begin, end - begin));
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(trim(std::string_view(line).substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return fields;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Bytes no text file holds (tab and carriage return aside).
const std::string kControlBytes = [] {
  std::string bytes;
  for (int c = 0; c < 0x20; ++c)
    if (c != '\t' && c != '\r') bytes += char(c);
  return bytes + char(0x7f);
}();

}  // namespace

std::optional<std::size_t> SuiteTable::column(std::string_view name) const {
  const auto it = std::find(columns.begin(), columns.end(), name);
  if (it == columns.end()) return std::nullopt;
  return std::size_t(it - columns.begin());
}

SuiteTable read_suite_table(std::istream& in, const std::string& source,
                            const std::vector<std::string>& required,
                            const std::string& header_rule) {
  SuiteTable table;
  bool have_header = false;
  std::string raw;
  int line_number = 0;
  while (std::getline(in, raw)) {
    ++line_number;
    // A binary file is no suite: its bytes would end up in messages, where a NUL cut them short.
    const std::size_t control = raw.find_first_of(kControlBytes);
    if (control != std::string::npos)
      throw InvalidArgument(fmt::format("{} line {}", source, line_number), "(not text)",
                            fmt::format("byte 0x{:02x} at column {}: a suite is a CSV text file",
                                        static_cast<unsigned char>(raw[control]), control + 1));
    const std::string line = trim(std::string_view(raw).substr(0, raw.find('#')));
    if (line.empty()) continue;
    std::vector<std::string> fields = split_fields(line);
    const std::string where = fmt::format("{} line {}", source, line_number);
    if (!have_header) {
      for (const std::string& name : fields) table.columns.push_back(lower(name));
      for (const std::string& name : required)
        if (!table.column(name)) throw InvalidArgument(where, line, header_rule);
      have_header = true;
      continue;
    }
    if (fields.size() != table.columns.size())
      throw InvalidArgument(where, line,
                            fmt::format("has {} fields; the header has {}", fields.size(),
                                        table.columns.size()));
    table.lines.push_back(SuiteLine{line_number, line, std::move(fields)});
  }
  return table;
}

std::string suite_field_place(const std::string& source, const SuiteLine& line,
                              std::string_view column) {
  return fmt::format("{} line {} column {}", source, line.number, column);
}

int64_t suite_positive_integer(const std::string& source, const SuiteLine& line,
                               const SuiteTable& table, std::string_view column) {
  const std::string& text = line.fields[*table.column(column)];
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1)
    throw InvalidArgument(suite_field_place(source, line, column), text,
                          "must be a positive integer");
  return value;
}

std::ifstream open_suite_file(const std::string& option, const std::string& path) {
  // A folder opens as a stream but reads nothing: say so rather than "holds no cases".
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw InvalidArgument(option, path, "is a directory, not a suite file");
  errno = 0;
  std::ifstream file(path);
  if (!file)
    throw InvalidArgument(option, path,
                          fmt::format("cannot be opened for reading: {}",
                                      errno != 0 ? std::strerror(errno) : "unknown reason"));
  return file;
}

std::vector<BenchCase> parse_suite(std::istream& in, const std::string& source) {
  const SuiteTable table =
      read_suite_table(in, source, {"m", "n", "k"},
                       "the first non-comment line is the header and must name the columns m, n "
                       "and k (tag optional), e.g. \"m,n,k,tag\"");
  const std::optional<std::size_t> tag_col = table.column("tag");
  std::vector<BenchCase> cases;
  for (const SuiteLine& line : table.lines) {
    BenchCase c;
    c.m = suite_positive_integer(source, line, table, "m");
    c.n = suite_positive_integer(source, line, table, "n");
    c.k = suite_positive_integer(source, line, table, "k");
    // The problem's own size rule (validate: < 2^31), reported here where the file and line
    // are known rather than later by the command as a bare "k".
    GemmProblem sizes;
    sizes.m = c.m;
    sizes.n = c.n;
    sizes.k = c.k;
    try {
      validate(sizes);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(suite_field_place(source, line, e.argument()), e.value(), e.rule());
    }
    if (tag_col) c.tag = line.fields[*tag_col];
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<BenchCase> load_suite(const std::string& path) {
  std::ifstream file = open_suite_file("--suite", path);
  std::vector<BenchCase> cases = parse_suite(file, path);
  if (cases.empty())
    throw InvalidArgument("--suite", path, "holds no cases (only a header, comments or nothing)");
  return cases;
}

}  // namespace autogemm::bench
