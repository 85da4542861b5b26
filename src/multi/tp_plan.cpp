// plan_tp (tensor_parallel.hpp): the launches of one rank and the time a call takes, simulated
// band by band from the one-GPU planner's predictions and the copy engines' measured rate.
#include "multi/tp_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/quantize.hpp"
#include "multi/comm_cost.hpp"
#include "plan/rules.hpp"

namespace autogemm {

namespace {

int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// A band's arrival is a flag written by the sender's stream after its copy and seen by the
// receiver's wait: a few microseconds of memory operations on both streams. An assumption the
// bench's predicted-against-measured line checks.
constexpr double kFlagHandoffUs = 4.0;

// The copy engines move a peer copy at this share of NVLink's per-direction figure when every
// GPU sends to one peer and receives from another (the rotation and the ring): see
// docs/decisions.md, "Tensor-parallel transport".
constexpr double kCopyEngineShareOfNvlink = 0.87;

// Beside running GEMMs a peer copy moves at this share of its idle rate: AUTOGEMM_TP_TRACE of
// all-reduce 16384^3 on 4 H200s moved 16 MB partials and D bands in ~50 us each (~320 GB/s)
// where the idle pairwise copy measured 392 GB/s. On 2 H200s copies both ways beside cuBLAS
// GEMMs keep 0.99 of idle (probes/copy_beside_gemm_probe.cu); kept for every G: the 2-GPU
// predictions it makes are within -1.7..-6.9% of the bench.
constexpr double kCopyShareBesideGemms = 0.82;

// A local copy's bytes read and written, as a share of the DRAM rate (local_copy_us).
constexpr double kLocalCopyDramShare = 0.81;

// A launch that first waits on a flag (cuStreamWaitValue32, then the reset write) starts this
// much after the previous one ends even when the flag is already set: ~6 us between a GEMM's
// end and the next band's "partial in" mark in the same traces.
constexpr double kFlagWaitUs = 6.0;

// A merged launch cuts its raster groups at the bands' ends (sm90/tile_scheduler.cuh): each
// group more than the uncut launch has sweeps B once more. The cost model hides B's DRAM time
// under the matrix time, but the sweeps are not free: step 0 of all-reduce 8192 x 28672 x 8192
// on 2 H200s (4096 x 28672 x 4096, 128x256x64 g8: 1024-row groups) took 1346 us cut into 9
// bands (5 more groups) and 1245 us as reduce-scatter's 2 bands of 2048 rows (none more), beside
// the same partial copies: 20 us a group, 0.41 of B's 235 MB at the DRAM rate.
constexpr double kCutGroupShareOfB = 0.41;

// A launch of several bands that reads partials (C gated band by band in the kernel) beside the
// launch per band it replaces: on 2 H200s the replacement ran 18-58 us slower than this model
// priced it on 5 of 6 rows (reduce-scatter 8192 x 28672 x 8192 2596 -> 2635 us where -19 us was
// priced; all-reduce 16384^3 ran 45 us faster than priced): the median, 28 us.
constexpr double kGatedLaunchUs = 28.0;

// Every launch after the first: the previous kernel's last wave drains and this one's pipeline
// fills with no overlap. The 1024-row bands of all-reduce 8192 x 28672 x 8192 on 2 H200s ran
// back to back 5-9 us over their one-GPU predictions (AUTOGEMM_TP_TRACE, docs/decisions.md).
constexpr double kLaunchGapUs = 8.0;

// Across processes a call first agrees on its plan with every rank, then enqueues its launches:
// over NCCL its first GEMM starts after the exchange, ~160 us after the call (all-reduce 8192 x
// 28672 x 8192 under torchrun on 2 H200s, AUTOGEMM_TP_TRACE: agreed at ~105 us), which a
// synchronised caller waits out. On copy engines a plan agreed before starts its local head
// while the ranks exchange (tp_exec.cpp): its first GEMM ~30 us after the call (the same trace:
// 22-33 us later than back to back). One process agrees in memory and its bench opens a gate
// once everything is enqueued: nothing.
constexpr double kProcessPerRankStartUs = 160.0;
constexpr double kProcessPerRankEarlyStartUs = 30.0;

bool fp8(const TpProblem& p) { return multi::tp_block_scaled(p); }

// "4 band(s) of 1024 rows", or with a thin last band "5 bands of 1024/1024/1024/768/256 rows".
std::string describe_cut(const std::vector<multi::Range>& cut) {
  bool even = true;
  for (const multi::Range& r : cut) even = even && r.size() == cut.front().size();
  if (even) return fmt::format("{} band(s) of {} rows", cut.size(), cut.front().size());
  std::string rows;
  for (const multi::Range& r : cut) rows += fmt::format("{}{}", rows.empty() ? "" : "/", r.size());
  return fmt::format("{} bands of {} rows", cut.size(), rows);
}

}  // namespace

std::string_view to_string(TpPattern pattern) {
  switch (pattern) {
    case TpPattern::all_gather: return "all-gather";
    case TpPattern::reduce_scatter: return "reduce-scatter";
    case TpPattern::all_reduce: return "all-reduce";
    case TpPattern::gather: return "gather";
  }
  return "?";
}

std::optional<TpPattern> parse_tp_pattern(std::string_view text) {
  if (text == "all-gather" || text == "ag") return TpPattern::all_gather;
  if (text == "reduce-scatter" || text == "rs") return TpPattern::reduce_scatter;
  if (text == "all-reduce" || text == "ar") return TpPattern::all_reduce;
  if (text == "gather") return TpPattern::gather;
  return std::nullopt;
}

std::string_view to_string(TpTransport transport) {
  return transport == TpTransport::copy_engine ? "copy-engine" : "nccl";
}

std::optional<TpTransport> parse_tp_transport(std::string_view text) {
  if (text == "copy-engine" || text == "ce") return TpTransport::copy_engine;
  if (text == "nccl") return TpTransport::nccl;
  return std::nullopt;
}

TpShardShapes tp_shard_shapes(const TpProblem& p, int rank) {
  const int g = std::max(1, p.world);
  TpShardShapes s;
  if (p.pattern == TpPattern::all_gather) {
    s.a_rows = p.m / g, s.a_cols = p.k;
    s.b_rows = p.n / g, s.b_cols = p.k;
    s.d_rows = p.m, s.d_cols = p.n / g;
  } else if (p.pattern == TpPattern::gather) {
    s.a_rows = p.m / g, s.a_cols = p.k;
    s.b_rows = p.n, s.b_cols = p.k;
    s.d_rows = rank == 0 ? p.m : 0, s.d_cols = p.n;
  } else {
    s.a_rows = p.m, s.a_cols = p.k / g;
    s.b_rows = p.n, s.b_cols = p.k / g;
    const bool scattered = p.pattern == TpPattern::reduce_scatter;
    s.d_rows = scattered ? p.m / g : p.m, s.d_cols = p.n;
    s.d_row_offset = scattered ? int64_t(rank) * (p.m / g) : 0;
  }
  return s;
}

GemmProblem tp_whole_problem(const TpProblem& p) {
  GemmProblem whole;
  whole.m = p.m, whole.n = p.n, whole.k = p.k;
  whole.a_type = p.a_type, whole.b_type = p.b_type, whole.d_type = p.d_type;
  whole.scaling = p.scaling;
  return whole;
}

void validate(const TpProblem& p) {
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) throw InvalidArgument(name, std::to_string(v), "must be >= 1");
  };
  positive("m", p.m), positive("n", p.n), positive("k", p.k), positive("world", p.world);
  const bool sixteen_bit = (p.a_type == DType::bf16 || p.a_type == DType::fp16) &&
                           p.b_type == p.a_type && p.scaling == Scaling::none;
  const bool block_fp8 = p.a_type == DType::e4m3 && p.b_type == DType::e4m3 &&
                         p.scaling == Scaling::block_1x128_128x128;
  if (!sixteen_bit && !block_fp8)
    throw InvalidArgument("types", fmt::format("{} x {} ({})", to_string(p.a_type),
                                               to_string(p.b_type), to_string(p.scaling)),
                          "tensor-parallel GEMMs take bf16 x bf16, fp16 x fp16, or e4m3 x e4m3 "
                          "with 1x128 / 128x128 block scales");
  if (p.d_type != DType::bf16 && p.d_type != DType::fp16 && p.d_type != DType::fp32)
    throw InvalidArgument("d_type", std::string(to_string(p.d_type)), "D is bf16, fp16 or fp32");
  const int g = p.world;
  if (p.m % g != 0)
    throw InvalidArgument("m", std::to_string(p.m),
                          fmt::format("every one of the {} ranks holds M / world rows, so M must "
                                      "be a multiple of {}", g, g));
  const int in_bytes = dtype_bytes(p.a_type);
  if (p.pattern == TpPattern::gather) {
    if (p.ldd != 0 && p.ldd != p.n)
      throw InvalidArgument("ldd", std::to_string(p.ldd),
                            fmt::format("gather writes rank 0's D packed (the other ranks' rows "
                                        "arrive as whole runs): 0 or N = {}", p.n));
  } else if (p.pattern == TpPattern::all_gather) {
    if (p.n % g != 0)
      throw InvalidArgument("n", std::to_string(p.n),
                            fmt::format("all-gather gives each rank N / world columns of the "
                                        "weight; N must be a multiple of {}", g));
  } else {
    const int64_t granule = block_fp8 ? kFp8ScaleGroup : std::max<int64_t>(1, 16 / in_bytes);
    if (p.k % (g * granule) != 0)
      throw InvalidArgument(
          "k", std::to_string(p.k),
          block_fp8 ? fmt::format("each rank's K / world must hold whole 128-element scale "
                                  "groups: K must be a multiple of {}", g * granule)
                    : fmt::format("each rank's K / world rows must be whole 16-byte chunks for "
                                  "TMA: K must be a multiple of {}", g * granule));
  }
  const TpShardShapes s = tp_shard_shapes(p, 0);
  auto leading = [](const char* name, int64_t ld, int64_t row) {
    if (ld != 0 && ld < row)
      throw InvalidArgument(name, std::to_string(ld),
                            fmt::format("a shard's leading dimension is at least its row of {} "
                                        "elements", row));
  };
  leading("lda", p.lda, s.a_cols), leading("ldb", p.ldb, s.b_cols), leading("ldd", p.ldd, s.d_cols);
}

