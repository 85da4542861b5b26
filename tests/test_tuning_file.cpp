// Tuning entries that hold a cuBLASLt algorithm, and tuning files (runtime/tuning_file.hpp,
// autogemm/tuning.hpp). CPU: entry JSON round trip with and without a vendor algorithm, older
// entries without the vendor fields, a vendor entry made into a vendor spec, a file written and
// read back atomically, entries of another device or build ignored with the field named,
// malformed files refused naming the file, load_tuning_file without a GPU, `tune --export`'s
// argument checked first. GPU: autotuning times cuBLASLt beside ours and its result is correct; a
// recorded cuBLASLt algorithm runs and is correct; `tune --export` in one process and
// AUTOGEMM_TUNING_FILE in a fresh one give the same choices without timing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/tuning.hpp"
#include "autogemm/version.hpp"
#include "cli_test_util.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"
#include "runtime/cublaslt.hpp"
#include "runtime/tuning_file.hpp"
#include "runtime/tuning_record.hpp"

using namespace autogemm;
using runtime::TuningEntry;
namespace fs = std::filesystem;

namespace {

GemmProblem problem(int64_t m, int64_t n, int64_t k) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

fs::path temp_folder(const std::string& name) {
  static std::atomic<int> counter{0};
  const fs::path path = fs::path(::testing::TempDir()) /
                        ("autogemm_" + name + "_" + std::to_string(::getpid()) + "_" +
                         std::to_string(counter++));
  fs::remove_all(path);
  fs::create_directories(path);
  return path;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string read_text(const fs::path& path) {
  std::ostringstream s;
  s << std::ifstream(path, std::ios::binary).rdbuf();
  return s.str();
}

VendorAlgo some_algo() {
  VendorAlgo a;
  a.algo_id = 66;
  a.tile_id = 20;
  a.stages_id = 8;
  a.splitk_num = 2;
  a.reduction_scheme = 1;
  a.cta_swizzling = 1;
  a.custom_option = 3;
  a.inner_shape_id = 5;
  a.cluster_shape_id = 2;
  return a;
}

TuningEntry vendor_entry(const GpuInfo& gpu, const GemmProblem& p) {
  TuningEntry e;
  e.key = runtime::tuning_key(gpu, p);
  e.config = "cuBLASLt";
  e.time_us = 9.5;
  e.candidates = 8;
  e.date = "2026-11-29T10:00:00Z";
  e.vendor_algo = some_algo();
  e.vendor_algorithms = 8;
  e.graph_timing = true;
  return e;
}

TuningEntry ours_entry(const GpuInfo& gpu, const GemmProblem& p) {
  TuningEntry e;
  e.key = runtime::tuning_key(gpu, p);
  e.config = plan_gemm(p, gpu).best().config.describe();
  e.time_us = 12.25;
  e.candidates = 6;
  e.date = "2026-11-29T10:00:00Z";
  e.vendor_algorithms = 5;
  return e;
}

void expect_same(const TuningEntry& x, const TuningEntry& y) {
  EXPECT_EQ(x.key, y.key);
  EXPECT_EQ(x.config, y.config);
  EXPECT_EQ(x.time_us, y.time_us);
  EXPECT_EQ(x.candidates, y.candidates);
  EXPECT_EQ(x.date, y.date);
  EXPECT_EQ(x.vendor_algo, y.vendor_algo);
  EXPECT_EQ(x.vendor_algorithms, y.vendor_algorithms);
  EXPECT_EQ(x.graph_timing, y.graph_timing);
}

// The InvalidArgument `call` throws (fails the test when it throws none).
template <typename Call>
InvalidArgument invalid_argument_of(Call call) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    return e;
  }
  ADD_FAILURE() << "no InvalidArgument thrown";
  return InvalidArgument("", "", "");
}

}  // namespace

