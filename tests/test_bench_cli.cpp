// `autogemm bench` from the command line, in the modes that need no GPU: a preset's plan
// (always, with --device <preset>) and argument errors.
#include <gtest/gtest.h>

#include "cli_test_util.hpp"

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

using autogemm::testing::CliRun;
using autogemm::testing::run_cli;

TEST(BenchCli, PresetShowsThePlanInsteadOfMeasuring) {
  const CliRun run = run_cli("bench --m 64,4096 --n 7168 --k 2048 --device h100-sxm");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  // Either "no GPU: <reason>; showing ..." or "h100-sxm is a device preset, ...; showing ...".
  EXPECT_NE(run.out.find("showing the plan for h100-sxm instead of measuring"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("predicted_us"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("   64   7168   2048"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" 4096   7168   2048"), std::string::npos) << run.out;
}

TEST(BenchCli, PresetPlanAsJson) {
  const std::string command = std::string(AUTOGEMM_CLI_PATH) +
                              " bench --m 128 --n 256 --k 512 --dtype fp8 --device h200 --json"
                              " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  std::array<char, 4096> buffer{};
  while (std::fgets(buffer.data(), int(buffer.size()), pipe) != nullptr) out += buffer.data();
  ASSERT_EQ(pclose(pipe), 0) << out;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["measured"], false);
  EXPECT_EQ(j["device"], "h200");
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["dtype"], "fp8");
  EXPECT_GT(j["rows"][0]["predicted_us"].get<double>(), 0.0);
}

TEST(BenchCli, SuiteFileWithPreset) {
  const std::string path = ::testing::TempDir() + "autogemm_bench_cli_suite.csv";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("# test suite\nm,n,k,tag\n128,2112,7168,decode\n4096,4096,4096,square\n", f);
  std::fclose(f);
  const CliRun run = run_cli("bench --suite " + path + " --device h100-sxm");
  std::remove(path.c_str());
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("decode"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("square"), std::string::npos) << run.out;
}

TEST(BenchCli, ArgumentErrorsNameTheOption) {
  CliRun run = run_cli("bench --m 64 --n 64");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--k"), std::string::npos) << run.out;

  run = run_cli("bench --m 64 --n 64 --k 64 --suite x.csv");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("not both"), std::string::npos) << run.out;

  run = run_cli("bench --m 64 --n 64 --k 64 --iters 0 --device h100-sxm");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--iters = 0"), std::string::npos) << run.out;

  run = run_cli("bench --m 64 --n 64 --k 64 --dtype int4 --device h100-sxm");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--dtype = int4"), std::string::npos) << run.out;

  run = run_cli("bench --m 64 --n 64 --k 64 --device no-such-gpu");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("no-such-gpu"), std::string::npos) << run.out;
}

// Output files are checked before anything runs (issue 22: a whole suite measured, then lost
// to a CSV path that could not be written). Without a GPU this must fail the same way, before
// the "no GPU" plan: the check comes before the device query.
TEST(BenchCli, UnwritableOutputFailsBeforeRunning) {
  CliRun run = run_cli("bench --m 64 --n 64 --k 64 --csv /no/such/dir/x.csv");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--csv = /no/such/dir/x.csv: cannot be written: No such file or "
                         "directory"),
            std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("no GPU"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("predicted_us"), std::string::npos) << run.out;

  run = run_cli("bench --m 64 --n 64 --k 64 --plot /no/such/dir/x.svg --device h100-sxm");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--plot = /no/such/dir/x.svg: cannot be written"), std::string::npos)
      << run.out;

  // A directory is not a file.
  const std::string dir = ::testing::TempDir();
  run = run_cli("bench --m 64 --n 64 --k 64 --csv " + dir);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--csv = " + dir + ": cannot be written"), std::string::npos)
      << run.out;
}

TEST(BenchCli, WritableOutputIsNotLeftBehindWhenNothingIsMeasured) {
  const std::string csv = ::testing::TempDir() + "autogemm_bench_cli_out.csv";
  const std::string svg = ::testing::TempDir() + "autogemm_bench_cli_out.svg";
  std::remove(csv.c_str());
  std::remove(svg.c_str());
  const CliRun run = run_cli("bench --m 64 --n 64 --k 64 --device h100-sxm --csv " + csv +
                             " --plot " + svg);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("--csv " + csv + " not written"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--plot " + svg + " not written"), std::string::npos) << run.out;
  // The check created neither file for good.
  EXPECT_EQ(std::fopen(csv.c_str(), "r"), nullptr);
  EXPECT_EQ(std::fopen(svg.c_str(), "r"), nullptr);
}

// --config goes through compile's rules (one function, config_spec), with or without a GPU:
// without one, bench showed the planner's choice instead and exited 0. A suite row it cannot
// run is named.
TEST(BenchCli, ConfigIsRefusedAsCompileRefusesIt) {
  const std::string shape = " --m 4096 --n 4096 --k 4096 --device h100-sxm";
  const std::string never_written = ::testing::TempDir() + "autogemm_bench_cli_never";
  for (const std::string config : {"128x256x64 s3 c2 cl3x1/b", "128x256x64 s99 c2"}) {
    const std::string option = " --config '" + config + "'";
    const CliRun compile = run_cli("compile" + shape + option + " --out " + never_written);
    const CliRun bench = run_cli("bench" + shape + option);
    EXPECT_EQ(compile.exit_code, 2) << compile.out;
    EXPECT_EQ(bench.exit_code, 2) << bench.out;
    EXPECT_NE(bench.out.find("--config = "), std::string::npos) << bench.out;
    EXPECT_EQ(bench.out, compile.out);
  }
  const CliRun rows = run_cli("bench --m 4096,64 --n 4096 --k 4096 --device h100-sxm "
                              "--config '128x256x64 s99 c2'");
  EXPECT_EQ(rows.exit_code, 2) << rows.out;
  EXPECT_NE(rows.out.find("the row M=4096 N=4096 K=4096"), std::string::npos) << rows.out;

  const CliRun legal = run_cli("bench" + shape + " --config '128x128x64 s4 c1 p g8'");
  ASSERT_EQ(legal.exit_code, 0) << legal.out;
  EXPECT_NE(legal.out.find("128x128x64 s4 c1 p g8"), std::string::npos) << legal.out;
  EXPECT_NE(legal.out.find("forced by --config"), std::string::npos) << legal.out;
}
