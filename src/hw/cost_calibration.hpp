#pragma once
// Where a device's cost-model calibration (autogemm/device.hpp CostCalibration) comes from, and
// its file format. `autogemm fit-cost` writes the files; the library reads, in order:
//   1. the file named by $AUTOGEMM_COST_CALIBRATION (a user's own fit of a new GPU), for every
//      device, when it names the device's preset or product name;
//   2. data/cost-model/<preset>.json, embedded at build time, for the device's preset (a
//      measured GPU: the preset of its product name);
//   3. none: every rate 1.0, the model as written.
#include <string>

#include "autogemm/device.hpp"

namespace autogemm::hw {

// A rate outside this range is a fit gone wrong, not a GPU (the model's terms are within 2x of
// every device it was written on): files are refused and fits stay inside it.
inline constexpr double kMinCostRate = 0.25, kMaxCostRate = 4.0;

// One calibration file: {"device": "h200", "name": "NVIDIA H200", "calibration": {"mma": ..,
// "l2": .., "dram": .., "fixed": ..}, ...} (other fields, such as the fit's command and errors,
// are kept for people). Throws InvalidArgument naming `source` and the field.
struct CalibrationFile {
  std::string device;   // preset key
  std::string name;     // product name, as profiling reports it
  CostCalibration calibration;
};
CalibrationFile parse_calibration_file(const std::string& text, const std::string& source);

// The calibration for `device` (its preset and name set), by the order above; source says
// which file, or is empty.
CostCalibration calibration_for(const GpuInfo& device);

}  // namespace autogemm::hw
