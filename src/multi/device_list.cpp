// Checks of a list of CUDA ordinals (device_list.hpp).
#include "multi/device_list.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "autogemm/errors.hpp"
#include "cuda/cuda_check.hpp"

namespace autogemm::multi {

std::string device_list_text(const std::vector<int>& devices) {
  return fmt::format("{}", fmt::join(devices, ","));
}

void check_device_list_shape(const std::string& argument, const std::vector<int>& devices) {
  if (devices.empty())
    throw InvalidArgument(argument, "empty", "give at least one CUDA device ordinal");
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (std::count(devices.begin(), devices.end(), devices[i]) > 1)
      throw InvalidArgument(argument, device_list_text(devices),
                            fmt::format("device {} is listed twice: each GPU is one rank with "
                                        "its own stream, so each ordinal appears once",
                                        devices[i]));
}

void check_device_list(const std::string& argument, const std::vector<int>& devices) {
  check_device_list_shape(argument, devices);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // not sticky: later calls must not report it again
    throw NoDevice(cuda_error_text(status, "cudaGetDeviceCount"));
  }
  if (count == 0)
    throw NoDevice(fmt::format("{} (cudaGetDeviceCount found 0 devices)", kNoDriverOrGpu));
  for (int device : devices)
    if (device < 0 || device >= count)
      throw InvalidArgument(argument, device_list_text(devices),
                            fmt::format("device {} is out of range: this machine has {} CUDA "
                                        "device(s), ordinals 0 to {}",
                                        device, count, count - 1));
}

}  // namespace autogemm::multi
