// AUTOGEMM_LOG parsing. The level is read once per process, so the variants run in a child
// process (this test binary again) with the variable set.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "jit/log.hpp"

using namespace autogemm;

// Holds in any environment: the level is what AUTOGEMM_LOG says, 2 when unset or invalid.
TEST(JitLog, LevelMatchesEnvironment) {
  const char* text = std::getenv("AUTOGEMM_LOG");
  const std::string value = text ? text : "";
  const int expected =
      value.size() == 1 && value[0] >= '0' && value[0] <= '5' ? value[0] - '0' : 2;
  EXPECT_EQ(log_level(), expected) << "AUTOGEMM_LOG=" << value;
}

namespace {

struct ChildRun {
  int exit_code;
  std::string output;
};

// Runs JitLog.LevelMatchesEnvironment in a fresh process with AUTOGEMM_LOG=value.
ChildRun run_child_with_log(const std::string& value) {
  std::array<char, 4096> self{};
  const ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return {-1, "readlink /proc/self/exe failed"};
  const std::string command = "AUTOGEMM_LOG='" + value + "' '" + std::string(self.data(), n) +
                              "' --gtest_filter=JitLog.LevelMatchesEnvironment 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) output += buffer.data();
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace

TEST(JitLog, InvalidValueWarnsOnceAndUsesTheDefault) {
  const ChildRun run = run_child_with_log("verbose");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("AUTOGEMM_LOG = \"verbose\""), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("[  PASSED  ] 1 test"), std::string::npos) << run.output;
}

TEST(JitLog, ValidValuesAreUsedSilently) {
  for (const char* value : {"0", "4", "5"}) {
    const ChildRun run = run_child_with_log(value);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_EQ(run.output.find("AUTOGEMM_LOG ="), std::string::npos) << run.output;
  }
  const ChildRun too_high = run_child_with_log("6");
  EXPECT_EQ(too_high.exit_code, 0) << too_high.output;
  EXPECT_NE(too_high.output.find("AUTOGEMM_LOG = \"6\""), std::string::npos) << too_high.output;
}
