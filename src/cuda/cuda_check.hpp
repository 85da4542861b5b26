#pragma once
#include <cuda_runtime_api.h>

#include <string>
#include <string_view>

namespace autogemm {

// What a message says where CUDA finds no driver or no GPU. The runtime reports a machine
// without a driver as cudaErrorInsufficientDriver, "CUDA driver version is insufficient for
// CUDA runtime version", which reads like a request to upgrade a driver that is not there.
inline constexpr std::string_view kNoDriverOrGpu = "no CUDA driver or GPU found";

// True for the runtime errors that mean no driver or no GPU: cudaErrorNoDevice, and
// cudaErrorInsufficientDriver where no driver is loaded (an old driver is another matter).
bool means_no_device(cudaError_t e);

// A runtime error as messages show it, naming `call`:
//   no driver or GPU: "no CUDA driver or GPU found (<call>: <error name>)";
//   an old driver:    "<call>: cudaErrorInsufficientDriver: the NVIDIA driver supports CUDA
//                      12.2, this build's runtime needs 12.8";
//   otherwise:        "<call>: <error name>: <error string>".
// Every message about a CUDA runtime error goes through it.
std::string cuda_error_text(cudaError_t e, std::string_view call);

// Throws unless e == cudaSuccess: NoDevice where means_no_device(e), else CudaError; the message
// is cuda_error_text(e, what).
void cuda_check(cudaError_t e, const char* what);

}  // namespace autogemm