namespace multi {

std::vector<Range> tp_bands(int64_t chunk_rows, int bands, int64_t tail_rows) {
  std::vector<Range> out;
  for (const Range& r : split_range({0, chunk_rows}, std::max(1, bands), kTpBandGranule))
    if (r.size() > 0) out.push_back(r);
  if (tail_rows > 0 && !out.empty() && out.back().size() > tail_rows) {
    const int64_t end = out.back().end;
    out.back().end = end - tail_rows;
    out.push_back({end - tail_rows, end});
  }
  return out;
}

std::vector<Range> tp_plan_bands(const TpPlan& plan) {
  const int64_t chunk = plan.transport == TpTransport::nccl ? 0 : tp_chunk_rows(plan.problem);
  std::vector<Range> cut;
  int64_t at = 0;
  for (const int64_t rows : plan.band_rows) {
    cut.push_back({at, at + rows});
    at += rows;
  }
  if (int(cut.size()) != plan.bands || (chunk > 0 && at != chunk))
    throw InvalidArgument("plan.band_rows", fmt::format("{} bands of {} rows in all", cut.size(), at),
                          fmt::format("a plan cuts each rank's chunk of {} rows into its {} bands",
                                      chunk, plan.bands));
  return cut;
}

int64_t tp_chunk_rows(const TpProblem& p) { return p.m / std::max(1, p.world); }

GemmProblem tp_launch_problem(const TpProblem& p, const TpStep& step) {
  const TpShardShapes s = tp_shard_shapes(p, 0);
  GemmProblem q;
  q.m = step.rows;
  q.n = p.pattern == TpPattern::all_gather ? s.d_cols : p.n;  // gather: s.d_cols = N
  q.k = s.a_cols;
  q.a_type = p.a_type, q.b_type = p.b_type, q.d_type = p.d_type;
  q.scaling = p.scaling;
  q.layout = Layout::nt;
  q.lda = step.a_from_caller && p.lda ? p.lda : q.k;
  q.ldb = p.ldb ? p.ldb : q.k;
  q.ldd = step.d_to_caller && p.ldd ? p.ldd : q.n;
  q.reads_c = step.reads_c;
  q.ldc = step.reads_c ? q.n : 0;  // C: a partial in the workspace, packed
  q.signal_bands = step.bands > 1 ? step.bands : 0;
  return q;
}

TpLayout tp_layout(const TpProblem& p, TpTransport transport, bool d_direct) {
  const int g = p.world;
  const int64_t rows = tp_chunk_rows(p);
  const TpShardShapes s = tp_shard_shapes(p, 0);
  TpLayout l;
  int64_t at = 0;
  auto region = [&at](int64_t bytes) {
    const int64_t start = at;
    at += align256(bytes);
    return start;
  };
  if (p.pattern == TpPattern::gather) {
    // The other ranks compute into `send`; rank 0 receives their rows in its D slots (NCCL:
    // straight into D).
    l.part_bytes = rows * p.n * dtype_bytes(p.d_type);
    l.send = region(l.part_bytes);
    if (transport == TpTransport::copy_engine && !d_direct) l.d_slots = region(g * l.part_bytes);
  } else if (p.pattern == TpPattern::all_gather) {
    l.a_slot_bytes = rows * s.a_cols * dtype_bytes(p.a_type);
    l.a_scale_slot_bytes = fp8(p) ? rows * multi::tp_scale_blocks(s.a_cols) * 4 : 0;
    // Slots lie back to back: the NCCL transport gathers into them as one [M, K] tensor.
    l.a_slots = region(g * l.a_slot_bytes);
    l.a_scale_slots = region(g * l.a_scale_slot_bytes);
  } else {
    l.part_bytes = rows * p.n * dtype_bytes(p.d_type);
    if (transport == TpTransport::nccl) {
      l.send = region(g * l.part_bytes);  // the whole [M, N] partial, reduced by NCCL
    } else {
      l.send = region((g - 1) * l.part_bytes);
      l.recv = region((g - 1) * l.part_bytes);
      if (p.pattern == TpPattern::all_reduce && !d_direct) l.d_slots = region(g * l.part_bytes);
    }
  }
  l.total = std::max<int64_t>(at, 256);
  return l;
}

}  // namespace multi

