// `autogemm plan` end to end through the built binary: paths per device, JSON contract, size
// lists, and errors that name the argument, value and rule with a non-zero exit.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "autogemm/device.hpp"

namespace {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

CliResult run_cli(const std::string& args) {
  char err_path[] = "/tmp/autogemm_plan_cli_XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  const std::string command = std::string(AUTOGEMM_CLI_PATH) + " " + args + " 2>" + err_path;
  CliResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buffer[4096];
  std::size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, got);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err_file(err_path);
  std::stringstream err;
  err << err_file.rdbuf();
  r.err = err.str();
  std::remove(err_path);
  return r;
}

// `plan --json` prints a list: one element per problem, also for one problem.
nlohmann::json run_json(const std::string& args) {
  const CliResult r = run_cli(args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j.is_array()) << r.out;
  return j;
}

// The plan of a single problem: the list's one element.
nlohmann::json run_json_one(const std::string& args) {
  const nlohmann::json j = run_json(args);
  EXPECT_EQ(j.size(), 1u) << j.dump();
  return j.is_array() && j.size() == 1 ? j[0] : nlohmann::json::object();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(PlanCli, JsonHasTheContractKeys) {
  const auto j = run_json_one("plan --m 256 --n 7168 --k 7168 --device h100-sxm --top 5");
  for (const char* key : {"m", "n", "k", "dtype", "layout"}) EXPECT_TRUE(j["problem"].contains(key)) << key;
  EXPECT_EQ(j["problem"]["m"], 256);
  EXPECT_EQ(j["problem"]["dtype"], "bf16");
  EXPECT_EQ(j["problem"]["layout"], "nt");
  EXPECT_TRUE(j["device"].contains("name"));
  EXPECT_EQ(j["device"]["sm_count"], 132);
  for (const char* key : {"block_m", "block_n", "block_k", "num_stages", "num_consumers",
                          "cluster_m", "cluster_n", "multicast", "persistent", "raster_group",
                          "raster_order", "instruction", "split_k", "promotion_buffers",
                          "ordered_issue", "n_tail_kernel", "swap_ab"})
    EXPECT_TRUE(j["config"].contains(key)) << key;
  EXPECT_EQ(j["config"]["instruction"], "wgmma");
  // The spec: what a call launches, worked out by the planner.
  EXPECT_EQ(j["spec"]["text"], j["config"]["describe"]);
  ASSERT_EQ(j["spec"]["kernels"].size(), 1u);
  for (const char* key : {"text", "grid_ctas", "threads_per_cta", "cluster_size", "smem_bytes",
                          "work_items", "warp_specialized", "load_path", "store_path",
                          "producer_registers", "consumer_registers", "launch_dependents",
                          "waits_for_primary"})
    EXPECT_TRUE(j["spec"]["kernels"][0].contains(key)) << key;
  EXPECT_LE(j["spec"]["kernels"][0]["smem_bytes"].get<int>(), 232448);
  EXPECT_LE(j["spec"]["kernels"][0]["grid_ctas"].get<int>(), 132);
  for (const char* key : {"num_tiles", "waves", "last_wave_utilization", "busy_sms", "time_us",
                          "tflops", "compute_us", "memory_us", "l2_us", "fixed_us"})
    EXPECT_TRUE(j["prediction"].contains(key)) << key;
  // More SMs busy than the 112 of a 128x128 tiling.
  EXPECT_GT(j["prediction"]["busy_sms"].get<int>(), 112);
  EXPECT_TRUE(j["path_reason"].is_string());
  ASSERT_EQ(j["candidates"].size(), 5u);
  EXPECT_EQ(j["candidates"][0]["config"], j["config"]);
  EXPECT_TRUE(j["candidates"][0].contains("prediction"));
  ASSERT_EQ(j["rejected"].size(), 5u);
  EXPECT_TRUE(j["rejected"][0]["reason"].is_string());
  EXPECT_TRUE(j["rejected"][0].contains("config"));
}

TEST(PlanCli, TextShowsTheChoiceAndWhy) {
  const CliResult r = run_cli("plan --m 4096 --n 4096 --k 4096 --device h100-sxm --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part : {"config", "predicted", "TFLOP/s", "candidates (3 of", "rejected (3 of",
                           "wgmma"})
    EXPECT_TRUE(contains(r.out, part)) << part << "\n" << r.out;
}

// --top's heading names the order the candidates come in, and they come in it: predicted times
// within 2% tie, so a later candidate is never 2% faster than an earlier one, but the list is
// not sorted by time alone (it said "fastest first" above 182.03 us ranked before 180.50).
TEST(PlanCli, TopListsTheCandidatesInTheOrderItNames) {
  const std::string args = "plan --m 4096 --n 4096 --k 4096 --device h100-sxm --top 0";
  const CliResult text = run_cli(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_FALSE(contains(text.out, "fastest first")) << text.out;
  EXPECT_TRUE(contains(text.out, "predicted times within 2% tie")) << text.out;
  const auto candidates = run_json_one(args)["candidates"];
  ASSERT_GT(candidates.size(), 2u);
  double slowest_before = 0;
  bool a_faster_one_comes_later = false;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const double t = candidates[i]["prediction"]["time_us"].get<double>();
    EXPECT_GT(t * 1.02 * (1 + 1e-9), slowest_before) << "candidate " << i;
    a_faster_one_comes_later |= t < slowest_before;
    slowest_before = std::max(slowest_before, t);
  }
  EXPECT_TRUE(a_faster_one_comes_later) << "the ties this test is about do not occur here";
}

TEST(PlanCli, TopZeroListsEverything) {
  const auto j = run_json_one("plan --m 512 --n 512 --k 512 --device h100-sxm --top 0");
  EXPECT_GT(j["candidates"].size(), 100u);
  EXPECT_GT(j["rejected"].size(), 10u);
}

TEST(PlanCli, BlackwellNeverGetsWgmma) {
  const auto j = run_json_one("plan --m 4096 --n 4096 --k 4096 --device b200 --top 0");
  EXPECT_EQ(j["config"]["instruction"], "vendor");
  for (const auto& c : j["candidates"]) EXPECT_NE(c["config"]["instruction"], "wgmma");
  EXPECT_TRUE(contains(j["path_reason"].get<std::string>(), "sm_100"));
}

TEST(PlanCli, AmpereGetsNoTma) {
  const auto j = run_json_one("plan --m 4096 --n 4096 --k 4096 --device a100 --top 0");
  EXPECT_EQ(j["config"]["instruction"], "vendor");
  EXPECT_NE(j["config"]["load_path"], "tma");
  EXPECT_NE(j["config"]["store_path"], "tma");
  EXPECT_TRUE(contains(j["path_reason"].get<std::string>(), "no wgmma/TMA"));
}

TEST(PlanCli, SizeListsAreACrossProduct) {
  const auto j = run_json("plan --m=64,128 --n=1024:2048:1024 --k 512 --device h100-sxm");
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 4u);
  EXPECT_EQ(j[0]["problem"]["m"], 64);
  EXPECT_EQ(j[0]["problem"]["n"], 1024);
  EXPECT_EQ(j[1]["problem"]["n"], 2048);
  EXPECT_EQ(j[3]["problem"]["m"], 128);
}

TEST(PlanCli, ZeroSizeIsAnError) {
  const CliResult r = run_cli("plan --m 0 --n 64 --k 64 --device h100-sxm");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "m = 0")) << r.err;
  EXPECT_TRUE(contains(r.err, ">= 1")) << r.err;
}

