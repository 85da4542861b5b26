// Suite files (the format of /work/shared/suites/gemm-public.csv).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "autogemm/errors.hpp"
#include "bench/suite.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

std::vector<BenchCase> parse(const std::string& text) {
  std::istringstream in(text);
  return parse_suite(in, "suite.csv");
}

}  // namespace

TEST(BenchSuite, ParsesCommentsHeaderAndTags) {
  const auto cases = parse(
      "# Public GEMM shape suite.\n"
      "# Rows: m,n,k,tag\n"
      "m,n,k,tag\n"
      "64,2112,7168,decode\n"
      "\n"
      "  4096 , 7168 , 16384 , prefill   # trailing comment\n"
      "8192,8192,8192,square\n");
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0], (BenchCase{64, 2112, 7168, "decode"}));
  EXPECT_EQ(cases[1], (BenchCase{4096, 7168, 16384, "prefill"}));
  EXPECT_EQ(cases[2], (BenchCase{8192, 8192, 8192, "square"}));
}

TEST(BenchSuite, ColumnsInAnyOrderTagOptional) {
  const auto cases = parse("k,M,n\n7,1,2\n");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0], (BenchCase{1, 2, 7, ""}));
}

TEST(BenchSuite, BadValueNamesLineColumnAndValue) {
  try {
    parse("m,n,k,tag\n64,2112,7168,decode\n64,abc,7168,decode\n");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "suite.csv line 3 column n");
    EXPECT_EQ(e.value(), "abc");
  }
  EXPECT_THROW(parse("m,n,k\n0,1,1\n"), InvalidArgument);
  EXPECT_THROW(parse("m,n,k\n-4,1,1\n"), InvalidArgument);
  EXPECT_THROW(parse("m,n,k\n4.5,1,1\n"), InvalidArgument);
}

TEST(BenchSuite, WrongFieldCountAndMissingHeaderAreErrors) {
  try {
    parse("m,n,k,tag\n64,2112,7168\n");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("3 fields"), std::string::npos) << e.what();
  }
  try {
    parse("# no header\n64,2112,7168,decode\n");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("header"), std::string::npos) << e.what();
  }
}

TEST(BenchSuite, LoadSuiteReadsAFileAndRejectsEmptyOnes) {
  const std::string path = ::testing::TempDir() + "autogemm_bench_suite_test.csv";
  {
    std::ofstream f(path);
    f << "m,n,k,tag\n128,256,512,x\n";
  }
  const auto cases = load_suite(path);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0], (BenchCase{128, 256, 512, "x"}));
  {
    std::ofstream f(path);
    f << "# only comments\nm,n,k\n";
  }
  EXPECT_THROW(load_suite(path), InvalidArgument);
  std::remove(path.c_str());
  try {
    load_suite(path);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "--suite");
    EXPECT_EQ(e.value(), path);
  }
}

// A size the problem rules refuse (here past 2^31 - 1) names the file and line it came from,
// not only "k": the user must find it in the suite.
TEST(BenchSuite, SizePastTheProblemRuleNamesFileAndLine) {
  try {
    parse("m,n,k\n128,128,128\n128,128,3000000000\n");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "suite.csv line 3 column k");
    EXPECT_EQ(e.value(), "3000000000");
    EXPECT_NE(e.rule().find("2^31"), std::string::npos) << e.what();
  }
}

// A file that cannot be read says why, as the OS reports it.
TEST(BenchSuite, MissingFileGivesTheOsReason) {
  const std::string path = ::testing::TempDir() + "autogemm_no_such_suite.csv";
  std::remove(path.c_str());
  try {
    load_suite(path);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "--suite");
    EXPECT_EQ(e.value(), path);
    EXPECT_NE(e.rule().find("No such file or directory"), std::string::npos) << e.what();
  }
  try {
    load_suite(::testing::TempDir());  // a folder
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(e.rule().find("directory"), std::string::npos) << e.what();
  }
}
