// scripts/ctest_skips.py, which scripts/test.sh runs after CTest: CTest lists a skipped test as
// "(Skipped)" without its reason, so a machine without a GPU showed a hundred GPU tests skipped
// and never why. On a JUnit file as CTest 3.25 writes it. Needs python3 and no GPU.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

// One <testcase> of CTest's JUnit file: skipped with GoogleTest's `reason`, or run.
std::string test_case(const std::string& name, const std::string& reason) {
  const std::string head = "\t<testcase name=\"" + name + "\" classname=\"" + name + "\" time=\"0.1\"";
  if (reason.empty())
    return head + " status=\"run\">\n\t\t<system-out>[ RUN      ] " + name + "\n[       OK ] " +
           name + " (0 ms)\n</system-out>\n\t</testcase>\n";
  return head + " status=\"notrun\">\n\t\t<skipped message=\"SKIP_REGULAR_EXPRESSION_MATCHED\"/>\n" +
         "\t\t<system-out>[ RUN      ] " + name + "\n/src/tests/t.cpp:68: Skipped\n" + reason +
         "\n[  SKIPPED ] " + name + " (0 ms)\n</system-out>\n\t</testcase>\n";
}

std::string run_script(const std::string& junit_text) {
  const std::filesystem::path junit = std::filesystem::path(::testing::TempDir()) /
                                      ("autogemm_ctest_skips_" + std::to_string(::getpid()) + ".xml");
  std::ofstream(junit) << junit_text;
  const std::string command = "python3 " + std::string(AUTOGEMM_SOURCE_DIR) +
                              "/scripts/ctest_skips.py " + junit.string() + " 2>&1";
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), int(buffer.size()), pipe) != nullptr) out += buffer.data();
  const int status = pclose(pipe);
  std::filesystem::remove(junit);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  return out;
}

}  // namespace

TEST(CtestSkips, EachReasonOnceWithItsCountAndNames) {
  if (std::system("python3 --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  const std::string gpu = "GPU test skipped: no CUDA driver or GPU found (cudaGetDeviceCount)";
  const std::string out = run_script(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"(empty)\" tests=\"6\">\n" +
      test_case("A.Runs", "") + test_case("G.One", gpu) + test_case("G.Two", gpu) +
      test_case("G.Three", gpu) + test_case("G.Four", gpu) +
      test_case("N.Two", "needs 2 GPUs, this machine has 1") + "</testsuite>\n");
  EXPECT_NE(out.find("skipped: 4 tests: " + gpu + "\n"), std::string::npos) << out;
  EXPECT_NE(out.find("(G.One, G.Two, G.Three and 1 more)"), std::string::npos) << out;
  EXPECT_NE(out.find("skipped: 1 test: needs 2 GPUs, this machine has 1\n"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("A.Runs"), std::string::npos) << out;
}
