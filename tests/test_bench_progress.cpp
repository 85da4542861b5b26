// The bench's progress line on the host, with an injected clock and terminal flag: silent when
// stderr is not a terminal, silent for the first 2 s, then one line rewritten in place.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "bench/progress.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

BenchItem item(int64_t m, int64_t n, int64_t k, const std::string& tag) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return BenchItem{p, tag};
}

}  // namespace

TEST(BenchProgress, LineNamesRowShareAndTime) {
  const BenchItem row = item(4096, 7168, 16384, "prefill");
  EXPECT_EQ(progress_line(6, 20, &row, 12.7),
            "[======>             ] 6/20 4096x7168x16384 prefill 30%, 12 s");
  const BenchItem untagged = item(64, 64, 64, "");
  EXPECT_EQ(progress_line(0, 3, &untagged, 0), "[>                   ] 0/3 64x64x64 0%, 0 s");
}

TEST(BenchProgress, SilentWhenNotATerminal) {
  std::ostringstream out;
  double now = 100;
  {
    ProgressReporter progress(out, /*is_terminal=*/false, [&now] { return now; });
    const BenchItem row = item(64, 64, 64, "decode");
    for (std::size_t i = 0; i < 4; ++i) {
      progress.update(i, 4, &row);
      now += 10;  // long past the delay
    }
    progress.update(4, 4, nullptr);
    EXPECT_FALSE(progress.shown());
  }
  EXPECT_EQ(out.str(), "");
}

TEST(BenchProgress, ShownOnlyAfterTheDelayThenErased) {
  std::ostringstream out;
  double now = 100;
  ProgressReporter progress(out, /*is_terminal=*/true, [&now] { return now; }, 2.0);
  const BenchItem first = item(64, 7168, 2048, "decode");
  const BenchItem third = item(4096, 7168, 16384, "prefill");
  progress.update(0, 4, &first);
  now += 1.5;
  progress.update(1, 4, &first);
  EXPECT_EQ(out.str(), "") << "printed before the delay";
  EXPECT_FALSE(progress.shown());

  now += 1.0;  // 2.5 s since the start
  progress.update(2, 4, &third);
  EXPECT_TRUE(progress.shown());
  EXPECT_EQ(out.str(), "\r[==========>         ] 2/4 4096x7168x16384 prefill 50%, 2 s\x1b[K");

  out.str("");
  now += 1.0;
  progress.update(3, 4, &third);
  EXPECT_EQ(out.str().front(), '\r');  // rewritten in place, no newline
  EXPECT_EQ(out.str().find('\n'), std::string::npos);
  EXPECT_NE(out.str().find("3/4"), std::string::npos) << out.str();

  out.str("");
  progress.update(4, 4, nullptr);  // the end erases the line for the report that follows
  EXPECT_EQ(out.str(), "\r\x1b[K");
  EXPECT_FALSE(progress.shown());
}

TEST(BenchProgress, ShortRunPrintsNothing) {
  std::ostringstream out;
  double now = 0;
  {
    ProgressReporter progress(out, true, [&now] { return now; });
    const BenchItem row = item(64, 64, 64, "");
    progress.update(0, 2, &row);
    now = 0.5;
    progress.update(1, 2, &row);
    now = 1.0;
    progress.update(2, 2, nullptr);
  }
  EXPECT_EQ(out.str(), "");
}

TEST(BenchProgress, ALineLeftByAnErrorEndsWithANewline) {
  std::ostringstream out;
  double now = 0;
  {
    ProgressReporter progress(out, true, [&now] { return now; });
    const BenchItem row = item(64, 64, 64, "");
    now = 5;
    progress.update(1, 3, &row);  // then the run throws: no final update
  }
  ASSERT_FALSE(out.str().empty());
  EXPECT_EQ(out.str().back(), '\n');
}
