// TpWorkspace (tensor_parallel.hpp): one allocation per local rank, mapped into every other
// rank (peer access in one process; CUDA IPC handles exchanged over NCCL across processes), its
// flag pad initialised, and the internal streams and events. Made once; a call allocates
// nothing.
#include "multi/tp_workspace.hpp"

#include <fmt/format.h>

#include <cstring>

#include "autogemm/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/current_device_guard.hpp"
#include "multi/agreement_board.hpp"
#include "multi/nccl_comm.hpp"

#ifdef AUTOGEMM_HAVE_NCCL
#include <nccl.h>
#endif

namespace autogemm {

TpWorkspace::State::~State() {
  CurrentDeviceGuard restore;
  if (trace) {
    try {
      trace->print();
    } catch (...) {  // a diagnostic: never an error while freeing
    }
  }
  for (Rank& r : ranks) {
    if (cudaSetDevice(r.device) != cudaSuccess) continue;
    (void)cudaDeviceSynchronize();  // nothing of a call may still use the buffers
    for (void* p : r.opened) (void)cudaIpcCloseMemHandle(p);
    for (cudaStream_t s : {r.copy, r.push, r.local_copy, r.agree})
      if (s) (void)cudaStreamDestroy(s);
    for (cudaEvent_t e : {r.from_caller, r.from_copy, r.from_push, r.from_local, r.call_start})
      if (e) (void)cudaEventDestroy(e);
    if (r.records) (void)cudaFree(r.records);
    if (r.base) (void)cudaFree(r.base);
  }
}

TpWorkspace::TpWorkspace(TpWorkspace&&) noexcept = default;
TpWorkspace& TpWorkspace::operator=(TpWorkspace&&) noexcept = default;
TpWorkspace::~TpWorkspace() = default;

std::size_t TpWorkspace::bytes_per_rank() const {
  return std::size_t(state_->layout.total) + std::size_t(state_->flags.count()) * 4;
}

bool TpWorkspace::State::fits(const TpPlan& plan) const {
  const TpProblem& a = plan.problem;
  const TpProblem& b = problem;
  return a.pattern == b.pattern && a.world == b.world && a.m == b.m && a.n == b.n &&
         a.k == b.k && a.a_type == b.a_type && a.b_type == b.b_type && a.d_type == b.d_type &&
         a.scaling == b.scaling && plan.transport == transport && plan.bands == bands &&
         plan.d_direct == d_direct;
}

bool TpWorkspace::fits(const TpPlan& plan) const { return state_->fits(plan); }

#ifndef AUTOGEMM_HAVE_NCCL

TpWorkspace::TpWorkspace(const TpPlan&, MultiGpuComm&) { throw multi::no_nccl_error(); }

#else

namespace {

void nccl(ncclResult_t r, const char* what) { multi::nccl_check(r, what); }

void make_streams_and_events(TpWorkspace::State::Rank& r) {
  for (cudaStream_t* s : {&r.copy, &r.push, &r.local_copy, &r.agree})
    cuda_check(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), "cudaStreamCreate(tp)");
  for (cudaEvent_t* e : {&r.from_caller, &r.from_copy, &r.from_push, &r.from_local, &r.call_start})
    cuda_check(cudaEventCreateWithFlags(e, cudaEventDisableTiming), "cudaEventCreate(tp)");
  cuda_check(cudaMalloc(&r.records, sizeof(multi::TpRecord) * 1024), "cudaMalloc(tp records)");
}

// Every rank's allocation as this process sees it.
void map_one_process(TpWorkspace::State& s) {
  for (auto& r : s.ranks) {
    cuda_check(cudaSetDevice(r.device), "cudaSetDevice(tp workspace)");
    for (auto& q : s.ranks) {
      if (q.rank == r.rank) continue;
      const cudaError_t e = cudaDeviceEnablePeerAccess(q.device, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
      else cuda_check(e, "cudaDeviceEnablePeerAccess(tp workspace)");
    }
    r.peer_base.assign(std::size_t(s.world), nullptr);
    for (auto& q : s.ranks) r.peer_base[std::size_t(q.rank)] = q.base;
  }
}

void map_across_processes(TpWorkspace::State& s) {
  auto& r = s.ranks.front();
  cudaIpcMemHandle_t mine{};
  cuda_check(cudaIpcGetMemHandle(&mine, r.base), "cudaIpcGetMemHandle(tp workspace)");
  const std::size_t handle_bytes = sizeof(cudaIpcMemHandle_t);
  char* exchange = static_cast<char*>(r.records);
  cuda_check(cudaMemcpy(exchange + handle_bytes * std::size_t(r.rank), &mine, handle_bytes,
                        cudaMemcpyHostToDevice), "cudaMemcpy(tp handle)");
  nccl(ncclAllGather(exchange + handle_bytes * std::size_t(r.rank), exchange, handle_bytes,
                     ncclInt8, r.comm, r.agree),
       "ncclAllGather(tp workspace handles)");
  std::vector<cudaIpcMemHandle_t> all(std::size_t(s.world));
  cuda_check(cudaMemcpyAsync(all.data(), exchange, handle_bytes * all.size(),
                             cudaMemcpyDeviceToHost, r.agree), "cudaMemcpy(tp handles)");
  cuda_check(cudaStreamSynchronize(r.agree), "cudaStreamSynchronize(tp handles)");
  r.peer_base.assign(std::size_t(s.world), nullptr);
  for (int q = 0; q < s.world; ++q) {
    if (q == r.rank) {
      r.peer_base[q] = r.base;
      continue;
    }
    void* mapped = nullptr;
    const cudaError_t e = cudaIpcOpenMemHandle(&mapped, all[std::size_t(q)],
                                               cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess)
      throw CudaError(fmt::format(
          "rank {}: cudaIpcOpenMemHandle of rank {}'s workspace failed ({}: {}); the "
          "copy-engine transport needs peer access between every pair of GPUs (plan with "
          "transport nccl otherwise)", r.rank, q, cudaGetErrorName(e), cudaGetErrorString(e)));
    r.opened.push_back(mapped);
    r.peer_base[q] = static_cast<char*>(mapped);
  }
}

}  // namespace

TpWorkspace::TpWorkspace(const TpPlan& plan, MultiGpuComm& comm) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.problem = plan.problem;
  s.transport = plan.transport;
  s.bands = plan.bands;
  s.d_direct = plan.d_direct;
  s.world = comm.size();
  if (plan.problem.world != s.world)
    throw InvalidArgument("comm", fmt::format("{} ranks", s.world),
                          fmt::format("the plan is for {} ranks", plan.problem.world));
  s.layout = multi::tp_layout(plan.problem, plan.transport, plan.d_direct);
  s.flags = {s.world, s.bands};
  const auto& locals = comm.local_ranks();
  s.one_process = int(locals.size()) == s.world;
  if (!s.one_process && locals.size() != 1)
    throw InvalidArgument("comm", fmt::format("{} of {} ranks in this process", locals.size(), s.world),
                          "one process drives every rank, or each process one rank");
  if (plan.d_direct && !s.one_process)
    throw InvalidArgument("plan", "d_direct (planned with TpOptions::one_process)",
                          fmt::format("this process drives {} of {} ranks, so the peers' D is "
                                      "not mapped here: plan with one_process = false",
                                      locals.size(), s.world));
  CurrentDeviceGuard restore;
  const std::size_t pad_bytes = std::size_t(s.flags.count()) * 4;
  // The pad starts with every "done" flag set: before the first call no peer holds anything
  // of ours to consume.
  std::vector<uint32_t> pad(std::size_t(s.flags.count()), 0);
  for (int q = 0; q < s.world; ++q) pad[std::size_t(s.flags.done(q))] = 1;
  for (std::size_t i = 0; i < locals.size(); ++i) {
    State::Rank r;
    r.rank = locals[i].rank;
    r.device = locals[i].device;
    r.comm = comm.comm(i);
    cuda_check(cudaSetDevice(r.device), "cudaSetDevice(tp workspace)");
    void* base = nullptr;
    cuda_check(cudaMalloc(&base, std::size_t(s.layout.total) + pad_bytes),
               "cudaMalloc(tp workspace)");
    r.base = static_cast<char*>(base);
    s.ranks.push_back(r);  // owned by the state from here: freed if what follows throws
    State::Rank& held = s.ranks.back();
    held.pad = reinterpret_cast<uint32_t*>(held.base + s.layout.total);
    cuda_check(cudaMemcpy(held.pad, pad.data(), pad_bytes, cudaMemcpyHostToDevice),
               "cudaMemcpy(tp flags)");
    make_streams_and_events(held);
  }
  if (s.transport == TpTransport::copy_engine && s.world > 1) {
    if (s.one_process) map_one_process(s);
    else {
      map_across_processes(s);
      // The first copy-engine workspace on a communicator makes its agreement board: every rank
      // makes the same workspaces in the same order, so every rank makes it here, together.
      MultiGpuComm::State& shared = comm.internal_state();
      const State::Rank& r = s.ranks.front();
      if (!shared.agreement)
        shared.agreement = std::make_unique<multi::AgreementBoard>(r.comm, s.world, r.rank, r.device);
    }
  } else {
    for (auto& r : s.ranks) {
      r.peer_base.assign(std::size_t(s.world), nullptr);
      r.peer_base[std::size_t(r.rank)] = r.base;
    }
  }
  for (auto& r : s.ranks) {
    r.peer_pad.assign(std::size_t(s.world), nullptr);
    for (int q = 0; q < s.world; ++q)
      if (r.peer_base[std::size_t(q)])
        r.peer_pad[std::size_t(q)] = reinterpret_cast<uint32_t*>(r.peer_base[std::size_t(q)] + s.layout.total);
  }
}

#endif

}  // namespace autogemm
