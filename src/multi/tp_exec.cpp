// tp_gemm (tensor_parallel.hpp): the agreement every call starts with (tp_agreement.hpp; across
// processes a plan agreed before enqueues its local head first), then the launches and
// transfers of a TpPlan on each local rank. The header says what each pattern runs; the flags'
// rule is: a flag is 1 when what it guards is in place, and its waiter sets it back to 0.
//   a_ready(s, b)    in r's pad: band b of rank s's A shard is in r's slot s (all_gather)
//   part_ready(i, b) in r's pad: band b of the left neighbour's step-i partial is in r's recv
//   d_ready(s, b)    in r's pad: band b of rank s's rows of D is in r's slot s (all_reduce,
//                    gather)
//   done(q)          in r's pad: rank q has consumed everything r sent it in the last call, so
//                    r may send again (set at creation: nothing was sent yet)
//   d_free(q)        in r's pad: rank q's stream has reached this call, so r may write its
//                    finished bands into q's D (TpPlan::d_direct: one process, no staging)
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/tensor_parallel.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/current_device_guard.hpp"
#include "cuda/driver.hpp"
#include "multi/nccl_comm.hpp"
#include "multi/nccl_exec.hpp"
#include "multi/tp_agreement.hpp"
#include "multi/tp_plan.hpp"
#include "multi/tp_trace.hpp"
#include "multi/tp_workspace.hpp"

#ifdef AUTOGEMM_HAVE_NCCL
#include <nccl.h>
#endif

namespace autogemm {

#ifndef AUTOGEMM_HAVE_NCCL

TpReport tp_gemm(const TpPlan&, const std::vector<TpShards>&, TpWorkspace&, MultiGpuComm&,
                 const std::vector<cudaStream_t>&) {
  throw multi::no_nccl_error();
}

#else

namespace {

using multi::Range;
using multi::TpRecord;
using Rank = TpWorkspace::State::Rank;

bool fp8(const TpProblem& p) { return multi::tp_block_scaled(p); }

void nccl(ncclResult_t r, const char* what) { multi::nccl_check(r, what); }

// ---- the copy-engine transport ---------------------------------------------------------------

class Flags {
 public:
  explicit Flags(const driver::Api& api) : api_(api) {}
  void set(cudaStream_t s, uint32_t* flag) const {
    driver::check(api_.cuStreamWriteValue32(s, CUdeviceptr(flag), 1, CU_STREAM_WRITE_VALUE_DEFAULT),
                  "cuStreamWriteValue32(tp flag)");
  }
  // Sets a flag that is known to be 1 back to 0 (its waiter took a later flag of the same
  // sender's stream, which that stream set after this one).
  void reset(cudaStream_t s, uint32_t* flag) const {
    driver::check(api_.cuStreamWriteValue32(s, CUdeviceptr(flag), 0, CU_STREAM_WRITE_VALUE_DEFAULT),
                  "cuStreamWriteValue32(tp flag reset)");
  }
  // Waits until the flag is 1, then sets it back to 0 (the waiter owns the reset).
  void take(cudaStream_t s, uint32_t* flag) const {
    driver::check(api_.cuStreamWaitValue32(s, CUdeviceptr(flag), 1, CU_STREAM_WAIT_VALUE_EQ),
                  "cuStreamWaitValue32(tp flag)");
    driver::check(api_.cuStreamWriteValue32(s, CUdeviceptr(flag), 0, CU_STREAM_WRITE_VALUE_DEFAULT),
                  "cuStreamWriteValue32(tp flag reset)");
  }

 private:
  const driver::Api& api_;
};

// `to` waits for what `from` has enqueued so far, through `event`.
void after(cudaStream_t to, cudaStream_t from, cudaEvent_t event) {
  cuda_check(cudaEventRecord(event, from), "cudaEventRecord(tp)");
  cuda_check(cudaStreamWaitEvent(to, event, 0), "cudaStreamWaitEvent(tp)");
}

// `to` waits for what the caller had enqueued on its stream before this call (the event tp_gemm
// records first: the call may have enqueued launches on that stream since).
void after_caller(cudaStream_t to, const Rank& r) {
  cuda_check(cudaStreamWaitEvent(to, r.call_start, 0), "cudaStreamWaitEvent(tp call start)");
}

// rows x row_bytes from src (pitch src_ld bytes) to dst (pitch dst_ld bytes).
void copy_rows(void* dst, int64_t dst_ld, const void* src, int64_t src_ld, int64_t row_bytes,
               int64_t rows, cudaStream_t s) {
  if (rows <= 0) return;
  if (dst_ld == row_bytes && src_ld == row_bytes)
    cuda_check(cudaMemcpyAsync(dst, src, std::size_t(rows * row_bytes), cudaMemcpyDefault, s),
               "cudaMemcpyAsync(tp band)");
  else
    cuda_check(cudaMemcpy2DAsync(dst, std::size_t(dst_ld), src, std::size_t(src_ld),
                                 std::size_t(row_bytes), std::size_t(rows), cudaMemcpyDefault, s),
               "cudaMemcpy2DAsync(tp band)");
}

struct CallContext {
  const TpPlan& plan;
  TpWorkspace::State& ws;
  const std::vector<TpShards>& shards;  // local ranks' (every rank's when plan.d_direct)
  Flags flags;
  int g;
  int64_t chunk_rows;
  std::vector<Range> cut;
  TpShardShapes shapes;
  int in_bytes, out_bytes;
  int64_t a_kblocks;  // A's scale blocks per row (FP8)
  multi::TpTrace& trace;
  int call;  // its number in the trace (AUTOGEMM_TP_TRACE=N), 0 untraced
  std::size_t head = 0;  // plan.steps enqueued before the agreement (head_launches)

