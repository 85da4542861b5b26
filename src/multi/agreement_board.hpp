#pragma once
// The record exchange every tensor-parallel call starts with (tp_exec.cpp's agreement), when
// each process drives one rank and every pair of ranks maps the others' memory (CUDA IPC): each
// rank copies its record into every rank's board and raises an arrival word there, waits on
// its own board for the others' words, and reads the board back. Only copy engines and stream
// memory operations take part, no SM: an ncclAllGather of the records needs a CTA, and behind
// a previous call's persistent GEMM (every SM held) it started only when that GEMM ended, so a
// call enqueued back to back waited out the whole agreement with the GPU idle (8192 x 28672 x
// 8192 on 2 H200s: 2644 us a call back to back against 2488 gated, docs/decisions.md).
//
// Made once per communicator, collectively (the first copy-engine workspace across processes
// makes it, every rank at the same call), and kept with the communicator.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "multi/tp_workspace.hpp"

struct ncclComm;

namespace autogemm::multi {

class AgreementBoard {
 public:
  // Collective over `comm` (rank `rank` of `world`, on `device`): allocates the board and
  // maps every other rank's (IPC handles exchanged by one ncclAllGather). CudaError when a
  // rank's board cannot be mapped (no peer access).
  AgreementBoard(::ncclComm* comm, int world, int rank, int device);
  ~AgreementBoard();
  AgreementBoard(const AgreementBoard&) = delete;
  AgreementBoard& operator=(const AgreementBoard&) = delete;

  // Every rank's record of this call, in rank order. Every rank must call exchange() once per
  // call, in the same order: a rank that never calls leaves the others waiting, as a missing
  // rank in any collective does.
  std::vector<TpRecord> exchange(const TpRecord& mine);

 private:
  // Two boards alternate by call parity: a rank may write its next record while a slower rank
  // still reads this one (it cannot write the one after before that rank has arrived).
  std::size_t record_offset(uint32_t parity, int rank) const;
  std::size_t arrival_offset(uint32_t parity, int rank) const;
  void make(::ncclComm* comm);
  void release() noexcept;

  int world_ = 1, rank_ = 0, device_ = 0;
  char* board_ = nullptr;              // device: [2][world] records, then [2][world] arrival words
  std::vector<char*> mapped_;          // [rank]: every rank's board as mapped here (own included)
  std::vector<void*> opened_;          // IPC mappings to close
  TpRecord* staged_ = nullptr;         // pinned host: this rank's record on its way out
  TpRecord* read_back_ = nullptr;      // pinned host: [world] records of the call
  cudaStream_t stream_ = nullptr;
  uint32_t calls_ = 0;
};

}  // namespace autogemm::multi
