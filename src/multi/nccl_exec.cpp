// split_gemm: a SplitPlan run over NCCL (nccl_exec.hpp says the order of the steps).
#include "multi/nccl_exec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/multi_gpu.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/current_device_guard.hpp"
#include "multi/nccl_comm.hpp"
#include "multi/operand_views.hpp"
#include "multi/split_checks.hpp"
#include "multi/split_plan.hpp"
#include "runtime/simple_launch.hpp"

#ifdef AUTOGEMM_HAVE_NCCL
#include <nccl.h>

#include "multi_gpu/partial_sum_finish_params.cuh"
#endif

namespace autogemm {

#ifndef AUTOGEMM_HAVE_NCCL

namespace multi {
int nccl_reduce_type(DType) { throw no_nccl_error(); }
}  // namespace multi

SplitReport split_gemm(const GemmProblem&, const std::vector<GemmOperands>&, const SplitPlan&,
                       MultiGpuComm&, const std::vector<cudaStream_t>&) {
  throw multi::no_nccl_error();
}

#else

namespace multi {

int nccl_reduce_type(DType type) {
  switch (type) {
    case DType::fp32: return ncclFloat32;
    case DType::bf16: return ncclBfloat16;
    case DType::fp16: return ncclFloat16;
    default: break;
  }
  throw InvalidArgument("partial type", std::string(to_string(type)),
                        "split K reduces fp32, bf16 or fp16 partial sums");
}

}  // namespace multi

namespace {

using multi::OperandView;
using multi::Range;
using multi::StoredBlock;

// One rank this process drives, and what it holds during the call.
struct RankRun {
  std::size_t local = 0;
  int rank = 0, device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;       // the caller's
  cudaStream_t comm_stream = nullptr;  // == stream unless chunks overlap communication
  GemmOperands ops;
  OperandView a, b;                    // where its pieces read A and B
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  int64_t scale_a_origin = 0, scale_b_origin = 0;
  void* work = nullptr;                // non-root output pieces (root output, split M/N)
  int64_t ld_work = 0;
  std::vector<void*> staging;          // root: per sending rank (split M/N), null = into D
  void* partial = nullptr;             // split K
  int64_t ld_partial = 0;
  bool partial_is_d = false;
  std::vector<void*> scratch;          // every stream-ordered allocation, freed at the end
  std::vector<GemmReport> reports;
};

void check(ncclResult_t result, const char* what) { multi::nccl_check(result, what); }

// ncclGroupStart/End around one step's calls for every local rank.
class NcclGroup {
 public:
  NcclGroup() { check(ncclGroupStart(), "ncclGroupStart"); }
  ~NcclGroup() noexcept(false) {
    if (std::uncaught_exceptions() == 0) check(ncclGroupEnd(), "ncclGroupEnd");
    else (void)ncclGroupEnd();
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
};

class SplitRun {
 public:
  SplitRun(const GemmProblem& problem, const std::vector<GemmOperands>& operands,
           const SplitPlan& plan, MultiGpuComm::State& state,
           const std::vector<cudaStream_t>& streams)
      : p_(problem), plan_(plan), c_(plan.chosen), g_(plan.gpus()) {
    const bool overlapped = c_.chunks > 1;
    for (std::size_t i = 0; i < state.ranks.size(); ++i) {
      RankRun r;
      r.local = i;
      r.rank = state.ranks[i].rank;
      r.device = state.ranks[i].device;
      r.comm = state.comms[i];
      r.stream = streams.empty() ? nullptr : streams[i];
      r.comm_stream = overlapped ? state.comm_stream(i) : r.stream;
      r.ops = operands[i];
      ranks_.push_back(r);
    }
  }

  SplitReport run() {
    for (RankRun& r : ranks_) allocate(r);
    // One GPU has nothing to send; split "none" computes on the root alone.
    if (plan_.options.inputs == InputPlacement::root && c_.kind != SplitKind::none && g_ > 1)
      send_inputs();
    for (int chunk = 0; chunk < c_.chunks; ++chunk) {
      for (RankRun& r : ranks_) compute(r, chunk);
      if (c_.chunks > 1)
        for (RankRun& r : ranks_) hand_over(r.device, r.stream, r.comm_stream);
      output(chunk);
      for (RankRun& r : ranks_) finish(r, chunk);
    }
    SplitReport report;
    report.kind = c_.kind;
    report.chunks = c_.chunks;
    for (RankRun& r : ranks_) {
      if (c_.chunks > 1) hand_over(r.device, r.comm_stream, r.stream);
      set_device(r.device);
      for (void* buffer : r.scratch) cuda_check(cudaFreeAsync(buffer, r.stream), "cudaFreeAsync(split scratch)");
      report.gemms.push_back(std::move(r.reports));
    }
    return report;
  }