double tp_copy_engine_gbps(const Link& link) {
  if (link.kind == LinkKind::self) return std::numeric_limits<double>::infinity();
  // A measured link is already a copy-engine peer copy (measure_topology: "measured: ...").
  if (link.source.rfind("measured", 0) == 0) return link.bandwidth_gbps;
  return link.kind == LinkKind::nvlink ? link.bandwidth_gbps * kCopyEngineShareOfNvlink
                                       : link.bandwidth_gbps;
}

namespace {

using multi::Range;

bool every_pair_has_peer_access(const Topology& t) {
  for (int i = 0; i < t.gpus(); ++i)
    for (int j = 0; j < t.gpus(); ++j)
      if (i != j && !t.links[i][j].peer_access) return false;
  return true;
}

double slowest_copy_engine_gbps(const Topology& t) {
  double gbps = std::numeric_limits<double>::infinity();
  for (int i = 0; i < t.gpus(); ++i)
    for (int j = 0; j < t.gpus(); ++j)
      if (i != j) gbps = std::min(gbps, tp_copy_engine_gbps(t.links[i][j]));
  return gbps;
}

// Which steps of a copy-engine plan run their bands as one launch (TpPricer::copy_engine).
enum class TpMerge {
  none,                       // a launch per band
  steps_waiting_for_nothing,  // the ring's first step, gather's one: their bands wait for nothing
  every_step,                 // those and the ring's later steps, C gated band by band in the kernel
};

class TpPricer {
 public:
  // one_process: every rank's D is addressable here (TpOptions::one_process).
  TpPricer(const TpProblem& p, const GpuInfo& device, const Topology& t, bool one_process)
      : p_(p), device_(device), t_(t), g_(p.world),
        rate_(slowest_copy_engine_gbps(t) * kCopyShareBesideGemms),
        d_direct_(one_process && (p.pattern == TpPattern::gather ||
                                  (p.pattern == TpPattern::all_reduce && packed_d()))) {}

