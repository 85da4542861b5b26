#include "hw/cost_calibration.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autogemm/errors.hpp"
#include "jit/embedded.hpp"

namespace autogemm::hw {

namespace {

bool names_device(const CalibrationFile& file, const GpuInfo& device) {
  return (!file.device.empty() && file.device == device.preset) ||
         (!file.name.empty() && file.name == device.name);
}

}  // namespace

CalibrationFile parse_calibration_file(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgument("cost calibration", source, fmt::format("not JSON: {}", e.what()));
  }
  if (!j.is_object() || !j.contains("calibration") || !j["calibration"].is_object())
    throw InvalidArgument("cost calibration", source,
                          "needs an object with a \"calibration\" object (autogemm fit-cost)");
  CalibrationFile f;
  f.device = j.value("device", std::string());
  f.name = j.value("name", std::string());
  if (f.device.empty() && f.name.empty())
    throw InvalidArgument("cost calibration", source,
                          "names no device: give \"device\" (a preset) or \"name\"");
  const auto rate = [&](const char* field, double& out) {
    const nlohmann::json& c = j["calibration"];
    if (!c.contains(field)) return;
    if (!c[field].is_number())
      throw InvalidArgument(fmt::format("{}: calibration.{}", source, field), c[field].dump(),
                            "must be a number");
    const double v = c[field].get<double>();
    if (!(v >= kMinCostRate && v <= kMaxCostRate))
      throw InvalidArgument(fmt::format("{}: calibration.{}", source, field), fmt::format("{}", v),
                            fmt::format("a rate multiplier is in [{}, {}]", kMinCostRate,
                                        kMaxCostRate));
    out = v;
  };
  rate("mma", f.calibration.mma);
  rate("l2", f.calibration.l2);
  rate("dram", f.calibration.dram);
  rate("fixed", f.calibration.fixed);
  f.calibration.source = source;
  return f;
}

CostCalibration calibration_for(const GpuInfo& device) {
  if (const char* path = std::getenv("AUTOGEMM_COST_CALIBRATION"); path && *path) {
    std::ifstream in(path);
    if (!in)
      throw InvalidArgument("AUTOGEMM_COST_CALIBRATION", path, "cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    const CalibrationFile file = parse_calibration_file(text.str(), path);
    if (names_device(file, device)) return file.calibration;
  }
  for (std::size_t i = 0; i < jit::kNumEmbeddedCalibrations; ++i) {
    const jit::EmbeddedFile& e = jit::kEmbeddedCalibrations[i];
    const CalibrationFile file =
        parse_calibration_file(e.text, std::string("data/cost-model/") + e.name);
    if (names_device(file, device)) return file.calibration;
  }
  return {};
}

}  // namespace autogemm::hw