 private:
  static void set_device(int device) { cuda_check(cudaSetDevice(device), "cudaSetDevice(split)"); }

  // `to` waits for the work enqueued on `from` so far.
  static void hand_over(int device, cudaStream_t from, cudaStream_t to) {
    set_device(device);
    cudaEvent_t event = nullptr;
    cuda_check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate(split)");
    cuda_check(cudaEventRecord(event, from), "cudaEventRecord(split)");
    cuda_check(cudaStreamWaitEvent(to, event, 0), "cudaStreamWaitEvent(split)");
    cuda_check(cudaEventDestroy(event), "cudaEventDestroy(split)");  // released once it fires
  }

  static void* scratch(RankRun& r, int64_t bytes) {
    void* p = nullptr;
    cuda_check(cudaMallocAsync(&p, std::size_t(std::max<int64_t>(bytes, 1)), r.stream),
               "cudaMallocAsync(split scratch)");
    r.scratch.push_back(p);
    return p;
  }

  int out_bytes() const { return dtype_bytes(p_.d_type); }
  int partial_bytes() const { return dtype_bytes(c_.partial_type); }
  bool gathers() const {
    return plan_.options.output == OutputPlacement::root &&
           (c_.kind == SplitKind::m || c_.kind == SplitKind::n);
  }
  const std::vector<SplitPiece>& pieces(int rank) const { return c_.pieces[std::size_t(rank)]; }
  // The block of D a rank computes: rows of its first piece to its last, its columns.
  Range rank_rows(int rank) const { return {pieces(rank).front().row_begin, pieces(rank).back().row_end}; }
  Range rank_cols(int rank) const { return {pieces(rank).front().col_begin, pieces(rank).front().col_end}; }
  int64_t work_ld(int rank) const { return multi::packed_ld(rank_cols(rank).size(), out_bytes()); }
  // The root receives whole rows of a packed D in place; anything else lands in staging first.
  bool received_in_place(int sender) const {
    return c_.kind == SplitKind::m && p_.ldd_or_packed() == p_.n && work_ld(sender) == p_.n;
  }

  void allocate(RankRun& r) {
    set_device(r.device);
    r.a = multi::whole_a(p_, r.ops.a);
    r.b = multi::whole_b(p_, r.ops.b);
    r.scale_a = r.ops.scale_a;
    r.scale_b = r.ops.scale_b;
    if (gathers()) {
      if (r.rank != 0) {
        r.ld_work = work_ld(r.rank);
        r.work = scratch(r, rank_rows(r.rank).size() * r.ld_work * out_bytes());
      } else {
        r.staging.assign(std::size_t(g_), nullptr);
        for (int q = 1; q < g_; ++q)
          if (!received_in_place(q))
            r.staging[q] = scratch(r, rank_rows(q).size() * work_ld(q) * out_bytes());
      }
    }
    if (c_.kind == SplitKind::k) {
      r.ld_partial = multi::packed_ld(p_.n, partial_bytes());
      const bool owns_all = plan_.options.output == OutputPlacement::root ? r.rank == 0 : g_ == 1;
      r.partial_is_d = owns_all && c_.partial_type == p_.d_type && p_.ldd_or_packed() == p_.n &&
                       r.ld_partial == p_.n;
      r.partial = r.partial_is_d ? r.ops.d : scratch(r, p_.m * r.ld_partial * partial_bytes());
    }
  }

  // ---- inputs on the root: broadcast whole operands, send slices -------------------------------

