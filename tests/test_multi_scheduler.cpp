// The scheduler's decisions (assign_gemms, choose_migration: src/multi/scheduler.cpp) on
// predicted times: each strategy's assignment, unequal loads and GPUs, and when work migrates.
#include <gtest/gtest.h>

#include <numeric>

#include "autogemm/multi_gpu.hpp"
#include "autogemm/plan.hpp"
#include "bench/suite.hpp"
#include "multi/scheduler.hpp"
#include "multi_test_util.hpp"

using namespace autogemm;

namespace {

std::vector<int> queue(const GemmAssignment& a, int gpu) { return a.queues[std::size_t(gpu)]; }

}  // namespace

TEST(MultiScheduler, RoundRobinDealsInListOrder) {
  const GemmAssignment a = assign_gemms({5, 1, 1, 1, 5}, {}, 2, ScheduleStrategy::round_robin);
  EXPECT_EQ(queue(a, 0), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(queue(a, 1), (std::vector<int>{1, 3}));
  EXPECT_DOUBLE_EQ(a.predicted_busy_us[0], 11.0);
  EXPECT_DOUBLE_EQ(a.predicted_makespan_us, 11.0);
  EXPECT_DOUBLE_EQ(a.ideal_us, 6.5);
  EXPECT_DOUBLE_EQ(a.lower_bound_us, 6.5);
}

TEST(MultiScheduler, LoadBalancedPlacesLongestFirstOnTheGpuThatFreesFirst) {
  // LPT on {7, 5, 4, 3, 3, 2}: 7 -> 0, 5 -> 1, 4 -> 1 (9), 3 -> 0 (10), 3 -> 1 (12), 2 -> 0 (12).
  const GemmAssignment a = assign_gemms({3, 7, 2, 5, 4, 3}, {}, 2, ScheduleStrategy::load_balanced);
  EXPECT_EQ(queue(a, 0), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(queue(a, 1), (std::vector<int>{3, 4, 5}));
  EXPECT_DOUBLE_EQ(a.predicted_makespan_us, 12.0);
  EXPECT_DOUBLE_EQ(a.ideal_us, 12.0);
}

TEST(MultiScheduler, UnequalLoadsOneLargeGemmRunsAlone) {
  // One GEMM as long as the others together: it gets a GPU of its own.
  std::vector<double> t(8, 1.0);
  t.push_back(8.0);
  const GemmAssignment load = assign_gemms(t, {}, 2, ScheduleStrategy::load_balanced);
  EXPECT_EQ(queue(load, 0), (std::vector<int>{8}));
  EXPECT_DOUBLE_EQ(load.predicted_makespan_us, 8.0);
  const GemmAssignment rr = assign_gemms(t, {}, 2, ScheduleStrategy::round_robin);
  EXPECT_DOUBLE_EQ(rr.predicted_makespan_us, 12.0);  // 1 x 4 + 8 on GPU 0
  EXPECT_LT(load.predicted_makespan_us, rr.predicted_makespan_us);
}

TEST(MultiScheduler, PriorityRunsHigherFirstEachOnTheGpuThatFreesFirst) {
  const GemmAssignment a = assign_gemms({4, 1, 2, 3}, {0, 2, 1, 2}, 2, ScheduleStrategy::priority);
  // Order 1 (p2), 3 (p2), 2 (p1), 0 (p0): 1 -> 0 (1), 3 -> 1 (3), 2 -> 0 (3), 0 -> 0 or 1 (both 3):
  // the first such GPU.
  EXPECT_EQ(queue(a, 0), (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(queue(a, 1), (std::vector<int>{3}));
  // Without priorities it keeps the list order.
  const GemmAssignment plain = assign_gemms({4, 1, 2, 3}, {}, 2, ScheduleStrategy::priority);
  EXPECT_EQ(queue(plain, 0), (std::vector<int>{0}));
  EXPECT_EQ(queue(plain, 1), (std::vector<int>{1, 2, 3}));
}

TEST(MultiScheduler, MeasuredSpeedShiftsWorkOffASlowGpu) {
  // GPU 1 measured twice as slow as predicted: the balanced split gives it about a third.
  const std::vector<double> t(12, 1.0);
  const GemmAssignment a = assign_gemms(t, {}, 2, ScheduleStrategy::load_balanced, {1.0, 2.0});
  EXPECT_EQ(a.queues[0].size(), 8u);
  EXPECT_EQ(a.queues[1].size(), 4u);
  EXPECT_DOUBLE_EQ(a.predicted_busy_us[1], 8.0);
  EXPECT_DOUBLE_EQ(a.ideal_us, 12.0 / 1.5);
}

TEST(MultiScheduler, SuiteListLoadBalancedBeatsRoundRobinOnPredictions) {
  // The 64-GEMM list: public and decode suites, repeated; predicted on an H200.
  std::vector<bench::BenchCase> rows = bench::load_suite(std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/gemm-public.csv");
  for (const auto& c : bench::load_suite(std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/gemm-decode.csv"))
    rows.push_back(c);
  const GpuInfo h200 = device_preset("h200");
  std::vector<double> t;
  for (std::size_t i = 0; i < 64; ++i) {
    GemmProblem p;
    p.m = rows[i % rows.size()].m;
    p.n = rows[i % rows.size()].n;
    p.k = rows[i % rows.size()].k;
    t.push_back(plan_gemm(p, h200).best().prediction.time_us);
  }
  for (int gpus : {2, 4, 8}) {
    SCOPED_TRACE(gpus);
    const GemmAssignment load = assign_gemms(t, {}, gpus, ScheduleStrategy::load_balanced);
    const GemmAssignment rr = assign_gemms(t, {}, gpus, ScheduleStrategy::round_robin);
    EXPECT_LT(load.predicted_makespan_us, rr.predicted_makespan_us);
    // Within 5% of what any schedule can reach (the target is 5% of the ideal, total /
    // G; on 8 GPUs the 8192^3 GEMM alone is longer than that, so the bound is that GEMM).
    EXPECT_LT(load.predicted_makespan_us, 1.05 * load.lower_bound_us);
    if (gpus <= 4) EXPECT_LT(load.predicted_makespan_us, 1.05 * load.ideal_us);
    if (gpus == 8) EXPECT_GT(load.lower_bound_us, load.ideal_us);
  }
}

TEST(MultiScheduler, BadInputNamesTheArgument) {
  autogemm::testing::expect_invalid([] { assign_gemms({1}, {}, 0, ScheduleStrategy::round_robin); }, "gpus");
  autogemm::testing::expect_invalid([] { assign_gemms({1, 2}, {1}, 2, ScheduleStrategy::priority); }, "priorities");
  autogemm::testing::expect_invalid([] { assign_gemms({1, -2}, {}, 2, ScheduleStrategy::load_balanced); },
                                   "predicted_us[1]");
  autogemm::testing::expect_invalid([] { assign_gemms({1}, {}, 2, ScheduleStrategy::load_balanced, {1.0}); }, "speed");
  autogemm::testing::expect_invalid([] { assign_gemms({1}, {}, 2, ScheduleStrategy::load_balanced, {1.0, 0.0}); },
                                   "speed[1]");
}

TEST(MultiScheduler, StrategyNames) {
  EXPECT_EQ(parse_schedule_strategy("rr"), ScheduleStrategy::round_robin);
  EXPECT_EQ(parse_schedule_strategy("load"), ScheduleStrategy::load_balanced);
  EXPECT_EQ(parse_schedule_strategy("priority"), ScheduleStrategy::priority);
  EXPECT_FALSE(parse_schedule_strategy("fifo").has_value());
  for (ScheduleStrategy s : {ScheduleStrategy::round_robin, ScheduleStrategy::load_balanced, ScheduleStrategy::priority})
    EXPECT_EQ(parse_schedule_strategy(to_string(s)), s);
}

TEST(MultiMigration, AnIdleGpuTakesTheLastQueuedGemmOfTheGpuFinishingLast) {
  std::vector<multi::DeviceOutlook> o(3);
  o[0].queued_us = {};                 // idle
  o[1].queued_us = {10, 10};           // finishes at 20
  o[2].queued_us = {10, 10, 10, 5};    // finishes at 35: the donor; its last GEMM (5) moves
  const auto m = multi::choose_migration(o, 0);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->from, 2);
  EXPECT_EQ(m->position, 3u);
}

TEST(MultiMigration, MeasuredSlownessMakesTheDonor) {
  std::vector<multi::DeviceOutlook> o(3);
  o[1].queued_us = {10, 10, 10};   // 30 as predicted
  o[2].queued_us = {10, 10};       // 20 predicted, but it ran 2x slower so far: 40
  o[2].speed = 2.0;
  const auto m = multi::choose_migration(o, 0);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->from, 2);
}

TEST(MultiMigration, NothingMovesWhenItWouldNotFinishSooner) {
  std::vector<multi::DeviceOutlook> o(2);
  o[0].in_flight_us = 30;             // the idle one still has 30 in flight
  o[1].queued_us = {10, 10};          // donor finishes at 20; moving 10 would end at 40
  EXPECT_FALSE(multi::choose_migration(o, 0).has_value());
  o[0].in_flight_us = 0;
  o[0].speed = 3.0;                   // a GPU measured 3x slow: 30 > 20
  EXPECT_FALSE(multi::choose_migration(o, 0).has_value());
  o[1].queued_us.clear();             // nothing queued anywhere
  EXPECT_FALSE(multi::choose_migration(o, 0).has_value());
  autogemm::testing::expect_invalid([&] { multi::choose_migration(o, 2); }, "idle");
}
