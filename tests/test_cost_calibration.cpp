// The cost model's calibration per device (issue 49): where it is found
// (hw/cost_calibration.hpp), what it changes in a prediction, the sweep CSV it is fitted to,
// and the fit (plan/calibration_fit.hpp) recovering rates it is given from synthetic timings,
// with `autogemm fit-cost` writing a file the library reads back. No GPU needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/plan.hpp"
#include "cli_test_util.hpp"
#include "error_test_util.hpp"
#include "hw/cost_calibration.hpp"
#include "plan/calibration_fit.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;
using autogemm::testing::expect_invalid;
using autogemm::testing::run_cli;

namespace {

std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path;
}

// Timings made by the model itself with `truth` as the device's rates: over compute-bound,
// memory-bound and short rows, the planner's six best distinct configurations each.
std::vector<plan::SweepSample> synthetic(const GpuInfo& base, const CostCalibration& truth,
                                         uint32_t seed, int rows) {
  GpuInfo measured = base;
  measured.cost = truth;
  std::mt19937 rng(seed);
  const int64_t ms[] = {16, 64, 128, 512, 2048, 4096, 8192};
  const int64_t nks[] = {512, 1024, 2048, 4096, 7168, 14336};
  std::vector<plan::SweepSample> out;
  for (int r = 0; r < rows; ++r) {
    GemmProblem p = autogemm::testing::problem(ms[rng() % 7], nks[rng() % 6], nks[rng() % 6]);
    const Plan plan = plan_gemm(p, base);
    int taken = 0;
    for (const Candidate& c : plan.candidates) {
      if (c.config.instruction == Instruction::vendor || taken == 6) continue;
      plan::SweepSample s;
      s.problem = p;
      s.config = c.config;
      s.measured_us = predict(p, c.config, measured).time_us;
      s.row = std::to_string(r);
      out.push_back(s);
      ++taken;
    }
  }
  return out;
}

std::string sweep_csv_of(const std::vector<plan::SweepSample>& samples) {
  std::string csv = "m,n,k,tag,rank,config,measured_us,dtype,layout,d_type\n";
  for (const auto& s : samples)
    csv += std::to_string(s.problem.m) + "," + std::to_string(s.problem.n) + "," +
           std::to_string(s.problem.k) + ",row" + s.row + ",0,\"" + s.config.describe() + "\"," +
           std::to_string(s.measured_us) + ",bf16,nt,bf16\n";
  return csv;
}

}  // namespace

TEST(CostCalibration, NoneKeptByDefaultAndTheModelAsWritten) {
  for (const std::string& name : device_preset_names()) {
    const GpuInfo g = device_preset(name);
    EXPECT_EQ(g.cost.mma, 1.0) << name;
    EXPECT_EQ(g.cost.source.empty(), true) << name << ": " << g.cost.source;
  }
}

TEST(CostCalibration, TheEnvironmentsFileChangesItsDevicesPredictions) {
  const auto file = temp_file("autogemm-calibration-test.json",
                              R"({"device": "h200", "calibration": {"mma": 0.5, "fixed": 2}})");
  const GemmProblem compute_bound = autogemm::testing::problem(8192, 8192, 8192);
  const GemmConfig config = GemmConfig::parse("128x256x64 s3 c2 p g8");
  const double plain = predict(compute_bound, config, device_preset("h200")).time_us;
  setenv("AUTOGEMM_COST_CALIBRATION", file.c_str(), 1);
  const GpuInfo h200 = device_preset("h200");
  const GpuInfo h100 = device_preset("h100-sxm");
  unsetenv("AUTOGEMM_COST_CALIBRATION");
  EXPECT_EQ(h200.cost.mma, 0.5);
  EXPECT_EQ(h200.cost.fixed, 2.0);
  EXPECT_EQ(h200.cost.dram, 1.0);
  EXPECT_EQ(h200.cost.source, file.string());
  EXPECT_EQ(h100.cost.mma, 1.0);   // the file names another device
  const double slower = predict(compute_bound, config, h200).time_us;
  EXPECT_GT(slower, 1.8 * plain) << plain << " -> " << slower;
  std::filesystem::remove(file);
}