  // What rank q needs of A (is_a) or B: logical rows [i0, i1) of M or N and depths [k0, k1).
  struct Need {
    int64_t i0, i1, k0, k1;
    bool whole;
  };
  Need need(int q, bool is_a) const {
    const SplitPiece& first = pieces(q).front();
    const int64_t rows = is_a ? p_.m : p_.n;
    switch (c_.kind) {
      case SplitKind::m:
        return is_a ? Need{rank_rows(q).begin, rank_rows(q).end, 0, p_.k, false}
                    : Need{0, rows, 0, p_.k, true};
      case SplitKind::n:
        return is_a ? Need{0, rows, 0, p_.k, true}
                    : Need{first.col_begin, first.col_end, 0, p_.k, false};
      case SplitKind::k: return Need{0, rows, first.k_begin, first.k_end, false};
      case SplitKind::none: break;
    }
    return Need{0, rows, 0, p_.k, true};
  }

  struct Transfer {
    StoredBlock block;
    bool contiguous;
    int64_t ld;     // the receiver's leading dimension
    int64_t bytes;
  };
  Transfer transfer(const Need& n, const OperandView& root_view, int64_t stored_row_length) const {
    Transfer t;
    t.block = multi::stored_block(root_view.k_major, n.i0, n.i1, n.k0, n.k1);
    t.contiguous = multi::block_is_contiguous(t.block, stored_row_length);
    t.ld = t.contiguous ? root_view.ld : multi::packed_ld(t.block.cols(), root_view.elem_bytes);
    t.bytes = t.contiguous ? multi::contiguous_bytes(t.block, root_view.ld, root_view.elem_bytes)
                           : t.block.rows() * t.ld * root_view.elem_bytes;
    return t;
  }
  int64_t stored_row_length(bool is_a) const {
    return is_a ? (a_is_k_major(p_.layout) ? p_.k : p_.m) : (b_is_k_major(p_.layout) ? p_.k : p_.n);
  }

  void send_inputs() {
    // Root: pack strided slices first, in stream order before the sends.
    std::vector<std::vector<const void*>> sources(std::size_t(g_), std::vector<const void*>(2, nullptr));
    for (RankRun& r : ranks_) {
      if (r.rank != 0) continue;
      set_device(r.device);
      for (int q = 1; q < g_; ++q)
        for (int which = 0; which < 2; ++which) {
          const bool is_a = which == 0;
          const OperandView& view = is_a ? r.a : r.b;
          const Transfer t = transfer(need(q, is_a), view, stored_row_length(is_a));
          const char* start = view.base + (t.block.row_begin * view.ld + t.block.col_begin) * view.elem_bytes;
          if (t.contiguous) {
            sources[q][which] = start;
            continue;
          }
          void* packed = scratch(r, t.bytes);
          cuda_check(cudaMemcpy2DAsync(packed, t.ld * view.elem_bytes, start, view.ld * view.elem_bytes,
                                       t.block.cols() * view.elem_bytes, t.block.rows(),
                                       cudaMemcpyDeviceToDevice, r.stream),
                     "cudaMemcpy2DAsync(pack a slice for sending)");
          sources[q][which] = packed;
        }
    }
    // Receivers: their buffers and views.
    std::vector<std::vector<void*>> received(ranks_.size(), std::vector<void*>(2, nullptr));
    for (RankRun& r : ranks_) {
      if (r.rank == 0) continue;
      set_device(r.device);
      for (int which = 0; which < 2; ++which) {
        const bool is_a = which == 0;
        const Need n = need(r.rank, is_a);
        OperandView root_like = is_a ? multi::whole_a(p_, nullptr) : multi::whole_b(p_, nullptr);
        const Transfer t = transfer(n, root_like, stored_row_length(is_a));
        void* buffer = scratch(r, t.block.rows() * t.ld * root_like.elem_bytes);
        received[r.local][which] = buffer;
        OperandView& view = is_a ? r.a : r.b;
        view = root_like;
        view.base = static_cast<const char*>(buffer);
        view.ld = t.ld;
        view.i0 = n.i0;
        view.j0 = n.k0;
      }
    }
    // Whole operands: one broadcast each; slices: send/recv pairs.
    {
      NcclGroup group;
      for (RankRun& r : ranks_)
        for (int which = 0; which < 2; ++which) {
          const bool is_a = which == 0;
          const Need n = need(std::max(r.rank, 1), is_a);
          if (!n.whole) continue;
          const OperandView like = is_a ? multi::whole_a(p_, nullptr) : multi::whole_b(p_, nullptr);
          const Transfer t = transfer(n, like, stored_row_length(is_a));
          void* buffer = r.rank == 0 ? const_cast<char*>((is_a ? r.a : r.b).base) : received[r.local][which];
          check(ncclBroadcast(buffer, buffer, std::size_t(t.bytes), ncclUint8, 0, r.comm, r.stream),
                "ncclBroadcast(input)");
        }
    }
    {
      NcclGroup group;
      for (RankRun& r : ranks_)
        for (int which = 0; which < 2; ++which) {
          const bool is_a = which == 0;
          const OperandView like = is_a ? multi::whole_a(p_, nullptr) : multi::whole_b(p_, nullptr);
          if (r.rank == 0) {
            for (int q = 1; q < g_; ++q) {
              const Need n = need(q, is_a);
              if (n.whole) continue;
              const Transfer t = transfer(n, like, stored_row_length(is_a));
              check(ncclSend(sources[q][which], std::size_t(t.bytes), ncclUint8, q, r.comm, r.stream),
                    "ncclSend(input slice)");
            }
          } else {
            const Need n = need(r.rank, is_a);
            if (n.whole) continue;
            const Transfer t = transfer(n, like, stored_row_length(is_a));
            check(ncclRecv(received[r.local][which], std::size_t(t.bytes), ncclUint8, 0, r.comm, r.stream),
                  "ncclRecv(input slice)");
          }
        }
    }
    if (p_.scaling != Scaling::none) send_scales();
  }

