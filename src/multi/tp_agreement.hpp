#pragma once
// The agreement every tensor-parallel call starts with (tp_exec.cpp): each local rank checks its
// own arguments and loads the plan's kernels (its record), then the records of every rank are
// exchanged and judged alike on every rank, so that a disagreement or a bad argument raises on
// every rank and nothing waits on a flag that is never set.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "autogemm/multi_gpu.hpp"
#include "autogemm/tensor_parallel.hpp"
#include "multi/tp_workspace.hpp"

namespace autogemm::multi {

// This call's record of each local rank (ws.ranks order): the plan's hash and shapes, and the
// verdict of the rank's own check (its pointers, the communicator's size, the NCCL library; the
// plan's kernels compiled and loaded, once per plan).
std::vector<TpRecord> own_records(const TpPlan& plan, uint64_t hash,
                                  const std::vector<TpShards>& shards, TpWorkspace::State& ws,
                                  MultiGpuComm& comm);
// A record of `rank` whose own check reports `error` ("argument = value: rule"; empty: passed).
TpRecord make_record(const TpPlan& plan, uint64_t hash, int rank, const std::string& error);
bool passed(const TpRecord& record);

// Every rank's records exchanged (one process: in memory; processes with peer access: the
// communicator's agreement board; else an ncclAllGather) and judged: returns when every rank
// passed its own check and runs the same plan (the plan then counts as agreed on `ws`), else
// throws InvalidArgument naming the first rank at fault, on every rank. While capturing there is
// no exchange (it needs the host): the plan must have been agreed before.
void agree(uint64_t hash, const std::vector<TpRecord>& mine, TpWorkspace::State& ws,
           MultiGpuComm& comm, bool capturing);

bool any_capturing(const std::vector<cudaStream_t>& streams);

}  // namespace autogemm::multi
