#pragma once
// Errors autogemm throws. Every message names the argument, its value and the rule it broke:
//   "lda = 1001 elements (2002 bytes): rows must start on 16-byte boundaries for TMA"
#include <stdexcept>
#include <string>
#include <string_view>

namespace autogemm {

// Base of everything autogemm throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller-supplied value broke a rule. what() = "<argument> = <value>: <rule>".
class InvalidArgument : public Error {
 public:
  InvalidArgument(std::string argument, std::string value, std::string rule);
  const std::string& argument() const noexcept { return argument_; }
  const std::string& value() const noexcept { return value_; }
  const std::string& rule() const noexcept { return rule_; }

 private:
  std::string argument_, value_, rule_;
};

// The CUDA runtime, driver, NVRTC or cuBLASLt failed. what() names the call and its error.
class CudaError : public Error {
 public:
  using Error::Error;
};

// No usable CUDA device (no driver, no GPU, or a GPU the requested path cannot use).
class NoDevice : public Error {
 public:
  using Error::Error;
};

}  // namespace autogemm
