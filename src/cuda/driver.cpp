// Driver API entry points resolved through the CUDA runtime (cuda/driver.hpp).
#include "cuda/driver.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "autogemm/errors.hpp"
#include "cuda/cuda_check.hpp"

namespace autogemm::driver {

namespace {

struct Resolution {
  Api api{};
  std::string failure;  // empty on success
};

// Asks for the ABI of the toolkit we were built with (CUDA_VERSION): the function pointer
// types in Api come from its cuda.h, and a symbol whose signature changed between versions
// (the _v2/_v3 variants) must match them.
template <typename Function>
bool resolve(const char* symbol, Function* out, std::string* failure) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &address, CUDA_VERSION,
                                                         cudaEnableDefault, &status);
  if (e != cudaSuccess || status != cudaDriverEntryPointSuccess || address == nullptr) {
    int driver_version = 0;
    cudaDriverGetVersion(&driver_version);
    *failure = fmt::format(
        "the CUDA driver (version {}) lacks an entry point: {} (status {})", driver_version,
        cuda_error_text(e, fmt::format("cudaGetDriverEntryPointByVersion({}, {})", symbol,
                                       CUDA_VERSION)),
        static_cast<int>(status));
    return false;
  }
  *out = reinterpret_cast<Function>(address);
  return true;
}

Resolution resolve_all() {
  Resolution r;
  // cudaFree(nullptr) initialises the runtime and makes the device's primary context current,
  // so modules loaded through the driver API share the context of runtime allocations.
  // A missing driver is told from an old one by cuda_error_text.
  if (const cudaError_t e = cudaFree(nullptr); e != cudaSuccess) {
    r.failure = cuda_error_text(e, "cudaFree(0)");
    return r;
  }
#define AUTOGEMM_RESOLVE(name) \
  if (!resolve(#name, &r.api.name, &r.failure)) return r;
  AUTOGEMM_RESOLVE(cuGetErrorString)
  AUTOGEMM_RESOLVE(cuGetErrorName)
  AUTOGEMM_RESOLVE(cuModuleLoadData)
  AUTOGEMM_RESOLVE(cuModuleUnload)
  AUTOGEMM_RESOLVE(cuModuleGetFunction)
  AUTOGEMM_RESOLVE(cuFuncSetAttribute)
  AUTOGEMM_RESOLVE(cuLaunchKernelEx)
  AUTOGEMM_RESOLVE(cuTensorMapEncodeTiled)
  AUTOGEMM_RESOLVE(cuOccupancyMaxActiveClusters)
  AUTOGEMM_RESOLVE(cuOccupancyMaxPotentialClusterSize)
  AUTOGEMM_RESOLVE(cuCtxGetCurrent)
  AUTOGEMM_RESOLVE(cuStreamWaitValue32)
  AUTOGEMM_RESOLVE(cuStreamWriteValue32)
#undef AUTOGEMM_RESOLVE
  return r;
}

const Resolution& resolution() {
  // Thread-safe one-time initialisation. A failure is remembered too: without a driver or GPU
  // every later call fails the same way, and retrying cudaFree would only cost time.
  static const Resolution r = resolve_all();
  return r;
}

}  // namespace

const Api& api() {
  const Resolution& r = resolution();
  if (!r.failure.empty()) throw NoDevice(r.failure);
  return r.api;
}

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  // The driver API's words for no GPU, or a driver not initialised because there is none.
  if (r == CUDA_ERROR_NO_DEVICE || r == CUDA_ERROR_NOT_INITIALIZED)
    throw NoDevice(fmt::format("{} ({}: {})", kNoDriverOrGpu, what,
                               r == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE"
                                                         : "CUDA_ERROR_NOT_INITIALIZED"));
  const Resolution& resolved = resolution();
  const char* name = nullptr;
  const char* text = nullptr;
  if (resolved.failure.empty()) {
    resolved.api.cuGetErrorName(r, &name);
    resolved.api.cuGetErrorString(r, &text);
  }
  throw CudaError(fmt::format("{}: {}: {}", what,
                              name != nullptr ? std::string(name) : fmt::format("CUresult {}", int(r)),
                              text != nullptr ? text : "unknown driver error"));
}

}  // namespace autogemm::driver
