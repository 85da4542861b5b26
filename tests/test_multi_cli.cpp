// `autogemm plan --gpus`, `autogemm bench --gpus` and `autogemm profile`'s links through the
// built binary, on presets (the same answers with or without a GPU).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cmd_bench_multi.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "cli_test_util.hpp"
#include "multi_test_util.hpp"

using autogemm::testing::contains;
using autogemm::testing::run_cli;

namespace {

const std::string kSuites = std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/gemm-public.csv," +
                            AUTOGEMM_SOURCE_DIR + "/bench/suites/gemm-decode.csv";

// `autogemm <args>` exits 2 (a bad argument) saying `message`.
void expect_cli_error(const std::string& args, const std::string& message) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.exit_code, 2) << args;
  EXPECT_TRUE(contains(r.out, message)) << args << "\n" << r.out;
}

}  // namespace

TEST(MultiCli, PlanExplainsTheSplitAndItsSpeedup) {
  const auto r = run_cli("plan --gpus 4 --device h200 --m 16384 --n 16384 --k 16384");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "4 x h200")) << r.out;
  EXPECT_TRUE(contains(r.out, "--link nvlink assumed")) << r.out;
  EXPECT_TRUE(contains(r.out, "chosen     split M")) << r.out;
  EXPECT_TRUE(contains(r.out, "x one GPU")) << r.out;
  EXPECT_TRUE(contains(r.out, "split K")) << r.out;
  EXPECT_TRUE(contains(r.out, "one GPU")) << r.out;
}

TEST(MultiCli, PlanJsonAndLinks) {
  const auto nvlink = run_cli("plan --gpus 4 --device h200 --m 8192 --n 28672 --k 8192 --link nvlink --json");
  ASSERT_EQ(nvlink.exit_code, 0) << nvlink.out;
  const auto j = nlohmann::json::parse(nvlink.out);
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["gpus"], 4);
  EXPECT_GT(j[0]["speedup"].get<double>(), 3.0);
  EXPECT_EQ(j[0]["candidates"].size(), 4u);
  EXPECT_EQ(j[0]["topology"]["links"].size(), 12u);
  const auto pcie = nlohmann::json::parse(
      run_cli("plan --gpus 4 --device h200 --m 8192 --n 28672 --k 8192 --link pcie --json 2>/dev/null").out);
  EXPECT_LT(pcie[0]["speedup"].get<double>(), j[0]["speedup"].get<double>());
}

TEST(MultiCli, PlanOptionsAndErrors) {
  const auto sharded = run_cli("plan --gpus 2 --device h200 --m 4096 --n 4096 --k 4096 --output sharded --split n");
  ASSERT_EQ(sharded.exit_code, 0) << sharded.out;
  EXPECT_TRUE(contains(sharded.out, "chosen     split N")) << sharded.out;
  const std::string sizes = " --device h200 --m 64 --n 64 --k 64";
  expect_cli_error("plan --gpus 0" + sizes, "--gpus = 0: must be 1..");
  expect_cli_error("plan --gpus 2 --link infiniband" + sizes, "link = infiniband: unknown link preset");
  expect_cli_error("plan --link nvlink" + sizes, "--gpus = missing");
  expect_cli_error("plan --gpus 2 --top 3" + sizes, "--top = 3: is not taken with --gpus");
  expect_cli_error("plan --gpus 2 --split x" + sizes, "--split = x: expected none, m, n or k");
  expect_cli_error("plan --gpus 2 --inputs nowhere" + sizes, "--inputs = nowhere");
}

// --gpus past one NVLink domain is refused before anything is sized by it, by every command
// that takes it: 100000 GPUs filled the machine's memory, 2^31 - 1 ended in std::bad_alloc.
TEST(MultiCli, GpusPastOneNvlinkDomainAreRefused) {
  const std::string shape = " --device h200 --m 4096 --n 4096 --k 4096";
  const std::string rule = ": must be 1.." + std::to_string(autogemm::cli::kMaxGpus);
  const std::string past = std::to_string(autogemm::cli::kMaxGpus + 1);
  const std::pair<std::string, std::string> cases[] = {
      {"plan --gpus 100000" + shape, "100000"},
      {"plan --gpus 2147483647" + shape, "2147483647"},
      {"plan --gpus -3" + shape, "-3"},
      {"plan --gpus " + past + shape, past},
      {"plan --gpus " + past + " --tp all-gather" + shape, past},
      {"bench --gpus 100000" + shape, "100000"},
      {"bench --gpus 100000 --tp all-reduce" + shape, "100000"},
      {"bench --gpus 2147483647 --device h200 --suite " + kSuites, "2147483647"},
      {"advise --model llama-3-8b --device h200 --gpus 100000", "100000"}};
  for (const auto& [args, value] : cases) expect_cli_error(args, "--gpus = " + value + rule);
  const auto most = run_cli("plan --gpus " + std::to_string(autogemm::cli::kMaxGpus) + shape);
  EXPECT_EQ(most.exit_code, 0) << most.out;
}

