// The tuning record (runtime/tuning_record.hpp): one JSON file per autotuned problem.
#include "runtime/tuning_record.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "autogemm/errors.hpp"
#include "autogemm/version.hpp"
#include "jit/atomic_file.hpp"
#include "jit/disk_cache.hpp"
#include "jit/jit.hpp"
#include "jit/log.hpp"
#include "jit/nvrtc_options.hpp"
#include "plan/kernel_spec.hpp"

namespace autogemm::runtime {

namespace {

constexpr std::string_view kTemporaryMarker = ".json.tmp-";
// A temporary this old belongs to a writer that died (an entry is a few hundred bytes).
constexpr std::chrono::hours kTemporaryAge{1};

std::string now_utc() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

struct ProcessRecord {
  std::mutex mutex;
  bool initialised = false;
  std::shared_ptr<TuningRecord> record;
  TuningRecordStatus status;
};

ProcessRecord& process_record() {
  static ProcessRecord state;
  return state;
}

// From the environment, once (mutex held).
void initialise(ProcessRecord& state) {
  if (state.initialised) return;
  state.initialised = true;
  TuningRecordStatus& s = state.status;
  const char* switch_value = std::getenv("AUTOGEMM_TUNING_RECORD");
  const std::string_view value = switch_value ? switch_value : "";
  if (value == "0") {
    s.variable = "AUTOGEMM_TUNING_RECORD";
    s.value = "0";
    s.why_off = "turns the tuning record off";
    return;
  }
  if (!value.empty() && value != "1")
    log(2, "AUTOGEMM_TUNING_RECORD = {}: expected 0 (off) or 1 (on); the record stays on",
        value);
  const jit::DiskCacheRoot root = jit::disk_cache_root_from_env();
  if (!root.root) {
    s.variable = root.variable;
    s.value = root.value;
    s.why_off = fmt::format("no cache folder ({}), where the tuning record lives",
                            root.why_disabled);
    return;
  }
  const std::filesystem::path folder =
      *root.root / "tuning" / ("v" + std::to_string(kTuningRecordFormatVersion));
  state.record = std::make_shared<TuningRecord>(folder);
  s.on = true;
  s.folder = folder.string();
  s.variable = root.variable;
  s.value = root.value;
}

}  // namespace

std::string kernel_fingerprint() {
  static const std::string fingerprint = fmt::format(
      "sources {}; {}", jit::embedded_sources_digest(), jit::toolchain_identity());
  return fingerprint;
}

std::string tuning_key(const GpuInfo& device, const GemmProblem& p,
                       std::string_view library_version, std::string_view kernel_fingerprint) {
  return fmt::format(
      "device={};sms={};cc={}.{}|m={};n={};k={};a={};b={};d={};acc={};layout={};lda={};ldb={};"
      "ldc={};ldd={};scaling={};reads_c={}|version={}|kernels={}",
      device.name, device.sm_count, device.cc.major, device.cc.minor, p.m, p.n, p.k,
      to_string(p.a_type), to_string(p.b_type), to_string(p.d_type), to_string(p.accumulator),
      to_string(p.layout), p.lda_or_packed(), p.ldb_or_packed(), p.ldc_or_packed(),
      p.ldd_or_packed(), to_string(p.scaling), p.reads_c ? 1 : 0, library_version,
      kernel_fingerprint) +
         // A fused epilogue is another problem; plain problems keep their keys.
         (p.epilogue.empty() ? std::string() : "|epilogue=" + p.epilogue.token()) +
         (p.weight_format ? "|weights=" + std::string(to_string(*p.weight_format)) : "") +
         (p.signal_bands > 0 ? fmt::format("|signal_bands={}", p.signal_bands) : std::string());
}

std::string tuning_key(const GpuInfo& device, const GemmProblem& problem) {
  return tuning_key(device, problem, version(), kernel_fingerprint());
}

TuningRecord::TuningRecord(std::filesystem::path folder, bool read, std::string fingerprint)
    : folder_(std::move(folder)), read_(read), fingerprint_(std::move(fingerprint)) {
  jit::remove_stale_temporaries(folder_, kTemporaryMarker, kTemporaryAge);
}

std::filesystem::path TuningRecord::entry_path(const std::string& key) const {
  return folder_ / fmt::format("{:016x}.json", XXH3_64bits(key.data(), key.size()));
}

void TuningRecord::reject(const std::filesystem::path& path, const std::string& why) const {
  ++rejected_;
  log(2, "tuning record: ignoring {}: {}", path.string(), why);
}

std::optional<TuningEntry> TuningRecord::lookup(const GpuInfo& device,
                                                const GemmProblem& problem) const {
  return lookup_key(tuning_key(device, problem, version(), fingerprint_));
}

std::optional<TuningEntry> TuningRecord::lookup_key(const std::string& key) const {
  if (!read_) return std::nullopt;
  const std::filesystem::path path = entry_path(key);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) reject(path, fmt::format("cannot be read: {}", std::strerror(errno)));
    return std::nullopt;
  }
  std::string bytes;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      reject(path, fmt::format("cannot be read: {}", std::strerror(error)));
      return std::nullopt;
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  TuningEntry entry;
  try {
    const nlohmann::json j = nlohmann::json::parse(bytes);
    if (j.at("format").get<int>() != kTuningRecordFormatVersion)
      throw std::runtime_error(fmt::format("format {}, expected {}", j.at("format").dump(),
                                           kTuningRecordFormatVersion));
    entry = entry_from_json(j);
  } catch (const std::exception& e) {   // nlohmann::json::exception and the checks
    reject(path, fmt::format("not a tuning record entry ({})", e.what()));
    return std::nullopt;
  }
  if (entry.key != key) {
    reject(path, fmt::format("it holds the entry for \"{}\", not \"{}\"", entry.key, key));
    return std::nullopt;
  }
  return entry;
}

