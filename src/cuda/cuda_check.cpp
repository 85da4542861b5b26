// cuda_check: CUDA runtime errors as CudaError (cuda/cuda_check.hpp).
#include "cuda/cuda_check.hpp"

#include <string>

#include "autogemm/errors.hpp"

namespace autogemm {

void cuda_check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  throw CudaError(std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

}  // namespace autogemm
