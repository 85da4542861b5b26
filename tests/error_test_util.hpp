#pragma once
// Checking the errors autogemm throws: InvalidArgument naming the argument.
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "autogemm/errors.hpp"

namespace autogemm::testing {

// Runs `call`, expects InvalidArgument naming `argument`, returns its message.
template <typename Call>
std::string expect_invalid(Call call, const std::string& argument) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), argument) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InvalidArgument(" << argument << "), got: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InvalidArgument(" << argument << "), nothing thrown";
  return {};
}

}  // namespace autogemm::testing