  // `rounds` must divide the bands the chunk is cut into (else the caller skips it).
  // `tail_rows` > 0: the last band's final rows run as a band of their own (tp_bands).
  // `merge`: which steps run their bands (of a round) as one launch that signals each band
  // (TpStep::bands).
  TpPlan copy_engine(const std::vector<Range>& cut, int64_t tail_rows, int rounds, TpMerge merge) {
    TpPlan plan = base(TpTransport::copy_engine);
    plan.bands = int(cut.size());
    for (const Range& r : cut) plan.band_rows.push_back(r.size());
    band_rows_ = plan.band_rows;
    plan.tail_rows = tail_rows;
    plan.rounds = rounds;
    plan.d_direct = d_direct_;
    plan.link_gbps = rate_;
    const bool gather = p_.pattern == TpPattern::all_gather;
    const bool to_root = p_.pattern == TpPattern::gather;
    const int per_round = plan.bands / rounds;
    // Launches, in the order one rank runs them: round by round, step by step, band by band
    // (gather: one step, the rank's own rows; rank 0 writes D, the others their workspace,
    // one launch problem since D is packed).
    for (int round = 0; round < rounds; ++round)
      for (int step = 0; step < (to_root ? 1 : g_); ++step) {
        const int lo = round * per_round, hi = (round + 1) * per_round;
        TpStep s;
        s.step = step;
        s.reads_c = !gather && !to_root && step > 0;
        s.a_from_caller = !gather || step == 0;  // all-gather: later steps read gathered A
        // The ring's earlier steps write partials; gather's D is packed either way.
        s.d_to_caller = gather || to_root || step == g_ - 1;
        // A ring step that reads partials merges only with TpMerge::every_step: it waits
        // inside the kernel for each band's (GemmOperands::c_band_flags). (Waiting on the
        // stream for its last band first measured slower than a launch per band: all-reduce
        // 8192 x 28672 x 8192 on 2 H200s 2885 -> 2916-2961 us.) All-gather's bands signal
        // nothing (its D stays on the rank) and its later steps wait for A, which the kernel
        // does not gate.
        const bool merged = merge == TpMerge::every_step ||
                            (merge == TpMerge::steps_waiting_for_nothing && !s.reads_c);
        const int merged_end = !merged || gather ? lo : hi;
        if (merged_end - lo >= 2 && add_launch(plan, s, cut, lo, merged_end)) {
          for (int b = merged_end; b < hi; ++b) add_launch(plan, s, cut, b, b + 1);
        } else {
          for (int b = lo; b < hi; ++b) add_launch(plan, s, cut, b, b + 1);
        }
      }
    slow_for_copies(plan);
    for (const TpStep& s : plan.steps) plan.compute_us += s.predicted_us;
    if (gather) simulate_gather(plan, cut);
    else if (to_root) simulate_to_root(plan, cut);
    else simulate_ring(plan, cut);
    plan.exposed_us = std::max(0.0, plan.total_us - plan.compute_us);
    return plan;
  }

  TpPlan nccl() {
    TpPlan plan = base(TpTransport::nccl);
    plan.bands = 1;
    plan.link_gbps = t_.ring_bandwidth_gbps();
    const bool gather = p_.pattern == TpPattern::all_gather;
    const bool to_root = p_.pattern == TpPattern::gather;
    TpStep s;
    s.rows = to_root ? multi::tp_chunk_rows(p_) : p_.m;
    // all_gather reads the gathered A from the workspace; the others write the whole partial
    // there (reduce_scatter) or into D (all_reduce, reduced in place when D is packed).
    s.a_from_caller = !gather;
    s.d_to_caller = gather || to_root || (p_.pattern == TpPattern::all_reduce && packed_d());
    const Candidate& best = *launch(s);
    s.config = best.config;
    s.predicted_us = best.prediction.time_us;
    plan.steps.push_back(s);
    plan.band_rows = {s.rows};
    plan.compute_us = s.predicted_us;
    const double d_bytes = double(p_.m) * p_.n * dtype_bytes(p_.d_type);
    switch (p_.pattern) {
      case TpPattern::all_gather:
        plan.transfer_us = multi::ring_all_gather_us(a_bytes(p_.m), t_); break;
      case TpPattern::reduce_scatter:
        plan.transfer_us = multi::ring_reduce_scatter_us(d_bytes, t_); break;
      case TpPattern::all_reduce: plan.transfer_us = multi::ring_all_reduce_us(d_bytes, t_); break;
      case TpPattern::gather:  // rank 0 receives every other rank's rows
        plan.transfer_us = multi::transfer_us(d_bytes * (g_ - 1) / g_, t_.ring_bandwidth_gbps());
        break;
    }
    plan.total_us = plan.compute_us + plan.transfer_us;
    plan.exposed_us = plan.transfer_us;
    plan.explanation = fmt::format(
        "NCCL {} of {:.0f} MB {} one GEMM of {:.0f} us, not overlapped: NCCL's kernels would "
        "hold SMs the GEMM needs; {:.0f} us over the ring at {:.0f} GB/s",
        to_string(p_.pattern), (gather ? a_bytes(p_.m) : d_bytes) / 1e6,
        gather ? "before" : "after", plan.compute_us, plan.transfer_us, plan.link_gbps);
    return plan;
  }

 private:
  bool packed_d() const { return p_.ldd == 0 || p_.ldd == p_.n; }

  TpPlan base(TpTransport transport) const {
    TpPlan plan;
    plan.problem = p_;
    plan.device = device_;
    plan.topology = t_;
    plan.transport = transport;
    return plan;
  }

  // Launch `s` of bands [first, end) of the cut, appended to the plan with its configuration:
  // the planner's best for its one-GPU problem whose cluster tiles divide each band (a merged
  // launch signals whole bands). False, and nothing appended, when a merged one has none.
  bool add_launch(TpPlan& plan, TpStep s, const std::vector<Range>& cut, int first, int end) {
    s.band = first, s.bands = end - first;
    if (s.bands > kMaxSignalBands) return false;
    s.rows = cut[end - 1].end - cut[first].begin;
    const Candidate* best = launch(s);
    if (!best) return false;
    s.config = best->config;
    s.predicted_us = best->prediction.time_us;
    plan.steps.push_back(s);
    return true;
  }

