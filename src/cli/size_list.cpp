#include "cli/size_list.hpp"

#include <fmt/format.h>

#include <charconv>
#include <string>

#include "autogemm/errors.hpp"

namespace autogemm::cli {

namespace {

constexpr const char* kSyntax =
    "expected an integer, a comma-separated list, or a range start:end:step with end included "
    "(e.g. 64,128,4096 or 1024:8192:1024)";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_integer(std::string_view text, int64_t* value) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = text.find(separator, start);
    parts.push_back(text.substr(start, at == std::string_view::npos ? text.npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

std::vector<int64_t> parse_size_list(std::string_view option, std::string_view text) {
  const std::string name(option);
  std::vector<int64_t> sizes;
  auto add = [&](int64_t value, std::string_view token) {
    if (sizes.size() >= kMaxSizesPerOption)
      throw InvalidArgument(name, std::string(token),
                            fmt::format("expands to more than {} sizes", kMaxSizesPerOption));
    sizes.push_back(value);
  };
  for (std::string_view token : split(text, ',')) {
    const std::string_view trimmed = trim(token);
    if (trimmed.empty())
      throw InvalidArgument(name, "\"\"", std::string("empty entry in the list; ") + kSyntax);
    const auto fields = split(trimmed, ':');
    if (fields.size() == 1) {
      int64_t value = 0;
      if (!parse_integer(trimmed, &value)) throw InvalidArgument(name, std::string(trimmed), kSyntax);
      add(value, trimmed);
      continue;
    }
    int64_t start = 0, end = 0, step = 0;
    if (fields.size() != 3 || !parse_integer(fields[0], &start) ||
        !parse_integer(fields[1], &end) || !parse_integer(fields[2], &step))
      throw InvalidArgument(name, std::string(trimmed), kSyntax);
    if (step < 1)
      throw InvalidArgument(name, std::string(trimmed),
                            fmt::format("range step {} must be >= 1", step));
    if (end < start)
      throw InvalidArgument(name, std::string(trimmed),
                            fmt::format("range end {} is below its start {}", end, start));
    for (int64_t value = start; value <= end; value += step) {
      add(value, trimmed);
      if (value > INT64_MAX - step) break;
    }
  }
  return sizes;
}

std::vector<GemmShape> shape_product(const std::vector<int64_t>& m, const std::vector<int64_t>& n,
                                     const std::vector<int64_t>& k) {
  const double count = double(m.size()) * double(n.size()) * double(k.size());
  if (count > double(kMaxShapes))
    throw InvalidArgument("--m x --n x --k", fmt::format("{} shapes", uint64_t(count)),
                          fmt::format("at most {} shapes per command", kMaxShapes));
  std::vector<GemmShape> shapes;
  shapes.reserve(std::size_t(count));
  for (int64_t mi : m)
    for (int64_t ni : n)
      for (int64_t ki : k) shapes.push_back({mi, ni, ki});
  return shapes;
}

}  // namespace autogemm::cli