TEST(TuningFile, EntryJsonRoundTripWithAndWithoutVendorAlgorithm) {
  const GpuInfo h100 = device_preset("h100-sxm");
  for (const TuningEntry& e : {vendor_entry(h100, problem(64, 2112, 7168)),
                               ours_entry(h100, problem(64, 2112, 7168))})
    expect_same(runtime::entry_from_json(runtime::entry_to_json(e)), e);
  // Through the record's files too.
  const fs::path folder = temp_folder("tuning_vendor_record");
  runtime::TuningRecord record(folder);
  const GemmProblem p = problem(128, 4096, 4096);
  TuningEntry entry = vendor_entry(h100, p);
  ASSERT_TRUE(record.store(h100, p, entry));
  const std::optional<TuningEntry> back = record.lookup(h100, p);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->vendor_algo, some_algo());
  EXPECT_EQ(back->vendor_algorithms, 8);
  EXPECT_TRUE(back->graph_timing);
  fs::remove_all(folder);
}

// Entries written before cuBLASLt was a candidate have no vendor fields: still read, marked -1
// (autotuning asked for again tunes them again, with cuBLASLt).
TEST(TuningFile, EntriesWithoutVendorFieldsAreRead) {
  nlohmann::json j = runtime::entry_to_json(ours_entry(device_preset("h200"), problem(8, 7168, 2048)));
  j.erase("vendor_algorithms");
  j.erase("graph_timing");
  const TuningEntry e = runtime::entry_from_json(j);
  EXPECT_EQ(e.vendor_algorithms, -1);
  EXPECT_FALSE(e.graph_timing);
  EXPECT_FALSE(e.vendor());
}

TEST(TuningFile, VendorEntryBecomesAVendorSpecWithItsAlgorithm) {
  const GpuInfo h100 = device_preset("h100-sxm");
  const GemmProblem p = problem(256, 4096, 2048);
  const Plan plan = plan_gemm(p, h100);
  const std::optional<KernelSpec> spec = runtime::spec_from_entry(
      vendor_entry(h100, p), p, h100, plan.path_reason, "tuning file");
  ASSERT_TRUE(spec.has_value());
  EXPECT_TRUE(spec->vendor);
  EXPECT_EQ(spec->vendor_algo, some_algo());
  EXPECT_NE(spec->reason.find("from the tuning file (8 candidates, 9.50 us)"), std::string::npos)
      << spec->reason;
  EXPECT_NE(spec->reason.find(describe(some_algo())), std::string::npos) << spec->reason;
  // Our configuration's entry holds no algorithm, a vendor one must.
  nlohmann::json j = runtime::entry_to_json(vendor_entry(h100, p));
  j.erase("vendor_algo");
  EXPECT_THROW(runtime::entry_from_json(j), std::runtime_error);
  j = runtime::entry_to_json(ours_entry(h100, p));
  j["vendor_algo"] = runtime::entry_to_json(vendor_entry(h100, p))["vendor_algo"];
  EXPECT_THROW(runtime::entry_from_json(j), std::runtime_error);
}

TEST(TuningFile, WrittenAtomicallyAndReadBack) {
  const GpuInfo h200 = device_preset("h200");
  const std::vector<TuningEntry> entries = {vendor_entry(h200, problem(64, 2112, 7168)),
                                            ours_entry(h200, problem(4096, 7168, 2048))};
  const fs::path folder = temp_folder("tuning_file_write");
  const fs::path path = folder / "tuning.json";
  write_text(path, "old contents");
  runtime::write_tuning_file(path, entries, "--export");
  const std::vector<TuningEntry> back = runtime::read_tuning_file(path, "path");
  ASSERT_EQ(back.size(), 2u);
  for (std::size_t i = 0; i < back.size(); ++i) expect_same(back[i], entries[i]);
  std::size_t files = 0;
  for (const auto& item : fs::directory_iterator(folder)) files += item.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u) << "a temporary was left beside the file";
  const nlohmann::json j = nlohmann::json::parse(read_text(path));
  EXPECT_EQ(j.at("kind"), "autogemm tuning file");
  EXPECT_EQ(j.at("library_version"), version());
  // A folder is no file to write.
  const InvalidArgument e =
      invalid_argument_of([&] { runtime::write_tuning_file(folder, entries, "--export"); });
  EXPECT_EQ(e.argument(), "--export");
  fs::remove_all(folder);
}

