#pragma once
#include <cuda_runtime_api.h>

namespace autogemm {
// Throws CudaError("<what>: <cudaGetErrorName>: <cudaGetErrorString>") unless e == cudaSuccess.
void cuda_check(cudaError_t e, const char* what);
}  // namespace autogemm
