#pragma once
// JSON forms of the profile, shared by `autogemm profile --json` and `plan --json`.
#include <nlohmann/json.hpp>

#include "autogemm/device.hpp"

namespace autogemm::hw {

nlohmann::json to_json(const GpuInfo& g);
nlohmann::json to_json(const CpuInfo& c);
nlohmann::json to_json(const ArchCapabilities& c);

}  // namespace autogemm::hw
