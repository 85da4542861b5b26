// Tuning files (runtime/tuning_file.hpp): export, parsing, the checks against this process's
// GPUs and build, and the process's loaded entries.
#include "runtime/tuning_file.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "autogemm/errors.hpp"
#include "autogemm/version.hpp"
#include "jit/atomic_file.hpp"
#include "jit/log.hpp"
#include "runtime/tuning_record.hpp"

namespace autogemm {
namespace runtime {

namespace {

constexpr std::string_view kTemporaryMarker = ".tmp-";

// tuning_key()'s sections: "device=..;sms=..;cc=..|<problem>|version=..|kernels=..".
struct KeyParts {
  std::string device, problem, version, kernels;
};

KeyParts split_key(const std::string& key) {
  KeyParts parts;
  const auto problem_at = key.find('|');
  const auto version_at = key.find("|version=", problem_at == std::string::npos ? 0 : problem_at);
  const auto kernels_at = key.find("|kernels=", version_at == std::string::npos ? 0 : version_at);
  if (problem_at == std::string::npos || version_at == std::string::npos ||
      kernels_at == std::string::npos)
    throw std::runtime_error(fmt::format("key \"{}\" is not device|problem|version|kernels", key));
  parts.device = key.substr(0, problem_at);
  parts.problem = key.substr(problem_at + 1, version_at - problem_at - 1);
  parts.version = key.substr(version_at + 9, kernels_at - version_at - 9);
  parts.kernels = key.substr(kernels_at + 9);
  return parts;
}

// The device section's fields: device=NAME;sms=N;cc=X.Y (the name may hold ';').
struct DeviceParts {
  std::string name, sms, cc;
};

DeviceParts split_device(const std::string& device) {
  DeviceParts d;
  const auto sms_at = device.rfind(";sms=");
  const auto cc_at = device.rfind(";cc=");
  if (device.rfind("device=", 0) != 0 || sms_at == std::string::npos ||
      cc_at == std::string::npos || cc_at < sms_at)
    throw std::runtime_error(fmt::format("device \"{}\" is not device=NAME;sms=N;cc=X.Y", device));
  d.name = device.substr(7, sms_at - 7);
  d.sms = device.substr(sms_at + 5, cc_at - sms_at - 5);
  d.cc = device.substr(cc_at + 4);
  return d;
}

DeviceParts device_parts(const GpuInfo& gpu) {
  return split_device(split_key(tuning_key(gpu, GemmProblem{}, "", "")).device);
}

// "m=64;n=2112;k=7168" of a problem section.
std::string problem_text(const std::string& problem) {
  return problem.substr(0, problem.find(";a="));
}

// Which device fields differ, "GPU model NVIDIA H100 (this GPU 0: NVIDIA H200)".
std::string device_difference(const DeviceParts& tuned, const GpuInfo& gpu) {
  const DeviceParts here = device_parts(gpu);
  std::string out;
  auto add = [&](const char* field, const std::string& theirs, const std::string& ours) {
    if (theirs == ours) return;
    out += fmt::format("{}{} {} (GPU {} has {})", out.empty() ? "" : ", ", field, theirs,
                       gpu.ordinal, ours);
  };
  add("GPU model", tuned.name, here.name);
  add("SM count", tuned.sms, here.sms);
  add("compute capability", tuned.cc, here.cc);
  return out;
}

struct FileEntries {
  // Recursive: the first lookup reads AUTOGEMM_TUNING_FILE and adds its entries holding it, so
  // no thread looks up before the file's entries are in.
  std::recursive_mutex mutex;
  bool environment_read = false;
  std::string environment_error;   // AUTOGEMM_TUNING_FILE could not be used: thrown every call
  std::string environment_path;
  std::map<std::string, TuningEntry> entries;   // by key
};

FileEntries& file_entries() {
  static FileEntries state;
  return state;
}

TuningFileLoad load_into_process(const std::string& path, const std::string& argument) {
  TuningFileLoad load;
  const std::vector<TuningEntry> entries = read_tuning_file(path, argument);
  load.entries = entries.size();
  const std::vector<TuningEntry> usable = usable_entries(
      entries, profile_gpus().gpus, version(), kernel_fingerprint(), path, &load);
  load.used = usable.size();
  add_file_entries(usable);
  log(3, "tuning file {}: {} of {} entries used", path, load.used, load.entries);
  return load;
}

}  // namespace

std::string tuning_file_text(const std::vector<TuningEntry>& entries) {
  nlohmann::json list = nlohmann::json::array();
  for (const TuningEntry& e : entries) list.push_back(entry_to_json(e));
  // The build's version and fingerprint at the top are for people reading the file; each
  // entry's key is what loading checks.
  const nlohmann::json j = {{"kind", kTuningFileKind},
                            {"format", kTuningFileFormatVersion},
                            {"library_version", version()},
                            {"kernels", kernel_fingerprint()},
                            {"entries", std::move(list)}};
  return j.dump(2) + "\n";
}

void write_tuning_file(const std::filesystem::path& path, const std::vector<TuningEntry>& entries,
                       const std::string& argument) {
  const std::string stem = path.filename().string();
  if (stem.empty() || std::filesystem::is_directory(path))
    throw InvalidArgument(argument, path.string(), "must name a file, not a folder");
  if (const std::string why = jit::write_file_atomically(path, tuning_file_text(entries), stem,
                                                         kTemporaryMarker);
      !why.empty())
    throw InvalidArgument(argument, path.string(), fmt::format("cannot be written: {}", why));
}

std::vector<TuningEntry> parse_tuning_file(std::string_view text, const std::string& argument,
                                           const std::string& path) {
  auto bad = [&](const std::string& why) { return InvalidArgument(argument, path, why); };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad(fmt::format("is not JSON ({})", e.what()));
  }
  if (!j.is_object() || j.value("kind", std::string()) != kTuningFileKind)
    throw bad(fmt::format("is not a tuning file: its \"kind\" must be \"{}\" (written by "
                          "`autogemm tune --export`)", kTuningFileKind));
  if (!j.contains("format") || !j["format"].is_number_integer() ||
      j["format"].get<int>() != kTuningFileFormatVersion)
    throw bad(fmt::format("has format {}; this build reads format {}",
                          j.contains("format") ? j["format"].dump() : "(none)",
                          kTuningFileFormatVersion));
  if (!j.contains("entries") || !j["entries"].is_array())
    throw bad("has no \"entries\" list");
  std::vector<TuningEntry> entries;
  for (std::size_t i = 0; i < j["entries"].size(); ++i) {
    try {
      TuningEntry e = entry_from_json(j["entries"][i]);
      split_device(split_key(e.key).device);   // a key loading can check
      entries.push_back(std::move(e));
    } catch (const std::exception& e) {   // nlohmann::json::exception and the entry's checks
      throw bad(fmt::format("entry {} (of {}): {}", i, j["entries"].size(), e.what()));
    }
  }
  return entries;
}

std::vector<TuningEntry> read_tuning_file(const std::filesystem::path& path,
                                          const std::string& argument) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidArgument(argument, path.string(), "cannot be opened for reading");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw InvalidArgument(argument, path.string(), "could not be read");
  return parse_tuning_file(bytes.str(), argument, path.string());
}

