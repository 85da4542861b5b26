#include "autogemm/errors.hpp"

namespace autogemm {

InvalidArgument::InvalidArgument(std::string argument, std::string value, std::string rule)
    : Error(argument + " = " + value + ": " + rule),
      argument_(std::move(argument)),
      value_(std::move(value)),
      rule_(std::move(rule)) {}

}  // namespace autogemm