  // Every launch's prediction with the copies' DRAM traffic taken from its DRAM time, the flag
  // wait before it (kFlagWaitUs) and the gap after the launch before it (kLaunchGapUs). Each
  // copy reads its source and writes its destination (a local copy both on one GPU); their
  // bytes, spread over the launches by rows, move at the DRAM rate the cost model gave the
  // launch (its dram_bytes over its memory_us), and a launch whose DRAM time then exceeds its
  // matrix time slows by the excess.
  void slow_for_copies(TpPlan& plan) {
    const int64_t chunk = multi::tp_chunk_rows(p_);
    double copy_bytes = 0;  // DRAM bytes one rank's copies read and write per call
    if (p_.pattern == TpPattern::gather) {  // rank 0's: others' rows in (then read and written)
      copy_bytes = (d_direct_ ? 1 : 3) * (g_ - 1) * part_bytes(chunk);
    } else if (p_.pattern == TpPattern::all_gather) {
      copy_bytes = 2 * (g_ - 1) * a_bytes(chunk);  // shards read out and written in
    } else {
      copy_bytes = 2 * (g_ - 1) * part_bytes(chunk);  // partials out and in
      if (p_.pattern == TpPattern::all_reduce)  // D bands out and in (then in D: read, write)
        copy_bytes += (d_direct_ ? 2 : 4) * (g_ - 1) * part_bytes(chunk);
    }
    double rows = 0;
    for (const TpStep& s : plan.steps) rows += double(s.rows);
    for (std::size_t i = 0; i < plan.steps.size(); ++i) {
      TpStep& s = plan.steps[i];
      const Prediction& q = launch_prediction(s);
      const double copy_bytes_of_launch = copy_bytes * double(s.rows) / rows;
      const double copy_us_of_launch =
          q.dram_bytes > 0 ? copy_bytes_of_launch * q.memory_us / q.dram_bytes : 0.0;
      const double busiest = std::max(q.compute_us, q.memory_us);
      s.predicted_us += std::max(0.0, q.memory_us + copy_us_of_launch - busiest);
      const bool waits = p_.pattern == TpPattern::all_gather ? s.step > 0 : s.reads_c;
      if (waits) s.predicted_us += kFlagWaitUs;
      if (s.reads_c && s.bands > 1) s.predicted_us += kGatedLaunchUs;
      if (i > 0) s.predicted_us += kLaunchGapUs;
    }
  }

  // Bytes of `rows` rows of A with their scales.
  double a_bytes(int64_t rows) const {
    const TpShardShapes s = tp_shard_shapes(p_, 0);
    double bytes = double(rows) * s.a_cols * dtype_bytes(p_.a_type);
    if (fp8(p_)) bytes += double(rows) * multi::tp_scale_blocks(s.a_cols) * 4;
    return bytes;
  }
  double part_bytes(int64_t rows) const { return double(rows) * p_.n * dtype_bytes(p_.d_type); }
  double send_us(double bytes) const { return multi::transfer_us(bytes, rate_); }
  // A copy inside one GPU (workspace to D): a copy engine reads and writes at this share of
  // the DRAM rate (probes/copy_engine_probe.cu, H200: 64 MB in 34.6 us, 1.94 TB/s copied =
  // 0.81 of 4.8 TB/s moved; 40.1 us while a kernel held every SM: no SM needed).
  double local_copy_us(double bytes) const {
    return multi::transfer_us(2 * bytes, device_.memory_bandwidth_gbps * kLocalCopyDramShare);
  }
  // A receiver's copies of one band of each of the G - 1 others' rows from its workspace into
  // its D: none when they arrive in D (d_direct).
  double staged_copy_us(double bytes) const {
    return d_direct_ ? 0.0 : (g_ - 1) * local_copy_us(bytes);
  }

  // The configuration of a launch: the planner's best for its one-GPU problem; a merged one
  // (several bands of the cut being priced) only where that configuration's cluster tiles
  // divide every band, priced with the B sweeps its cut raster groups add
  // (kCutGroupShareOfB); null where they do not. (Searching the other candidates for one that
  // divides the bands picked ungrouped rasters, whose B sweeps the model does not see: 16384^3
  // all-reduce on 2 H200s 6938 us against 5952-6122 unmerged.)
  const Candidate* launch(const TpStep& step) {
    const GemmProblem q = multi::tp_launch_problem(p_, step);
    std::vector<int64_t> rows;
    for (int b = step.band; step.bands > 1 && b < step.band + step.bands; ++b)
      rows.push_back(band_rows_[std::size_t(b)]);
    const auto key = std::make_tuple(q.m, q.lda, q.ldd, q.reads_c, rows);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      std::optional<Candidate> pick = plan_gemm(q, device_).best();
      if (!rows.empty()) {
        const GemmConfig& c = pick->config;
        const int64_t cluster_rows = plan::signal_band_rows(c);
        const int64_t group_rows = cluster_rows * std::max(1, c.raster_group);
        bool whole = c.instruction != Instruction::vendor;
        int64_t groups = 0;  // raster groups once cut at the bands' ends
        for (const int64_t r : rows) {
          whole = whole && r % cluster_rows == 0;
          groups += (r + group_rows - 1) / group_rows;
        }
        const double sweep_us = double(q.n) * q.k * dtype_bytes(q.b_type) /
                                (device_.memory_bandwidth_gbps * 1e3) * kCutGroupShareOfB;
        if (whole) pick->prediction.time_us += double(groups - (q.m + group_rows - 1) / group_rows) * sweep_us;
        else pick.reset();
      }
      it = cache_.emplace(key, pick).first;
    }
    return it->second ? &*it->second : nullptr;
  }
  const Prediction& launch_prediction(const TpStep& s) { return launch(s)->prediction; }

  // When band b of launch s (started at `start`) is finished: its tiles run band by band
  // (sm90/tile_scheduler.cuh), so at the launch's rate over the rows up to the band's end.
  static double band_finished(const TpStep& s, const std::vector<Range>& cut, int b, double start) {
    const double rows_done = double(cut[b].end - cut[s.band].begin);
    return start + s.predicted_us * rows_done / double(s.rows);
  }

