#include "bench/suite.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

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

}  // namespace

std::vector<BenchCase> parse_suite(std::istream& in, const std::string& source) {
  std::optional<std::size_t> m_col, n_col, k_col, tag_col;
  std::size_t num_columns = 0;
  bool have_header = false;
  std::vector<BenchCase> cases;
  std::string raw;
  int line_number = 0;
  while (std::getline(in, raw)) {
    ++line_number;
    const std::string line = trim(std::string_view(raw).substr(0, raw.find('#')));
    if (line.empty()) continue;
    const std::vector<std::string> fields = split_fields(line);
    const std::string where = fmt::format("{} line {}", source, line_number);

    if (!have_header) {
      for (std::size_t i = 0; i < fields.size(); ++i) {
        const std::string name = lower(fields[i]);
        if (name == "m") m_col = i;
        else if (name == "n") n_col = i;
        else if (name == "k") k_col = i;
        else if (name == "tag") tag_col = i;
      }
      if (!m_col || !n_col || !k_col)
        throw InvalidArgument(where, line,
                              "the first non-comment line is the header and must name the "
                              "columns m, n and k (tag optional), e.g. \"m,n,k,tag\"");
      num_columns = fields.size();
      have_header = true;
      continue;
    }

    if (fields.size() != num_columns)
      throw InvalidArgument(where, line,
                            fmt::format("has {} fields; the header has {}", fields.size(),
                                        num_columns));
    BenchCase c;
    auto parse_size = [&](std::size_t column, const char* name) {
      const std::string& text = fields[column];
      int64_t value = 0;
      const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (error != std::errc() || end != text.data() + text.size() || value < 1)
        throw InvalidArgument(fmt::format("{} column {}", where, name), text,
                              "must be a positive integer");
      return value;
    };
    c.m = parse_size(*m_col, "m");
    c.n = parse_size(*n_col, "n");
    c.k = parse_size(*k_col, "k");
    // The problem's own size rule (validate: < 2^31), reported here where the file and line
    // are known rather than later by the command as a bare "k".
    GemmProblem sizes;
    sizes.m = c.m;
    sizes.n = c.n;
    sizes.k = c.k;
    try {
      validate(sizes);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(fmt::format("{} column {}", where, e.argument()), e.value(),
                            e.rule());
    }
    if (tag_col) c.tag = fields[*tag_col];
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<BenchCase> load_suite(const std::string& path) {
  // A folder opens as a stream but reads nothing: say so rather than "holds no cases".
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw InvalidArgument("--suite", path, "is a directory, not a suite file");
  errno = 0;
  std::ifstream file(path);
  if (!file)
    throw InvalidArgument("--suite", path,
                          fmt::format("cannot be opened for reading: {}",
                                      errno != 0 ? std::strerror(errno) : "unknown reason"));
  std::vector<BenchCase> cases = parse_suite(file, path);
  if (cases.empty())
    throw InvalidArgument("--suite", path, "holds no cases (only a header, comments or nothing)");
  return cases;
}

}  // namespace autogemm::bench