  // Block-scaled FP8 (split M or N; split K is refused by the planner): the scales of a row
  // slice of A or a 128-column slice of B are contiguous rows of floats.
  void send_scales() {
    const int64_t kb = (p_.k + 127) / 128;
    auto scale_rows = [&](int q, bool is_a) -> Range {
      const Need n = need(q, is_a);
      return is_a ? Range{n.i0, n.i1} : Range{n.i0 / 128, (n.i1 + 127) / 128};
    };
    std::vector<std::vector<float*>> received(ranks_.size(), std::vector<float*>(2, nullptr));
    for (RankRun& r : ranks_) {
      if (r.rank == 0) continue;
      set_device(r.device);
      for (int which = 0; which < 2; ++which) {
        const Range rows = scale_rows(r.rank, which == 0);
        received[r.local][which] = static_cast<float*>(scratch(r, rows.size() * kb * 4));
      }
      r.scale_a = received[r.local][0];
      r.scale_a_origin = need(r.rank, true).i0;
      r.scale_b = received[r.local][1];
      r.scale_b_origin = need(r.rank, false).i0 / 128 * 128;
    }
    NcclGroup group;
    for (RankRun& r : ranks_)
      for (int which = 0; which < 2; ++which) {
        const bool is_a = which == 0;
        const float* root_scales = is_a ? r.ops.scale_a : r.ops.scale_b;
        if (r.rank == 0) {
          for (int q = 1; q < g_; ++q) {
            const Range rows = scale_rows(q, is_a);
            check(ncclSend(root_scales + rows.begin * kb, std::size_t(rows.size() * kb), ncclFloat32, q,
                           r.comm, r.stream),
                  "ncclSend(FP8 scales)");
          }
        } else {
          const Range rows = scale_rows(r.rank, is_a);
          check(ncclRecv(received[r.local][which], std::size_t(rows.size() * kb), ncclFloat32, 0,
                         r.comm, r.stream),
                "ncclRecv(FP8 scales)");
        }
      }
  }

  // ---- the GEMMs ------------------------------------------------------------------------------

