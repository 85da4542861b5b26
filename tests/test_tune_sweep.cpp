// `autogemm tune --sweep` without a GPU (cli/tune_sweep.hpp): which configurations a row's
// sample takes, how far the pick is behind the best, the table's summary and the CSV a fit
// reads. GPU: the issue-49 sweep itself (scripts/gpu-tune.sh does not run it; run
// `autogemm tune --sweep --suite FILE --sweep-csv sweep.csv`).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/tune_sweep.hpp"
#include "plan/calibration_fit.hpp"

using namespace autogemm;
using namespace autogemm::cli;

namespace {

SweepTiming timing(std::size_t rank, double measured_us, double predicted_us) {
  SweepTiming t;
  t.config = GemmConfig::parse(rank == 0 ? "128x128x64 s4 c2 p g8" : "64x128x64 s8 c1 p g8");
  t.rank = rank;
  t.measured_us = measured_us;
  t.prediction.time_us = predicted_us;
  return t;
}

SweepRow row(int64_t m, std::vector<SweepTiming> timings) {
  SweepRow r;
  r.item.problem.m = m;
  r.item.problem.n = 4096;
  r.item.problem.k = 4096;
  r.item.tag = "t";
  r.distinct = 40;
  r.timings = std::move(timings);
  return r;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(TuneSweep, SampleSpansTheRankingFromThePick) {
  EXPECT_EQ(sweep_sample(5, 0), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(sweep_sample(5, 8), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(sweep_sample(9, 3), (std::vector<std::size_t>{0, 4, 8}));
  EXPECT_EQ(sweep_sample(100, 1), (std::vector<std::size_t>{0}));
  EXPECT_TRUE(sweep_sample(0, 4).empty());
  const std::vector<std::size_t> s = sweep_sample(1000, 16);
  ASSERT_EQ(s.size(), 16u);
  EXPECT_EQ(s.front(), 0u);
  EXPECT_EQ(s.back(), 999u);
  for (std::size_t i = 1; i < s.size(); ++i) EXPECT_GT(s[i], s[i - 1]);
}

TEST(TuneSweep, PickBehindBestAndTheSummary) {
  const SweepRow right = row(4096, {timing(0, 100, 110), timing(5, 103, 90)});
  const SweepRow behind = row(64, {timing(0, 120, 100), timing(7, 100, 100)});
  EXPECT_DOUBLE_EQ(pick_behind_best(right), 0);
  EXPECT_NEAR(pick_behind_best(behind), 0.2, 1e-12);
  SweepRow failed = row(8, {});
  failed.failure = "planned to cuBLASLt: no sm_90a";
  const std::string table = format_sweep({right, behind, failed});
  EXPECT_TRUE(contains(table, "within 5% of the best timed configuration on 1 of 2 rows"))
      << table;
  // Errors 10%, 12.6%, 16.7%, 0%: median (10 + 12.6) / 2.
  EXPECT_TRUE(contains(table, "median prediction error (|predicted - measured| / measured) 11.3% "
                              "over 4 timings"))
      << table;
  EXPECT_TRUE(contains(table, "not swept: planned to cuBLASLt: no sm_90a")) << table;
  EXPECT_TRUE(contains(table, "20.0%")) << table;
}

TEST(TuneSweep, CsvHasEveryTimingWithItsPredictionParts) {
  SweepTiming failing = timing(3, 0, 50);
  failing.failure = "ptxas said \"no\"";
  const std::string csv = sweep_csv({row(64, {timing(0, 120, 100), failing})});
  EXPECT_TRUE(contains(csv, "m,n,k,tag,rank,config,measured_us,predicted_us,compute_us,"));
  EXPECT_TRUE(contains(csv, "64,4096,4096,t,0,\"128x128x64 s4 c2 p g8\",120.000,100.000,"));
  EXPECT_TRUE(contains(csv, ",\"ptxas said 'no'\",bf16,nt,bf16\n")) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  // What `autogemm fit-cost` reads back: the problem and the measured timings (the failed
  // configuration left out).
  const auto samples = autogemm::plan::parse_sweep_csv(csv, "sweep.csv");
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].problem.m, 64);
  EXPECT_EQ(samples[0].measured_us, 120.0);
}
