#pragma once
// The tuning record: autotuning's winners kept on disk, so a problem is timed once per device
// and build of the kernels instead of once per process (issue 21).
//
// Where: <cache root>/tuning/v<kTuningRecordFormatVersion>/, beside the kernel disk cache
// (jit/disk_cache.hpp: $AUTOGEMM_CACHE_DIR, else $XDG_CACHE_HOME/autogemm, else
// ~/.cache/autogemm). AUTOGEMM_TUNING_RECORD=0 turns it off (neither read nor written), and so
// does turning the disk cache off (docs/env-vars.md).
//
// One JSON file per entry, named by a hash of its key: the device (name, SM count, compute
// capability), the problem (M, N, K, types, layout, leading dimensions, scaling, whether C is
// read), the library version and the kernel fingerprint (kernel_fingerprint(): the library
// version stays "0.1.0" across commits, while what a configuration means and how fast it runs
// changes with the kernel sources and the compiler). The file holds the key in full (a file under
// the wrong name, or a hash collision, is not used), the winning configuration (GemmConfig::describe(), or "cuBLASLt" with
// the attributes of its algorithm: runtime/tuning_entry.hpp), its
// measured time, how many candidates were timed, and the date. A file per entry means two
// processes tuning different problems never rewrite each other's entries; writers write a
// uniquely named temporary in the same folder and rename() it over the entry, so a reader sees
// the old entry or the new one, never part of one. An entry that cannot be read or parsed is
// ignored with a warning (level 2): the record is an optimisation, never a reason to fail.
// Entries of another fingerprint (an older or newer build, another CUDA toolkit) live under other
// names in the same folder: they are never read, rewritten or removed by this build, so builds
// that share a cache folder keep their own winners.
#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/problem.hpp"
#include "runtime/tuning_entry.hpp"

namespace autogemm::runtime {

// Bump when the entry's JSON changes incompatibly; each version lives in its own folder.
inline constexpr int kTuningRecordFormatVersion = 1;

// What decides what a configuration means and how fast it runs, beyond its text: the hash of
// every embedded kernel source (jit::embedded_sources_digest(), the one the kernel cache's keys
// hold) and the compiler (jit's toolchain identity: NVRTC version and library, CUDA_VERSION).
// Any change to a kernel source or the toolchain gives another fingerprint. Constant within a
// process; needs no GPU.
std::string kernel_fingerprint();

// The text an entry is keyed by: device, problem, library version and kernel fingerprint, every
// field spelled out.
std::string tuning_key(const GpuInfo& device, const GemmProblem& problem,
                       std::string_view library_version, std::string_view kernel_fingerprint);
// The same with this build's version (autogemm::version()) and kernel_fingerprint().
std::string tuning_key(const GpuInfo& device, const GemmProblem& problem);

class TuningRecord {
 public:
  // Entries live directly in `folder` (created on the first write). `read` false: lookup()
  // finds nothing, store() still writes (`autogemm tune --retune`). lookup() and store() key
  // entries with `fingerprint` (this build's by default; tests pass others).
  explicit TuningRecord(std::filesystem::path folder, bool read = true,
                        std::string fingerprint = runtime::kernel_fingerprint());

  const std::filesystem::path& folder() const { return folder_; }
  const std::string& fingerprint() const { return fingerprint_; }
  std::filesystem::path entry_path(const std::string& key) const;

  // The entry for the device and problem under this record's fingerprint, or nullopt when there
  // is none (an entry of another fingerprint is none: it has another name) or it is unreadable,
  // corrupt or keyed differently (each of those logged at level 2 and counted).
  std::optional<TuningEntry> lookup(const GpuInfo& device, const GemmProblem& problem) const;
  // The entry stored under `key` (lookup() computes the key), same rules.
  std::optional<TuningEntry> lookup_key(const std::string& key) const;

  // Writes (or replaces) the entry for the device and problem atomically; date = now. Returns
  // false when it could not be written (logged at level 2; nothing else changes).
  bool store(const GpuInfo& device, const GemmProblem& problem, const GemmConfig& winner,
             double time_us, int candidates);
  // The same for an entry whose fields are filled but for its key and date (a cuBLASLt winner,
  // with its algorithm).
  bool store(const GpuInfo& device, const GemmProblem& problem, TuningEntry entry);
  bool store_entry(const TuningEntry& entry);

  // Empty when entries can be written here (the folder exists or was created, and is
  // writable); else why not.
  std::string writable_problem() const;

  // How many entries lookup() ignored as unreadable or corrupt in this instance.
  int rejected_entries() const { return rejected_.load(); }

 private:
  void reject(const std::filesystem::path& path, const std::string& why) const;

  std::filesystem::path folder_;
  bool read_ = true;
  std::string fingerprint_;
  mutable std::atomic<int> rejected_{0};
};

// The record `autogemm::gemm()` reads and writes, from the environment on first use; nullptr
// when it is off. Thread-safe.
std::shared_ptr<TuningRecord> process_tuning_record();
// Why process_tuning_record() is null ("" while it is on), and the variable that decided it
// with its value, for a command that needs the record (`autogemm tune`).
struct TuningRecordStatus {
  bool on = false;
  std::string folder;      // the entry folder when on
  std::string variable;    // AUTOGEMM_TUNING_RECORD, AUTOGEMM_CACHE_DIR, ... when off
  std::string value;
  std::string why_off;
};
TuningRecordStatus tuning_record_status();
// Replaces the process's record (tests; `autogemm tune --retune` writes without reading);
// nullptr turns it off for the rest of the process.
void set_process_tuning_record(std::shared_ptr<TuningRecord> record);

// The spec an entry stands for: its configuration made into a spec by plan::make_spec with
// the rules of this build; a cuBLASLt winner the vendor spec with its algorithm (whether this
// cuBLASLt still has that algorithm for the call is checked where the call's pointers are known:
// gemm.cpp). nullopt, with a log line (level 2), when the text no longer parses, names the
// vendor path without an algorithm, or the rules refuse it (they changed since it was tuned):
// the caller plans as if there were no entry. `path_reason` is the planner's reason for our kernel path;
// the spec's reason adds "from the tuning record (N candidates, X us)".
// `origin` names where the entry came from in the reason and log lines ("tuning record",
// "tuning file").
std::optional<KernelSpec> spec_from_entry(const TuningEntry& entry, const GemmProblem& problem,
                                          const GpuInfo& device, const std::string& path_reason,
                                          const std::string& origin = "tuning record");

}  // namespace autogemm::runtime
