// MultiGpuComm: NCCL communicators made here (ncclCommInitAll) or given by the caller
// (multi_gpu.hpp, nccl_comm.hpp).
#include "multi/nccl_comm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "cuda/cuda_check.hpp"
#include "cuda/current_device_guard.hpp"
#include "multi/agreement_board.hpp"
#include "multi/device_list.hpp"

#ifdef AUTOGEMM_HAVE_NCCL
#include <nccl.h>
#endif

namespace autogemm {

namespace multi {

Error no_nccl_error() {
  return Error(
      "autogemm was built without NCCL: nccl.h or libnccl was not found at build time "
      "(cmake/nccl.cmake looks in the CUDA toolkit; set AUTOGEMM_NCCL_ROOT to a folder with "
      "include/nccl.h and lib/libnccl.so), so multi-GPU execution is not available");
}

void force_nvls_off() { setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/1); }

#ifdef AUTOGEMM_HAVE_NCCL
void nccl_check(int result, const std::string& what) {
  if (result != ncclSuccess)
    throw CudaError(fmt::format("{}: {}", what, ncclGetErrorString(ncclResult_t(result))));
}
#endif

}  // namespace multi

std::optional<int> nccl_version() {
#ifdef AUTOGEMM_HAVE_NCCL
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess) return std::nullopt;
  return version;
#else
  return std::nullopt;
#endif
}

MultiGpuComm::State::~State() {
  agreement.reset();  // its stream and IPC mappings before the communicators
  for (std::size_t i = 0; i < comm_streams.size(); ++i)
    if (comm_streams[i] != nullptr) (void)cudaStreamDestroy(comm_streams[i]);
#ifdef AUTOGEMM_HAVE_NCCL
  if (owned)
    for (::ncclComm* comm : comms) (void)ncclCommDestroy(comm);
#endif
}

cudaStream_t MultiGpuComm::State::comm_stream(std::size_t local_index) {
  if (comm_streams.size() != ranks.size()) comm_streams.assign(ranks.size(), nullptr);
  if (comm_streams[local_index] == nullptr) {
    CurrentDeviceGuard restore;
    cuda_check(cudaSetDevice(ranks[local_index].device), "cudaSetDevice(comm stream)");
    int least = 0, greatest = 0;
    cuda_check(cudaDeviceGetStreamPriorityRange(&least, &greatest),
               "cudaDeviceGetStreamPriorityRange");
    cuda_check(cudaStreamCreateWithPriority(&comm_streams[local_index], cudaStreamNonBlocking,
                                            greatest),
               "cudaStreamCreateWithPriority(comm stream)");
  }
  return comm_streams[local_index];
}

std::vector<unsigned char> nccl_unique_id() {
#ifndef AUTOGEMM_HAVE_NCCL
  throw multi::no_nccl_error();
#else
  ncclUniqueId id{};
  multi::nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  return std::vector<unsigned char>(id.internal, id.internal + sizeof(id.internal));
#endif
}

MultiGpuComm::MultiGpuComm(std::unique_ptr<State> state) : state_(std::move(state)) {}
MultiGpuComm::MultiGpuComm(MultiGpuComm&&) noexcept = default;
MultiGpuComm& MultiGpuComm::operator=(MultiGpuComm&&) noexcept = default;
MultiGpuComm::~MultiGpuComm() = default;

int MultiGpuComm::size() const { return state_->size; }
const std::vector<MultiGpuComm::LocalRank>& MultiGpuComm::local_ranks() const { return state_->ranks; }
::ncclComm* MultiGpuComm::comm(std::size_t local_index) const { return state_->comms.at(local_index); }
const GpuInfo& MultiGpuComm::device(std::size_t local_index) const {
  return state_->devices.at(local_index);
}

namespace {

// Each local rank's GPU description, for checking forced configurations before launching.
std::vector<GpuInfo> profile_of(const std::vector<MultiGpuComm::LocalRank>& ranks) {
  const GpuProfile profile = profile_gpus();
  std::vector<GpuInfo> out;
  for (const auto& r : ranks) out.push_back(profile.gpus.at(std::size_t(r.device)));
  return out;
}

}  // namespace

MultiGpuComm MultiGpuComm::local(const std::vector<int>& devices) {
  multi::check_device_list_shape("devices", devices);
#ifndef AUTOGEMM_HAVE_NCCL
  throw multi::no_nccl_error();
#else
  multi::check_device_list("devices", devices);
  multi::force_nvls_off();
  auto state = std::make_unique<State>();
  state->comms.assign(devices.size(), nullptr);
  CurrentDeviceGuard restore;
  multi::nccl_check(ncclCommInitAll(state->comms.data(), int(devices.size()), devices.data()),
                    fmt::format("ncclCommInitAll(devices {})", multi::device_list_text(devices)));
  state->owned = true;
  state->size = int(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) state->ranks.push_back({int(i), devices[i]});
  state->devices = profile_of(state->ranks);
  return MultiGpuComm(std::move(state));
#endif
}

MultiGpuComm MultiGpuComm::wrap(::ncclComm* comm) {
  if (comm == nullptr)
    throw InvalidArgument("comm", "null", "give an initialised ncclComm_t (ncclCommInitRank)");
#ifndef AUTOGEMM_HAVE_NCCL
  throw multi::no_nccl_error();
#else
  auto state = std::make_unique<State>();
  int size = 0, rank = 0, device = 0;
  multi::nccl_check(ncclCommCount(comm, &size), "ncclCommCount");
  multi::nccl_check(ncclCommUserRank(comm, &rank), "ncclCommUserRank");
  multi::nccl_check(ncclCommCuDevice(comm, &device), "ncclCommCuDevice");
  multi::check_device_list("comm's device", {device});
  state->comms = {comm};
  state->size = size;
  state->ranks = {{rank, device}};
  state->devices = profile_of(state->ranks);
  return MultiGpuComm(std::move(state));
#endif
}

}  // namespace autogemm

namespace autogemm {

MultiGpuComm MultiGpuComm::from_unique_id(const std::vector<unsigned char>& unique_id, int world,
                                          int rank, int device) {
#ifndef AUTOGEMM_HAVE_NCCL
  (void)unique_id, (void)world, (void)rank, (void)device;
  throw multi::no_nccl_error();
#else
  if (unique_id.size() != sizeof(ncclUniqueId::internal))
    throw InvalidArgument("unique_id", fmt::format("{} bytes", unique_id.size()),
                          fmt::format("an ncclUniqueId is {} bytes (nccl_unique_id())",
                                      sizeof(ncclUniqueId::internal)));
  if (world < 1 || rank < 0 || rank >= world)
    throw InvalidArgument("rank", fmt::format("{} of {}", rank, world), "0 <= rank < world");
  multi::check_device_list("device", {device});
  multi::force_nvls_off();
  ncclUniqueId id{};
  std::copy(unique_id.begin(), unique_id.end(), id.internal);
  CurrentDeviceGuard restore;
  cuda_check(cudaSetDevice(device), "cudaSetDevice(ncclCommInitRank)");
  ncclComm_t comm = nullptr;
  multi::nccl_check(ncclCommInitRank(&comm, world, id, rank),
                    fmt::format("ncclCommInitRank(rank {} of {}, GPU {})", rank, world, device));
  auto state = std::make_unique<State>();
  state->comms = {comm};
  state->owned = true;
  state->size = world;
  state->ranks = {{rank, device}};
  state->devices = profile_of(state->ranks);
  return MultiGpuComm(std::move(state));
#endif
}

}  // namespace autogemm
