// Error paths of the `autogemm` sub-commands that have no test file of their own (warmup,
// ladder), of bench's problem options, and those every command shares (the parser's errors,
// --seed, --device), through the built binary: a user error exits 2 with a message naming the
// argument, its value and the rule.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "cli_test_util.hpp"
#include "test_jit_util.hpp"

namespace {

using autogemm::testing::CliRun;
using autogemm::testing::run_cli;
using autogemm::testing::ScratchDir;
using autogemm::testing::ScopedEnv;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}


// A one-shape suite in `dir`.
std::string small_suite(const ScratchDir& dir) {
  const auto path = dir.path() / "suite.csv";
  std::ofstream(path) << "m,n,k\n128,256,512\n";
  return path.string();
}

}  // namespace

// warmup's only job is to fill the disk cache: when there is none it must say so and fail,
// naming the variable that chose (or disabled) it, its value and why.
TEST(WarmupCli, UnusableCacheDirIsAnErrorNamingTheVariable) {
  ScratchDir dir;
  const std::string suite = small_suite(dir);
  std::ofstream(dir.path() / "a_file") << "not a directory";
  const std::string below_a_file = (dir.path() / "a_file" / "cache").string();
  ScopedEnv off("AUTOGEMM_DISABLE_DISK_CACHE", nullptr);
  ScopedEnv cache_dir("AUTOGEMM_CACHE_DIR", below_a_file.c_str());
  const CliRun run = run_cli("warmup --device h100-sxm --suite " + suite);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_TRUE(contains(run.out, "AUTOGEMM_CACHE_DIR = " + below_a_file)) << run.out;
  EXPECT_TRUE(contains(run.out, "Not a directory")) << run.out;
}

TEST(WarmupCli, DisabledDiskCacheIsAnError) {
  ScratchDir dir;
  const std::string suite = small_suite(dir);
  {
    ScopedEnv off("AUTOGEMM_DISABLE_DISK_CACHE", "1");
    const CliRun run = run_cli("warmup --device h100-sxm --suite " + suite);
    EXPECT_EQ(run.exit_code, 2) << run.out;
    EXPECT_TRUE(contains(run.out, "AUTOGEMM_DISABLE_DISK_CACHE = 1")) << run.out;
    EXPECT_TRUE(contains(run.out, "disables the kernel disk cache")) << run.out;
  }
  ScopedEnv off("AUTOGEMM_DISABLE_DISK_CACHE", nullptr);
  ScopedEnv empty("AUTOGEMM_CACHE_DIR", "");
  const CliRun run = run_cli("warmup --device h100-sxm --suite " + suite);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_TRUE(contains(run.out, "AUTOGEMM_CACHE_DIR = \"\"")) << run.out;
}

TEST(WarmupCli, WritableCacheIsFilled) {
  ScratchDir dir;
  const std::string suite = small_suite(dir);
  const std::string root = (dir.path() / "cache").string();
  ScopedEnv off("AUTOGEMM_DISABLE_DISK_CACHE", nullptr);
  ScopedEnv cache_dir("AUTOGEMM_CACHE_DIR", root.c_str());
  const CliRun run = run_cli("warmup --device h100-sxm --suite " + suite);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(contains(run.out, root)) << run.out;
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root + "/v1"))
    entries += entry.path().extension() == ".cubin";
  EXPECT_GE(entries, 1) << run.out;
}

TEST(WarmupCli, HelpNamesEveryDtype) {
  const CliRun run = run_cli("warmup --help");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_TRUE(contains(run.out, "fp8")) << run.out;
}

// Arguments are checked before the GPU is looked for: a user without a GPU learns about the
// bad size first, and a user with one is not sent looking for a device problem.
TEST(LadderCli, BadSizeIsReportedBeforeTheDevice) {
  const CliRun run = run_cli("ladder --m -1");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_TRUE(contains(run.out, "m = -1")) << run.out;
  EXPECT_FALSE(contains(run.out, "no CUDA device")) << run.out;
}

// "int8" parses to s8, which D cannot be: the message must use a name the user recognises.
TEST(BenchProblemCli, RefusedOutDtypeNamesTheUsersSpelling) {
  const CliRun run = run_cli("bench --m 128 --n 128 --k 128 --device h100-sxm --out-dtype int8");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_TRUE(contains(run.out, "int8")) << run.out;
}

