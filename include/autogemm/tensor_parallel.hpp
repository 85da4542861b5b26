#pragma once
// Tensor-parallel GEMMs on the caller's shards (issue 54): every rank holds its slices of A and
// B, calls with its own communicator and stream, and gets its slice of D. D = A B^T, A stored
// M x K and B stored N x K (layout "nt", the nn.Linear weight), both K-contiguous.
//
//   pattern          A per rank       B per rank      D per rank    (G = ranks, r = this rank)
//   all_gather       [M/G, K]         [N/G, K]        [M, N/G]      column parallel after
//                    rows r*M/G..                                   sequence parallel
//   reduce_scatter   [M, K/G]         [N, K/G]        [M/G, N]      row parallel; rows r*M/G..
//   all_reduce       [M, K/G]         [N, K/G]        [M, N]        row parallel, D everywhere
//   gather           [M/G, K]         [N, K]          [M, N] on     data parallel over rows, D
//                    rows r*M/G..     (the whole)     rank 0 only   on rank 0 (the one-process
//                                                                   split's root output)
//
//   Topology links = topology_preset("nvlink", 4);                    // or measure_topology()
//   TpProblem p{TpPattern::all_gather, 4, 16384, 16384, 16384};
//   TpPlan plan = plan_tp(p, device_preset("h200"), links);          // no GPU needed
//   TpWorkspace ws(plan, comm);        // once: buffers, peer mappings, streams (collective)
//   tp_gemm(plan, {shards}, ws, comm, {streams});                    // every call
//
// How it runs (TpTransport::copy_engine, where every pair of ranks has peer access): one GEMM
// launch per row band on the caller's stream, ordered so that each band's operands arrive
// before it runs, and the copy engines move the bands between GPUs beside it, so no SM is taken
// from the GEMM. Each rank's workspace is mapped into every other rank (CUDA IPC handles
// exchanged over the communicator, once); a band's arrival is a 32-bit flag the sender's stream
// writes into the receiver's workspace after its copy, and the receiver's stream waits on
// (cuStreamWriteValue32 / cuStreamWaitValue32: no SM, no host). Flags are set to 1 and reset by
// their waiter, so a call is the same sequence of operations every time: capturable in a CUDA
// graph. Ranks without peer access (other nodes, PCIe without P2P) run the same API over NCCL
// collectives (TpTransport::nccl), unoverlapped.
//
//   all_gather: step i computes D rows of source s = r + i (mod G): its own shard first, while
//     the others' shards arrive in the order the steps need them.
//   reduce_scatter: a ring. Step i computes the partial sum of destination d = r - 1 - i into
//     a band-sized GEMM whose C is the partial the left neighbour sent (beta = 1); the last
//     step's destination is r itself and its GEMM writes D. Partial sums travel and are
//     accumulated in D's type (each of the G - 1 hops rounds once, as NCCL's ring
//     reduce-scatter of BF16 does); inside each GEMM the sum is FP32.
//   gather: every rank computes its rows; rank 0 into D, the others into their workspace, each
//     finished band copied into rank 0's workspace and from there into its D. D is packed.
//   all_reduce: the reduce-scatter ring into this rank's rows of D, each finished band copied
//     to every other rank. The ring runs in rounds (a round: every step over a group of bands),
//     so the copies of a round's finished rows overlap the next rounds' GEMMs instead of
//     trailing the last step.
//   One process driving every rank (TpOptions::one_process, the CLI): gather's and all_reduce's
//     finished bands go straight into the receivers' D (TpPlan::d_direct), with no workspace
//     stage and no local copy; across processes the caller's D is not mapped, so they are
//     staged.
//
// Every rank must agree on what runs: each call exchanges a small record (plan hash, shard
// shapes, each rank's own argument check) over the communicator before anything leaves a rank;
// a disagreement or a bad argument on any rank is an InvalidArgument on every rank naming the
// rank, the argument and the rule. A rank whose own check fails, and any rank at a plan's first
// call, launches nothing before the exchange. Across processes (copy engines) a plan every rank
// agreed on before starts its first launches during the exchange: they read the rank's own
// shards and write only its own memory (the workspace; all-gather: its own rows of D), so after
// a refusal there the other ranks' own GEMMs may have run. (During CUDA graph capture the
// exchange cannot run: the call must have been made once outside capture with the same plan.)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/multi_gpu.hpp"
#include "autogemm/problem.hpp"

