// The agreement every tensor-parallel call starts with (tp_agreement.hpp).
#include "multi/tp_agreement.hpp"

#include <fmt/format.h>

#include <cstring>

#include "autogemm/errors.hpp"
#include "autogemm/kernel_spec.hpp"
#include "cuda/cuda_check.hpp"
#include "multi/agreement_board.hpp"
#include "multi/nccl_comm.hpp"
#include "multi/tp_plan.hpp"
#include "runtime/launch.hpp"

#ifdef AUTOGEMM_HAVE_NCCL
#include <nccl.h>
#endif

namespace autogemm::multi {

#ifdef AUTOGEMM_HAVE_NCCL

namespace {

using Rank = TpWorkspace::State::Rank;

// Makes every kernel of the plan (make_kernel_spec refuses a configuration the rules forbid, with
// the rule) and compiles and loads it on this rank's GPU, once per plan: before the call enqueues
// anything, and inside the rank's own check, so that a refusal reaches every rank. Loading a
// module can wait for the GPU to go idle (CUDA's lazy loading); a GPU whose streams already
// wait on flags that another GPU driven by the same thread has yet to enqueue never would: the
// hangs seen where a later step ran another kernel than the first (docs/decisions.md).
std::string ready_kernels(const TpPlan& plan, const Rank& r, const GpuInfo& device) {
  try {
    cuda_check(cudaSetDevice(r.device), "cudaSetDevice(tp prepare)");
    for (const TpStep& st : plan.steps)  // runtime::prepare keeps what it loaded
      if (st.config.instruction != Instruction::vendor)
        runtime::prepare(make_kernel_spec(multi::tp_launch_problem(plan.problem, st), st.config, device));
  } catch (const InvalidArgument& e) {
    return fmt::format("plan = {}: {}", e.value(), e.rule());
  } catch (const std::exception& e) {
    return fmt::format("plan = its kernels: {}", e.what());
  }
  return {};
}

// This rank's own check of its arguments: empty when they pass, else "argument = value: rule".
std::string own_check(const TpPlan& plan, const TpShards& shards, const Rank& r,
                      const TpWorkspace::State& ws) {
  const TpProblem& p = plan.problem;
  if (p.world != ws.world)
    return fmt::format("comm = {} ranks: the shards (plan) are for {} ranks", ws.world, p.world);
  if (!ws.fits(plan))
    return "workspace: made for another plan (TpWorkspace::fits): make one for this plan";
  struct Pointer {
    const char* name;
    const void* p;
    bool needed;
  };
  const bool gather_to_other = p.pattern == TpPattern::gather && r.rank != 0;
  const Pointer pointers[] = {{"a", shards.a, true},
                              {"b", shards.b, true},
                              {"d", gather_to_other ? nullptr : shards.d, !gather_to_other},
                              {"scale_a", shards.scale_a, tp_block_scaled(p)},
                              {"scale_b", shards.scale_b, tp_block_scaled(p)},
                              {"a_gathered", shards.a_gathered, false}};
  for (const Pointer& ptr : pointers) {
    if (!ptr.p) {
      if (ptr.needed) return fmt::format("{} = null: a device pointer is needed", ptr.name);
      continue;
    }
    cudaPointerAttributes attributes{};
    const cudaError_t e = cudaPointerGetAttributes(&attributes, ptr.p);
    if (e != cudaSuccess) (void)cudaGetLastError();
    if (e != cudaSuccess || attributes.type != cudaMemoryTypeDevice)
      return fmt::format("{} = {}: not device memory (cudaPointerGetAttributes)", ptr.name, ptr.p);
    if (attributes.device != r.device)
      return fmt::format("{} = {}: on GPU {}, but this rank runs on GPU {}", ptr.name, ptr.p,
                         attributes.device, r.device);
  }
  if (shards.a_gathered && p.pattern != TpPattern::all_gather)
    return fmt::format("a_gathered = {}: only all-gather gathers A", shards.a_gathered);
  int library = 0;
  (void)ncclGetVersion(&library);
  if (library / 100 != NCCL_VERSION_CODE / 100)
    return fmt::format("NCCL library = {}: autogemm was built with nccl.h {}, and the major and "
                       "minor versions must match", library, NCCL_VERSION_CODE);
  return {};
}

std::string shape_text(const TpRecord& r) {
  TpProblem p;
  p.pattern = TpPattern(r.pattern), p.world = int(r.world), p.m = r.m, p.n = r.n, p.k = r.k;
  const TpShardShapes s = tp_shard_shapes(p, int(r.rank));
  return fmt::format("{} of {}x{}x{} on {} ranks (A [{}, {}], B [{}, {}], D [{}, {}]), {}, "
                     "{} band(s)", to_string(p.pattern), r.m, r.n, r.k, r.world, s.a_rows,
                     s.a_cols, s.b_rows, s.b_cols, s.d_rows, s.d_cols,
                     to_string(TpTransport(r.transport)), r.bands);
}

// The same verdict on every rank: the first rank whose own check failed, else the first whose
// plan differs from rank 0's.
void judge(const std::vector<TpRecord>& all, int world) {
  for (int q = 0; q < world; ++q) {
    const TpRecord& r = all[std::size_t(q)];
    if (r.magic != multi::kTpRecordMagic)
      throw Error(fmt::format("rank {}: its agreement record is garbled (another autogemm "
                              "version, or not a tp_gemm call)", q));
    if (r.error[0] != 0) {
      const std::string error(r.error, strnlen(r.error, sizeof(r.error)));
      const auto at = error.find(" = ");
      const auto colon = error.find(": ", at == std::string::npos ? 0 : at);
      if (at != std::string::npos && colon != std::string::npos)
        throw InvalidArgument(fmt::format("rank {}: {}", q, error.substr(0, at)),
                              error.substr(at + 3, colon - at - 3), error.substr(colon + 2));
      throw InvalidArgument(fmt::format("rank {}", q), "arguments", error);
    }
  }
  const TpRecord& root = all[0];
  for (int q = 1; q < world; ++q) {
    const TpRecord& r = all[std::size_t(q)];
    if (r.plan_hash != root.plan_hash || r.m != root.m || r.n != root.n || r.k != root.k ||
        r.pattern != root.pattern || r.world != root.world)
      throw InvalidArgument(fmt::format("rank {}: shards", q), shape_text(r),
                            fmt::format("every rank must run the same plan; rank 0 runs {}{}",
                                        shape_text(root),
                                        r.plan_hash != root.plan_hash &&
                                                shape_text(r) == shape_text(root)
                                            ? " (same shapes, other kernels: plan with the same "
                                              "device and options on every rank)"
                                            : ""));
  }
}

// Every rank's record through an ncclAllGather on the workspace's side stream: the exchange
// where the ranks have no agreement board (no peer access: the NCCL transport).
std::vector<TpRecord> exchange_over_nccl(Rank& r, const TpRecord& mine, int world) {
  cuda_check(cudaSetDevice(r.device), "cudaSetDevice(tp agree)");
  char* slots = static_cast<char*>(r.records);
  cuda_check(cudaMemcpyAsync(slots + sizeof(TpRecord) * std::size_t(r.rank), &mine,
                             sizeof(TpRecord), cudaMemcpyHostToDevice, r.agree),
             "cudaMemcpy(tp record)");
  nccl_check(ncclAllGather(slots + sizeof(TpRecord) * std::size_t(r.rank), slots,
                           sizeof(TpRecord), ncclInt8, r.comm, r.agree),
             "ncclAllGather(tp records)");
  std::vector<TpRecord> all(static_cast<std::size_t>(world));
  cuda_check(cudaMemcpyAsync(all.data(), slots, sizeof(TpRecord) * all.size(),
                             cudaMemcpyDeviceToHost, r.agree), "cudaMemcpy(tp records)");
  cuda_check(cudaStreamSynchronize(r.agree), "cudaStreamSynchronize(tp records)");
  return all;
}

}  // namespace

TpRecord make_record(const TpPlan& plan, uint64_t hash, int rank, const std::string& error) {
  const TpProblem& p = plan.problem;
  TpRecord rec;
  rec.magic = multi::kTpRecordMagic;
  rec.plan_hash = hash;
  rec.world = p.world, rec.rank = rank, rec.pattern = int64_t(p.pattern);
  rec.m = p.m, rec.n = p.n, rec.k = p.k;
  rec.a_type = int64_t(p.a_type), rec.b_type = int64_t(p.b_type), rec.d_type = int64_t(p.d_type);
  rec.scaling = int64_t(p.scaling), rec.transport = int64_t(plan.transport), rec.bands = plan.bands;
  rec.nccl_header = NCCL_VERSION_CODE;
  int library = 0;
  (void)ncclGetVersion(&library);
  rec.nccl_library = library;
  std::strncpy(rec.error, error.c_str(), sizeof(rec.error) - 1);
  return rec;
}

std::vector<TpRecord> own_records(const TpPlan& plan, uint64_t hash,
                                  const std::vector<TpShards>& shards, TpWorkspace::State& ws,
                                  MultiGpuComm& comm) {
  std::vector<TpRecord> mine;
  bool ready = true;
  for (std::size_t i = 0; i < ws.ranks.size(); ++i) {
    std::string error = own_check(plan, shards[i], ws.ranks[i], ws);
    if (error.empty() && !ws.prepared.count(hash)) error = ready_kernels(plan, ws.ranks[i], comm.device(i));
    ready = ready && error.empty();
    mine.push_back(make_record(plan, hash, ws.ranks[i].rank, error));
  }
  if (ready) ws.prepared.insert(hash);
  return mine;
}

bool passed(const TpRecord& record) { return record.error[0] == 0; }

void agree(uint64_t hash, const std::vector<TpRecord>& mine, TpWorkspace::State& ws,
           MultiGpuComm& comm, bool capturing) {
  if (ws.one_process) {
    judge(mine, ws.world);
  } else if (capturing) {
    if (!passed(mine[0])) judge(mine, 1);
    if (!ws.agreed.count(hash))
      throw InvalidArgument("stream", "capturing a CUDA graph",
                            "every rank must agree on a plan before it is captured: call "
                            "tp_gemm once with this plan outside capture first");
    return;
  } else {
    MultiGpuComm::State& shared = comm.internal_state();
    const std::vector<TpRecord> all = shared.agreement
                                          ? shared.agreement->exchange(mine[0])
                                          : exchange_over_nccl(ws.ranks.front(), mine[0], ws.world);
    judge(all, ws.world);
  }
  ws.agreed.insert(hash);
}

#endif

bool any_capturing(const std::vector<cudaStream_t>& streams) {
  bool capturing = false;
  for (cudaStream_t s : streams) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cuda_check(cudaStreamIsCapturing(s, &status), "cudaStreamIsCapturing(tp)");
    capturing = capturing || status != cudaStreamCaptureStatusNone;
  }
  return capturing;
}

}  // namespace autogemm::multi
