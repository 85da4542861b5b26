// The tuning record (runtime/tuning_record.hpp): autotuning's winners on disk, keyed by device,
// problem, library version and kernel fingerprint. CPU: round trip, what the key distinguishes
// (an entry of other kernels is not used and stays on disk), atomic writes from
// several threads and beside other writers' temporaries, corrupt entries ignored, entries the
// rules refuse ignored, `autogemm tune` without a GPU. GPU: an autotuned gemm() writes its
// winner, and a later process (or a fresh problem in this one) runs the recorded winner without
// timing again.
#include <gtest/gtest.h>

#include "cli_test_util.hpp"
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <type_traits>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/version.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"
#include "jit/jit.hpp"
#include "runtime/tuning_record.hpp"

using namespace autogemm;
using runtime::TuningEntry;
using runtime::TuningRecord;
namespace fs = std::filesystem;

namespace {

GemmProblem problem(int64_t m, int64_t n, int64_t k, DType in = DType::bf16) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in;
  p.d_type = DType::bf16;
  if (in == DType::e4m3) p.scaling = Scaling::block_1x128_128x128;
  return p;
}

// A fresh, empty folder under the test temp dir, removed when the object goes.
class TempFolder {
 public:
  explicit TempFolder(const std::string& name) {
    static std::atomic<int> counter{0};
    path_ = fs::path(::testing::TempDir()) /
            ("autogemm_" + name + "_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter++));
    fs::remove_all(path_);
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<std::string> files_in(const fs::path& folder) {
  std::vector<std::string> names;
  std::error_code error;
  for (auto it = fs::directory_iterator(folder, error);
       !error && it != fs::directory_iterator(); it.increment(error))
    names.push_back(it->path().filename().string());
  return names;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// `json_text` with one field replaced (nullptr: removed).
template <typename T>
std::string with(const std::string& json_text, const char* field, T value) {
  nlohmann::json j = nlohmann::json::parse(json_text);
  if constexpr (std::is_same_v<T, std::nullptr_t>)
    j.erase(field);
  else
    j[field] = value;
  return j.dump();
}

// The command with `env` set; the caller's AUTOGEMM_TUNING_RECORD is cleared first, so a
// run under AUTOGEMM_TUNING_RECORD=0 (as the GPU scripts' benches use) tests the same thing.
autogemm::testing::CliRun run_autogemm(const std::string& env, const std::string& args) {
  return autogemm::testing::run_cli(args, "-u AUTOGEMM_TUNING_RECORD " + env);
}

fs::path write_suite(const fs::path& folder, const std::string& rows) {
  fs::create_directories(folder);
  const fs::path path = folder / "suite.csv";
  write_text(path, "m,n,k,tag\n" + rows);
  return path;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(TuningRecord, RoundTrip) {
  TempFolder folder("tuning_round_trip");
  const GpuInfo h100 = device_preset("h100-sxm");
  const GemmProblem p = problem(64, 2112, 7168);
  TuningRecord record(folder.path());
  EXPECT_FALSE(record.lookup(h100, p).has_value());   // nothing yet, and no folder either
  const GemmConfig winner = GemmConfig::parse("64x32x128 s8 c1 p g8 sk2");
  ASSERT_TRUE(record.store(h100, p, winner, 12.5, 8));
  const std::optional<TuningEntry> entry = record.lookup(h100, p);
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->key, runtime::tuning_key(h100, p));
  EXPECT_EQ(entry->config, winner.describe());
  EXPECT_EQ(GemmConfig::parse(entry->config), winner);
  EXPECT_DOUBLE_EQ(entry->time_us, 12.5);
  EXPECT_EQ(entry->candidates, 8);
  EXPECT_TRUE(std::regex_match(entry->date, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << entry->date;
  // One JSON file per entry, under a hash of its key, holding the key in full; no temporaries.
  EXPECT_TRUE(fs::is_regular_file(record.entry_path(entry->key)));
  EXPECT_EQ(files_in(folder.path()), std::vector<std::string>{
                                         record.entry_path(entry->key).filename().string()});
  // A second instance (another process) reads the same entry; a new winner replaces it.
  TuningRecord other(folder.path());
  ASSERT_TRUE(other.lookup(h100, p).has_value());
  ASSERT_TRUE(other.store(h100, p, GemmConfig::parse("64x16x128 s8 c1 p g8"), 11.0, 6));
  EXPECT_EQ(record.lookup(h100, p)->config, "64x16x128 s8 c1 p g8");
  EXPECT_EQ(files_in(folder.path()).size(), 1u);
  EXPECT_EQ(record.rejected_entries(), 0);
  // read = false (autogemm tune --retune): nothing is found, entries are still written.
  TuningRecord write_only(folder.path(), /*read=*/false);
  EXPECT_FALSE(write_only.lookup(h100, p).has_value());
  ASSERT_TRUE(write_only.store(h100, p, winner, 12.0, 8));
  EXPECT_EQ(record.lookup(h100, p)->config, winner.describe());
}

TEST(TuningRecord, KeyDistinguishesDeviceProblemVersionAndKernels) {
  const GpuInfo h100 = device_preset("h100-sxm");
  const GemmProblem p = problem(64, 2112, 7168);
  const std::string key = runtime::tuning_key(h100, p);
  EXPECT_EQ(key, runtime::tuning_key(h100, p, version(), runtime::kernel_fingerprint()));
  EXPECT_NE(key.find(h100.name), std::string::npos) << key;

  std::vector<std::string> keys{key};
  auto with_device = [&](auto change) {
    GpuInfo g = h100;
    change(g);
    keys.push_back(runtime::tuning_key(g, p));
  };
  with_device([](GpuInfo& g) { g.name = "NVIDIA H100 PCIe"; });
  with_device([](GpuInfo& g) { g.sm_count = 114; });
  with_device([](GpuInfo& g) { g.cc = {10, 0}; });
  auto with_problem = [&](auto change) {
    GemmProblem q = p;
    change(q);
    keys.push_back(runtime::tuning_key(h100, q));
  };
  with_problem([](GemmProblem& q) { q.m = 128; });
  with_problem([](GemmProblem& q) { q.n = 2048; });
  with_problem([](GemmProblem& q) { q.k = 7040; });
  with_problem([](GemmProblem& q) { q.a_type = q.b_type = DType::fp16; });
  with_problem([](GemmProblem& q) { q.d_type = DType::fp32; });
  with_problem([](GemmProblem& q) { q.layout = Layout::tt; });
  with_problem([](GemmProblem& q) { q.lda = 7168 + 64; });
  with_problem([](GemmProblem& q) { q.ldb = 7168 + 64; });
  with_problem([](GemmProblem& q) { q.ldc = 2112 + 8; });
  with_problem([](GemmProblem& q) { q.ldd = 2112 + 8; });
  with_problem([](GemmProblem& q) { q.reads_c = true; });
  with_problem([](GemmProblem& q) {
    q.a_type = q.b_type = DType::e4m3;
    q.scaling = Scaling::block_1x128_128x128;
  });
  with_problem([](GemmProblem& q) {
    q.a_type = q.b_type = DType::e4m3;
    q.scaling = Scaling::per_tensor;
  });
  keys.push_back(runtime::tuning_key(h100, p, "0.0.0-other", runtime::kernel_fingerprint()));
  keys.push_back(runtime::tuning_key(h100, p, version(), "sources 0123; other toolchain"));
  for (std::size_t i = 0; i < keys.size(); ++i)
    for (std::size_t j = i + 1; j < keys.size(); ++j)
      EXPECT_NE(keys[i], keys[j]) << i << " and " << j << ": " << keys[i];
  // A packed leading dimension and the same value spelled out are the same problem.
  GemmProblem spelled = p;
  spelled.lda = spelled.ldb = 7168;
  spelled.ldd = 2112;
  EXPECT_EQ(runtime::tuning_key(h100, spelled), key);

  // What the record finds follows the key: another device or problem finds nothing, nor does an
  // entry written by another library version.
  TempFolder folder("tuning_key");
  TuningRecord record(folder.path());
  ASSERT_TRUE(record.store(h100, p, GemmConfig::parse("64x32x128 s8 c1 p g8"), 10, 4));
  EXPECT_TRUE(record.lookup(h100, p).has_value());
  EXPECT_FALSE(record.lookup(device_preset("h200"), p).has_value());
  EXPECT_FALSE(record.lookup(h100, problem(64, 2112, 7040)).has_value());
  TuningEntry old_version{runtime::tuning_key(h100, problem(128, 2112, 7168), "0.0.0-other",
                                             runtime::kernel_fingerprint()),
                          "64x32x128 s8 c1 p g8", 10, 4, "2026-01-01T00:00:00Z"};
  ASSERT_TRUE(record.store_entry(old_version));
  EXPECT_FALSE(record.lookup(h100, problem(128, 2112, 7168)).has_value());
  EXPECT_EQ(record.rejected_entries(), 0);
}

// The library version is the same for every commit ("0.1.0"), so an entry also says which
// kernels it timed: the fingerprint of the embedded kernel sources (the hash the kernel cache
// keys hold) and the toolchain. An entry written under one fingerprint is not used under another,
// and stays on disk untouched (another build sharing the folder keeps its winners).
TEST(TuningRecord, EntryOfOtherKernelsIsNotUsedAndStaysOnDisk) {
  const std::string fingerprint = runtime::kernel_fingerprint();
  EXPECT_EQ(fingerprint, runtime::kernel_fingerprint());   // constant within a process
  EXPECT_NE(fingerprint.find(jit::embedded_sources_digest()), std::string::npos) << fingerprint;
  EXPECT_EQ(jit::embedded_sources_digest().size(), 32u);
  const GpuInfo h100 = device_preset("h100-sxm");
  const GemmProblem p = problem(64, 2112, 7168);
  EXPECT_NE(runtime::tuning_key(h100, p).find(fingerprint), std::string::npos);
  EXPECT_EQ(TuningRecord(fs::path("unused")).fingerprint(), fingerprint);

  TempFolder folder("tuning_fingerprint");
  TuningRecord older_build(folder.path(), true, "sources 00112233; older kernels");
  TuningRecord this_build(folder.path());
  ASSERT_TRUE(older_build.store(h100, p, GemmConfig::parse("64x32x128 s8 c1 p g8 sk2"), 12.5, 8));
  const fs::path older_entry = older_build.entry_path(older_build.lookup(h100, p)->key);
  const std::vector<std::string> before = files_in(folder.path());
  ASSERT_EQ(before.size(), 1u);
  std::string older_bytes;
  {
    std::ifstream in(older_entry, std::ios::binary);
    older_bytes.assign(std::istreambuf_iterator<char>(in), {});
  }

  // Not found under this build's fingerprint, and not counted as a corrupt entry either.
  EXPECT_FALSE(this_build.lookup(h100, p).has_value());
  EXPECT_EQ(this_build.rejected_entries(), 0);
  // This build's winner goes beside it; the older build's entry is neither read nor rewritten.
  ASSERT_TRUE(this_build.store(h100, p, GemmConfig::parse("64x16x128 s8 c1 p g8"), 11.0, 8));
  EXPECT_EQ(this_build.lookup(h100, p)->config, "64x16x128 s8 c1 p g8");
  EXPECT_EQ(files_in(folder.path()).size(), 2u);
  std::string older_bytes_after;
  {
    std::ifstream in(older_entry, std::ios::binary);
    older_bytes_after.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_EQ(older_bytes_after, older_bytes);
  EXPECT_EQ(older_build.lookup(h100, p)->config, "64x32x128 s8 c1 p g8 sk2");
}

// Writers race on one entry while a reader reads it: every read sees a whole entry (the old or
// a new one), never a part, and no temporary is left behind.
TEST(TuningRecord, ConcurrentWritersNeverShowAPartialEntry) {
  TempFolder folder("tuning_concurrent");
  const GpuInfo h100 = device_preset("h100-sxm");
  const GemmProblem p = problem(128, 7168, 2048);
  const std::array<std::string, 2> configs{"128x64x128 s6 c2 p g8", "64x128x64 s8 c1 p g8"};
  TuningRecord setup(folder.path());
  ASSERT_TRUE(setup.store(h100, p, GemmConfig::parse(configs[0]), 1, 2));
  std::atomic<bool> done{false};
  std::atomic<int> stored{0}, reads{0}, bad_reads{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t)
    writers.emplace_back([&, t] {
      TuningRecord record(folder.path());   // as another process would hold it
      for (int i = 0; i < 150; ++i)
        stored += record.store(h100, p, GemmConfig::parse(configs[std::size_t(t)]), 1 + i, 2);
    });
  std::thread reader([&] {
    TuningRecord record(folder.path());
    while (!done) {
      const std::optional<TuningEntry> e = record.lookup(h100, p);
      ++reads;
      if (!e || (e->config != configs[0] && e->config != configs[1])) ++bad_reads;
    }
    bad_reads += record.rejected_entries();
  });
  for (auto& w : writers) w.join();
  done = true;
  reader.join();
  EXPECT_EQ(stored, 300);
  EXPECT_GT(reads, 0);
  EXPECT_EQ(bad_reads, 0);
  EXPECT_EQ(files_in(folder.path()).size(), 1u);
}

// Another writer's temporary (a live one, or one a killed writer left) never blocks or breaks a
// write; the ones older than an hour are removed when a record is opened.
TEST(TuningRecord, OtherWritersTemporariesDoNotBreakIt) {
  TempFolder folder("tuning_temporaries");
  const GpuInfo h100 = device_preset("h100-sxm");
  const GemmProblem p = problem(256, 1024, 1024);
  fs::create_directories(folder.path());
  const std::string stem = TuningRecord(folder.path()).entry_path(runtime::tuning_key(h100, p))
                               .stem().string();
  const fs::path young = folder.path() / (stem + ".json.tmp-1-2-0000000000000003");
  const fs::path old = folder.path() / (stem + ".json.tmp-4-5-0000000000000006");
  write_text(young, "{\"format\": 1, \"key\": \"half writ");
  write_text(old, "{");
  fs::last_write_time(old, fs::file_time_type::clock::now() - std::chrono::hours(2));
  fs::create_directories(folder.path() / (stem + ".json.tmp-7-8-0000000000000009"));

  TuningRecord record(folder.path());
  EXPECT_FALSE(fs::exists(old));      // a dead writer's, removed
  EXPECT_TRUE(fs::exists(young));     // maybe a live writer's: kept
  EXPECT_FALSE(record.lookup(h100, p).has_value());   // temporaries are never read
  ASSERT_TRUE(record.store(h100, p, GemmConfig::parse("128x128x64 s4 c2 p g8"), 20, 8));
  ASSERT_TRUE(record.lookup(h100, p).has_value());
  EXPECT_EQ(record.lookup(h100, p)->config, "128x128x64 s4 c2 p g8");
  EXPECT_EQ(record.rejected_entries(), 0);
}

// Whatever an entry's file holds, lookup() returns a valid entry or nothing (and says why on
// stderr); a write replaces a broken entry.
TEST(TuningRecord, CorruptEntriesAreIgnored) {
  TempFolder folder("tuning_corrupt");
  const GpuInfo h100 = device_preset("h100-sxm");
  const GemmProblem p = problem(64, 7168, 2048);
  TuningRecord record(folder.path());
  ASSERT_TRUE(record.store(h100, p, GemmConfig::parse("64x32x128 s8 c1 p g8"), 9, 8));
  const fs::path path = record.entry_path(runtime::tuning_key(h100, p));
  std::string good;
  {
    std::ifstream in(path);
    good.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const std::string other_key =
      "{\"format\": 1, \"key\": \"" + runtime::tuning_key(h100, problem(64, 7168, 4096)) +
      "\", \"config\": \"64x32x128 s8 c1 p g8\", \"time_us\": 9, \"candidates\": 8, "
      "\"date\": \"2026-01-01T00:00:00Z\"}";
  const std::vector<std::string> broken = {
      "",                                                  // empty
      good.substr(0, good.size() / 2),                     // truncated
      std::string("\x00\xff\x13garbage", 10),              // not text
      "[1, 2, 3]",                                         // JSON, not an entry
      other_key,                                           // another problem's entry (moved)
      "{\"format\": 2}",                                   // a future format
      with(good, "time_us", "fast"),                       // wrong type
      with(good, "config", ""),                            // no configuration
      with(good, "candidates", 0),                         // nothing was timed
      with(good, "key", nullptr),                          // no key
  };
  int expected_rejections = 0;
  for (const std::string& bytes : broken) {
    write_text(path, bytes);
    EXPECT_FALSE(record.lookup(h100, p).has_value()) << bytes;
    EXPECT_EQ(record.rejected_entries(), ++expected_rejections) << bytes;
  }
  // A folder where the entry should be: ignored too, and a write to it fails without throwing.
  fs::remove(path);
  fs::create_directories(path);
  EXPECT_FALSE(record.lookup(h100, p).has_value());
  EXPECT_FALSE(record.store(h100, p, GemmConfig::parse("64x32x128 s8 c1 p g8"), 9, 8));
  fs::remove(path);
  // A broken entry is replaced by the next write.
  write_text(path, "{{{{");
  ASSERT_TRUE(record.store(h100, p, GemmConfig::parse("64x16x128 s8 c1 p g8"), 8, 8));
  ASSERT_TRUE(record.lookup(h100, p).has_value());
  EXPECT_EQ(record.lookup(h100, p)->config, "64x16x128 s8 c1 p g8");
}

// An entry becomes the spec plan::make_spec makes of its configuration, with the reason saying
// where it came from; one the rules of this build refuse, one that no longer parses and one
// naming the vendor path are ignored (the caller plans instead).
TEST(TuningRecord, EntryBecomesASpecUnlessTheRulesRefuseIt) {
  const GpuInfo h100 = device_preset("h100-sxm");
  const GemmProblem p = problem(136, 1000, 512);
  const Plan plan = plan_gemm(p, h100);
  const std::string config = plan.best().config.describe();
  TuningEntry entry{runtime::tuning_key(h100, p), config, 12.5, 8, "2026-11-24T10:31:05Z"};
  const std::optional<KernelSpec> spec = runtime::spec_from_entry(entry, p, h100, plan.path_reason);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->config, plan.best().config);
  EXPECT_EQ(spec->text, plan.spec.text);
  EXPECT_NE(spec->reason.find(plan.path_reason), std::string::npos) << spec->reason;
  EXPECT_NE(spec->reason.find("from the tuning record (8 candidates, 12.50 us)"), std::string::npos)
      << spec->reason;

  for (const char* refused : {"256x256x64 s6 c2 p g8",       // shared memory over the limit
                              "banana",                       // does not parse
                              "cuBLASLt"}) {                  // never an autotuning winner
    entry.config = refused;
    EXPECT_FALSE(runtime::spec_from_entry(entry, p, h100, plan.path_reason).has_value())
        << refused;
  }
}

TEST(TuningRecord, ProcessRecordCanBeReplacedAndTurnedOff) {
  const std::shared_ptr<TuningRecord> saved = runtime::process_tuning_record();
  TempFolder folder("tuning_process");
  runtime::set_process_tuning_record(std::make_shared<TuningRecord>(folder.path()));
  EXPECT_EQ(runtime::process_tuning_record()->folder(), folder.path());
  EXPECT_TRUE(runtime::tuning_record_status().on);
  runtime::set_process_tuning_record(nullptr);
  EXPECT_EQ(runtime::process_tuning_record(), nullptr);
  EXPECT_FALSE(runtime::tuning_record_status().on);
  EXPECT_NE(runtime::tuning_record_status().why_off, "");
  runtime::set_process_tuning_record(saved);
}

// AUTOGEMM_TUNING_RECORD=0, or no cache folder, leaves `autogemm tune` nothing to fill: exit 2
// naming the variable, before anything runs.
TEST(TuningRecordCli, TuneNeedsTheRecord) {
  TempFolder folder("tuning_cli_off");
  const fs::path suite = write_suite(folder.path(), "64,2112,7168,decode\n");
  autogemm::testing::CliRun run =
      run_autogemm("AUTOGEMM_TUNING_RECORD=0 AUTOGEMM_CACHE_DIR=" + folder.path().string(),
                   "tune --suite " + suite.string());
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("AUTOGEMM_TUNING_RECORD = 0: turns the tuning record off"),
            std::string::npos)
      << run.out;
  run = run_autogemm("AUTOGEMM_CACHE_DIR=", "tune --suite " + suite.string());
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("AUTOGEMM_CACHE_DIR = \"\""), std::string::npos) << run.out;
  run = run_autogemm("AUTOGEMM_CACHE_DIR=" + folder.path().string(),
                     "tune --suite " + suite.string() + " --candidates 1");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--candidates"), std::string::npos) << run.out;
}

// A preset is planned, not tuned (as `autogemm bench --device PRESET`), and nothing is written.
TEST(TuningRecordCli, TuneForAPresetShowsThePlan) {
  TempFolder folder("tuning_cli_preset");
  const fs::path suite = write_suite(folder.path() / "in", "64,2112,7168,decode\n");
  const fs::path cache = folder.path() / "cache";
  const autogemm::testing::CliRun run = run_autogemm("AUTOGEMM_CACHE_DIR=" + cache.string(),
                               "tune --suite " + suite.string() + " --device h200");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("showing the plan for h200 instead of measuring"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("nothing is tuned or written to the tuning record"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("decode"), std::string::npos) << run.out;
  EXPECT_FALSE(fs::exists(cache / "tuning"));
}

// Without a GPU, `autogemm tune` says so exactly as `autogemm bench` does, with its exit code.
TEST(TuningRecordCli, TuneWithoutGpuSaysSoLikeBench) {
  if (!profile_gpus().gpus.empty()) GTEST_SKIP() << "a GPU is present: tune would tune";
  TempFolder folder("tuning_cli_nogpu");
  const fs::path suite = write_suite(folder.path() / "in", "64,2112,7168,decode\n");
  const std::string env = "AUTOGEMM_CACHE_DIR=" + (folder.path() / "cache").string();
  const autogemm::testing::CliRun tune = run_autogemm(env, "tune --suite " + suite.string());
  const autogemm::testing::CliRun bench = run_autogemm(env, "bench --suite " + suite.string());
  EXPECT_EQ(tune.exit_code, bench.exit_code) << tune.out << bench.out;
  const std::string note = bench.out.substr(0, bench.out.find('\n'));
  EXPECT_EQ(note.rfind("no GPU: ", 0), 0u) << bench.out;
  EXPECT_EQ(tune.out.rfind(note, 0), 0u) << "tune:\n" << tune.out << "\nbench:\n" << bench.out;
  EXPECT_FALSE(fs::exists(folder.path() / "cache" / "tuning"));
}

// ---- GPU ------------------------------------------------------------------------------------

// Two processes: the first autotunes each row (and writes the record), the second finds every
// row in the record and runs its winner without timing candidates again.
TEST(TuningRecordGpu, SecondProcessUsesTheRecordWithoutTiming) {
  AUTOGEMM_REQUIRE_GPU();
  TempFolder folder("tuning_gpu_cli");
  const fs::path suite =
      write_suite(folder.path() / "in", "64,2112,2048,decode\n192,1536,1024,small\n");
  const std::string env = "CUDA_CACHE_DISABLE=1 AUTOGEMM_CACHE_DIR=" +
                          (folder.path() / "cache").string();
  const std::string args =
      "tune --suite " + suite.string() + " --candidates 3 --warmup 1 --iters 3";
  const autogemm::testing::CliRun first = run_autogemm(env, args);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  EXPECT_EQ(count(first.out, "tuned now, over"), 2u) << first.out;
  EXPECT_NE(first.out.find("2 of 2 rows in the tuning record"), std::string::npos) << first.out;
  const fs::path entries = folder.path() / "cache" / "tuning" / "v1";
  std::size_t json = 0;
  for (const std::string& name : files_in(entries)) json += name.ends_with(".json") ? 1 : 0;
  EXPECT_EQ(json, 2u);

  const autogemm::testing::CliRun second = run_autogemm(env, args);
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_EQ(count(second.out, "tuned now"), 0u) << second.out;
  EXPECT_EQ(count(second.out, "record ("), 2u) << second.out;
  // --retune times them again.
  const autogemm::testing::CliRun third = run_autogemm(env, args + " --retune");
  ASSERT_EQ(third.exit_code, 0) << third.out;
  EXPECT_EQ(count(third.out, "tuned now, over"), 2u) << third.out;
}

// In this process: an autotuned gemm() writes its winner; a problem with an entry (written here
// as another process would) runs that entry's configuration, correctly, with the reason saying
// so; an entry the rules refuse is ignored.
TEST(TuningRecordGpu, GemmWritesAndReadsTheRecord) {
  AUTOGEMM_REQUIRE_GPU();
  std::string why;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&why);
  const std::shared_ptr<TuningRecord> saved = runtime::process_tuning_record();
  TempFolder folder("tuning_gpu_gemm");
  auto record = std::make_shared<TuningRecord>(folder.path());
  runtime::set_process_tuning_record(record);
  // run_and_check pads D's rows (ldd = round_up(n + 16, 8)): the key's problem is that one.
  auto as_run = [](GemmProblem p) {
    p.ldd = autogemm::testing::round_up_to(p.n + 16, 8);
    return p;
  };

  // 1. Autotuned: the winner goes into the record.
  const GemmProblem tuned = problem(200, 1280, 768);
  const auto check = autogemm::testing::run_and_check(tuned, 1.0f, 0.0f, 71, std::nullopt, false,
                                                      /*autotune=*/3);
  AUTOGEMM_EXPECT_GEMM_OK(check, "autotuned");
  EXPECT_NE(check.reason.find("autotuned over"), std::string::npos) << check.reason;
  const std::optional<TuningEntry> entry = record->lookup(gpu, as_run(tuned));
  ASSERT_TRUE(entry.has_value());
  EXPECT_EQ(entry->config, check.config);
  EXPECT_GE(entry->candidates, 1);
  EXPECT_LE(entry->candidates, 3);
  EXPECT_GT(entry->time_us, 0.0);

  // 2. A recorded entry (not the planner's choice) is used, without autotuning asked for.
  const GemmProblem recorded = as_run(problem(328, 1792, 1024));
  const Plan plan = plan_gemm(recorded, gpu);
  std::optional<GemmConfig> other;
  for (const Candidate& c : plan.candidates)
    if (c.config.block_n != plan.best().config.block_n ||
        c.config.block_m != plan.best().config.block_m) {
      other = c.config;
      break;
    }
  ASSERT_TRUE(other.has_value());
  ASSERT_TRUE(record->store(gpu, recorded, *other, 42.0, 5));
  const auto from_record =
      autogemm::testing::run_and_check(problem(328, 1792, 1024), 1.0f, 0.0f, 72);
  AUTOGEMM_EXPECT_GEMM_OK(from_record, "from the record");
  EXPECT_EQ(from_record.config, other->describe());
  EXPECT_NE(from_record.reason.find("from the tuning record (5 candidates, 42.00 us)"),
            std::string::npos)
      << from_record.reason;

  // 3. An entry the rules refuse: planned as usual.
  const GemmProblem refused = as_run(problem(152, 1000, 640));
  ASSERT_TRUE(record->store(gpu, refused, GemmConfig::parse("256x256x64 s6 c2 p g8"), 1.0, 8));
  const auto planned = autogemm::testing::run_and_check(problem(152, 1000, 640), 1.0f, 0.0f, 73);
  AUTOGEMM_EXPECT_GEMM_OK(planned, "refused entry");
  EXPECT_EQ(planned.reason.find("tuning record"), std::string::npos) << planned.reason;
  EXPECT_EQ(planned.config, plan_gemm(refused, gpu).best().config.describe());

  runtime::set_process_tuning_record(saved);
}