  // Rank q's D (d_direct: this process drives every rank, in ws.ranks order).
  char* d_of(int q) const {
    for (std::size_t i = 0; i < ws.ranks.size(); ++i)
      if (ws.ranks[i].rank == q) return static_cast<char*>(shards[i].d);
    throw CudaError(fmt::format("tp: rank {} is not driven by this process", q));
  }
};

GemmReport launch(const CallContext& c, const TpStep& step, const GemmOperands& ops, int device,
                  cudaStream_t s) {
  GemmOptions options;
  options.config = step.config;
  options.device = device;
  options.autotune = 0;  // every rank runs exactly the agreed plan
  // ... and never cuBLASLt in place of a step of ours: its first call allocates and loads
  // modules, which can wait for a GPU whose streams wait on another rank's flags.
  options.allow_vendor_fallback = step.config.instruction == Instruction::vendor;
  const GemmProblem q = multi::tp_launch_problem(c.plan.problem, step);
  try {
    return gemm(q, ops, s, options);
  } catch (const std::exception& e) {
    throw CudaError(fmt::format("GPU {}: step {} band {} ({} rows{}, {}): {}", device, step.step,
                                step.band, step.rows, step.reads_c ? " + C" : "",
                                step.config.describe(), e.what()));
  }
}

// A launch's rows: the bands [st.band, st.band + st.bands) of the cut.
Range launch_rows(const CallContext& c, const TpStep& st) {
  return {c.cut[st.band].begin, c.cut[st.band + st.bands - 1].end};
}

// A launch of several bands signals each (GemmProblem::signal_bands): their ends inside the
// launch, and their counters and band_done flags in this rank's pad. `ends` holds the ends
// while the launch is enqueued.
void signal_bands(const CallContext& c, Rank& r, const TpStep& st, std::vector<int64_t>& ends,
                  GemmOperands& ops) {
  if (st.bands < 2) return;
  const int64_t first = c.cut[st.band].begin;
  ends.clear();
  for (int b = st.band; b < st.band + st.bands; ++b) ends.push_back(c.cut[b].end - first);
  ops.band_ends = ends.data();
  ops.band_counters = r.pad + c.ws.flags.band_counter(st.step, st.band);
  ops.band_flags = r.pad + c.ws.flags.band_done(st.step, st.band);
}

// `to` waits until band b of launch st is in memory: its band_done flag (merged launches), or
// everything `from` has enqueued so far (the launch's own end).
void after_band(const CallContext& c, Rank& r, const TpStep& st, int b, cudaStream_t to,
                cudaStream_t from) {
  if (st.bands > 1) {
    c.flags.take(to, r.pad + c.ws.flags.band_done(st.step, b));
    c.trace.mark(r.rank, "gemm", to, "band {}.{} finished", st.step, b);
  } else {
    after(to, from, r.from_caller);
  }
}

// A call that failed after some of it was enqueued: every flag of every rank this process maps
// is set, so that no stream waits for ever on a rank that stopped (the results of the call are
// garbage; the error says so). On the workspace's own streams, which wait on nothing. The band
// counters are left alone: the kernels already enqueued count them back to 0.
void release_waiters(TpWorkspace::State& ws) {
  std::vector<uint32_t> ones(std::size_t(ws.flags.count()), 1u);
  const int64_t counters = ws.flags.band_counter(0, 0);
  const int64_t after_counters = counters + int64_t(ws.world) * ws.flags.bands;
  for (Rank& r : ws.ranks) {
    if (cudaSetDevice(r.device) != cudaSuccess) continue;
    for (uint32_t* pad : r.peer_pad)
      if (pad) {
        (void)cudaMemcpyAsync(pad, ones.data(), std::size_t(counters) * 4, cudaMemcpyHostToDevice, r.agree);
        (void)cudaMemcpyAsync(pad + after_counters, ones.data(),
                              std::size_t(ws.flags.count() - after_counters) * 4,
                              cudaMemcpyHostToDevice, r.agree);
      }
    (void)cudaStreamSynchronize(r.agree);
  }
  (void)cudaGetLastError();
}

// All-gather's launch i (plan order: step by step, band by band): band b of the shard of rank
// (r + step) % G, once it is here, into those rows of D; its rows of gathered A copied out
// beside it.
void gather_launch(const CallContext& c, Rank& r, const TpShards& sh, cudaStream_t s, std::size_t i) {
  const TpProblem& p = c.plan.problem;
  const multi::TpLayout& l = c.ws.layout;
  const TpStep& st = c.plan.steps[i];
  const int bands = int(c.cut.size());
  const int step = int(i) / bands, b = int(i) % bands;
  const int source = (r.rank + step) % c.g;
  const Range band = c.cut[std::size_t(b)];
  const int64_t row_bytes = c.shapes.a_cols * c.in_bytes;
  const int64_t lda_bytes = (p.lda ? p.lda : c.shapes.a_cols) * c.in_bytes;
  const int64_t ldd = p.ldd ? p.ldd : c.shapes.d_cols;
  GemmOperands ops;
  ops.b = sh.b;
  ops.scale_b = sh.scale_b;
  ops.d = static_cast<char*>(sh.d) + (source * c.chunk_rows + band.begin) * ldd * c.out_bytes;
  const char* a_rows = nullptr;
  if (st.a_from_caller) {  // the own shard, where the caller keeps it
    a_rows = static_cast<const char*>(sh.a) + band.begin * lda_bytes;
    if (fp8(p)) ops.scale_a = sh.scale_a + band.begin * c.a_kblocks;
  } else {
    c.flags.take(s, r.pad + c.ws.flags.a_ready(source, b));
    c.trace.mark(r.rank, "gemm", s, "A band {} of rank {} in", b, source);
    a_rows = r.base + l.a_slots + l.a_slot_bytes * source + band.begin * row_bytes;
    if (fp8(p))
      ops.scale_a = reinterpret_cast<const float*>(r.base + l.a_scale_slots +
                                                   l.a_scale_slot_bytes * source) +
                    band.begin * c.a_kblocks;
  }
  ops.a = a_rows;
  if (sh.a_gathered) {  // the band is here: copy it out beside the GEMMs
    after(r.local_copy, s, r.from_caller);
    char* out = static_cast<char*>(sh.a_gathered) + (source * c.chunk_rows + band.begin) * row_bytes;
    copy_rows(out, row_bytes, a_rows, st.a_from_caller ? lda_bytes : row_bytes, row_bytes,
              band.size(), r.local_copy);
  }
  launch(c, st, ops, r.device, s);
  c.trace.mark(r.rank, "gemm", s, "gemm {}.{} ({} rows) done", step, b, band.size());
}

void run_all_gather(const CallContext& c, Rank& r, const TpShards& sh, cudaStream_t s) {
  const TpProblem& p = c.plan.problem;
  const multi::TpLayout& l = c.ws.layout;
  const int64_t row_bytes = c.shapes.a_cols * c.in_bytes;
  const int64_t lda_bytes = (p.lda ? p.lda : c.shapes.a_cols) * c.in_bytes;
  const int64_t scale_row_bytes = c.a_kblocks * 4;
  after_caller(r.copy, r);
  // Peer copies are whole contiguous runs: a strided 2D copy between GPUs may be staged through
  // the host and block it, which would stall the one thread that drives every GPU. Rows of a
  // padded A are packed into this rank's own (otherwise unused) slot first.
  const char* source = static_cast<const char*>(sh.a);
  int64_t source_ld = lda_bytes;
  if (lda_bytes != row_bytes) {
    char* own = r.base + l.a_slots + l.a_slot_bytes * r.rank;
    copy_rows(own, row_bytes, sh.a, lda_bytes, row_bytes, c.chunk_rows, r.copy);
    source = own, source_ld = row_bytes;
  }
  // Sends: peers in the order their steps need this shard (r - 1 first).
  for (int j = 1; j < c.g; ++j) {
    const int q = (r.rank - j + c.g) % c.g;
    c.flags.take(r.copy, r.pad + c.ws.flags.done(q));
    char* slot = r.peer_base[q] + l.a_slots + l.a_slot_bytes * r.rank;
    char* scale_slot = r.peer_base[q] + l.a_scale_slots + l.a_scale_slot_bytes * r.rank;
    for (int b = 0; b < int(c.cut.size()); ++b) {
      const Range band = c.cut[b];
      copy_rows(slot + band.begin * row_bytes, row_bytes, source + band.begin * source_ld,
                source_ld, row_bytes, band.size(), r.copy);
      if (fp8(p))
        copy_rows(scale_slot + band.begin * scale_row_bytes, scale_row_bytes,
                  sh.scale_a + band.begin * c.a_kblocks, scale_row_bytes, scale_row_bytes,
                  band.size(), r.copy);
      c.flags.set(r.copy, r.peer_pad[q] + c.ws.flags.a_ready(r.rank, b));
      c.trace.mark(r.rank, "copy", r.copy, "A band {} sent to rank {}", b, q);
    }
  }
  for (std::size_t i = c.head; i < c.plan.steps.size(); ++i) gather_launch(c, r, sh, s, i);
}

// Where the ring's launch st writes chunk row `row`: the caller's D (reduce-scatter: this rank's
// rows; all-reduce: D is whole, these rows at r's place) or the step's partial in the workspace.
char* ring_d_row(const CallContext& c, const Rank& r, const TpShards& sh, const TpStep& st,
                 int64_t row) {
  const TpProblem& p = c.plan.problem;
  const multi::TpLayout& l = c.ws.layout;
  const int64_t part_row_bytes = p.n * c.out_bytes;
  const int64_t ldd_bytes = (p.ldd ? p.ldd : p.n) * c.out_bytes;
  const int64_t d_row0 = p.pattern == TpPattern::all_reduce ? r.rank * c.chunk_rows : 0;
  return st.d_to_caller ? static_cast<char*>(sh.d) + (d_row0 + row) * ldd_bytes
                        : r.base + l.send + l.part_bytes * st.step + row * part_row_bytes;
}

// The ring's launch st: the rows of the rank its result goes to, C (st.reads_c) the left
// neighbour's partials of the step before, whose arrival the caller has waited for.
void ring_launch(const CallContext& c, Rank& r, const TpShards& sh, cudaStream_t s, const TpStep& st) {
  const TpProblem& p = c.plan.problem;
  const int dest = ((r.rank - 1 - st.step) % c.g + c.g) % c.g;
  const int64_t lda_bytes = (p.lda ? p.lda : c.shapes.a_cols) * c.in_bytes;
  const Range rows = launch_rows(c, st);
  GemmOperands ops;
  ops.a = static_cast<const char*>(sh.a) + (dest * c.chunk_rows + rows.begin) * lda_bytes;
  ops.b = sh.b;
  if (fp8(p)) {
    ops.scale_a = sh.scale_a + (dest * c.chunk_rows + rows.begin) * c.a_kblocks;
    ops.scale_b = sh.scale_b;
  }
  if (st.reads_c) {
    ops.c = r.base + c.ws.layout.recv + c.ws.layout.part_bytes * (st.step - 1) +
            rows.begin * p.n * c.out_bytes;
    ops.beta = 1.0f;
    // A merged launch waits inside the kernel for each band's partial (the flags of a step's
    // bands are consecutive words).
    if (st.bands > 1) ops.c_band_flags = r.pad + c.ws.flags.part_ready(st.step - 1, st.band);
  }
  ops.d = ring_d_row(c, r, sh, st, rows.begin);
  std::vector<int64_t> ends;
  signal_bands(c, r, st, ends, ops);
  launch(c, st, ops, r.device, s);
  const int last = st.band + st.bands - 1;
  c.trace.mark(r.rank, "gemm", s, "gemm {}.{}{} ({} rows) done", st.step, st.band,
               st.bands > 1 ? fmt::format("-{}", last) : "", rows.size());
}

// The ring, in the plan's order (round by round for all_reduce; tp_plan.cpp). Partials go
// right on the copy stream; all_reduce's finished bands go to every peer on the push stream,
// so a partial the right neighbour waits for is never queued behind them.
void run_ring(const CallContext& c, Rank& r, const TpShards& sh, cudaStream_t s) {
  const TpProblem& p = c.plan.problem;
  const multi::TpLayout& l = c.ws.layout;
  const bool all_reduce = p.pattern == TpPattern::all_reduce;
  const int right = (r.rank + 1) % c.g;
  const int64_t part_row_bytes = p.n * c.out_bytes;
  const int64_t ldd_bytes = (p.ldd ? p.ldd : p.n) * c.out_bytes;
  after_caller(r.copy, r);
  // Every rank this call sends to has consumed the last call's sends (its done flag).
  for (int q = 0; q < c.g; ++q)
    if (q != r.rank && (all_reduce || q == right)) c.flags.take(r.copy, r.pad + c.ws.flags.done(q));
  const bool direct = all_reduce && c.plan.d_direct;
  if (all_reduce) {
    after_caller(r.push, r);
    if (direct)  // the peers may write their rows of this D from here on
      for (int q = 0; q < c.g; ++q)
        if (q != r.rank) c.flags.set(r.push, r.peer_pad[q] + c.ws.flags.d_free(r.rank));
    after(r.push, r.copy, r.from_copy);
    after_caller(r.local_copy, r);  // copies into D come after the caller's use of D
  }
  if (direct)  // ... and this rank may write its rows of theirs once each says so
    for (int q = 0; q < c.g; ++q)
      if (q != r.rank) c.flags.take(r.push, r.pad + c.ws.flags.d_free(q));
  std::vector<int> final_bands;  // all_reduce: bands in the order they become final
  for (std::size_t i = 0; i < c.plan.steps.size(); ++i) {
    const TpStep& st = c.plan.steps[i];
    const int last = st.band + st.bands - 1;
    if (i >= c.head) {
      // The left neighbour's partials of step - 1 (st.reads_c). A merged launch waits for each
      // band's flag inside the kernel (ring_launch), which saw every one of them 1 by its end.
      // A launch of one band waits on the stream.
      const bool gated = st.reads_c && st.bands > 1;
      if (st.reads_c && !gated) {
        c.flags.take(s, r.pad + c.ws.flags.part_ready(st.step - 1, last));
        c.trace.mark(r.rank, "gemm", s, "partial {}.{} in", st.step - 1, st.band);
      }
      ring_launch(c, r, sh, s, st);
      if (gated)  // back to 0 after the kernel
        for (int b = st.band; b <= last; ++b) c.flags.reset(s, r.pad + c.ws.flags.part_ready(st.step - 1, b));
    }
    for (int b = st.band; b < st.band + st.bands; ++b) {
      const Range band = c.cut[b];
      char* d_band = ring_d_row(c, r, sh, st, band.begin);
      if (!st.d_to_caller) {  // a partial: to the right neighbour
        after_band(c, r, st, b, r.copy, s);
        copy_rows(r.peer_base[right] + l.recv + l.part_bytes * st.step + band.begin * part_row_bytes,
                  part_row_bytes, d_band, part_row_bytes, part_row_bytes, band.size(), r.copy);
        c.flags.set(r.copy, r.peer_pad[right] + c.ws.flags.part_ready(st.step, b));
        c.trace.mark(r.rank, "copy", r.copy, "partial {}.{} sent", st.step, b);
      } else if (all_reduce) {
        // This band of r's rows is final: to every other rank, nearest first, into its D
        // (direct: D is packed) or its workspace (packed into r's own slot first when D's rows
        // are padded: peer copies are contiguous runs).
        final_bands.push_back(b);
        after_band(c, r, st, b, r.push, s);
        const char* band_rows = d_band;
        if (!direct && ldd_bytes != part_row_bytes) {
          char* own = r.base + l.d_slots + l.part_bytes * r.rank + band.begin * part_row_bytes;
          copy_rows(own, part_row_bytes, d_band, ldd_bytes, part_row_bytes, band.size(), r.push);
          band_rows = own;
        }
        const int64_t d_row0 = r.rank * c.chunk_rows;
        for (int j = 1; j < c.g; ++j) {
          const int q = (r.rank + j) % c.g;
          char* to = direct ? c.d_of(q) + (d_row0 + band.begin) * ldd_bytes
                            : r.peer_base[q] + l.d_slots + l.part_bytes * r.rank + band.begin * part_row_bytes;
          copy_rows(to, part_row_bytes, band_rows, part_row_bytes, part_row_bytes, band.size(), r.push);
          c.flags.set(r.push, r.peer_pad[q] + c.ws.flags.d_ready(r.rank, b));
          c.trace.mark(r.rank, "push", r.push, "D band {} sent to rank {}", b, q);
        }
      } else if (st.bands > 1) {  // reduce-scatter's final rows stay here: nobody waits
        c.flags.take(s, r.pad + c.ws.flags.band_done(st.step, b));
      }
    }
  }
  // all_reduce: the others' rows, band by band as they arrive (direct: in D already), from the
  // workspace into D.
  for (int b : final_bands)
    for (int j = 1; j < c.g; ++j) {
      const int source = (r.rank - j + c.g) % c.g;
      const Range band = c.cut[b];
      c.flags.take(r.local_copy, r.pad + c.ws.flags.d_ready(source, b));
      c.trace.mark(r.rank, "local", r.local_copy, "D band {} of rank {} in", b, source);
      if (direct) continue;
      copy_rows(static_cast<char*>(sh.d) + (source * c.chunk_rows + band.begin) * ldd_bytes,
                ldd_bytes, r.base + l.d_slots + l.part_bytes * source + band.begin * part_row_bytes,
                part_row_bytes, part_row_bytes, band.size(), r.local_copy);
      c.trace.mark(r.rank, "local", r.local_copy, "D band {} of rank {} copied", b, source);
    }
}

// Gather: this rank's rows, band by band; rank 0's into D, the others' into their workspace and
// on to rank 0's D slot, from which rank 0 copies each band into D as it arrives (d_direct:
// on to rank 0's D itself).
void run_gather_to_root(const CallContext& c, Rank& r, const TpShards& sh, cudaStream_t s) {
  const TpProblem& p = c.plan.problem;
  const multi::TpLayout& l = c.ws.layout;
  const bool root = r.rank == 0;
  const int64_t lda_bytes = (p.lda ? p.lda : c.shapes.a_cols) * c.in_bytes;
  const int64_t row_bytes = p.n * c.out_bytes;  // D is packed (validate)
  const bool direct = c.plan.d_direct;
  if (root) {
    after_caller(r.local_copy, r);  // copies into D after the caller's use of D
    if (direct)  // the others may write their rows of D from here on
      for (int q = 1; q < c.g; ++q) c.flags.set(s, r.peer_pad[q] + c.ws.flags.d_free(0));
  } else {
    after_caller(r.copy, r);
    c.flags.take(r.copy, r.pad + c.ws.flags.done(0));
    if (direct) c.flags.take(r.copy, r.pad + c.ws.flags.d_free(0));
  }
  std::vector<int64_t> ends;
  for (const TpStep& st : c.plan.steps) {
    const Range rows = launch_rows(c, st);
    GemmOperands ops;
    ops.a = static_cast<const char*>(sh.a) + rows.begin * lda_bytes;
    ops.b = sh.b;
    if (fp8(p)) ops.scale_a = sh.scale_a + rows.begin * c.a_kblocks, ops.scale_b = sh.scale_b;
    char* d = root ? static_cast<char*>(sh.d) : r.base + l.send;  // the chunk's rows
    ops.d = d + rows.begin * row_bytes;
    signal_bands(c, r, st, ends, ops);
    launch(c, st, ops, r.device, s);
    c.trace.mark(r.rank, "gemm", s, "gemm band {}{} ({} rows) done", st.band,
                 st.bands > 1 ? fmt::format("-{}", st.band + st.bands - 1) : "", rows.size());
    for (int b = st.band; b < st.band + st.bands; ++b) {
      const Range band = c.cut[b];
      if (root) {  // rank 0's rows are in D already: nobody waits for them
        if (st.bands > 1) c.flags.take(s, r.pad + c.ws.flags.band_done(st.step, b));
        continue;
      }
      after_band(c, r, st, b, r.copy, s);
      char* to = direct ? c.d_of(0) + (r.rank * c.chunk_rows + band.begin) * row_bytes
                        : r.peer_base[0] + l.d_slots + l.part_bytes * r.rank + band.begin * row_bytes;
      copy_rows(to, row_bytes, d + band.begin * row_bytes, row_bytes, row_bytes, band.size(), r.copy);
      c.flags.set(r.copy, r.peer_pad[0] + c.ws.flags.d_ready(r.rank, b));
      c.trace.mark(r.rank, "copy", r.copy, "D band {} sent to rank 0", b);
    }
  }
  if (!root) return;
  for (int b = 0; b < int(c.cut.size()); ++b)
    for (int q = 1; q < c.g; ++q) {
      const Range band = c.cut[b];
      c.flags.take(r.local_copy, r.pad + c.ws.flags.d_ready(q, b));
      c.trace.mark(r.rank, "local", r.local_copy, "D band {} of rank {} in", b, q);
      if (direct) continue;
      copy_rows(static_cast<char*>(sh.d) + (q * c.chunk_rows + band.begin) * row_bytes, row_bytes,
                r.base + l.d_slots + l.part_bytes * q + band.begin * row_bytes, row_bytes,
                row_bytes, band.size(), r.local_copy);
      c.trace.mark(r.rank, "local", r.local_copy, "D band {} of rank {} copied", b, q);
    }
}

// The launches a call across processes enqueues before the ranks have agreed (tp_gemm): the
// plan's first launches that read only the caller's shards, write only this rank's memory and
// wait on no other rank. All-gather: the own shard's bands (into the caller's D); the ring: its
// first launch (partials into the workspace). Nothing leaves the rank before the agreement.
std::size_t head_launches(const TpPlan& plan) {
  const TpPattern pattern = plan.problem.pattern;
  std::size_t n = 0;
  if (pattern == TpPattern::all_gather)
    while (n < plan.steps.size() && plan.steps[n].step == 0 && plan.steps[n].a_from_caller) ++n;
  else if ((pattern == TpPattern::reduce_scatter || pattern == TpPattern::all_reduce) &&
           !plan.steps.empty() && !plan.steps[0].reads_c && !plan.steps[0].d_to_caller)
    n = 1;
  return n;
}

void enqueue_head(const CallContext& c, Rank& r, const TpShards& sh, cudaStream_t s) {
  for (std::size_t i = 0; i < c.head; ++i) {
    if (c.plan.problem.pattern == TpPattern::all_gather) gather_launch(c, r, sh, s, i);
    else ring_launch(c, r, sh, s, c.plan.steps[i]);
  }
}

// The agreement failed after the head was enqueued: the band flags its launches raise (merged
// bands) are taken back to 0 on its stream, as the transfers that wait for them would have.
void drop_head(const CallContext& c, Rank& r, cudaStream_t s) {
  for (std::size_t i = 0; i < c.head; ++i) {
    const TpStep& st = c.plan.steps[i];
    if (st.bands > 1)
      for (int b = st.band; b < st.band + st.bands; ++b)
        c.flags.take(s, r.pad + c.ws.flags.band_done(st.step, b));
  }
}

// After a rank's call: its stream waits for its sends and copies, then tells every rank that
// sent it something that it may send again.
void finish_copy_engine(const CallContext& c, Rank& r, bool used_local_copy, cudaStream_t s) {
  const TpPattern pattern = c.plan.problem.pattern;
  after(s, r.copy, r.from_copy);
  if (pattern == TpPattern::all_reduce) after(s, r.push, r.from_push);
  if (used_local_copy) after(s, r.local_copy, r.from_local);
  for (int q = 0; q < c.g; ++q) {
    if (q == r.rank) continue;
    const bool sent_to_me = pattern == TpPattern::gather           ? r.rank == 0
                            : pattern == TpPattern::reduce_scatter ? q == (r.rank - 1 + c.g) % c.g
                                                                   : true;
    if (sent_to_me) c.flags.set(s, r.peer_pad[q] + c.ws.flags.done(r.rank));
  }
  c.trace.mark(r.rank, "gemm", s, "call {} done", c.call);
}

// ---- the NCCL transport ----------------------------------------------------------------------

ncclDataType_t reduce_type(DType t) { return ncclDataType_t(multi::nccl_reduce_type(t)); }

void run_nccl(const CallContext& c, const std::vector<TpShards>& shards,
              const std::vector<cudaStream_t>& streams) {
  const TpProblem& p = c.plan.problem;
  const multi::TpLayout& l = c.ws.layout;
  const TpStep& st = c.plan.steps.front();
  auto device = [](const Rank& r) { cuda_check(cudaSetDevice(r.device), "cudaSetDevice(tp)"); };
  auto group = [&](auto&& body) {
    nccl(ncclGroupStart(), "ncclGroupStart(tp)");
    try {
      for (std::size_t i = 0; i < c.ws.ranks.size(); ++i) body(c.ws.ranks[i], shards[i], streams[i]);
    } catch (...) {
      (void)ncclGroupEnd();
      throw;
    }
    nccl(ncclGroupEnd(), "ncclGroupEnd(tp)");
  };
  const int64_t lda_bytes = (p.lda ? p.lda : c.shapes.a_cols) * c.in_bytes;
  const int64_t ldd_bytes = (p.ldd ? p.ldd : c.shapes.d_cols) * c.out_bytes;
  if (p.pattern == TpPattern::all_gather) {
    const int64_t row_bytes = c.shapes.a_cols * c.in_bytes;
    for (std::size_t i = 0; i < c.ws.ranks.size(); ++i) {  // the own shard, packed, in its slot
      Rank& r = c.ws.ranks[i];
      device(r);
      if (lda_bytes != row_bytes)
        copy_rows(r.base + l.a_slots + l.a_slot_bytes * r.rank, row_bytes, shards[i].a, lda_bytes,
                  row_bytes, c.chunk_rows, streams[i]);
    }
    group([&](Rank& r, const TpShards& sh, cudaStream_t s) {
      char* slots = r.base + l.a_slots;
      const void* send = lda_bytes != row_bytes ? slots + l.a_slot_bytes * r.rank : sh.a;
      nccl(ncclAllGather(send, slots, std::size_t(l.a_slot_bytes), ncclInt8, r.comm, s),
           "ncclAllGather(tp A)");
      if (fp8(p))
        nccl(ncclAllGather(sh.scale_a, r.base + l.a_scale_slots,
                           std::size_t(l.a_scale_slot_bytes), ncclInt8, r.comm, s),
             "ncclAllGather(tp A scales)");
    });
    for (std::size_t i = 0; i < c.ws.ranks.size(); ++i) {
      Rank& r = c.ws.ranks[i];
      device(r);
      GemmOperands ops;
      ops.a = r.base + l.a_slots;
      ops.b = shards[i].b;
      ops.d = shards[i].d;
      if (fp8(p)) {
        ops.scale_a = reinterpret_cast<const float*>(r.base + l.a_scale_slots);
        ops.scale_b = shards[i].scale_b;
      }
      launch(c, st, ops, r.device, streams[i]);
      if (shards[i].a_gathered)
        copy_rows(shards[i].a_gathered, row_bytes, r.base + l.a_slots, row_bytes, row_bytes, p.m,
                  streams[i]);
    }
    return;
  }
  // Each local rank's one GEMM on its own shards, into the D `d_of(rank, shards)` names.
  auto launch_each = [&](auto&& d_of) {
    for (std::size_t i = 0; i < c.ws.ranks.size(); ++i) {
      Rank& r = c.ws.ranks[i];
      device(r);
      GemmOperands ops;
      ops.a = shards[i].a;
      ops.b = shards[i].b;
      ops.d = d_of(r, shards[i]);
      if (fp8(p)) ops.scale_a = shards[i].scale_a, ops.scale_b = shards[i].scale_b;
      launch(c, st, ops, r.device, streams[i]);
    }
  };
  if (p.pattern == TpPattern::gather) {
    // Each rank's rows (rank 0's into D), then rank 0 receives the others' straight into D.
    const int64_t row_bytes = p.n * c.out_bytes;  // D is packed (validate)
    launch_each([&](Rank& r, const TpShards& sh) -> void* {
      return r.rank == 0 ? sh.d : r.base + l.send;
    });
    group([&](Rank& r, const TpShards& sh, cudaStream_t s) {
      const std::size_t bytes = std::size_t(c.chunk_rows * row_bytes);
      if (r.rank != 0) {
        nccl(ncclSend(r.base + l.send, bytes, ncclInt8, 0, r.comm, s), "ncclSend(tp D rows)");
        return;
      }
      for (int q = 1; q < c.g; ++q)
        nccl(ncclRecv(static_cast<char*>(sh.d) + q * c.chunk_rows * row_bytes, bytes, ncclInt8, q,
                      r.comm, s),
             "ncclRecv(tp D rows)");
    });
    return;
  }
  // reduce_scatter, all_reduce: one GEMM of the whole partial, then the collective.
  const bool into_d = st.d_to_caller;  // the plan's: all-reduce into a packed D
  const int64_t part_row_bytes = p.n * c.out_bytes;
  launch_each([&](Rank& r, const TpShards& sh) -> void* { return into_d ? sh.d : r.base + l.send; });
  const std::size_t chunk = std::size_t(c.chunk_rows * p.n);
  group([&](Rank& r, const TpShards& sh, cudaStream_t s) {
    char* whole = into_d ? static_cast<char*>(sh.d) : r.base + l.send;
    if (p.pattern == TpPattern::all_reduce)
      nccl(ncclAllReduce(whole, whole, chunk * std::size_t(c.g), reduce_type(p.d_type), ncclSum,
                         r.comm, s),
           "ncclAllReduce(tp D)");
    else  // in place: rank r's rows of the partial are its result
      nccl(ncclReduceScatter(whole, whole + l.part_bytes * r.rank, chunk, reduce_type(p.d_type),
                             ncclSum, r.comm, s),
           "ncclReduceScatter(tp D)");
  });
  if (into_d) return;
  for (std::size_t i = 0; i < c.ws.ranks.size(); ++i) {
    Rank& r = c.ws.ranks[i];
    device(r);
    const bool scattered = p.pattern == TpPattern::reduce_scatter;
    const char* from = r.base + l.send + (scattered ? l.part_bytes * r.rank : 0);
    copy_rows(shards[i].d, ldd_bytes, from, part_row_bytes, part_row_bytes,
              scattered ? c.chunk_rows : p.m, streams[i]);
  }
}

}  // namespace

TpReport tp_gemm(const TpPlan& plan, const std::vector<TpShards>& shards, TpWorkspace& workspace,
                 MultiGpuComm& comm, const std::vector<cudaStream_t>& streams_in) {
  TpWorkspace::State& ws = workspace.state();
  const std::size_t locals = ws.ranks.size();
  if (comm.size() != ws.world || comm.local_ranks().size() != locals)
    throw InvalidArgument("comm", fmt::format("{} ranks, {} here", comm.size(), comm.local_ranks().size()),
                          fmt::format("the workspace was made on a communicator of {} ranks, {} "
                                      "here", ws.world, locals));
  if (shards.size() != locals)
    throw InvalidArgument("shards", fmt::format("{} entries", shards.size()),
                          fmt::format("one per local rank: {}", locals));
  if (!streams_in.empty() && streams_in.size() != locals)
    throw InvalidArgument("streams", fmt::format("{} entries", streams_in.size()),
                          fmt::format("none (the default streams) or one per local rank: {}", locals));
  std::vector<cudaStream_t> streams = streams_in;
  streams.resize(locals, nullptr);
  CurrentDeviceGuard restore;
  const bool capturing = multi::any_capturing(streams);
  if (ws.trace && !capturing && ws.trace->full()) {  // the last N calls' timelines (waits for them)
    ws.trace->print();
    ws.trace.reset();
  }
  std::vector<int> devices, ranks;
  for (const Rank& r : ws.ranks) devices.push_back(r.device), ranks.push_back(r.rank);
  if (multi::TpTrace::requested() && !capturing && !ws.trace)
    ws.trace = std::make_unique<multi::TpTrace>(true, devices, ranks);
  multi::TpTrace off(false, {}, {});
  multi::TpTrace& trace = ws.trace && !capturing ? *ws.trace : off;
  const int call = trace.on() ? trace.begin_call() : 0;
  for (std::size_t i = 0; i < locals; ++i) {
    cuda_check(cudaSetDevice(devices[i]), "cudaSetDevice(tp)");
    trace.mark(ranks[i], "gemm", streams[i], "call {} enqueued from here", call);
    cuda_check(cudaEventRecord(ws.ranks[i].call_start, streams[i]), "cudaEventRecord(tp call start)");
  }
  trace.host(ranks.front(), "call {} began", call);
  const uint64_t hash = plan.hash();
  std::vector<TpRecord> mine = multi::own_records(plan, hash, shards, ws, comm);

  const TpProblem& p = plan.problem;
  // Made once the plan is known to be whole (the own checks passed: a probe's plan is not).
  std::optional<CallContext> context;
  auto make_context = [&]() -> CallContext& {
    return context.emplace(CallContext{plan, ws, shards, Flags(driver::api()), ws.world,
                                       multi::tp_chunk_rows(p), multi::tp_plan_bands(plan),
                                       tp_shard_shapes(p, 0), dtype_bytes(p.a_type),
                                       dtype_bytes(p.d_type),
                                       multi::tp_scale_blocks(tp_shard_shapes(p, 0).a_cols),
                                       trace, call});
  };
  // Across processes the exchange takes ~190 us of host time a call (2 H200s, torchrun trace)
  // while the GPU would sit idle: a plan every rank agreed on before starts its local head
  // (head_launches) first, and the rest follows the agreement (docs/decisions.md). A plan's
  // first call, and any call whose own check failed, enqueues nothing before it.
  const bool early = !ws.one_process && !capturing && plan.transport == TpTransport::copy_engine &&
                     ws.agreed.count(hash) &&
                     std::all_of(mine.begin(), mine.end(), multi::passed);
  if (early) {
    // A failure here reaches every rank through the exchange, as a failed own check does.
    auto refuse = [&](std::size_t i, const std::exception& e) {
      mine[i] = multi::make_record(plan, hash, ranks[i],
                                   fmt::format("plan = its first launch: {}", e.what()));
    };
    try {
      make_context().head = head_launches(plan);
    } catch (const std::exception& e) {
      for (std::size_t i = 0; i < locals; ++i) refuse(i, e);
    }
    const std::size_t head = context ? context->head : 0;
    for (std::size_t i = 0; i < locals && head; ++i) {
      try {
        cuda_check(cudaSetDevice(devices[i]), "cudaSetDevice(tp)");
        enqueue_head(*context, ws.ranks[i], shards[i], streams[i]);
      } catch (const std::exception& e) {
        refuse(i, e);
      }
    }
  }
  try {
    multi::agree(hash, mine, ws, comm, capturing);
  } catch (...) {
    for (std::size_t i = 0; i < locals && context && context->head; ++i)
      if (multi::passed(mine[i]) && cudaSetDevice(devices[i]) == cudaSuccess)
        drop_head(*context, ws.ranks[i], streams[i]);
    throw;
  }
  trace.host(ranks.front(), "call {} agreed", call);
  CallContext& c = context ? *context : make_context();

  TpReport report;
  report.transport = plan.transport;
  report.launches = int(plan.steps.size());
  if (plan.transport == TpTransport::nccl) {
    run_nccl(c, shards, streams);
    trace.host(ranks.front(), "call {} enqueued", call);
    return report;
  }
  try {
    for (std::size_t i = 0; i < locals; ++i) {
      Rank& r = ws.ranks[i];
      cuda_check(cudaSetDevice(r.device), "cudaSetDevice(tp)");
      const bool gather = p.pattern == TpPattern::all_gather;
      const bool to_root = p.pattern == TpPattern::gather;
      if (gather) run_all_gather(c, r, shards[i], streams[i]);
      else if (to_root) run_gather_to_root(c, r, shards[i], streams[i]);
      else run_ring(c, r, shards[i], streams[i]);
      const bool local_copies = (gather && shards[i].a_gathered) ||
                                p.pattern == TpPattern::all_reduce || (to_root && r.rank == 0);
      finish_copy_engine(c, r, local_copies, streams[i]);
      trace.host(r.rank, "call {}: rank {} enqueued", call, r.rank);
    }
  } catch (const std::exception& e) {
    release_waiters(ws);
    throw CudaError(fmt::format("tp_gemm failed after part of the call was enqueued; every "
                                "flag was released so that no rank waits for ever, and this "
                                "call's results are garbage: {}", e.what()));
  }
  return report;
}

#endif

}  // namespace autogemm