// Another GPU model, SM count or compute capability, or another library version or kernel
// fingerprint: not used, the reason naming the field.
TEST(TuningFile, EntriesOfAnotherDeviceOrBuildAreIgnoredNamingTheField) {
  const GpuInfo h100 = device_preset("h100-sxm"), h200 = device_preset("h200");
  ASSERT_NE(h100.name, h200.name);
  const GemmProblem p = problem(64, 2112, 7168);
  const std::string fingerprint = runtime::kernel_fingerprint();
  const TuningEntry e = ours_entry(h100, p);
  EXPECT_EQ(runtime::entry_mismatch(e, {h100}, version(), fingerprint), "");
  EXPECT_EQ(runtime::entry_mismatch(e, {h200, h100}, version(), fingerprint), "");
  EXPECT_NE(runtime::entry_mismatch(e, {h200}, version(), fingerprint).find("GPU model"),
            std::string::npos);
  GpuInfo fewer = h100;
  fewer.sm_count -= 2;
  const std::string sms = runtime::entry_mismatch(e, {fewer}, version(), fingerprint);
  EXPECT_NE(sms.find("SM count"), std::string::npos) << sms;
  EXPECT_EQ(sms.find("GPU model"), std::string::npos) << sms;
  GpuInfo other_cc = h100;
  other_cc.cc.minor = 9;
  EXPECT_NE(runtime::entry_mismatch(e, {other_cc}, version(), fingerprint)
                .find("compute capability"),
            std::string::npos);
  EXPECT_NE(runtime::entry_mismatch(e, {h100}, "9.9.9", fingerprint).find("library version"),
            std::string::npos);
  EXPECT_NE(runtime::entry_mismatch(e, {h100}, version(), "other kernels")
                .find("kernel fingerprint"),
            std::string::npos);
  EXPECT_EQ(runtime::entry_mismatch(e, {}, version(), fingerprint), "no GPU in this process");

  TuningFileLoad load;
  const std::vector<TuningEntry> usable = runtime::usable_entries(
      {e, ours_entry(h200, p)}, {h200}, version(), fingerprint, "f.json", &load);
  ASSERT_EQ(usable.size(), 1u);
  EXPECT_EQ(usable[0].key, runtime::tuning_key(h200, p));
  ASSERT_EQ(load.ignored.size(), 1u);
  EXPECT_NE(load.ignored[0].find("m=64;n=2112;k=7168"), std::string::npos) << load.ignored[0];
  EXPECT_NE(load.ignored[0].find("GPU model"), std::string::npos) << load.ignored[0];
}

TEST(TuningFile, MalformedFilesAreRefusedNamingTheFile) {
  const GpuInfo h100 = device_preset("h100-sxm");
  const nlohmann::json entry = runtime::entry_to_json(ours_entry(h100, problem(64, 2112, 7168)));
  auto file = [&](nlohmann::json entries) {
    return nlohmann::json{{"kind", "autogemm tuning file"}, {"format", 1},
                          {"entries", std::move(entries)}};
  };
  nlohmann::json missing_time = entry;
  missing_time.erase("time_us");
  nlohmann::json bad_key = entry;
  bad_key["key"] = "not a key";
  nlohmann::json wrong_kind = file({entry});
  wrong_kind["kind"] = "something else";
  nlohmann::json wrong_format = file({entry});
  wrong_format["format"] = 7;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{ not json", "is not JSON"},
      {"[1, 2]", "is not a tuning file"},
      {wrong_kind.dump(), "is not a tuning file"},
      {wrong_format.dump(), "has format 7"},
      {nlohmann::json{{"kind", "autogemm tuning file"}, {"format", 1}}.dump(), "no \"entries\""},
      {file({entry, missing_time}).dump(), "entry 1 (of 2)"},
      {file({bad_key}).dump(), "entry 0 (of 1)"},
  };
  for (const auto& [text, why] : cases) {
    const InvalidArgument e = invalid_argument_of(
        [&] { runtime::parse_tuning_file(text, "AUTOGEMM_TUNING_FILE", "/deploy/t.json"); });
    EXPECT_EQ(e.argument(), "AUTOGEMM_TUNING_FILE") << text;
    EXPECT_EQ(e.value(), "/deploy/t.json") << text;
    EXPECT_NE(e.rule().find(why), std::string::npos) << text << "\n" << e.rule();
  }
  EXPECT_EQ(runtime::parse_tuning_file(file(nlohmann::json::array()).dump(), "path", "x").size(),
            0u);
}

