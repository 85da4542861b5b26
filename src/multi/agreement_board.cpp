// AgreementBoard (agreement_board.hpp): the tensor-parallel record exchange on copy engines and
// stream memory operations.
#include "multi/agreement_board.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/current_device_guard.hpp"
#include "cuda/driver.hpp"
#include "multi/nccl_comm.hpp"

#ifdef AUTOGEMM_HAVE_NCCL
#include <nccl.h>
#endif

namespace autogemm::multi {

namespace {

constexpr std::size_t kRecord = sizeof(TpRecord);
static_assert(kRecord % 16 == 0, "records stay 16-byte aligned on the board");

}  // namespace

std::size_t AgreementBoard::record_offset(uint32_t parity, int rank) const {
  return (std::size_t(parity) * std::size_t(world_) + std::size_t(rank)) * kRecord;
}

std::size_t AgreementBoard::arrival_offset(uint32_t parity, int rank) const {
  return 2 * std::size_t(world_) * kRecord +
         (std::size_t(parity) * std::size_t(world_) + std::size_t(rank)) * sizeof(uint32_t);
}

AgreementBoard::~AgreementBoard() { release(); }

void AgreementBoard::release() noexcept {
  CurrentDeviceGuard restore;
  if (cudaSetDevice(device_) != cudaSuccess) return;
  if (stream_) (void)cudaStreamSynchronize(stream_);
  for (void* p : opened_) (void)cudaIpcCloseMemHandle(p);
  if (stream_) (void)cudaStreamDestroy(stream_);
  if (staged_) (void)cudaFreeHost(staged_);
  if (read_back_) (void)cudaFreeHost(read_back_);
  if (board_) (void)cudaFree(board_);
}

#ifndef AUTOGEMM_HAVE_NCCL

AgreementBoard::AgreementBoard(::ncclComm*, int, int, int) { throw no_nccl_error(); }
std::vector<TpRecord> AgreementBoard::exchange(const TpRecord&) { throw no_nccl_error(); }

#else

AgreementBoard::AgreementBoard(::ncclComm* comm, int world, int rank, int device)
    : world_(world), rank_(rank), device_(device) {
  try {
    make(comm);
  } catch (...) {
    release();  // a constructor that throws runs no destructor
    throw;
  }
}

void AgreementBoard::make(::ncclComm* comm) {
  const int world = world_, rank = rank_, device = device_;
  CurrentDeviceGuard restore;
  cuda_check(cudaSetDevice(device), "cudaSetDevice(tp agreement board)");
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
             "cudaStreamCreate(tp agreement board)");
  const std::size_t bytes = arrival_offset(2, 0);
  cuda_check(cudaMalloc(&board_, bytes), "cudaMalloc(tp agreement board)");
  cuda_check(cudaMallocHost(reinterpret_cast<void**>(&staged_), kRecord),
             "cudaMallocHost(tp agreement record)");
  cuda_check(cudaMallocHost(reinterpret_cast<void**>(&read_back_), kRecord * std::size_t(world)),
             "cudaMallocHost(tp agreement records)");
  // Arrival words start at 0 (the first call's is 1). Cleared before this rank sends its handle:
  // no rank can write into this board before the exchange below has it, so none before the clear.
  cuda_check(cudaMemsetAsync(board_, 0, bytes, stream_), "cudaMemset(tp agreement board)");

  // Every rank's IPC handle, through one ncclAllGather staged in the board's record slots (the
  // arrival words lie past them).
  cudaIpcMemHandle_t mine{};
  cuda_check(cudaIpcGetMemHandle(&mine, board_), "cudaIpcGetMemHandle(tp agreement board)");
  static_assert(sizeof(cudaIpcMemHandle_t) <= kRecord, "a handle fits a record slot");
  const std::size_t handle = sizeof(cudaIpcMemHandle_t);
  cuda_check(cudaMemcpyAsync(board_ + handle * std::size_t(rank), &mine, handle,
                             cudaMemcpyHostToDevice, stream_),
             "cudaMemcpy(tp agreement handle)");
  nccl_check(ncclAllGather(board_ + handle * std::size_t(rank), board_, handle, ncclInt8, comm,
                           stream_),
             "ncclAllGather(tp agreement handles)");
  std::vector<cudaIpcMemHandle_t> all(static_cast<std::size_t>(world));
  cuda_check(cudaMemcpyAsync(all.data(), board_, handle * all.size(), cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpy(tp agreement handles)");
  cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(tp agreement handles)");

  mapped_.assign(std::size_t(world), nullptr);
  for (int q = 0; q < world; ++q) {
    if (q == rank) {
      mapped_[std::size_t(q)] = board_;
      continue;
    }
    void* p = nullptr;
    const cudaError_t e =
        cudaIpcOpenMemHandle(&p, all[std::size_t(q)], cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess)
      throw CudaError(fmt::format("rank {}: cudaIpcOpenMemHandle of rank {}'s agreement board "
                                  "failed ({}: {}); the copy-engine transport needs peer access "
                                  "between every pair of GPUs", rank, q, cudaGetErrorName(e),
                                  cudaGetErrorString(e)));
    opened_.push_back(p);
    mapped_[std::size_t(q)] = static_cast<char*>(p);
  }
}

std::vector<TpRecord> AgreementBoard::exchange(const TpRecord& mine) {
  const driver::Api& api = driver::api();
  CurrentDeviceGuard restore;
  cuda_check(cudaSetDevice(device_), "cudaSetDevice(tp agreement)");
  const uint32_t call = ++calls_;
  const uint32_t parity = call & 1u;
  *staged_ = mine;  // the last exchange was waited for: the staging record is free
  char* own = board_ + record_offset(parity, rank_);
  cuda_check(cudaMemcpyAsync(own, staged_, kRecord, cudaMemcpyHostToDevice, stream_),
             "cudaMemcpyAsync(tp agreement record)");
  for (int q = 0; q < world_; ++q) {
    char* board = mapped_[std::size_t(q)];
    if (q != rank_)
      cuda_check(cudaMemcpyAsync(board + record_offset(parity, rank_), own, kRecord,
                                 cudaMemcpyDeviceToDevice, stream_),
                 "cudaMemcpyAsync(tp agreement record to a peer)");
    // After the record in stream order, behind the write's default memory fence.
    driver::check(api.cuStreamWriteValue32(stream_,
                                           CUdeviceptr(board + arrival_offset(parity, rank_)),
                                           call, CU_STREAM_WRITE_VALUE_DEFAULT),
                  "cuStreamWriteValue32(tp agreement arrival)");
  }
  for (int q = 0; q < world_; ++q)
    if (q != rank_)
      driver::check(api.cuStreamWaitValue32(stream_, CUdeviceptr(board_ + arrival_offset(parity, q)),
                                            call, CU_STREAM_WAIT_VALUE_EQ),
                    "cuStreamWaitValue32(tp agreement arrival)");
  cuda_check(cudaMemcpyAsync(read_back_, board_ + record_offset(parity, 0),
                             kRecord * std::size_t(world_), cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync(tp agreement records)");
  cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize(tp agreement)");
  return std::vector<TpRecord>(read_back_, read_back_ + world_);
}

#endif

}  // namespace autogemm::multi