TEST(PlanCli, BadInputsNameTheArgument) {
  CliResult r = run_cli("plan --m 64 --n=10:x --k 64 --device h100-sxm");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--n = 10:x")) << r.err;
  r = run_cli("plan --m 64 --n 64 --k 64 --dtype fp7 --device h100-sxm");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--dtype = fp7")) << r.err;
  r = run_cli("plan --m 64 --n 64 --k 64 --layout xx --device h100-sxm");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--layout = xx")) << r.err;
  // An lda below the row length (K = 64) is an error, not a fallback.
  r = run_cli("plan --m 64 --n 64 --k 64 --lda 32 --device h100-sxm");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "lda = 32")) << r.err;
  r = run_cli("plan --m 64 --n 64 --k 64 --top=-2 --device h100-sxm");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "--top = -2: must be >= 0")) << r.err;
  r = run_cli("plan --m 64 --n 64 --k 64 --device no-such-gpu");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "no-such-gpu")) << r.err;
}

// A stride TMA cannot describe: A is copied into padded rows first, and the spec says so; one
// row (a GEMV) runs on cuBLASLt instead, the reason naming the stride and the copies' cost.
TEST(PlanCli, TmaStrideRuleCopiesTheOperandOrFallsBackWithTheReason) {
  const auto j = run_json_one("plan --m 1024 --n 1024 --k 1000 --lda 1001 --device h100-sxm");
  EXPECT_EQ(j["config"]["instruction"], "wgmma");
  const std::string why = j["spec"]["reason"];
  EXPECT_TRUE(contains(why, "A copied into rows of 1024 elements first (lda = 1001")) << why;
  EXPECT_TRUE(contains(why, "16 bytes")) << why;
  EXPECT_EQ(j["spec"]["copy_a"]["padded_ld"], 1024);
  EXPECT_EQ(j["spec"]["copy_a"]["rows"], 1024);
  EXPECT_TRUE(j["spec"]["copy_b"].is_null());
  EXPECT_GT(j["prediction"]["operand_copy_us"].get<double>(), 0.0);
  const auto gemv = run_json_one("plan --m 1 --n 4096 --k 4097 --device h100-sxm");
  EXPECT_EQ(gemv["config"]["instruction"], "vendor");
  const std::string gemv_why = gemv["path_reason"];
  EXPECT_TRUE(contains(gemv_why, "lda = 4097")) << gemv_why;
  EXPECT_TRUE(contains(gemv_why, "loses to cuBLASLt")) << gemv_why;
}

