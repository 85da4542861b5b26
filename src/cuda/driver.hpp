#pragma once
// The CUDA driver API, reached through cudaGetDriverEntryPoint so that the library links no
// libcuda and loads on machines without a driver. Only the calls autogemm uses.
#include <cuda.h>

#include <string>

namespace autogemm::driver {

struct Api {
  decltype(&::cuGetErrorString) cuGetErrorString;
  decltype(&::cuModuleLoadData) cuModuleLoadData;
  decltype(&::cuModuleUnload) cuModuleUnload;
  decltype(&::cuModuleGetFunction) cuModuleGetFunction;
  decltype(&::cuFuncSetAttribute) cuFuncSetAttribute;
  decltype(&::cuLaunchKernelEx) cuLaunchKernelEx;
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled;
  decltype(&::cuOccupancyMaxActiveClusters) cuOccupancyMaxActiveClusters;
  decltype(&::cuOccupancyMaxPotentialClusterSize) cuOccupancyMaxPotentialClusterSize;
  decltype(&::cuCtxGetCurrent) cuCtxGetCurrent;
  decltype(&::cuGetErrorName) cuGetErrorName;  // "CUDA_ERROR_..." for check()
  // Stream memory operations: the tensor-parallel flags (multi/tp_exec.cpp) a sender's stream
  // writes into a peer's memory and the receiver's stream waits on, without an SM.
  decltype(&::cuStreamWaitValue32) cuStreamWaitValue32;
  decltype(&::cuStreamWriteValue32) cuStreamWriteValue32;
};

// Resolves the entry points once (initialising the runtime's primary context); throws
// NoDevice with the reason when there is no driver or GPU.
const Api& api();

// Throws CudaError("<what>: <driver error name and string>") unless r == CUDA_SUCCESS;
// NoDevice saying kNoDriverOrGpu for CUDA_ERROR_NO_DEVICE and CUDA_ERROR_NOT_INITIALIZED.
void check(CUresult r, const char* what);

}  // namespace autogemm::driver