// load_tuning_file: a file that is not there or not a tuning file is an InvalidArgument naming
// it; without a GPU every entry is ignored, saying so.
TEST(TuningFile, LoadTuningFileChecksTheFileAndTheDevice) {
  const fs::path folder = temp_folder("tuning_file_load");
  const InvalidArgument missing =
      invalid_argument_of([&] { load_tuning_file((folder / "none.json").string()); });
  EXPECT_EQ(missing.argument(), "path");
  EXPECT_NE(missing.rule().find("cannot be opened"), std::string::npos) << missing.rule();
  write_text(folder / "bad.json", "{");
  EXPECT_THROW(load_tuning_file((folder / "bad.json").string()), InvalidArgument);

  if (!profile_gpus().gpus.empty()) GTEST_SKIP() << "a GPU is present: entries could be used";
  const fs::path path = folder / "t.json";
  runtime::write_tuning_file(path, {ours_entry(device_preset("h100-sxm"), problem(64, 2112, 7168))},
                             "--export");
  const TuningFileLoad load = load_tuning_file(path.string());
  EXPECT_EQ(load.entries, 1u);
  EXPECT_EQ(load.used, 0u);
  ASSERT_EQ(load.ignored.size(), 1u);
  EXPECT_NE(load.ignored[0].find("no GPU in this process"), std::string::npos) << load.ignored[0];
  fs::remove_all(folder);
}

// --export's file is checked before anything is tuned (exit 2 naming the option).
TEST(TuningFileCli, ExportPathIsCheckedFirst) {
  const fs::path folder = temp_folder("tuning_file_cli");
  write_text(folder / "suite.csv", "m,n,k,tag\n64,2112,7168,decode\n");
  const std::string env = "-u AUTOGEMM_TUNING_RECORD AUTOGEMM_CACHE_DIR=" +
                          (folder / "cache").string();
  const std::string suite = " --suite " + (folder / "suite.csv").string();
  autogemm::testing::CliRun run = autogemm::testing::run_cli(
      "tune" + suite + " --export " + (folder / "no" / "such" / "t.json").string(), env);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--export"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("does not exist"), std::string::npos) << run.out;
  run = autogemm::testing::run_cli("tune" + suite + " --export " + folder.string(), env);
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("must name a file, not a folder"), std::string::npos) << run.out;
  EXPECT_FALSE(fs::exists(folder / "cache" / "tuning"));
  // --graph is an option of tune (for a preset: the plan, exit 0).
  run = autogemm::testing::run_cli("tune" + suite + " --graph --device h200", env);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  fs::remove_all(folder);
}

// ---- GPU ------------------------------------------------------------------------------------