TEST(PlanCli, Fp8PlansTheFp8Tile) {
  const auto j = run_json_one("plan --m 4096 --n 4096 --k 4096 --dtype fp8 --device h100-sxm");
  EXPECT_EQ(j["problem"]["dtype"], "fp8");
  EXPECT_EQ(j["config"]["instruction"], "wgmma");
  EXPECT_EQ(j["config"]["block_k"], 128);
}

TEST(PlanCli, DefaultDeviceWithoutGpuIsH100WithANote) {
  if (!autogemm::profile_gpus().gpus.empty()) GTEST_SKIP() << "a GPU is present: default is GPU 0";
  const CliResult r = run_cli("plan --m 128 --n 128 --k 128 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "h100-sxm")) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array() && j.size() == 1u) << r.out;
  EXPECT_EQ(j[0]["device"]["sm_count"], 132);
}

TEST(PlanCli, JsonIsAListForOneProblemToo) {
  const CliResult r = run_cli("plan --m 128 --n 128 --k 128 --device h100-sxm --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.is_array()) << r.out;
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["problem"]["m"], 128);
}

// Sizes each below 2^31 whose operands cannot fit any device are refused with the bytes
// needed and the bytes available; the TMA padding hint never suggests a size past 2^31 - 1.
TEST(PlanCli, OperandsPastTheDevicesMemoryAreRefused) {
  CliResult r = run_cli("plan --m 1073741824 --n 1073741824 --k 1073741824 --device h100-sxm");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(contains(r.err, "problem = 1073741824 x 1073741824 x 1073741824")) << r.err;
  EXPECT_TRUE(contains(r.err, "6917529027641081856 bytes")) << r.err;
  r = run_cli("plan --m 2147483647 --n 2147483647 --k 2147483647 --device h100-sxm");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_FALSE(contains(r.out + r.err, "2147483648")) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "bytes")) << r.err;
}