  void compute(RankRun& r, int chunk) {
    if (std::size_t(chunk) >= pieces(r.rank).size()) return;
    const SplitPiece& piece = pieces(r.rank)[std::size_t(chunk)];
    const bool split_k = c_.kind == SplitKind::k;
    GemmProblem sub = multi::piece_problem(p_, piece, split_k ? c_.partial_type : p_.d_type);
    sub.lda = r.a.ld;
    sub.ldb = r.b.ld;
    GemmOperands ops;
    ops.a = r.a.at(piece.row_begin, piece.k_begin);
    ops.b = r.b.at(piece.col_begin, piece.k_begin);
    if (p_.scaling != Scaling::none) {
      ops.scale_a = multi::a_scales_at(r.scale_a, r.scale_a_origin, piece.row_begin, p_.k);
      ops.scale_b = multi::b_scales_at(r.scale_b, r.scale_b_origin, piece.col_begin, p_.k);
    }
    const int64_t ldc = p_.ldc_or_packed();
    if (split_k) {
      // fp32 partials: alpha, beta and C come in the finish; same-type partials: every rank
      // scales by alpha and rank 0 alone adds beta * C, so the sum is the GEMM.
      const bool same_type = c_.partial_type == p_.d_type;
      sub.ldd = r.partial_is_d ? p_.ldd_or_packed() : r.ld_partial;
      ops.d = multi::row_major_at(r.partial, sub.ldd, piece.row_begin, 0, partial_bytes());
      ops.alpha = same_type ? r.ops.alpha : 1.0f;
      ops.beta = same_type && r.rank == 0 ? r.ops.beta : 0.0f;
    } else {
      const bool into_d = r.rank == 0 || plan_.options.output == OutputPlacement::sharded;
      const Range rows = rank_rows(r.rank), cols = rank_cols(r.rank);
      sub.ldd = into_d ? p_.ldd_or_packed() : r.ld_work;
      ops.d = into_d ? multi::row_major_at(r.ops.d, sub.ldd, piece.row_begin, piece.col_begin, out_bytes())
                     : multi::row_major_at(r.work, sub.ldd, piece.row_begin - rows.begin,
                                           piece.col_begin - cols.begin, out_bytes());
      ops.alpha = r.ops.alpha;
      ops.beta = r.ops.beta;
    }
    if (ops.beta != 0.0f)
      ops.c = multi::row_major_at(const_cast<void*>(r.ops.c), ldc, piece.row_begin,
                                  split_k ? 0 : piece.col_begin, out_bytes());
    GemmOptions options;
    options.device = r.device;
    options.config = piece.config;
    set_device(r.device);
    r.reports.push_back(gemm(sub, ops, r.stream, options));
  }

  // ---- chunk outputs: gather or reduce, then into D ----------------------------------------

  // Rows of chunk `chunk` (the same for every rank in split N and K).
  Range chunk_rows(int rank, int chunk) const {
    const SplitPiece& piece = pieces(rank)[std::size_t(chunk)];
    return {piece.row_begin, piece.row_end};
  }

  void output(int chunk) {
    if (gathers()) {
      NcclGroup group;
      for (RankRun& r : ranks_) {
        if (r.rank != 0) {
          const Range rows = chunk_rows(r.rank, chunk);
          const Range mine = rank_rows(r.rank);
          check(ncclSend(multi::row_major_at(r.work, r.ld_work, rows.begin - mine.begin, 0, out_bytes()),
                         std::size_t(rows.size() * r.ld_work * out_bytes()), ncclUint8, 0, r.comm,
                         r.comm_stream),
                "ncclSend(output piece)");
          continue;
        }
        for (int q = 1; q < g_; ++q) {
          const Range rows = chunk_rows(q, chunk);
          check(ncclRecv(receive_at(r, q, rows), std::size_t(rows.size() * work_ld(q) * out_bytes()),
                         ncclUint8, q, r.comm, r.comm_stream),
                "ncclRecv(output piece)");
        }
      }
    }
    if (c_.kind != SplitKind::k) return;
    const auto type = ncclDataType_t(multi::nccl_reduce_type(c_.partial_type));
    NcclGroup group;
    for (RankRun& r : ranks_)
      for (const auto& [rows, owner] : reduce_targets(chunk)) {
        void* at = multi::row_major_at(r.partial, r.partial_is_d ? p_.ldd_or_packed() : r.ld_partial,
                                       rows.begin, 0, partial_bytes());
        check(ncclReduce(at, at, std::size_t(rows.size() * r.ld_partial), type, ncclSum, owner, r.comm,
                         r.comm_stream),
              "ncclReduce(split-K partial sums)");
      }
  }

  // Where the root receives rank q's rows: in D itself, or its staging.
  void* receive_at(RankRun& root, int q, const Range& rows) const {
    if (root.staging[q] == nullptr)
      return multi::row_major_at(root.ops.d, p_.ldd_or_packed(), rows.begin, 0, out_bytes());
    return multi::row_major_at(root.staging[q], work_ld(q), rows.begin - rank_rows(q).begin, 0, out_bytes());
  }

