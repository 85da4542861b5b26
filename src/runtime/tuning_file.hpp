#pragma once
// Tuning files (include/autogemm/tuning.hpp): the tuning record's entries in one JSON file,
//   {"kind": "autogemm tuning file", "format": 1, "library_version": ..., "kernels": ...,
//    "entries": [entry, ...]}   (each entry as runtime/tuning_entry.hpp writes it)
// written by `autogemm tune --export`, read by load_tuning_file() and AUTOGEMM_TUNING_FILE.
// Entries keep their full key (device, problem, version, kernel fingerprint), so a file may mix
// devices; each is checked against this process's GPUs and build when it is loaded.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"
#include "autogemm/tuning.hpp"
#include "runtime/tuning_entry.hpp"

namespace autogemm::runtime {

inline constexpr int kTuningFileFormatVersion = 1;
inline constexpr std::string_view kTuningFileKind = "autogemm tuning file";

// The file's text for `entries`.
std::string tuning_file_text(const std::vector<TuningEntry>& entries);
// Writes it atomically (a temporary beside `path`, renamed over it). Throws
// InvalidArgument(argument, path, why) when it cannot be written.
void write_tuning_file(const std::filesystem::path& path, const std::vector<TuningEntry>& entries,
                       const std::string& argument);

// The entries of a tuning file's text. Throws InvalidArgument(argument, path, what is wrong:
// not JSON, another kind or format, entry N and its field).
std::vector<TuningEntry> parse_tuning_file(std::string_view text, const std::string& argument,
                                           const std::string& path);
std::vector<TuningEntry> read_tuning_file(const std::filesystem::path& path,
                                          const std::string& argument);

// Why `entry` cannot be used in this process, "" when it can: its device (GPU model, SM count,
// compute capability) is none of `devices`, or its build (library version, kernel fingerprint)
// is not `version` / `fingerprint`; the text names the field, what the entry has and what this
// process has.
std::string entry_mismatch(const TuningEntry& entry, const std::vector<GpuInfo>& devices,
                           std::string_view version, std::string_view fingerprint);

// Splits entries into those this process uses (returned) and the rest (each reason in
// load->ignored, logged at level 2 naming `path`).
std::vector<TuningEntry> usable_entries(const std::vector<TuningEntry>& entries,
                                        const std::vector<GpuInfo>& devices,
                                        std::string_view version, std::string_view fingerprint,
                                        const std::string& path, TuningFileLoad* load);

// The entry loaded from a tuning file (load_tuning_file, AUTOGEMM_TUNING_FILE) for the device
// and problem, nullopt when none. The first call reads AUTOGEMM_TUNING_FILE; a file it names that
// cannot be used throws InvalidArgument("AUTOGEMM_TUNING_FILE", path, why), on every call.
std::optional<TuningEntry> file_entry(const GpuInfo& device, const GemmProblem& problem);
// Adds entries (already checked) to the process's; an entry for the same key replaces the old.
void add_file_entries(const std::vector<TuningEntry>& entries);
// Forgets every loaded entry, and AUTOGEMM_TUNING_FILE's until it is read again (tests).
void clear_file_entries();

}  // namespace autogemm::runtime
