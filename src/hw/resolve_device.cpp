// resolve_device: "0", "1", ... is a GPU of this machine; anything else names a preset.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"

namespace autogemm {
namespace {

bool is_ordinal(const std::string& spec) {
  return !spec.empty() &&
         std::all_of(spec.begin(), spec.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

GpuInfo resolve_device(const std::string& device_spec) {
  if (!is_ordinal(device_spec)) return device_preset(device_spec);
  size_t ordinal = 0;
  const auto [end, error] =
      std::from_chars(device_spec.data(), device_spec.data() + device_spec.size(), ordinal);
  GpuProfile profile = profile_gpus();
  if (profile.gpus.empty()) throw NoDevice(profile.unavailable_reason);
  if (error != std::errc() || ordinal >= profile.gpus.size())
    throw InvalidArgument("device", device_spec,
                          fmt::format("this machine has {} CUDA device(s), ordinals 0 to {}; "
                                      "or name a preset ({})",
                                      profile.gpus.size(), profile.gpus.size() - 1,
                                      fmt::join(device_preset_names(), ", ")));
  return std::move(profile.gpus[ordinal]);
}

}  // namespace autogemm
