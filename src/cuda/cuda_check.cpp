// CUDA runtime errors as messages and exceptions (cuda/cuda_check.hpp).
#include "cuda/cuda_check.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"

namespace autogemm {

namespace {

// The CUDA version the loaded driver supports; 0 when no driver is loaded (libcuda.so.1 not
// found), which the runtime also reports as cudaErrorInsufficientDriver.
int driver_cuda_version() {
  int version = 0;
  if (cudaDriverGetVersion(&version) != cudaSuccess) return 0;
  return version;
}

}  // namespace

bool means_no_device(cudaError_t e) {
  if (e == cudaErrorNoDevice) return true;
  return e == cudaErrorInsufficientDriver && driver_cuda_version() == 0;
}

std::string cuda_error_text(cudaError_t e, std::string_view call) {
  if (means_no_device(e)) return fmt::format("{} ({}: {})", kNoDriverOrGpu, call, cudaGetErrorName(e));
  if (e == cudaErrorInsufficientDriver) {
    const int driver = driver_cuda_version();
    return fmt::format("{}: {}: the NVIDIA driver supports CUDA {}.{}, this build's runtime needs "
                       "{}.{}",
                       call, cudaGetErrorName(e), driver / 1000, driver % 1000 / 10,
                       CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10);
  }
  return fmt::format("{}: {}: {}", call, cudaGetErrorName(e), cudaGetErrorString(e));
}

void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  if (means_no_device(e)) throw NoDevice(cuda_error_text(e, what));
  throw CudaError(cuda_error_text(e, what));
}

}  // namespace autogemm
