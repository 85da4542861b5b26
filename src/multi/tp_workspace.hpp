#pragma once
// What a TpWorkspace holds per local rank (tensor_parallel.hpp), for the executor: its one
// allocation (buffers, then the flag pad), every rank's allocation as mapped here, the internal
// streams and events, and the plans every rank has agreed on.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "autogemm/tensor_parallel.hpp"
#include "multi/tp_plan.hpp"
#include "multi/tp_trace.hpp"

namespace autogemm {

struct TpWorkspace::State {
  struct Rank {
    int rank = 0, device = 0;
    ::ncclComm* comm = nullptr;
    char* base = nullptr;                // this rank's allocation (cudaMalloc)
    uint32_t* pad = nullptr;             // its flags, after the buffers
    std::vector<char*> peer_base;        // [rank]: every rank's allocation as mapped here
    std::vector<uint32_t*> peer_pad;
    std::vector<void*> opened;           // CUDA IPC mappings to close
    cudaStream_t copy = nullptr;         // sends to peers (the ring's partials, A's bands)
    cudaStream_t push = nullptr;         // all_reduce: finished bands of D to every peer, beside
                                         // the ring's partials rather than queued before them
    cudaStream_t local_copy = nullptr;   // copies out of the workspace (gathered A, D bands)
    cudaStream_t agree = nullptr;        // the per-call record exchange
    cudaEvent_t from_caller = nullptr, from_copy = nullptr, from_push = nullptr,
                from_local = nullptr;
    cudaEvent_t call_start = nullptr;    // recorded on the caller's stream as a call begins
    void* records = nullptr;             // device: world agreement records
  };
  TpProblem problem;
  TpTransport transport = TpTransport::copy_engine;
  int bands = 1;
  bool d_direct = false;                 // the plan's: D bands straight into the peers' D
  multi::TpLayout layout;
  multi::TpFlags flags;
  int world = 1;
  bool one_process = true;               // this process drives every rank
  std::vector<Rank> ranks;               // local ranks, in comm.local_ranks() order
  std::set<uint64_t> agreed;             // plan hashes every rank has agreed on
  std::set<uint64_t> prepared;           // plan hashes whose kernels are loaded on every local GPU
  std::unique_ptr<multi::TpTrace> trace; // AUTOGEMM_TP_TRACE=N: the calls, printed later
  // `plan` runs on this workspace: the same problem shape, transport, bands and d_direct.
  bool fits(const TpPlan& plan) const;
  ~State();
};

namespace multi {

// The fixed-size record every rank contributes before a call: what it plans and whether its
// own arguments passed (tp_exec.cpp).
struct TpRecord {
  uint64_t magic = 0;
  uint64_t plan_hash = 0;
  int64_t world = 0, rank = 0, pattern = 0, m = 0, n = 0, k = 0;
  int64_t a_type = 0, b_type = 0, d_type = 0, scaling = 0, transport = 0, bands = 0;
  int64_t nccl_header = 0, nccl_library = 0;
  char error[384] = {};                  // this rank's own check, empty when it passed
};
inline constexpr uint64_t kTpRecordMagic = 0x6175746f67656d6dull;  // "autogemm"

}  // namespace multi
}  // namespace autogemm
