#pragma once
// What a MultiGpuComm holds (multi_gpu.hpp), for the executor in nccl_exec.cpp, and the NCCL
// error check. Built with or without NCCL: without it, every entry point throws
// no_nccl_error() before touching anything.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "autogemm/multi_gpu.hpp"

namespace autogemm {

namespace multi {
class AgreementBoard;
}

struct MultiGpuComm::State {
  std::vector<LocalRank> ranks;
  std::vector<::ncclComm*> comms;        // one per local rank
  std::vector<GpuInfo> devices;          // profile of each local rank's GPU
  std::vector<cudaStream_t> comm_streams;  // per local rank, made on first use
  int size = 0;
  bool owned = false;                    // made by local(): destroyed with this
  // One rank a process with peer access to every other: the tensor-parallel calls' record
  // exchange, made with the first copy-engine workspace (agreement_board.hpp).
  std::unique_ptr<multi::AgreementBoard> agreement;
  ~State();
  // A non-blocking stream of the highest priority on the local rank's device: overlapped
  // communication runs there, so that its CTAs are scheduled ahead of the GEMM's waiting ones.
  cudaStream_t comm_stream(std::size_t local_index);
};

namespace multi {

// "autogemm was built without NCCL ...": what every multi-GPU execution entry point throws when
// nccl.h or libnccl was not found at build time.
Error no_nccl_error();

// NVLink multicast (NVLS) is forbidden on the machines this runs on: it can take a shared host's
// GPUs out of service. Sets NCCL_NVLS_ENABLE=0, overwriting any other value, before NCCL reads it.
void force_nvls_off();

#ifdef AUTOGEMM_HAVE_NCCL
// Throws CudaError("<what>: <ncclGetErrorString>") unless the result is ncclSuccess. The result
// is an int here so that this header needs no nccl.h.
void nccl_check(int result, const std::string& what);
#endif

}  // namespace multi
}  // namespace autogemm