TEST(MultiCli, BenchShowsEachStrategysAssignmentOnAPreset) {
  const auto r = run_cli("bench --gpus 4 --schedule load,rr,priority --count 64 --device h200 --suite " + kSuites);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "64 GEMMs over 4 x h200")) << r.out;
  for (const char* s : {"load:", "rr:", "priority:"}) EXPECT_TRUE(contains(r.out, s)) << s << r.out;
  EXPECT_TRUE(contains(r.out, "GPU 3:")) << r.out;
  const auto j = nlohmann::json::parse(
      run_cli("bench --gpus 2 --schedule load --repeat 2 --device h200 --json --suite " + kSuites + " 2>/dev/null").out);
  EXPECT_EQ(j["gemms"], 90);
  EXPECT_FALSE(j["measured"].get<bool>());
}

TEST(MultiCli, BenchErrors) {
  const std::string suites = " --device h200 --suite " + kSuites;
  expect_cli_error("bench --gpus 2 --repeat 2 --count 10" + suites, "give --repeat or --count, not both");
  expect_cli_error("bench --gpus 2 --schedule fifo" + suites, "--schedule = fifo");
  expect_cli_error("bench --gpus 2 --m 64 --n 64 --k 64 --schedule rr --device h200",
                   "--schedule = rr: is not taken with --gpus and --m/--n/--k");
  expect_cli_error("bench --gpus 2 --csv x.csv" + suites, "--csv = x.csv: is not taken with --gpus");
  expect_cli_error("bench --gpus 2 --device h200", "--suite = missing");
  expect_cli_error("bench --schedule rr" + suites, "--gpus = missing");
  expect_cli_error("bench --gpus 2 --m 64,128 --n 64 --k 64 --device h200", "splits one GEMM");
}

TEST(MultiCli, BenchSplitShowsThePlanOnAPreset) {
  const auto r = run_cli("bench --gpus 4 --m 16384 --n 16384 --k 16384 --device h200");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, ": showing the plan instead of measuring")) << r.out;
  EXPECT_TRUE(contains(r.out, "chosen     split")) << r.out;
}

TEST(MultiCli, BenchListHelpers) {
  using autogemm::bench::BenchCase;
  const std::vector<BenchCase> rows = {{1, 2, 3, "decode"}, {4, 5, 6, "prefill"}};
  EXPECT_EQ(autogemm::cli::multi_bench_list(rows, 2, 0).size(), 4u);
  const auto cycled = autogemm::cli::multi_bench_list(rows, 1, 5);
  ASSERT_EQ(cycled.size(), 5u);
  EXPECT_EQ(cycled[4], rows[0]);
  EXPECT_EQ(autogemm::cli::multi_bench_priority(rows[0]), 1);
  EXPECT_EQ(autogemm::cli::multi_bench_priority(rows[1]), 0);
  EXPECT_EQ(autogemm::cli::parse_strategies("load,rr").size(), 2u);
  autogemm::testing::expect_invalid([&] { autogemm::cli::multi_bench_list({}, 1, 0); }, "--suite");
  autogemm::testing::expect_invalid([&] { autogemm::cli::multi_bench_list(rows, 0, 0); }, "--repeat");
}

TEST(MultiCli, ProfileReportsTheLinksOrWhyThereAreNone) {
  const auto text = run_cli("profile");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_TRUE(contains(text.out, "Peer links")) << text.out;
  const auto r = run_cli("profile --json 2>/dev/null");
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("topology"));
  if (j["gpus"].size() < 2) {
    EXPECT_FALSE(j["topology"]["measured"].get<bool>());
    EXPECT_FALSE(j["topology"]["reason"].get<std::string>().empty());
  } else {
    EXPECT_TRUE(j["topology"]["measured"].get<bool>());
    EXPECT_EQ(j["topology"]["links"].size(), j["gpus"].size() * (j["gpus"].size() - 1));
  }
}