// Autotuning times cuBLASLt's algorithms beside ours, records how many, and whichever wins gives
// the reference's result; a recorded cuBLASLt algorithm (not the heuristic's first) then runs,
// correctly, with the reason naming it.
TEST(TuningFileGpu, AutotuneTimesCublasLtAndRunsARecordedAlgorithm) {
  AUTOGEMM_REQUIRE_GPU();
  std::string why;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&why);
  const std::shared_ptr<runtime::TuningRecord> saved = runtime::process_tuning_record();
  const fs::path folder = temp_folder("tuning_vendor_gpu");
  auto record = std::make_shared<runtime::TuningRecord>(folder);
  runtime::set_process_tuning_record(record);
  auto as_run = [](GemmProblem p) {   // run_and_check pads D's rows
    p.ldd = autogemm::testing::round_up_to(p.n + 16, 8);
    return p;
  };

  // 1. Autotuned over ours and cuBLASLt's: correct, and the entry says cuBLASLt was timed.
  const GemmProblem tuned = problem(96, 2304, 1536);
  const auto check =
      autogemm::testing::run_and_check(tuned, 1.0f, 0.0f, 81, std::nullopt, false, 3);
  AUTOGEMM_EXPECT_GEMM_OK(check, "autotuned with cuBLASLt");
  EXPECT_NE(check.reason.find("cuBLASLt algorithms"), std::string::npos) << check.reason;
  const std::optional<TuningEntry> entry = record->lookup(gpu, as_run(tuned));
  ASSERT_TRUE(entry.has_value());
  EXPECT_GE(entry->vendor_algorithms, 1);
  EXPECT_EQ(entry->vendor(), check.used_vendor);

  // 2. A recorded cuBLASLt algorithm, the heuristic's last: runs through cuBLASLt, correctly.
  const GemmProblem p = problem(200, 1792, 1024);
  std::optional<VendorAlgo> stored;
  const auto from_record = autogemm::testing::run_call_and_check(
      p, 1.0f, 0.0f, 82, false, nullptr,
      [&](const GemmProblem& q, const GemmOperands& ops, cudaStream_t s) {
        const std::vector<VendorAlgo> algos = runtime::cublaslt_algorithms(q, ops, 8);
        stored = algos.back();
        TuningEntry e;
        e.config = "cuBLASLt";
        e.time_us = 7.0;
        e.candidates = 4;
        e.vendor_algo = stored;
        e.vendor_algorithms = int(algos.size());
        EXPECT_TRUE(record->store(gpu, q, e));
        return gemm(q, ops, s);
      });
  AUTOGEMM_EXPECT_GEMM_OK(from_record, "recorded cuBLASLt algorithm");
  EXPECT_TRUE(from_record.used_vendor);
  ASSERT_TRUE(stored.has_value());
  EXPECT_NE(from_record.reason.find("from the tuning record (4 candidates, 7.00 us)"),
            std::string::npos) << from_record.reason;
  EXPECT_NE(from_record.reason.find(describe(*stored)), std::string::npos) << from_record.reason;

  runtime::set_process_tuning_record(saved);
  fs::remove_all(folder);
}

// Autotuning timed as CUDA graph replays (GemmOptions::autotune_graph): the reason says so, and
// the winner, ours or cuBLASLt's, gives the reference's result, captured and not.
TEST(TuningFileGpu, GraphTimedAutotuneIsCorrect) {
  AUTOGEMM_REQUIRE_GPU();
  const std::shared_ptr<runtime::TuningRecord> saved = runtime::process_tuning_record();
  runtime::set_process_tuning_record(nullptr);   // tuned in this process only
  for (const GemmProblem& p : {problem(64, 2112, 2048), problem(384, 3072, 1024)}) {
    const auto check = autogemm::testing::run_call_and_check(
        p, 1.0f, 0.0f, 91, false, nullptr,
        [](const GemmProblem& q, const GemmOperands& ops, cudaStream_t s) {
          GemmOptions options;
          options.autotune = 3;
          options.autotune_graph = 1;
          return gemm(q, ops, s, options);
        });
    AUTOGEMM_EXPECT_GEMM_OK(check, "graph-timed autotune");
    EXPECT_NE(check.reason.find("timed as graph replays"), std::string::npos) << check.reason;
  }
  runtime::set_process_tuning_record(saved);
}