bool TuningRecord::store(const GpuInfo& device, const GemmProblem& problem,
                         const GemmConfig& winner, double time_us, int candidates) {
  TuningEntry entry;
  entry.config = winner.describe();
  entry.time_us = time_us;
  entry.candidates = candidates;
  return store(device, problem, std::move(entry));
}

bool TuningRecord::store(const GpuInfo& device, const GemmProblem& problem, TuningEntry entry) {
  entry.key = tuning_key(device, problem, version(), fingerprint_);
  entry.date = now_utc();
  return store_entry(entry);
}

bool TuningRecord::store_entry(const TuningEntry& entry) {
  const std::filesystem::path final_path = entry_path(entry.key);
  auto fail = [&](const std::string& why) {
    log(2, "tuning record: {}; the result is kept in this process only", why);
    return false;
  };
  std::error_code error;
  std::filesystem::create_directories(folder_, error);
  if (error) return fail(fmt::format("cannot create {}: {}", folder_.string(), error.message()));
  nlohmann::json j = entry_to_json(entry);
  j["format"] = kTuningRecordFormatVersion;
  const std::string bytes = j.dump(2) + "\n";
  if (auto why = jit::write_file_atomically(final_path, bytes, final_path.stem().string(),
                                            kTemporaryMarker);
      !why.empty())
    return fail(why);
  log(4, "tuning record: wrote {} ({}: {})", final_path.string(), entry.key, entry.config);
  return true;
}

std::string TuningRecord::writable_problem() const {
  std::error_code error;
  std::filesystem::create_directories(folder_, error);
  if (error) return fmt::format("cannot create {}: {}", folder_.string(), error.message());
  if (!std::filesystem::is_directory(folder_, error))
    return fmt::format("{} is not a folder", folder_.string());
  if (::access(folder_.c_str(), W_OK | X_OK) != 0)
    return fmt::format("{} is not writable: {}", folder_.string(), std::strerror(errno));
  return {};
}

std::shared_ptr<TuningRecord> process_tuning_record() {
  ProcessRecord& state = process_record();
  std::lock_guard<std::mutex> lock(state.mutex);
  initialise(state);
  return state.record;
}

TuningRecordStatus tuning_record_status() {
  ProcessRecord& state = process_record();
  std::lock_guard<std::mutex> lock(state.mutex);
  initialise(state);
  return state.status;
}

void set_process_tuning_record(std::shared_ptr<TuningRecord> record) {
  ProcessRecord& state = process_record();
  std::lock_guard<std::mutex> lock(state.mutex);
  state.initialised = true;
  state.record = std::move(record);
  TuningRecordStatus& s = state.status;
  s = TuningRecordStatus{};
  s.on = state.record != nullptr;
  if (s.on) s.folder = state.record->folder().string();
  else s.why_off = "turned off in this process";
}

std::optional<KernelSpec> spec_from_entry(const TuningEntry& entry, const GemmProblem& problem,
                                          const GpuInfo& device, const std::string& path_reason,
                                          const std::string& origin) {
  GemmConfig config;
  try {
    config = GemmConfig::parse(entry.config);
  } catch (const InvalidArgument& e) {
    log(2, "{}: entry for {}x{}x{} holds \"{}\", which no longer parses ({}); "
        "planning instead", origin, problem.m, problem.n, problem.k, entry.config, e.what());
    return std::nullopt;
  }
  if ((config.instruction == Instruction::vendor) != entry.vendor()) {
    log(2, "{}: entry for {}x{}x{} holds \"{}\" {} a cuBLASLt algorithm; planning "
        "instead", origin, problem.m, problem.n, problem.k, entry.config,
        entry.vendor() ? "with" : "without");
    return std::nullopt;
  }
  try {
    KernelSpec spec = plan::make_spec(
        problem, config, device,
        fmt::format("{}; from the {} ({} candidates, {:.2f} us): autotuned over {} "
                    "candidates on {}{}", path_reason, origin, entry.candidates, entry.time_us,
                    entry.candidates, entry.date,
                    entry.vendor() ? fmt::format("; cuBLASLt {}", describe(*entry.vendor_algo))
                                   : std::string()));
    spec.vendor_algo = entry.vendor_algo;
    return spec;
  } catch (const InvalidArgument& e) {
    log(2, "{}: entry for {}x{}x{} holds \"{}\", which the rules of this build refuse "
        "({}); planning instead", origin, problem.m, problem.n, problem.k, entry.config, e.rule());
    return std::nullopt;
  }
}

}  // namespace autogemm::runtime