TEST(MultiCli, PlanTensorParallelPatterns) {
  const auto ag = run_cli("plan --gpus 4 --tp all-gather --device h200 --m 16384 --n 16384 --k 16384");
  ASSERT_EQ(ag.exit_code, 0) << ag.out;
  EXPECT_TRUE(contains(ag.out, "all-gather over 4 ranks")) << ag.out;
  EXPECT_TRUE(contains(ag.out, "A [4096, 16384], B [4096, 16384] -> D [16384, 4096]")) << ag.out;
  EXPECT_TRUE(contains(ag.out, "transport: copy-engine")) << ag.out;
  const auto rs = run_cli("plan --gpus 2 --tp rs --device h200 --m 8192 --n 8192 --k 28672 --transport nccl --json");
  ASSERT_EQ(rs.exit_code, 0) << rs.out;
  const auto j = nlohmann::json::parse(rs.out.substr(rs.out.find('[')));
  EXPECT_EQ(j[0]["pattern"], "reduce-scatter");
  EXPECT_EQ(j[0]["transport"], "nccl");
  EXPECT_EQ(j[0]["shards"]["d"][0], 4096);
  EXPECT_GT(j[0]["speedup"].get<double>(), 1.0);
  // Without a GPU (or with a preset) the bench shows the plan.
  const auto bench = run_cli("bench --gpus 4 --tp all-reduce --device h200 --m 4096 --n 4096 --k 4096");
  ASSERT_EQ(bench.exit_code, 0) << bench.out;
  EXPECT_TRUE(contains(bench.out, "showing the plan instead of measuring")) << bench.out;
  EXPECT_TRUE(contains(bench.out, "all-reduce over 4 ranks")) << bench.out;
  // The CLI plans its own one process (finished bands straight into the peers' D) unless asked
  // for torchrun's process per rank.
  const std::string ar = "plan --gpus 2 --tp ar --device h200 --m 8192 --n 28672 --k 8192 --json "
                         "--bands 4 --tail-rows 256";
  const auto one = run_cli(ar), per_rank = run_cli(ar + " --process-per-rank");
  ASSERT_EQ(one.exit_code, 0) << one.out;
  ASSERT_EQ(per_rank.exit_code, 0) << per_rank.out;
  const auto j1 = nlohmann::json::parse(one.out.substr(one.out.find('[')));
  const auto jp = nlohmann::json::parse(per_rank.out.substr(per_rank.out.find('[')));
  EXPECT_TRUE(j1[0]["d_direct"].get<bool>());
  EXPECT_FALSE(jp[0]["d_direct"].get<bool>());
  EXPECT_NE(j1[0]["hash"], jp[0]["hash"]);
  EXPECT_LT(j1[0]["predicted_us"].get<double>(), jp[0]["predicted_us"].get<double>());
  // The bench runs either plan in its one process (what direct D saves, measured in one run).
  const std::string bench_ar = "bench --gpus 2 --tp ar --device h200 --m 8192 --n 28672 --k 8192";
  const auto staged = run_cli(bench_ar + " --process-per-rank");
  const auto direct = run_cli(bench_ar);
  ASSERT_EQ(staged.exit_code, 0) << staged.out;
  EXPECT_TRUE(contains(direct.out, "straight into the receivers' D")) << direct.out;
  EXPECT_FALSE(contains(staged.out, "straight into the receivers' D")) << staged.out;
  EXPECT_TRUE(contains(staged.out, "into their workspace, then copied into their D")) << staged.out;
  expect_cli_error("bench --gpus 2 --device h200 --m 4096 --n 4096 --k 4096 --process-per-rank",
                   "--process-per-rank");
  // The ring's steps that add partials: one launch of their bands (C gated in the kernel) or a
  // launch per band, as asked.
  const std::string rs_16k = "plan --gpus 2 --tp rs --device h200 --m 16384 --n 16384 --k 16384 "
                             "--bands 2 --json --merge-c-steps ";
  for (const char* merge : {"1", "0"}) {
    const auto r = run_cli(rs_16k + merge);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto steps = nlohmann::json::parse(r.out.substr(r.out.find('[')))[0]["steps"];
    ASSERT_EQ(steps.size(), merge == std::string("1") ? 2u : 3u) << r.out;
    EXPECT_EQ(steps.back()["bands"], merge == std::string("1") ? 2 : 1) << r.out;
  }
  expect_cli_error(rs_16k + "2", "--merge-c-steps = 2");
}

TEST(MultiCli, TensorParallelErrorsNameTheOption) {
  expect_cli_error("plan --gpus 4 --tp all-to-all --device h200 --m 4096 --n 4096 --k 4096", "--tp = all-to-all");
  expect_cli_error("plan --tp ag --device h200 --m 4096 --n 4096 --k 4096", "--gpus = missing");
  expect_cli_error("plan --gpus 3 --tp rs --device h200 --m 4096 --n 4096 --k 4096", "--m = 4096");
  expect_cli_error("plan --gpus 4 --tp rs --device h200 --m 4096 --n 4096 --k 4100", "--k = 4100");
  expect_cli_error("plan --gpus 4 --tp ag --device h200 --m 4096 --n 4096 --k 4096 --transport pigeon",
                   "--transport = pigeon");
  expect_cli_error("plan --gpus 4 --tp ag --device h200 --m 4096 --n 4096 --k 4096 --layout nn", "--layout = nn");
  expect_cli_error("plan --gpus 4 --tp ag --device h200 --m 4096 --n 4096 --k 4096 --bands 9", "--bands = 9");
  expect_cli_error("plan --gpus 4 --tp ag --device h200 --m 4096 --n 4096 --k 4096 --rounds 2", "--rounds = 2");
  expect_cli_error("plan --gpus 4 --tp ar --device h200 --m 4096 --n 4096 --k 4096 --bands 4 --rounds 3",
                   "--rounds = 3");
  expect_cli_error("bench --gpus 0 --tp ag --m 4096 --n 4096 --k 4096", "--gpus = 0");
  // Not given at all: named as missing, not as the 0 it defaults to.
  expect_cli_error("bench --tp ag --m 4096 --n 4096 --k 4096 --device h200", "--gpus = missing");
  expect_cli_error("bench --split m --m 4096 --n 4096 --k 4096 --device h200", "--gpus = missing");
}

