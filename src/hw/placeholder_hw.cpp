// TEMPORARY: lets the tree link while src/hw is written. Delete each function as it is implemented.
#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "hw/device_json.hpp"
namespace autogemm {
std::optional<ArchCapabilities> arch_capabilities(ComputeCapability) { throw Error("not yet"); }
double GpuInfo::peak_bf16_tflops() const { throw Error("not yet"); }
double GpuInfo::peak_fp8_tflops() const { throw Error("not yet"); }
GpuProfile profile_gpus() { throw Error("not yet"); }
std::vector<std::string> device_preset_names() { throw Error("not yet"); }
GpuInfo device_preset(const std::string&) { throw Error("not yet"); }
GpuInfo resolve_device(const std::string&) { throw Error("not yet"); }
CpuInfo profile_cpu() { throw Error("not yet"); }
namespace hw {
nlohmann::json to_json(const GpuInfo&) { throw Error("not yet"); }
nlohmann::json to_json(const CpuInfo&) { throw Error("not yet"); }
nlohmann::json to_json(const ArchCapabilities&) { throw Error("not yet"); }
}  // namespace hw
}  // namespace autogemm