  // When each band of the ring's launch s (the previous launch ended at t) is finished. A launch
  // of one band starts once its partial is here. A merged launch that reads partials starts at
  // once and gates each band's C inside the kernel (c_band_flags): its tiles run band by band,
  // and a band whose partial comes late holds one wave of tiles at their C load, so it ends at
  // least the rest of its tiles after the partial's arrival. `waited` adds the time lost.
  std::vector<double> ring_band_finish(const TpStep& s, const std::vector<Range>& cut,
                                       const std::vector<double>& arrival, double t,
                                       double& waited) {
    std::vector<double> finish;
    if (s.step == 0 || s.bands == 1) {
      const double start = s.step > 0 ? std::max(t, arrival[std::size_t(s.band)]) : t;
      waited += start - t;
      for (int b = s.band; b < s.band + s.bands; ++b) finish.push_back(band_finished(s, cut, b, start));
      return finish;
    }
    const Prediction& q = launch_prediction(s);
    const double wave_us = s.predicted_us / double(std::max<int64_t>(1, q.waves));
    double done = t;
    for (int b = s.band; b < s.band + s.bands; ++b) {
      const double band_us = s.predicted_us * double(cut[b].size()) / double(s.rows);
      const double paced = done + band_us;
      const double gated = arrival[std::size_t(b)] + std::max(0.0, band_us - wave_us) + kFlagHandoffUs;
      waited += std::max(0.0, gated - paced);
      done = std::max(paced, gated);
      finish.push_back(done);
    }
    return finish;
  }

  // Source s = r + i sends its shard to r as the i-th of its pushes (it serves r - 1 first,
  // then r - 2, ...): so band b of step i arrives after i - 1 whole shards and b + 1 bands.
  void simulate_gather(TpPlan& plan, const std::vector<Range>& cut) {
    const int bands = int(cut.size());
    std::vector<double> band_send(bands);
    double shard_send = 0;
    for (int b = 0; b < bands; ++b) shard_send += band_send[b] = send_us(a_bytes(cut[b].size()));
    plan.transfer_us = (g_ - 1) * shard_send;
    double t = 0, first_wait = 0;
    for (const TpStep& s : plan.steps) {
      double start = t;
      if (s.step > 0) {
        double arrival = (s.step - 1) * shard_send + kFlagHandoffUs;
        for (int b = 0; b <= s.band; ++b) arrival += band_send[b];
        if (arrival > t && first_wait == 0) first_wait = arrival - t;
        start = std::max(t, arrival);
      }
      t = start + s.predicted_us;
    }
    plan.total_us = t + kFlagHandoffUs;
    plan.explanation = fmt::format(
        "copy engines gather A while the GEMMs run: {} steps x {}, {:.0f} us "
        "of GEMMs back to back on all SMs; each rank sends its {:.0f} MB shard to {} peers in "
        "turn at {:.0f} GB/s ({:.0f} us per shard), each band before the step that needs it; "
        "{:.0f} us exposed{}",
        g_, describe_cut(cut), plan.compute_us, a_bytes(multi::tp_chunk_rows(p_)) / 1e6,
        g_ - 1, rate_, shard_send, std::max(0.0, t + kFlagHandoffUs - plan.compute_us),
        first_wait > 0 ? fmt::format(" (the first wait for a band: {:.0f} us)", first_wait) : "");
  }

  // Gather: every rank computes its bands back to back; the others' finished bands all go to
  // rank 0, whose NVLink ingress takes them one after the other (G - 1 bands at a time), and
  // rank 0 copies each from its workspace into D.
  void simulate_to_root(TpPlan& plan, const std::vector<Range>& cut) {
    double t = 0, ingress_free = 0, copy_end = 0;
    for (const TpStep& s : plan.steps) {
      const double start = t;
      t += s.predicted_us;
      for (int b = s.band; b < s.band + s.bands; ++b) {
        const double bytes = part_bytes(cut[b].size());
        const double finished = band_finished(s, cut, b, start);
        ingress_free = std::max(ingress_free, finished) + (g_ - 1) * send_us(bytes);
        plan.transfer_us += (g_ - 1) * send_us(bytes);
        copy_end = std::max(copy_end, ingress_free + kFlagHandoffUs) + staged_copy_us(bytes);
      }
    }
    plan.total_us = std::max(t, copy_end) + kFlagHandoffUs;
    plan.explanation = fmt::format(
        "every rank computes its {} rows in {}, {:.0f} us of GEMMs; the other {} ranks' "
        "finished bands go to rank 0 on the copy engines ({:.0f} MB in all through its NVLink "
        "at {:.0f} GB/s) {}; {:.0f} us exposed",
        multi::tp_chunk_rows(p_), describe_cut(cut), plan.compute_us, g_ - 1,
        (g_ - 1) * part_bytes(multi::tp_chunk_rows(p_)) / 1e6, rate_,
        d_direct_ ? "straight into its D" : "into its workspace, then copied into its D",
        std::max(0.0, plan.total_us - plan.compute_us));
  }

  // The ring: band b of step i needs band b of the left neighbour's step i - 1 (every rank
  // runs in step with the others); each finished partial band is sent right at once, and
  // (all_reduce) each finished band of this rank's rows to the G - 1 others. A rank's sends
  // share its NVLink egress: they are priced one after the other in the order they are ready.
  // The receivers copy each finished band from their workspace into D.
  void simulate_ring(TpPlan& plan, const std::vector<Range>& cut) {
    const int bands = int(cut.size());
    const bool all_reduce = p_.pattern == TpPattern::all_reduce;
    std::vector<double> arrival(bands, 0.0);
    double t = 0, egress_free = 0, waited = 0, copy_end = 0;
    for (const TpStep& s : plan.steps) {
      const std::vector<double> finish = ring_band_finish(s, cut, arrival, t, waited);
      t = finish.back();
      for (int b = s.band; b < s.band + s.bands; ++b) {
        const double bytes = part_bytes(cut[b].size());
        const double finished = finish[std::size_t(b - s.band)];
        if (s.step < g_ - 1) {
          egress_free = std::max(egress_free, finished) + send_us(bytes);
          arrival[b] = egress_free + kFlagHandoffUs;
          plan.transfer_us += send_us(bytes);
        } else if (all_reduce) {
          egress_free = std::max(egress_free, finished) + (g_ - 1) * send_us(bytes);
          plan.transfer_us += (g_ - 1) * send_us(bytes);
          copy_end = std::max(copy_end, egress_free + kFlagHandoffUs) + staged_copy_us(bytes);
        }
      }
    }
    const double end = std::max(t, copy_end);
    const std::string tail =
        all_reduce ? fmt::format("; every finished band of D goes to the {} others ({:.0f} MB "
                                 "at {:.0f} GB/s, {} round(s) of the ring: a round's copies "
                                 "overlap the next rounds' GEMMs) {}",
                                 g_ - 1, (g_ - 1) * part_bytes(multi::tp_chunk_rows(p_)) / 1e6,
                                 rate_, plan.rounds,
                                 d_direct_ ? "straight into their D"
                                           : "into their workspace, then copied into their D")
                   : std::string();
    plan.total_us = end + kFlagHandoffUs;
    plan.explanation = fmt::format(
        "a ring of {} steps x {}: each GEMM adds the partial sum its left "
        "neighbour sent (C, beta = 1) and its result goes right on the copy engines ({:.0f} MB "
        "per step at {:.0f} GB/s); {:.0f} us of GEMMs, {:.0f} us waiting for partials{}; "
        "{:.0f} us exposed",
        g_, describe_cut(cut), rate_ > 0 ? part_bytes(multi::tp_chunk_rows(p_)) / 1e6 : 0.0,
        rate_, plan.compute_us, waited, tail,
        std::max(0.0, plan.total_us - plan.compute_us));
  }

