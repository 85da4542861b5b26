#pragma once
// One autotuned winner and its JSON form, shared by the tuning record's files
// (runtime/tuning_record.hpp) and the exported tuning file (runtime/tuning_file.hpp), so both
// read and write an entry the same way.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "autogemm/kernel_spec.hpp"

namespace autogemm::runtime {

struct TuningEntry {
  std::string key;          // tuning_key() of the device, problem and build it was tuned for
  std::string config;       // the winner, GemmConfig::describe() ("cuBLASLt" for the vendor's)
  double time_us = 0;       // the winner's time per call when it was tuned
  int candidates = 0;       // how many of our configurations were timed
  std::string date;         // when, UTC, "2026-11-24T10:31:05Z"
  // The cuBLASLt algorithm that won (config "cuBLASLt"); none when one of ours did.
  std::optional<VendorAlgo> vendor_algo;
  // How many of cuBLASLt's algorithms were timed beside ours; -1 in an entry written before
  // cuBLASLt was a candidate (autotuning asked for again tunes it again: it may lose to the vendor).
  int vendor_algorithms = -1;
  bool graph_timing = false; // timed as CUDA graph replays (GemmOptions::autotune_graph)
  bool vendor() const { return vendor_algo.has_value(); }
};

// The entry's fields as JSON (without "format", which each file kind adds).
nlohmann::json entry_to_json(const TuningEntry& entry);
// The entry from JSON; throws std::runtime_error (or nlohmann::json::exception) naming the field
// that is missing or wrong, including an entry that is no tuned result (no config, no candidate,
// a time <= 0, "cuBLASLt" without its algorithm).
TuningEntry entry_from_json(const nlohmann::json& j);

}  // namespace autogemm::runtime
