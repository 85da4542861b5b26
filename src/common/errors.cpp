#include "autogemm/errors.hpp"

#include <cstdio>

namespace autogemm {

namespace {

// The value as a message shows it: control bytes escaped (\x00), so a byte of a binary file
// cannot cut the message short or move the terminal's cursor. value() keeps the bytes.
std::string shown(const std::string& value) {
  std::string out;
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
    out += escaped;
  }
  return out;
}

}  // namespace

InvalidArgument::InvalidArgument(std::string argument, std::string value, std::string rule)
    : Error(argument + " = " + shown(value) + ": " + rule),
      argument_(std::move(argument)),
      value_(std::move(value)),
      rule_(std::move(rule)) {}

}  // namespace autogemm