// Size lists (src/cli/size_list.cpp), through the command that parses them: the test binary
// does not link the CLI's sources.
namespace {

std::vector<int64_t> planned_m(const std::string& m_option) {
  const auto j = run_json("plan " + m_option + " --n 64 --k 64 --device h100-sxm");
  std::vector<int64_t> sizes;
  if (j.is_array())
    for (const auto& entry : j) sizes.push_back(entry["problem"]["m"]);
  else
    sizes.push_back(j["problem"]["m"]);
  return sizes;
}

void expect_size_error(const std::string& options, const std::string& named,
                       const std::string& rule_part) {
  const CliResult r = run_cli("plan " + options + " --device h100-sxm");
  EXPECT_EQ(r.exit_code, 2) << options;
  EXPECT_TRUE(contains(r.err, named)) << options << ": " << r.err;
  EXPECT_TRUE(contains(r.err, rule_part)) << options << ": " << r.err;
}

}  // namespace

TEST(SizeList, ValuesListsAndInclusiveRanges) {
  EXPECT_EQ(planned_m("--m 4096"), (std::vector<int64_t>{4096}));
  EXPECT_EQ(planned_m("--m=64,128,4096"), (std::vector<int64_t>{64, 128, 4096}));
  EXPECT_EQ(planned_m("--m=1024:4096:1024"), (std::vector<int64_t>{1024, 2048, 3072, 4096}));
  // The end is included only when a step lands on it.
  EXPECT_EQ(planned_m("--m=10:25:10"), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(planned_m("--m=1,64:192:64,7"), (std::vector<int64_t>{1, 64, 128, 192, 7}));
}

TEST(SizeList, BadTokensNameTheOptionAndToken) {
  expect_size_error("--m=64,abc --n 64 --k 64", "--m = abc", "integer");
  expect_size_error("--m=64,,128 --n 64 --k 64", "--m = \"\"", "empty entry");
  expect_size_error("--m 64 --n 64 --k=12x", "--k = 12x", "integer");
  expect_size_error("--m 64 --n 64 --k=1:2", "--k = 1:2", "start:end:step");
  expect_size_error("--m 64 --n=64:128:0 --k 64", "--n = 64:128:0", "step 0 must be >= 1");
  expect_size_error("--m 64 --n=128:64:16 --k 64", "--n = 128:64:16", "below its start");
  expect_size_error("--m=1:100000:1 --n 64 --k 64", "--m = 1:100000:1", "more than 4096");
  // Negative sizes parse, and the problem's validation names them.
  expect_size_error("--m=-5 --n 64 --k 64", "m = -5", ">= 1");
}

TEST(SizeList, CrossProductHasALimit) {
  expect_size_error("--m=1:100:1 --n=1:100:1 --k=1:100:1", "1000000 shapes", "at most 65536");
}

// --accumulate plans what `bench --accumulate` runs, D += A B with C = D: the text says the
// epilogue reads C, its read is priced, and where C cannot be read the option is named. (The
// JSON's problem stays the one Python's plan() describes: tests/python test_plan_matches_cli.)
TEST(PlanCli, AccumulatePlansTheReadOfC) {
  const std::string shape = "plan --m 4096 --n 28672 --k 4096 --device h200";
  const auto plain = run_json_one(shape);
  const auto with_c = run_json_one(shape + " --accumulate");
  EXPECT_EQ(with_c["problem"], plain["problem"]);
  EXPECT_FALSE(contains(run_cli(shape).out, "C          read by the epilogue"));
  EXPECT_GE(with_c["prediction"]["time_us"].get<double>(), plain["prediction"]["time_us"].get<double>());
  const CliResult text = run_cli(shape + " --accumulate");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "C          read by the epilogue")) << text.out;
  for (const char* refused : {" --out-dtype fp8", " --grouped masked --groups 8 --m-per-group 4"}) {
    const CliResult r = run_cli(shape + " --accumulate" + refused);
    EXPECT_EQ(r.exit_code, 2) << refused;
    EXPECT_TRUE(contains(r.err, "--accumulate = true")) << refused << ": " << r.err;
  }
}
