// What the documentation says about the repository, checked against the repository.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

namespace {

std::string source_file(const std::string& relative) {
  std::ifstream in(std::string(AUTOGEMM_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << relative;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

}  // namespace

// After the quick start a user looks for the command: the README names the path the scripts
// build it at and scripts/main.sh runs it from.
TEST(Docs, ReadmeSaysWhereTheCommandIs) {
  EXPECT_NE(source_file("README.md").find("`build/src/cli/autogemm`"), std::string::npos);
  EXPECT_NE(source_file("scripts/main.sh").find("bin=\"${AUTOGEMM_BUILD_DIR:-build}/src/cli/autogemm\""),
            std::string::npos);
  EXPECT_NE(source_file("scripts/bootstrap.sh").find("build=\"${AUTOGEMM_BUILD_DIR:-build}\""),
            std::string::npos);
  EXPECT_TRUE(ends_with(AUTOGEMM_CLI_PATH, "/src/cli/autogemm")) << AUTOGEMM_CLI_PATH;
}