// `tune --export F` in one process; a fresh process with AUTOGEMM_TUNING_FILE=F and an empty
// cache makes every row's choice from the file, timing nothing, and the same choices.
TEST(TuningFileGpu, ExportedFileGivesTheSameChoicesInAFreshProcess) {
  AUTOGEMM_REQUIRE_GPU();
  const fs::path folder = temp_folder("tuning_file_gpu");
  write_text(folder / "suite.csv", "m,n,k,tag\n64,2112,2048,decode\n192,1536,1024,small\n");
  const fs::path file = folder / "tuning.json";
  const std::string args = "tune --suite " + (folder / "suite.csv").string() +
                           " --candidates 3 --warmup 1 --iters 3";
  const autogemm::testing::CliRun first = autogemm::testing::run_cli(
      args + " --export " + file.string(),
      "-u AUTOGEMM_TUNING_RECORD -u AUTOGEMM_TUNING_FILE AUTOGEMM_CACHE_DIR=" +
          (folder / "a").string());
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("exported 2 entries to"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("cuBLASLt won"), std::string::npos) << first.out;
  const std::vector<TuningEntry> entries = runtime::read_tuning_file(file, "path");
  ASSERT_EQ(entries.size(), 2u);

  const autogemm::testing::CliRun second = autogemm::testing::run_cli(
      args, "-u AUTOGEMM_TUNING_RECORD AUTOGEMM_LOG=4 AUTOGEMM_TUNING_FILE=" + file.string() +
                " AUTOGEMM_CACHE_DIR=" + (folder / "b").string());
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_EQ(second.out.find("tuned now"), std::string::npos) << second.out;
  // Nothing timed (autotuning logs each candidate's time at level 4).
  EXPECT_EQ(second.out.find("autotune 64x"), std::string::npos) << second.out;
  EXPECT_EQ(second.out.find("autotune 192x"), std::string::npos) << second.out;
  // The table's rows, not the log: at level 4 each cuBLASLt call logs "from the tuning file (".
  std::size_t from_file = 0;
  std::istringstream lines(second.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("[autogemm]", 0) != 0 && line.find(" file (") != std::string::npos) ++from_file;
  EXPECT_EQ(from_file, 2u) << second.out;
  for (const TuningEntry& e : entries)
    EXPECT_NE(second.out.find(e.config), std::string::npos) << e.config << "\n" << second.out;
  fs::remove_all(folder);
}

// Weight-gradient rows (`tune --wgrad`: dW += dY^T X into fp32, C read in place) tune through
// gemm() as problems of their own: each exported entry's key says layout tn, fp32 D and C read;
// a fresh process given the file takes them without timing; `--sweep` times the legal set with C.
TEST(TuningFileGpu, WeightGradientRowsTuneWithCRead) {
  AUTOGEMM_REQUIRE_GPU();
  const fs::path folder = temp_folder("tuning_file_wgrad_gpu");
  write_text(folder / "wgrad.csv", "m,n,k,tag\n576,1024,2048,kv\n256,512,1000,odd\n");
  const fs::path file = folder / "tuning.json";
  const std::string args = "tune --wgrad " + (folder / "wgrad.csv").string() +
                           " --candidates 2 --warmup 1 --iters 3";
  const std::string fresh = "-u AUTOGEMM_TUNING_RECORD -u AUTOGEMM_TUNING_FILE AUTOGEMM_CACHE_DIR=";
  const autogemm::testing::CliRun first =
      autogemm::testing::run_cli(args + " --export " + file.string(), fresh + (folder / "a").string());
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("exported 2 entries to"), std::string::npos) << first.out;
  const std::vector<TuningEntry> entries = runtime::read_tuning_file(file, "path");
  ASSERT_EQ(entries.size(), 2u);
  for (const TuningEntry& e : entries) {
    EXPECT_NE(e.key.find("reads_c=1"), std::string::npos) << e.key;
    EXPECT_NE(e.key.find(";d=fp32;"), std::string::npos) << e.key;
    EXPECT_NE(e.key.find(";layout=tn;"), std::string::npos) << e.key;
  }
  const autogemm::testing::CliRun second = autogemm::testing::run_cli(
      args, "-u AUTOGEMM_TUNING_RECORD AUTOGEMM_TUNING_FILE=" + file.string() +
                " AUTOGEMM_CACHE_DIR=" + (folder / "b").string());
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_EQ(second.out.find("tuned now"), std::string::npos) << second.out;
  const autogemm::testing::CliRun sweep = autogemm::testing::run_cli(
      "tune --sweep --sample 3 --warmup 1 --iters 3 --wgrad " + (folder / "wgrad.csv").string(),
      fresh + (folder / "c").string());
  ASSERT_EQ(sweep.exit_code, 0) << sweep.out;
  EXPECT_NE(sweep.out.find("sweeping 2 rows"), std::string::npos) << sweep.out;
  EXPECT_EQ(sweep.out.find("not swept"), std::string::npos) << sweep.out;
  EXPECT_EQ(sweep.out.find("did not run"), std::string::npos) << sweep.out;
  fs::remove_all(folder);
}