// A suite value past the problem rules names the file and line through the command too.
TEST(WarmupCli, SuiteValueErrorNamesFileAndLine) {
  ScratchDir dir;
  const auto path = dir.path() / "big.csv";
  std::ofstream(path) << "m,n,k\n128,128,3000000000\n";
  const CliRun run = run_cli("warmup --device h100-sxm --suite " + path.string());
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_TRUE(contains(run.out, path.string() + " line 2 column k = 3000000000")) << run.out;
}

// A value an option's check refuses is a user error: exit 2, naming the option and the rule.
TEST(CliErrors, RefusedOptionValuesExitTwo) {
  for (const char* args : {"bench --m 64 --n 64 --k 64 --autotune -5",
                           "bench --m 64 --n 64 --k 64 --autotune 65",
                           "plan --m 64 --n 64 --k 64 --top -1"}) {
    const auto run = autogemm::testing::run_cli(args);
    EXPECT_EQ(run.exit_code, 2) << args << "\n" << run.out;
  }
  const auto run = autogemm::testing::run_cli("bench --m 64 --n 64 --k 64 --autotune -5");
  EXPECT_NE(run.out.find("0..64"), std::string::npos) << run.out;
}

namespace {

// `autogemm <args>` exits 2 with `message` after "autogemm: error: ".
void expect_user_error(const std::string& args, const std::string& message) {
  const CliRun run = run_cli(args);
  EXPECT_EQ(run.exit_code, 2) << args << "\n" << run.out;
  EXPECT_TRUE(contains(run.out, "autogemm: error: " + message)) << args << "\n" << run.out;
}

}  // namespace

// The command-line parser's own errors read like every other: the argument, its value, the rule.
TEST(CliErrors, ParserErrorsNameTheArgumentItsValueAndTheRule) {
  expect_user_error("compile --m 64 --n 64 --out x", "--k = (not given): is required");
  expect_user_error("tune --suite x.csv --candidates 1", "--candidates = 1: must be in 2..64");
  expect_user_error("tune --suite x.csv --sweep --sample 100001", "--sample = 100001: must be in 0..100000");
  expect_user_error("plan --m 64 --n 64 --k 64 --grouped lumpy",
                    "--grouped = lumpy: expected one of");
  expect_user_error("plan --m 64 --n 64 --k 64 --top many",
                    "--top = many: must be an integer");
  expect_user_error("plan --m 64 --n 64 --k 64 --frobnicate",
                    "argument = --frobnicate: not taken by `autogemm plan`");
  expect_user_error("frobnicate --m 64", "command = frobnicate: not an autogemm command");
  expect_user_error("", "command = (none): give one");
  expect_user_error("plan --m", "--m = (no value): needs a value");
  EXPECT_EQ(run_cli("--help").exit_code, 0);
  EXPECT_EQ(run_cli("plan --help").exit_code, 0);
  EXPECT_EQ(run_cli("--version").exit_code, 0);
}

// Options that only mean something with another option are refused without it, not ignored.
TEST(CliErrors, OptionsWithoutTheOptionTheyGoWithAreRefused) {
  const std::string shape = " --m 64 --n 64 --k 64 --device h200";
  expect_user_error("plan --groups 4" + shape, "--groups = 4: goes with --grouped");
  expect_user_error("plan --m-per-group 8" + shape, "--m-per-group = 8: goes with --grouped");
  expect_user_error("fuzz --cases 1 --device h200", "--device = h200: goes with --cpu");
  expect_user_error("fuzz --cases 1 --compile-limit 3", "--compile-limit = 3: goes with --cpu");
  expect_user_error("advise --model llama-3-8b --device h200 --formats bf16",
                    "--formats = bf16: goes with --measure");
}