TEST(CostCalibration, BadFilesAreRefusedNamingTheField) {
  expect_invalid([] { hw::parse_calibration_file("{", "f.json"); }, "cost calibration");
  expect_invalid([] { hw::parse_calibration_file(R"({"device": "h200"})", "f.json"); },
                 "cost calibration");
  expect_invalid([] { hw::parse_calibration_file(R"({"calibration": {}})", "f.json"); },
                 "cost calibration");
  expect_invalid(
      [] {
        hw::parse_calibration_file(R"({"device": "h200", "calibration": {"dram": 9}})", "f.json");
      },
      "f.json: calibration.dram");
  expect_invalid(
      [] {
        hw::parse_calibration_file(R"({"device": "h200", "calibration": {"l2": "x"}})", "f.json");
      },
      "f.json: calibration.l2");
}

TEST(CostCalibration, SweepCsvParsed) {
  const std::string csv =
      "m,n,k,tag,rank,config,measured_us,predicted_us,failure,dtype,layout,d_type\n"
      "64,4096,4096,decode,0,\"64x128x64 s5 c1 p g8\",12.5,11.0,\"\",bf16,nt,bf16\n"
      "64,4096,4096,decode,1,\"64x64x64 s8 c1 p g8 sk2\",0.000,10.0,\"too many, registers\","
      "bf16,nt,bf16\n"
      "4096,7168,2048,prefill,0,\"128x128x128 s5 c2 p g8 cl2x1/b pb2\",300,280,\"\",e4m3,nt,bf16\n";
  const auto samples = plan::parse_sweep_csv(csv, "s.csv");
  ASSERT_EQ(samples.size(), 2u);   // the failed configuration is left out
  EXPECT_EQ(samples[0].config.block_n, 128);
  EXPECT_EQ(samples[1].problem.a_type, DType::e4m3);
  EXPECT_EQ(samples[1].problem.scaling, Scaling::block_1x128_128x128);
  EXPECT_NE(samples[0].row, samples[1].row);
  EXPECT_NE(expect_invalid([] { plan::parse_sweep_csv("m,n,k,tag,config,measured_us\n", "s.csv"); },
                           "s.csv")
                .find("dtype"),
            std::string::npos);
  expect_invalid(
      [] {
        plan::parse_sweep_csv("m,n,k,tag,config,measured_us,dtype,layout,d_type\n"
                              "64,x,64,t,\"64x64x64 s4 c1 p g8\",1,bf16,nt,bf16\n",
                              "s.csv");
      },
      "s.csv:2: n");
}

// The fit finds rates it was given, from timings the model made with them, and says so on rows
// it did not see.
TEST(CostCalibration, FitRecoversTheRatesOfSyntheticTimings) {
  const GpuInfo h200 = device_preset("h200");
  CostCalibration truth;
  truth.mma = 0.8;
  truth.dram = 1.25;
  truth.fixed = 1.5;
  const auto fit = synthetic(h200, truth, 1, 24);
  const auto holdout = synthetic(h200, truth, 2, 12);
  const plan::FitResult r = plan::fit_calibration(fit, holdout, h200);
  EXPECT_NEAR(r.calibration.mma, 0.8, 0.04);
  EXPECT_NEAR(r.calibration.dram, 1.25, 0.08);
  EXPECT_NEAR(r.calibration.fixed, 1.5, 0.15);
  EXPECT_GT(r.before.mean_log_error, 0.1);
  EXPECT_LT(r.after.mean_log_error, 0.02);
  EXPECT_LT(r.holdout_after.median_error, 0.02);
  EXPECT_EQ(r.holdout_after.rows_picked_within_5pct, r.holdout_after.rows);
  expect_invalid([&] { plan::fit_calibration({}, {}, h200); }, "sweep");
}