TEST(MultiCli, BenchPlacesUnderUnequalMemoryLimitsOnAPreset) {
  const std::string list = std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/schedule-64.csv";
  const auto r = run_cli("bench --gpus 4 --device h200 --inputs host --memory-limit 6GiB,3GiB,1.5GiB,768MiB "
                         "--schedule load,rr --json --suite " + list + " 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["gemms"], 64);
  EXPECT_EQ(j["inputs"], "host");
  const std::vector<int64_t> limits = j["memory_limit_bytes"];
  ASSERT_EQ(limits.size(), 4u);
  EXPECT_EQ(limits[3], int64_t(768) << 20);
  for (const auto& s : j["strategies"])
    for (const auto& g : s["per_gpu"]) {
      EXPECT_LE(g["memory_bytes"].get<int64_t>(), limits[g["gpu"].get<std::size_t>()]) << s["strategy"];
      EXPECT_GT(g["bytes_moved"].get<int64_t>(), 0) << s["strategy"];
    }
  // The text names each GPU's allocation against its limit.
  const auto text = run_cli("bench --gpus 2 --device h200 --inputs root --memory-limit 4GiB,1GiB --suite " + list);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_TRUE(contains(text.out, "of 1024.0 MiB")) << text.out;
  EXPECT_TRUE(contains(text.out, "GEMMs pooled for the end")) << text.out;
}

TEST(MultiCli, BenchRefusesAListThatCannotFitNamingTheGemm) {
  const std::string list = std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/schedule-64.csv";
  // 8192^3 (row 20 of the public suite) needs 384 MiB of copies: no GPU has that much.
  const auto r = run_cli("bench --gpus 2 --device h200 --inputs host --memory-limit 300MiB --suite " + list);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(contains(r.out, "(8192 x 8192 x 8192 square)")) << r.out;
  EXPECT_TRUE(contains(r.out, "fits on no GPU")) << r.out;
  EXPECT_TRUE(contains(r.out, "384.0 MiB of operands and D")) << r.out;
}

TEST(MultiCli, BenchScheduleOptionErrors) {
  const std::string suites = " --device h200 --suite " + kSuites;
  expect_cli_error("bench --gpus 2 --memory-limit 4GiB,2GiB,1GiB" + suites, "--memory-limit = 4GiB,2GiB,1GiB");
  expect_cli_error("bench --gpus 2 --memory-limit 4parsecs" + suites, "--memory-limit = 4parsecs");
  expect_cli_error("bench --gpus 2 --inputs nowhere" + suites, "--inputs = nowhere");
  expect_cli_error("bench --gpus 2 --plot t.svg" + suites, "--plot = t.svg: draws a measured run's timeline");
  EXPECT_EQ(autogemm::cli::parse_memory_limits("1GiB", 3), (std::vector<int64_t>(3, int64_t(1) << 30)));
  EXPECT_EQ(autogemm::cli::parse_memory_limits("1.5GB,512MiB", 2), (std::vector<int64_t>{1500000000, 512 << 20}));
}

TEST(MultiCli, TheScheduleListsFollowTheirRules) {
  using autogemm::bench::load_suite;
  const std::string dir = std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/";
  const auto list64 = load_suite(dir + "schedule-64.csv");
  const auto list512 = load_suite(dir + "schedule-512.csv");
  ASSERT_EQ(list64.size(), 64u);
  ASSERT_EQ(list512.size(), 512u);
  auto both = load_suite(dir + "gemm-public.csv");
  for (const auto& c : load_suite(dir + "gemm-decode.csv")) both.push_back(c);
  EXPECT_EQ(list64, autogemm::cli::multi_bench_list(both, 1, 64));
  std::size_t decode = 0;
  for (const auto& c : list512) {
    decode += c.m <= 128 ? 1 : 0;
    EXPECT_TRUE(c.m <= 128 || c.m >= 400) << c.m;
  }
  EXPECT_EQ(decode, 296u);
}