  TpProblem p_;
  GpuInfo device_;
  Topology t_;
  int g_;
  double rate_;
  // Copy engines write finished bands of D straight into the receivers' D (TpPlan::d_direct):
  // one process addresses every rank's D, and D's rows are packed (peer copies are whole
  // contiguous runs, tp_exec.cpp; gather's D always is). NCCL plans never do.
  bool d_direct_;
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, std::vector<int64_t>>, std::optional<Candidate>>
      cache_;
  std::vector<int64_t> band_rows_;  // the cut being priced (launch_prediction)
};

uint64_t fnv1a(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

TpPlan plan_tp(const TpProblem& problem, const GpuInfo& device, const Topology& topology,
               const TpOptions& options) {
  validate(problem);
  if (topology.gpus() != problem.world)
    throw InvalidArgument("topology", fmt::format("{} GPUs", topology.gpus()),
                          fmt::format("the problem's world is {} ranks: plan with a topology of "
                                      "that many GPUs", problem.world));
  if (options.tail_rows < -1 || (options.tail_rows > 0 && options.tail_rows % multi::kTpBandGranule))
    throw InvalidArgument("tail_rows", std::to_string(options.tail_rows),
                          fmt::format("-1 (the planner's choice), 0 (even bands) or a multiple of "
                                      "{} rows", multi::kTpBandGranule));
  if (options.bands < 0 || options.bands > multi::kTpMaxBands)
    throw InvalidArgument("bands", std::to_string(options.bands),
                          fmt::format("0 (the planner's choice) or 1..{}", multi::kTpMaxBands));
  const bool rounds_apply = problem.pattern == TpPattern::all_reduce;
  if (options.rounds < 0 || options.rounds > multi::kTpMaxBands ||
      (options.rounds > 1 && !rounds_apply))
    throw InvalidArgument("rounds", std::to_string(options.rounds),
                          rounds_apply ? fmt::format("0 (the planner's choice) or 1..{}, a "
                                                     "divisor of the bands", multi::kTpMaxBands)
                                       : std::string("0 or 1: only all-reduce runs its ring in "
                                                     "rounds"));
  if (options.merge_c_steps < -1 || options.merge_c_steps > 1)
    throw InvalidArgument("merge_c_steps", std::to_string(options.merge_c_steps),
                          "-1 (the planner's choice), 0 (a launch per band) or 1 (one launch per "
                          "step and round)");
  const bool peers = every_pair_has_peer_access(topology);
  TpTransport transport = options.transport.value_or(peers ? TpTransport::copy_engine
                                                           : TpTransport::nccl);
  if (transport == TpTransport::copy_engine && !peers)
    throw InvalidArgument("transport", "copy-engine",
                          "copy engines need peer access between every pair of ranks; this "
                          "topology has a pair without it: use nccl");
  TpPricer pricer(problem, device, topology, options.one_process);
  TpPlan best;
  if (transport == TpTransport::nccl) {
    best = pricer.nccl();
  } else {
    // More bands start the pipeline sooner but cut the GEMMs smaller (more partial waves, more
    // launches); more rounds (all_reduce) overlap more of the finished rows' copies but leave
    // fewer bands of slack for each partial's hop: the fewest launches, then the fewest
    // rounds, win unless another choice saves over 1%.
    // (All-reduce also tries 8 bands: its rounds need bands to group; gather: its tail is the
    // last band's trip to rank 0.)
    const bool eight = rounds_apply || problem.pattern == TpPattern::gather;
    const std::vector<int> band_tries = options.bands > 0 ? std::vector<int>{options.bands}
                                        : eight           ? std::vector<int>{1, 2, 4, 8}
                                                          : std::vector<int>{1, 2, 4};
    const std::vector<int> round_tries = options.rounds > 0 ? std::vector<int>{options.rounds}
                                         : rounds_apply     ? std::vector<int>{1, 2, 4}
                                                            : std::vector<int>{1};
    // A thin last band (128 or 256 rows) shortens the copy that follows the last GEMM; it
    // costs one more launch per step, so the same 1% rule decides: gather 8192 x 28672 x 8192
    // on 2 H200s 2831 -> 2609 us (docs/decisions.md, "Tensor-parallel transport").
    const std::vector<int64_t> tail_tries = options.tail_rows >= 0
                                                ? std::vector<int64_t>{options.tail_rows}
                                                : std::vector<int64_t>{0, 128, 256};
    const std::vector<TpMerge> merge_tries =
        options.merge_c_steps == 1   ? std::vector<TpMerge>{TpMerge::every_step}
        : options.merge_c_steps == 0 ? std::vector<TpMerge>{TpMerge::steps_waiting_for_nothing, TpMerge::none}
                                     : std::vector<TpMerge>{TpMerge::steps_waiting_for_nothing,
                                                            TpMerge::none, TpMerge::every_step};
    bool have = false;
    std::set<std::vector<int64_t>> cuts_tried;
    for (int bands : band_tries) {
      const std::size_t even_bands = multi::tp_bands(multi::tp_chunk_rows(problem), bands).size();
      for (int64_t tail : tail_tries) {
        const std::vector<Range> cut = multi::tp_bands(multi::tp_chunk_rows(problem), bands, tail);
        const bool split = tail > 0 && cut.size() > even_bands;
        if (tail > 0 && !split) continue;  // the last band is not thicker than the tail
        std::vector<int64_t> sizes;
        for (const Range& r : cut) sizes.push_back(r.size());
        if (!cuts_tried.insert(sizes).second) continue;  // fewer rows than bands: the same cut
        for (int rounds : round_tries) {
          if (int(cut.size()) % rounds != 0) continue;  // (forced rounds skip cuts they do not divide)
          // Bands merged into launches that signal each (fewer launches) first. The steps that
          // read partials merge (each band's C gated in the kernel) only where that saves over
          // 1% more: on 2 H200s the rows it was predicted to save 0.3-0.8% ran 0-1.5% slower
          // (reduce-scatter 8192 x 28672 x 8192 2596 -> 2635 us), the two predicted -1.3% and
          // -2.3% ran -0.6% and -3.0% (all-reduce 16384^3 6294 -> 6112 us); kGatedLaunchUs
          // prices the difference.
          for (TpMerge merge : merge_tries) {
            TpPlan plan = pricer.copy_engine(cut, tail, rounds, merge);
            if (!have || plan.total_us < 0.99 * best.total_us) best = std::move(plan), have = true;
          }
        }
      }
    }
    if (!have)
      throw InvalidArgument("rounds", std::to_string(options.rounds),
                            fmt::format("must divide the bands the chunk of {} rows is cut into "
                                        "({})", multi::tp_chunk_rows(problem),
                                        options.bands > 0 ? fmt::format("{} asked", options.bands)
                                                          : std::string("1, 2, 4 or 8"))
                            + (options.tail_rows > 0 ? fmt::format(", one more with the last "
                                                                   "band's {} rows apart",
                                                                   options.tail_rows)
                                                     : std::string()));
  }
  if (!options.one_process) {  // the same for every candidate of a transport: no choice changes
    const bool early = best.transport == TpTransport::copy_engine;
    const double start_us = early ? kProcessPerRankEarlyStartUs : kProcessPerRankStartUs;
    best.total_us += start_us;
    best.exposed_us += start_us;
    best.explanation += fmt::format("; {:.0f} us from the call to its first GEMM ({})", start_us,
                                    early ? "its first launch starts while the processes agree "
                                            "on the plan"
                                          : "every process agrees on the plan first");
  }
  best.single_gpu_us = plan_gemm(tp_whole_problem(problem), device).best().prediction.time_us;
  return best;
}

uint64_t TpPlan::hash() const {
  const TpProblem& p = problem;
  std::string text = fmt::format("{} {} {}x{}x{} {} {} {} {} lda{} ldb{} ldd{} {} b{} r{}",
                                 to_string(p.pattern), p.world, p.m, p.n, p.k,
                                 to_string(p.a_type), to_string(p.b_type), to_string(p.d_type),
                                 to_string(p.scaling), p.lda, p.ldb, p.ldd,
                                 to_string(transport), bands, rounds);
  if (tail_rows > 0) text += fmt::format(" t{}", tail_rows);
  if (d_direct) text += " direct";
  for (const int64_t rows : band_rows) text += fmt::format(" {}", rows);
  for (const TpStep& s : steps)
    text += fmt::format("|{}.{} {} {}{}{} {}{}", s.step, s.band, s.rows, s.reads_c ? "c" : "-",
                        s.a_from_caller ? "a" : "-", s.d_to_caller ? "d" : "-", s.config.describe(),
                        s.bands > 1 ? fmt::format(" x{}", s.bands) : std::string());
  return fnv1a(text);
}

std::string TpPlan::describe() const {
  const TpProblem& p = problem;
  const TpShardShapes s = tp_shard_shapes(p, 0);
  std::string out = fmt::format(
      "{} over {} ranks: {}x{}x{} {}{}\n"
      "  each rank: A [{}, {}], B [{}, {}] -> D [{}, {}]{}\n"
      "  transport: {}; {} launch(es) per rank{}{}\n"
      "  predicted: {:.1f} us (GEMMs {:.1f} us, sends {:.1f} us alone, {:.1f} us exposed); one "
      "GPU {:.1f} us: speedup {:.2f}\n"
      "  why: {}\n",
      to_string(p.pattern), p.world, p.m, p.n, p.k, to_string(p.a_type),
      fp8(p) ? " (1x128 / 128x128 block scales)" : "", s.a_rows, s.a_cols, s.b_rows, s.b_cols,
      s.d_rows, s.d_cols, p.pattern == TpPattern::gather ? " on rank 0 (the others: none)" : "",
      to_string(transport), steps.size(),
      rounds > 1 ? fmt::format(" in {} rounds of {} band(s)", rounds, bands / rounds) : "",
      d_direct ? "; finished bands straight into the receivers' D (one process)" : "",
      total_us, compute_us, transfer_us, exposed_us, single_gpu_us, speedup(), explanation);
  std::string last;
  for (const TpStep& step : steps) {
    const std::string line = fmt::format("{} rows{}: {} ({:.1f} us)", step.rows,
                                         step.reads_c ? " + C" : "", step.config.describe(),
                                         step.predicted_us);
    if (line == last) continue;
    const std::string bands = step.bands > 1
                                  ? fmt::format("bands {}-{} (one launch, each band signalled)",
                                                step.band, step.band + step.bands - 1)
                                  : fmt::format("band {}", step.band);
    out += fmt::format("  step {} {}: {}\n", step.step, bands, line);
    last = line;
  }
  return out;
}

}  // namespace autogemm