// Grouped by the term bounding each prediction, timings the model made itself are exact, and
// a slower matrix unit shows where compute bounds and nowhere the fixed costs do.
TEST(CostCalibration, ErrorByBoundingTermPointsAtTheTermThatIsOff) {
  const GpuInfo h200 = device_preset("h200");
  const auto exact = plan::error_by_bounding_term(synthetic(h200, CostCalibration{}, 5, 24), h200);
  ASSERT_FALSE(exact.empty());
  int samples = 0;
  for (const plan::TermError& t : exact) {
    EXPECT_NEAR(t.median_ratio, 1.0, 1e-9) << t.term;
    EXPECT_NEAR(t.median_error, 0.0, 1e-9) << t.term;
    samples += t.samples;
  }
  EXPECT_EQ(samples, 24 * 6);
  CostCalibration slow_mma;
  slow_mma.mma = 0.5;
  bool saw_compute = false;
  for (const plan::TermError& t :
       plan::error_by_bounding_term(synthetic(h200, slow_mma, 5, 24), h200)) {
    if (std::string(t.term) == "compute") {
      saw_compute = true;
      EXPECT_GT(t.median_ratio, 1.5) << "compute-bound timings at half the matrix rate";
    }
    if (std::string(t.term) == "fixed") EXPECT_LT(t.median_ratio, 1.3);
  }
  EXPECT_TRUE(saw_compute);
  // The store term is reported by store path: short-K rows whose D TMA stores and whose rows it
  // cannot (N = 2354: rows off 16 bytes, staged and stored by the threads).
  std::vector<plan::SweepSample> stores;
  for (int64_t n : {2360, 2354}) {
    plan::SweepSample s;
    s.problem = autogemm::testing::problem(9428, n, 26);
    s.config = GemmConfig::parse("128x240x64 s3 c2 p g8");
    s.measured_us = 2 * predict(s.problem, s.config, h200).time_us;
    s.row = std::to_string(n);
    stores.push_back(s);
  }
  std::vector<std::string> terms;
  for (const plan::TermError& t : plan::error_by_bounding_term(stores, h200)) {
    terms.push_back(t.term);
    EXPECT_EQ(t.samples, 1) << t.term;
    EXPECT_NEAR(t.median_ratio, 2.0, 1e-9) << t.term;
  }
  EXPECT_EQ(terms, (std::vector<std::string>{"store (tma)", "store (staged)"}));
}

// A fit is kept only for better picks: held-out picks must improve and fitted ones not fall;
// smaller errors alone (the H200 fit of 2026-11-30) do not count.
TEST(CostCalibration, KeptOnlyWhenPicksImprove) {
  const auto quality = [](int picked, int rows, double median) {
    plan::FitQuality q;
    q.rows = rows;
    q.rows_picked_within_5pct = picked;
    q.median_error = median;
    return q;
  };
  plan::FitResult r;
  r.before = quality(55, 59, 0.178);
  r.after = quality(54, 59, 0.176);
  r.holdout_before = quality(58, 63, 0.206);
  r.holdout_after = quality(58, 63, 0.175);
  EXPECT_NE(plan::calibration_not_worth_keeping(r).find("fitted rows' picks"), std::string::npos);
  r.after = quality(55, 59, 0.176);
  EXPECT_NE(plan::calibration_not_worth_keeping(r).find(
                "held-out rows' picks within 5% of the best do not improve (58 -> 58 of 63)"),
            std::string::npos);
  r.holdout_after = quality(60, 63, 0.175);
  EXPECT_EQ(plan::calibration_not_worth_keeping(r), "");
  // Nothing held out: the fitted rows must improve.
  r.holdout_before = r.holdout_after = plan::FitQuality{};
  EXPECT_NE(plan::calibration_not_worth_keeping(r).find(
                "fitted rows' picks within 5% of the best do not improve"),
            std::string::npos);
  r.after = quality(57, 59, 0.176);
  EXPECT_EQ(plan::calibration_not_worth_keeping(r), "");
}

TEST(CostCalibration, FitCostCommandWritesAFileTheLibraryReads) {
  const GpuInfo h200 = device_preset("h200");
  CostCalibration truth;
  truth.mma = 0.9;
  truth.l2 = 0.8;
  const auto sweep = temp_file("autogemm-fit-sweep.csv", sweep_csv_of(synthetic(h200, truth, 3, 16)));
  const auto held = temp_file("autogemm-fit-holdout.csv", sweep_csv_of(synthetic(h200, truth, 4, 8)));
  const auto out = std::filesystem::temp_directory_path() / "autogemm-fit-h200.json";
  const auto run = run_cli("fit-cost --sweep " + sweep.string() + " --holdout " + held.string() +
                           " --device h200 --out " + out.string());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("held out"), std::string::npos) << run.out;
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  const hw::CalibrationFile file = hw::parse_calibration_file(text.str(), out.string());
  EXPECT_EQ(file.device, "h200");
  EXPECT_NEAR(file.calibration.mma, 0.9, 0.05);
  EXPECT_NE(text.str().find("\"command\""), std::string::npos);
  const auto missing = run_cli("fit-cost --sweep /nonexistent.csv --device h200");
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  for (const auto& p : {sweep, held, out}) std::filesystem::remove(p);
}