namespace autogemm {

enum class TpPattern { all_gather, reduce_scatter, all_reduce, gather };
std::string_view to_string(TpPattern pattern);                 // "all-gather", ...
std::optional<TpPattern> parse_tp_pattern(std::string_view text);  // also "ag", "rs", "ar"

enum class TpTransport {
  copy_engine,  // peer mappings, copy engines, flags in memory; overlapped with the GEMMs
  nccl,         // NCCL collectives after (or before) one GEMM; any ranks
};
std::string_view to_string(TpTransport transport);                 // "copy-engine", "nccl"
std::optional<TpTransport> parse_tp_transport(std::string_view text);

// The whole GEMM the ranks compute together: D (M x N) = A (M x K) B^T (B: N x K).
struct TpProblem {
  TpPattern pattern = TpPattern::all_gather;
  int world = 1;                      // ranks in the communicator
  int64_t m = 0, n = 0, k = 0;        // the whole GEMM's sizes
  DType a_type = DType::bf16;         // bf16, fp16, or e4m3 with block scales
  DType b_type = DType::bf16;
  DType d_type = DType::bf16;         // bf16, fp16 or fp32 (the ring reduces in this type)
  Scaling scaling = Scaling::none;    // block_1x128_128x128 for e4m3: each rank's scales are
                                      // those of its own shards (quantize.hpp on the shard)
  // Leading dimensions of the shards as the caller stores them (elements; 0 = packed).
  int64_t lda = 0, ldb = 0, ldd = 0;
};

// The shapes one rank holds (rows x cols as stored, row-major).
struct TpShardShapes {
  int64_t a_rows = 0, a_cols = 0;
  int64_t b_rows = 0, b_cols = 0;
  int64_t d_rows = 0, d_cols = 0;
  int64_t d_row_offset = 0;           // reduce_scatter: rank's first row of the whole D
};
TpShardShapes tp_shard_shapes(const TpProblem& problem, int rank);

// The whole GEMM as one GPU would run it (packed, layout nt): the baseline a plan's speedup is
// over, and the reference every rank's block is checked against.
GemmProblem tp_whole_problem(const TpProblem& problem);

// Checks sizes, types and divisibility (InvalidArgument naming the field, value and rule):
// sizes >= 1, world >= 1, M divisible by world (every rank's rows the same, as
// torch.distributed's all_gather_into_tensor needs), N / world (all_gather) or K / world
// (reduce_scatter, all_reduce) whole 16-byte rows, 128s for block-scaled FP8.
void validate(const TpProblem& problem);

struct TpOptions {
  std::optional<TpTransport> transport;  // empty: copy_engine when every pair of the topology
                                         // has peer access, else nccl
  int bands = 0;                         // row bands per chunk (1..8); 0: the planner's choice
  int rounds = 0;                        // all_reduce: rounds of the ring (a divisor of the
                                         // bands); 0: the planner's choice; others: 1
  int64_t tail_rows = -1;                // copy engines: rows of a thin last band (a multiple
                                         // of 128), 0: even bands; -1: the planner's choice
  int merge_c_steps = -1;                // copy engines: the ring's steps that add partials
                                         // run each round's bands as one launch, C gated band
                                         // by band in the kernel (1), or a launch per band
                                         // (0); -1: the planner's choice
  bool one_process = false;              // one process drives every rank (the CLI; a C++
                                         // caller over the local GPUs): finished bands of D go
                                         // straight into the peers' D (TpPlan::d_direct)
};

// One GEMM launch of a rank's call.
struct TpStep {
  int step = 0;                       // 0 .. world-1
  int band = 0;                       // the first band this launch computes
  // Bands [band, band + bands) in one launch that raises a flag as each is finished
  // (GemmProblem::signal_bands; 1: a launch of its own): no kernel boundary between them. A
  // merged launch that reads C starts at once and waits inside the kernel for each band's
  // partial before loading it (GemmOperands::c_band_flags).
  int bands = 1;
  int64_t rows = 0;                   // the bands' rows (A rows read and D rows written)
  GemmConfig config;                  // forced: every rank runs exactly this
  bool reads_c = false;               // reduce_scatter ring: C = the left neighbour's partial
  bool a_from_caller = true;          // A rows from the caller's shard (lda), else from the
                                      // workspace (packed)
  bool d_to_caller = true;            // D rows into the caller's D (ldd), else a workspace
                                      // partial (packed)
  double predicted_us = 0;
};

struct TpPlan {
  TpProblem problem;
  GpuInfo device;                     // every rank is planned as this GPU
  Topology topology;
  TpTransport transport = TpTransport::copy_engine;
  int bands = 1;                      // row bands per chunk, the thin last one included
  // Rows of the last band when it is cut thinner than the others (0: even bands): the copy
  // after the last GEMM (all_reduce's last finished band, gather's trip to rank 0) is exposed,
  // and a thinner last band shortens it (docs/decisions.md, "Tensor-parallel transport").
  int64_t tail_rows = 0;
  // all_reduce: the ring runs `rounds` times over bands/rounds bands each, so the first
  // rounds' rows are final (and sent to the others) while the later rounds compute; 1 else.
  int rounds = 1;
  // Copy engines, gather and all_reduce with a packed D, planned for one process: each finished
  // band is copied straight into the receiving ranks' D (their stream first says their D is
  // free), not into their workspace and then D. The local copy it saves ran beside the GEMMs
  // and slowed them: all-reduce 8192 x 28672 x 8192 on 2 H200s 2928 -> 2885 us, gather
  // 2609 -> 2549 (docs/decisions.md, "Tensor-parallel transport").
  bool d_direct = false;
  std::vector<int64_t> band_rows;     // rows of each band of a rank's chunk, in order
  std::vector<TpStep> steps;          // the launches of one rank, in order (all ranks alike)
  double single_gpu_us = 0;           // the whole GEMM on one GPU (plan_gemm)
  double compute_us = 0;              // one rank's GEMMs back to back
  double link_gbps = 0;               // copy-engine rate assumed per sending GPU in this pattern
  double transfer_us = 0;             // one rank's sends (or the collective) alone
  double total_us = 0;                // predicted time of one call
  double exposed_us = 0;              // total - compute: communication not hidden
  std::string explanation;            // how total_us is made
  double speedup() const { return total_us > 0 ? single_gpu_us / total_us : 0; }
  // FNV-1a of everything every rank must agree on (problem, transport, bands, each step's
  // configuration); equal plans on every rank are what keeps NCCL and the flags from hanging.
  uint64_t hash() const;
  std::string describe() const;       // several lines: the choice and why
};

// The plan for `topology.gpus()` ranks (== problem.world) of `device`. Pure host code.
TpPlan plan_tp(const TpProblem& problem, const GpuInfo& device, const Topology& topology,
               const TpOptions& options = {});

// The copy-engine rate one GPU sends at while every GPU sends to one peer and receives from
// another (the all-gather rotation and the reduce-scatter ring), for a link of the topology:
// measured on H200s with NVLink 4 (docs/decisions.md, "Tensor-parallel transport").
double tp_copy_engine_gbps(const Link& link);

// One rank's pointers (device memory of that rank's GPU). FP8: scales as quantize.hpp writes
// them for the shard (A: a_rows x ceil(a_cols/128); B: ceil(b_rows/128) x ceil(b_cols/128)).
struct TpShards {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;                  // gather: rank 0's only (the others' may be null)
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  void* a_gathered = nullptr;         // all_gather only, optional: also write the whole A
                                      // (M x K, packed) here
};

// What a call needs kept between calls: per local rank, its mapped buffers, flag pads, an
// internal copy stream and events; made once per (plan shape, communicator). Creating one is a
// collective (every rank of the communicator must create it with an equal plan): it exchanges
// the IPC handles over NCCL. Memory per rank: all_gather (G-1) shards of A; reduce_scatter
// 2 (G-1) partial chunks of M/G x N; all_reduce those and G chunks more (none with d_direct).
class TpWorkspace {
 public:
  TpWorkspace(const TpPlan& plan, MultiGpuComm& comm);
  TpWorkspace(TpWorkspace&&) noexcept;
  TpWorkspace& operator=(TpWorkspace&&) noexcept;
  ~TpWorkspace();
  std::size_t bytes_per_rank() const;
  // True when `plan` runs on this workspace (same problem shape, transport, bands and d_direct).
  bool fits(const TpPlan& plan) const;

  struct State;
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

struct TpReport {
  TpTransport transport = TpTransport::copy_engine;
  int launches = 0;                   // GEMM launches per rank
};

// Runs `plan` on the local ranks of `comm`: shards[i] and streams[i] are local rank i's
// (streams empty: each device's legacy default stream). Asynchronous on the streams.
// Every argument is checked on every rank and the checks exchanged before anything is launched
// (TpPlan's comment above).
TpReport tp_gemm(const TpPlan& plan, const std::vector<TpShards>& shards, TpWorkspace& workspace,
                 MultiGpuComm& comm, const std::vector<cudaStream_t>& streams = {});

}  // namespace autogemm
