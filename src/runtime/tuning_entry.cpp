// An autotuned winner as JSON (runtime/tuning_entry.hpp).
#include "runtime/tuning_entry.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace autogemm::runtime {

namespace {

// The algorithm's attributes by their JSON names, in one table so writing and reading agree.
constexpr std::pair<const char*, int VendorAlgo::*> kAlgoFields[] = {
    {"algo_id", &VendorAlgo::algo_id},
    {"tile_id", &VendorAlgo::tile_id},
    {"stages_id", &VendorAlgo::stages_id},
    {"splitk_num", &VendorAlgo::splitk_num},
    {"reduction_scheme", &VendorAlgo::reduction_scheme},
    {"cta_swizzling", &VendorAlgo::cta_swizzling},
    {"custom_option", &VendorAlgo::custom_option},
    {"inner_shape_id", &VendorAlgo::inner_shape_id},
    {"cluster_shape_id", &VendorAlgo::cluster_shape_id},
};

}  // namespace

nlohmann::json entry_to_json(const TuningEntry& e) {
  nlohmann::json j = {{"key", e.key},           {"config", e.config},
                      {"time_us", e.time_us},   {"candidates", e.candidates},
                      {"date", e.date},         {"vendor_algorithms", e.vendor_algorithms},
                      {"graph_timing", e.graph_timing}};
  if (e.vendor_algo) {
    nlohmann::json algo = nlohmann::json::object();
    for (const auto& [name, field] : kAlgoFields) algo[name] = (*e.vendor_algo).*field;
    j["vendor_algo"] = std::move(algo);
  }
  return j;
}

TuningEntry entry_from_json(const nlohmann::json& j) {
  TuningEntry e;
  e.key = j.at("key").get<std::string>();
  e.config = j.at("config").get<std::string>();
  e.time_us = j.at("time_us").get<double>();
  e.candidates = j.at("candidates").get<int>();
  e.date = j.at("date").get<std::string>();
  // Absent in entries written before cuBLASLt was a candidate (format 1 still).
  e.vendor_algorithms = j.value("vendor_algorithms", -1);
  e.graph_timing = j.value("graph_timing", false);
  if (const auto it = j.find("vendor_algo"); it != j.end()) {
    VendorAlgo algo;
    for (const auto& [name, field] : kAlgoFields) algo.*field = it->at(name).get<int>();
    e.vendor_algo = algo;
  }
  if (e.config.empty() || e.candidates < 1 || !(e.time_us > 0))
    throw std::runtime_error(fmt::format("config \"{}\", {} candidates, {} us: not a tuned result",
                                         e.config, e.candidates, e.time_us));
  if ((e.config == "cuBLASLt") != e.vendor_algo.has_value())
    throw std::runtime_error(fmt::format(
        "config \"{}\" {} vendor_algo: the cuBLASLt winner comes with its algorithm, ours without",
        e.config, e.vendor_algo ? "with" : "without"));
  return e;
}

}  // namespace autogemm::runtime
