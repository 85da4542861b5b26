#pragma once
// Helpers for the multi-GPU tests (tests/test_multi_*.cpp).
#include <string>

#include "error_test_util.hpp"  // expect_invalid

namespace autogemm::testing {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace autogemm::testing