// tune reads a row as bench does (cli/row_problem.hpp): --wgrad's weight gradient (tn, fp32,
// C read) and --accumulate plan the same configuration in both; the options' rules are bench's.
TEST(TuneCli, WgradAndAccumulateRowsAreTheBenchsProblems) {
  ScratchDir dir;
  const auto path = dir.path() / "wgrad.csv";
  std::ofstream(path) << "m,n,k,tag\n576,7168,8192,kv\n4096,4096,16384,o\n";
  const std::string suite = path.string();
  // The plan's table row of the first row (m n k tag config ...), from each command.
  auto first_row = [](const CliRun& run) {
    const auto at = run.out.find("  576 ");
    return at == std::string::npos ? std::string() : run.out.substr(at, run.out.find('\n', at) - at);
  };
  for (const std::string& rows : {" --wgrad " + suite, " --suite " + suite + " --accumulate --out-dtype fp32 --layout tn"}) {
    const CliRun bench = run_cli("bench --device h200" + rows);
    const CliRun tune = run_cli("tune --sweep --device h200" + rows);
    ASSERT_EQ(bench.exit_code, 0) << bench.out;
    ASSERT_EQ(tune.exit_code, 0) << tune.out;
    ASSERT_FALSE(first_row(bench).empty()) << bench.out;
    EXPECT_EQ(first_row(bench), first_row(tune)) << bench.out << "\n" << tune.out;
  }
  expect_user_error("tune --sweep --wgrad " + suite + " --dtype fp8",
                    "--dtype = fp8: tune --wgrad takes bf16 or fp16 rows");
  expect_user_error("tune --sweep --wgrad " + suite + " --out-dtype bf16",
                    "--out-dtype = bf16: a weight gradient accumulates into fp32");
  expect_user_error("tune --sweep --wgrad " + suite + " --suite " + suite,
                    "--wgrad = " + suite + ": takes its rows from the file: no --suite");
  expect_user_error("tune --sweep", "--suite = missing: give the shapes");
  expect_user_error("tune --sweep --wgrad " + suite + " --layout nn",
                    "--layout = nn: --wgrad sets the layout");
  expect_user_error("tune --sweep --suite " + suite + " --out-dtype e4m3",
                    "--out-dtype = e4m3: expected bf16, fp16 or fp32");
  // The sweep's CSV is written after every row, so an unwritable path is refused before any.
  const std::string unwritable = (dir.path() / "missing" / "sweep.csv").string();
  expect_user_error("tune --sweep --suite " + suite + " --sweep-csv " + unwritable,
                    "--sweep-csv = " + unwritable + ": cannot be written");
}

// A negative seed was read as 2^64 - 1, and an empty --device as the default device.
TEST(CliErrors, NegativeSeedAndEmptyDeviceAreRefused) {
  ScratchDir dir;
  const std::string suite = small_suite(dir);
  for (const std::string& args : std::vector<std::string>{
           "bench --m 64 --n 64 --k 64 --device h200", "bench --gpus 2 --m 64 --n 64 --k 64 --device h200",
        "bench --gpus 2 --suite " + suite, "tune --suite " + suite, "fuzz --cpu --cases 1",
        "advise --model llama-3-8b --measure"})
    expect_user_error(args + " --seed -1", "--seed = -1: must be a non-negative integer");
  for (const std::string& args : std::vector<std::string>{
           "plan --m 64 --n 64 --k 64", "bench --m 64 --n 64 --k 64", "compile --m 64 --n 64 --k 64 --out x",
        "kernels", "profile", "advise --model llama-3-8b", "tune --suite " + suite,
        "warmup --suite " + suite, "fuzz --cpu --cases 1"})
    expect_user_error(args + " --device ''", "--device = \"\": names no device");
}

// Each message names what the user gave: the batch, not the GEMM it made; the leading
// dimension, not the problem; a folder given as a model, not "not JSON"; a binary suite's line,
// without its bytes cutting the message short.
TEST(CliErrors, MessagesNameTheUsersArgument) {
  expect_user_error("advise --model llama-3-8b --device h200 --batch 100000000",
                    "--batch = 100000000: the decode step's GEMM");
  expect_user_error("plan --m 64 --n 64 --k 64 --lda 1000000000000 --device h200",
                    "lda = 1000000000000: A, B and D need");
  ScratchDir dir;
  expect_user_error("advise --model " + dir.path().string() + " --device h200",
                    "--model = " + dir.path().string() + ": is a directory");
  const auto binary = dir.path() / "binary.csv";
  std::ofstream(binary, std::ios::binary) << std::string("m,n,k\n1\0" "2,3\n", 12);
  expect_user_error("bench --device h200 --suite " + binary.string(),
                    binary.string() + " line 2 = (not text): byte 0x00 at column 2");
}

TEST(CliErrors, ControlBytesInAValueAreEscaped) {
  const autogemm::InvalidArgument e("suite", std::string("a\0b\x1b[2J", 7), "rule");
  EXPECT_EQ(std::string(e.what()), "suite = a\\x00b\\x1b[2J: rule");
  EXPECT_EQ(e.value(), std::string("a\0b\x1b[2J", 7));
}