  // Split K: the rows of a chunk each reduce covers and the rank that receives them.
  std::vector<std::pair<Range, int>> reduce_targets(int chunk) const {
    const Range rows = chunk_rows(0, chunk);
    if (plan_.options.output == OutputPlacement::root) return {{rows, 0}};
    std::vector<std::pair<Range, int>> targets;
    const std::vector<Range> shards = multi::row_shards(p_, g_);
    for (int owner = 0; owner < g_; ++owner) {
      const Range part{std::max(rows.begin, shards[owner].begin), std::min(rows.end, shards[owner].end)};
      if (part.size() > 0) targets.emplace_back(part, owner);
    }
    return targets;
  }

  void finish(RankRun& r, int chunk) {
    set_device(r.device);
    if (gathers() && r.rank == 0) {
      for (int q = 1; q < g_; ++q) {
        if (r.staging[q] == nullptr) continue;
        const Range rows = chunk_rows(q, chunk), cols = rank_cols(q);
        cuda_check(cudaMemcpy2DAsync(
                       multi::row_major_at(r.ops.d, p_.ldd_or_packed(), rows.begin, cols.begin, out_bytes()),
                       p_.ldd_or_packed() * out_bytes(), receive_at(r, q, rows), work_ld(q) * out_bytes(),
                       cols.size() * out_bytes(), rows.size(), cudaMemcpyDeviceToDevice, r.comm_stream),
                   "cudaMemcpy2DAsync(output piece into D)");
      }
    }
    if (c_.kind != SplitKind::k || r.partial_is_d) return;
    for (const auto& [rows, owner] : reduce_targets(chunk))
      if (owner == r.rank) finish_partial(r, rows);
  }

  // D[rows] from the reduced partial sums: a copy for same-type partials, else the finish kernel.
  void finish_partial(RankRun& r, const Range& rows) {
    const int64_t ldd = p_.ldd_or_packed();
    void* d = multi::row_major_at(r.ops.d, ldd, rows.begin, 0, out_bytes());
    const void* partial = multi::row_major_at(r.partial, r.ld_partial, rows.begin, 0, partial_bytes());
    if (c_.partial_type == p_.d_type) {
      cuda_check(cudaMemcpy2DAsync(d, ldd * out_bytes(), partial, r.ld_partial * partial_bytes(),
                                   p_.n * out_bytes(), rows.size(), cudaMemcpyDeviceToDevice,
                                   r.comm_stream),
                 "cudaMemcpy2DAsync(reduced partial sums into D)");
      return;
    }
    PartialSumFinishParams params{};
    params.rows = rows.size();
    params.cols = p_.n;
    params.ld_partial = r.ld_partial;
    params.ldd = ldd;
    params.ldc = p_.ldc_or_packed();
    params.partial = static_cast<const float*>(partial);
    params.d = d;
    params.c = r.ops.beta != 0.0f
                   ? multi::row_major_at(const_cast<void*>(r.ops.c), params.ldc, rows.begin, 0, out_bytes())
                   : nullptr;
    params.alpha = r.ops.alpha;
    params.beta = r.ops.beta;
    params.out_type = p_.d_type == DType::bf16   ? kPartialOutBf16
                      : p_.d_type == DType::fp16 ? kPartialOutFp16
                                                 : kPartialOutFp32;
    runtime::SimpleGrid grid;
    grid.grid_x = unsigned((p_.n + 255) / 256);
    grid.grid_y = unsigned(std::min<int64_t>(rows.size(), 65535));
    grid.block_x = 256;
    runtime::launch_simple_kernel("multi_gpu/partial_sum_finish.cuh", "autogemm_partial_sum_finish",
                                  grid, &params, r.comm_stream,
                                  fmt::format("partial_sum_finish {} x {}", rows.size(), p_.n));
  }

  const GemmProblem& p_;
  const SplitPlan& plan_;
  const SplitCandidate& c_;
  const int g_;
  std::vector<RankRun> ranks_;
};

}  // namespace

SplitReport split_gemm(const GemmProblem& problem, const std::vector<GemmOperands>& operands,
                       const SplitPlan& plan, MultiGpuComm& comm,
                       const std::vector<cudaStream_t>& streams) {
  MultiGpuComm::State& state = *comm.state_;
  multi::check_split_arguments(problem, operands, plan, state.size, state.ranks.size(), streams);
  multi::check_split_operands(operands, plan, state.ranks, state.devices);
  CurrentDeviceGuard restore;
  return SplitRun(problem, operands, plan, state, streams).run();
}

#endif  // AUTOGEMM_HAVE_NCCL

}  // namespace autogemm
