// What the documentation says about the repository, checked against the repository.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <vector>

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

namespace {

std::vector<std::string> files_under(const std::string& relative, const std::string& extension) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::string(AUTOGEMM_SOURCE_DIR) + "/" + relative))
    if (entry.is_regular_file() && entry.path().extension() == extension)
      out.push_back(std::filesystem::relative(entry.path(), AUTOGEMM_SOURCE_DIR).string());
  return out;
}

// The names `pattern`'s first group matches in the files.
std::set<std::string> names_in(const std::vector<std::string>& files, const std::regex& pattern) {
  std::set<std::string> names;
  for (const std::string& file : files) {
    const std::string text = source_file(file);
    for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it)
      names.insert((*it)[1].str());
  }
  return names;
}

// The line of a markdown table whose first cell starts with `first_cell`.
std::string table_row(const std::string& text, const std::string& first_cell) {
  const std::size_t at = text.find("\n| " + first_cell);
  return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

}  // namespace

// docs/env-vars.md names every variable autogemm reads and every one a script takes (it missed
// CUBLASLT_LOG_LEVEL, CUBLASLT_LOG_MASK and the scripts').
TEST(Docs, EnvVarsNamesEveryVariable) {
  std::vector<std::string> sources = files_under("src", ".cpp");
  for (const std::string& f : files_under("python/src", ".cpp")) sources.push_back(f);
  std::set<std::string> names = names_in(sources, std::regex(R"re(getenv\("([A-Z_][A-Z0-9_]*)"\))re"));
  EXPECT_TRUE(names.count("AUTOGEMM_LOG")) << "the pattern finds nothing";
  for (const std::string& name :
       names_in(files_under("scripts", ".sh"), std::regex(R"(\$\{([A-Z_][A-Z0-9_]*):-)")))
    names.insert(name);
  EXPECT_TRUE(names.count("AUTOGEMM_BUILD_DIR")) << "the pattern finds nothing";
  const std::string doc = source_file("docs/env-vars.md");
  for (const std::string& name : names)
    EXPECT_NE(doc.find("`" + name + "`"), std::string::npos) << name;
}

// docs/architecture.md's folder table names every public header and every folder of device code
// (it missed src/kernels/multi_gpu/ and grouped.hpp, multi_gpu.hpp, tensor_parallel.hpp).
TEST(Docs, ArchitectureNamesEveryPublicHeaderAndKernelFolder) {
  const std::string doc = source_file("docs/architecture.md");
  const std::string headers = table_row(doc, "`include/autogemm/`");
  ASSERT_FALSE(headers.empty());
  for (const auto& entry : std::filesystem::directory_iterator(std::string(AUTOGEMM_SOURCE_DIR) +
                                                               "/include/autogemm")) {
    const std::string stem = entry.path().stem().string();
    EXPECT_TRUE(std::regex_search(headers, std::regex("\\b" + stem + "\\b"))) << stem;
  }
  const std::string kernels = table_row(doc, "`src/kernels/`");
  ASSERT_FALSE(kernels.empty());
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(AUTOGEMM_SOURCE_DIR) + "/src/kernels"))
    if (entry.is_directory())
      EXPECT_NE(kernels.find("`" + entry.path().filename().string() + "/`"), std::string::npos)
          << entry.path();
}