std::string entry_mismatch(const TuningEntry& entry, const std::vector<GpuInfo>& devices,
                           std::string_view version, std::string_view fingerprint) {
  const KeyParts parts = split_key(entry.key);
  if (parts.version != version)
    return fmt::format("library version {} (this build is {})", parts.version, version);
  if (parts.kernels != fingerprint)
    return fmt::format("kernel fingerprint \"{}\" (this build has \"{}\")", parts.kernels,
                       fingerprint);
  if (devices.empty()) return "no GPU in this process";
  const DeviceParts tuned = split_device(parts.device);
  std::string differences;
  for (const GpuInfo& gpu : devices) {
    const std::string d = device_difference(tuned, gpu);
    if (d.empty()) return {};
    differences += (differences.empty() ? "" : "; ") + d;
  }
  return differences;
}

std::vector<TuningEntry> usable_entries(const std::vector<TuningEntry>& entries,
                                        const std::vector<GpuInfo>& devices,
                                        std::string_view version, std::string_view fingerprint,
                                        const std::string& path, TuningFileLoad* load) {
  std::vector<TuningEntry> usable;
  for (const TuningEntry& e : entries) {
    const std::string why = entry_mismatch(e, devices, version, fingerprint);
    if (why.empty()) {
      usable.push_back(e);
      continue;
    }
    const std::string line = fmt::format("{} ({}): made for {}", problem_text(split_key(e.key).problem),
                                         e.config, why);
    log(2, "tuning file {}: ignoring the entry for {}", path, line);
    if (load) load->ignored.push_back(line);
  }
  return usable;
}

std::optional<TuningEntry> file_entry(const GpuInfo& device, const GemmProblem& problem) {
  FileEntries& state = file_entries();
  std::lock_guard<std::recursive_mutex> lock(state.mutex);
  if (!state.environment_read) {
    state.environment_read = true;
    const char* path = std::getenv("AUTOGEMM_TUNING_FILE");
    if (path && *path) {
      state.environment_path = path;
      try {
        load_into_process(path, "AUTOGEMM_TUNING_FILE");
      } catch (const InvalidArgument& e) {
        state.environment_error = e.rule();
        throw;
      }
    }
  }
  if (!state.environment_error.empty())
    throw InvalidArgument("AUTOGEMM_TUNING_FILE", state.environment_path,
                          state.environment_error);
  if (state.entries.empty()) return std::nullopt;
  const auto it = state.entries.find(tuning_key(device, problem));
  if (it == state.entries.end()) return std::nullopt;
  return it->second;
}

void add_file_entries(const std::vector<TuningEntry>& entries) {
  FileEntries& state = file_entries();
  std::lock_guard<std::recursive_mutex> lock(state.mutex);
  for (const TuningEntry& e : entries) state.entries[e.key] = e;
}

void clear_file_entries() {
  FileEntries& state = file_entries();
  std::lock_guard<std::recursive_mutex> lock(state.mutex);
  state.entries.clear();
  state.environment_read = false;
  state.environment_error.clear();
  state.environment_path.clear();
}

}  // namespace runtime

TuningFileLoad load_tuning_file(const std::string& path) {
  return runtime::load_into_process(path, "path");
}

}  // namespace autogemm
