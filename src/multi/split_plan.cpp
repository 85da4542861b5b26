// plan_split (multi_gpu.hpp): every way to cut one GEMM over G GPUs, each priced as the
// per-GPU GEMM time the single-GPU planner predicts for its pieces plus the communication the
// link model predicts (comm_cost.hpp), with overlap where it pays; the fastest wins.
#include "multi/split_plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "multi/comm_cost.hpp"

namespace autogemm {

std::string_view to_string(SplitKind kind) {
  switch (kind) {
    case SplitKind::none: return "none";
    case SplitKind::m: return "m";
    case SplitKind::n: return "n";
    case SplitKind::k: return "k";
  }
  return "?";
}

std::optional<SplitKind> parse_split_kind(std::string_view text) {
  for (SplitKind kind : {SplitKind::none, SplitKind::m, SplitKind::n, SplitKind::k})
    if (text == to_string(kind)) return kind;
  return std::nullopt;
}

std::string_view to_string(InputPlacement placement) {
  return placement == InputPlacement::replicated ? "replicated" : "root";
}

std::string_view to_string(OutputPlacement placement) {
  return placement == OutputPlacement::root ? "root" : "sharded";
}

namespace multi {

int64_t column_granule(const GemmProblem& problem) {
  return problem.scaling == Scaling::block_1x128_128x128 ? 128 : 64;
}

GemmProblem piece_problem(const GemmProblem& problem, const SplitPiece& piece, DType d_type) {
  GemmProblem q = problem;
  // The piece reads views into the whole operands: their leading dimensions, not its own sizes'.
  q.lda = problem.lda_or_packed();
  q.ldb = problem.ldb_or_packed();
  q.ldc = problem.ldc_or_packed();
  q.ldd = problem.ldd_or_packed();
  q.m = piece.rows();
  q.n = piece.cols();
  q.k = piece.depth();
  q.d_type = d_type;
  return q;
}

DType partial_type_for(const GemmProblem& problem, int gpus) {
  return gpus == 1 ? problem.d_type : DType::fp32;
}

std::vector<Range> row_shards(const GemmProblem& problem, int gpus) {
  return split_range({0, problem.m}, gpus, kRowGranule);
}

std::vector<std::vector<SplitPiece>> cut_pieces(const GemmProblem& problem, SplitKind kind,
                                                int gpus, int chunks, std::string* why_not) {
  const Range rows{0, problem.m}, cols{0, problem.n}, depth{0, problem.k};
  std::vector<Range> parts;
  const char* dim = "";
  int64_t granule = 1;
  switch (kind) {
    case SplitKind::none: break;
    case SplitKind::m: dim = "M"; granule = kRowGranule; parts = split_range(rows, gpus, granule); break;
    case SplitKind::n:
      dim = "N";
      granule = column_granule(problem);
      parts = split_range(cols, gpus, granule);
      break;
    case SplitKind::k:
      if (problem.scaling == Scaling::block_1x128_128x128) {
        *why_not = "block-scaled FP8 keeps ceil(K/128) scales per row of A and per block of B, so "
                   "a K slice's scales are strided: split K would need them copied (not done)";
        return {};
      }
      dim = "K";
      granule = kDepthGranule;
      parts = split_range(depth, gpus, granule);
      break;
  }
  for (const Range& part : parts)
    if (part.size() == 0) {
      const Range whole = kind == SplitKind::m ? rows : kind == SplitKind::n ? cols : depth;
      *why_not = fmt::format("{} = {} holds {} granule(s) of {}; {} GPUs need one each", dim,
                             whole.size(), (whole.size() + granule - 1) / granule, granule, gpus);
      return {};
    }
  std::vector<std::vector<SplitPiece>> pieces(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) {
    if (kind == SplitKind::none && r > 0) continue;
    const Range rank_rows = kind == SplitKind::m ? parts[r] : rows;
    const Range rank_cols = kind == SplitKind::n ? parts[r] : cols;
    const Range rank_depth = kind == SplitKind::k ? parts[r] : depth;
    for (const Range& chunk : split_range(rank_rows, chunks, kRowGranule)) {
      if (chunk.size() == 0) {
        *why_not = fmt::format("GPU {}'s {} rows make fewer than {} chunks of {} rows", r,
                               rank_rows.size(), chunks, kRowGranule);
        return {};
      }
      SplitPiece piece;
      piece.row_begin = chunk.begin;
      piece.row_end = chunk.end;
      piece.col_begin = rank_cols.begin;
      piece.col_end = rank_cols.end;
      piece.k_begin = rank_depth.begin;
      piece.k_end = rank_depth.end;
      pieces[r].push_back(piece);
    }
  }
  return pieces;
}

}  // namespace multi

namespace {

using multi::Range;

// The planner's answer for one sub-problem: its best configuration's time, and the best
// non-persistent one (what an overlapped piece runs) when there is one.
struct PieceTimes {
  double best_us = 0;
  std::optional<Candidate> non_persistent;
};

class Pricer {
 public:
  Pricer(const GemmProblem& problem, const GpuInfo& device, const Topology& topology,
         const SplitOptions& options)
      : p_(problem), device_(device), t_(topology), o_(options) {}

  SplitCandidate price(SplitKind kind, int chunks) {
    SplitCandidate c;
    c.kind = kind;
    c.chunks = chunks;
    c.partial_type = kind == SplitKind::k ? multi::partial_type_for(p_, t_.gpus()) : p_.d_type;
    std::string why_not;
    c.pieces = multi::cut_pieces(p_, kind, t_.gpus(), chunks, &why_not);
    if (c.pieces.empty()) {
      c.rejected = why_not;
      return c;
    }
    std::vector<double> chunk_compute(std::size_t(chunks), 0.0);
    for (auto& rank_pieces : c.pieces) {
      double rank_us = 0;
      for (std::size_t i = 0; i < rank_pieces.size(); ++i) {
        SplitPiece& piece = rank_pieces[i];
        const PieceTimes& times = piece_times(multi::piece_problem(p_, piece, c.partial_type));
        if (chunks == 1) {
          piece.predicted_us = times.best_us;
        } else if (times.non_persistent) {
          piece.predicted_us = times.non_persistent->prediction.time_us;
          piece.config = times.non_persistent->config;
        } else {
          c.rejected = fmt::format("overlap needs a non-persistent kernel (NCCL's CTAs run "
                                   "between its CTAs); the planner has none for {}x{}x{}",
                                   piece.rows(), piece.cols(), piece.depth());
          c.pieces.clear();
          return c;
        }
        rank_us += piece.predicted_us;
        chunk_compute[i] = std::max(chunk_compute[i], piece.predicted_us);
      }
      c.compute_us = std::max(c.compute_us, rank_us);
    }
    c.input_us = input_us(kind, c.pieces);
    std::vector<double> chunk_comm(static_cast<std::size_t>(chunks), 0.0);
    for (int i = 0; i < chunks; ++i) chunk_comm[i] = output_chunk_us(c, i);
    for (double us : chunk_comm) c.output_us += us;
    if (chunks == 1) {
      c.total_us = c.input_us + c.compute_us + c.output_us;
    } else {
      // Chunk i's communication starts when its GEMMs are done and the previous chunk's
      // communication is; the GEMMs of chunk i + 1 run beside it, slowed by the SMs NCCL holds.
      const double nccl_share = multi::kNcclSmsWhileOverlapped / std::max(1, device_.sm_count);
      double compute_end = 0, comm_end = 0;
      for (int i = 0; i < chunks; ++i) {
        compute_end += chunk_compute[i] + (i > 0 ? nccl_share * chunk_comm[i - 1] : 0.0);
        comm_end = std::max(comm_end, compute_end) + chunk_comm[i];
      }
      c.total_us = c.input_us + comm_end;
    }
    c.exposed_comm_us = c.total_us - c.compute_us;
    c.explanation = explain(c);
    return c;
  }

 private:
  double in_bytes() const { return dtype_bytes(p_.a_type); }
  double out_bytes() const { return dtype_bytes(p_.d_type); }
  // A copy inside one GPU: read and write, at its DRAM bandwidth.
  double local_copy_us(double bytes) const {
    return multi::transfer_us(2 * bytes, device_.memory_bandwidth_gbps);
  }
  double scale_bytes_a(int64_t rows) const {
    return p_.scaling == Scaling::block_1x128_128x128 ? 4.0 * rows * ((p_.k + 127) / 128) : 0;
  }
  double scale_bytes_b(int64_t cols) const {
    return p_.scaling == Scaling::block_1x128_128x128
               ? 4.0 * ((cols + 127) / 128) * ((p_.k + 127) / 128)
               : 0;
  }

  const PieceTimes& piece_times(const GemmProblem& q) {
    const auto key = std::make_tuple(q.m, q.n, q.k, q.d_type);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const Plan plan = plan_gemm(q, device_);
    PieceTimes times;
    times.best_us = plan.best().prediction.time_us;
    for (const Candidate& candidate : plan.candidates)
      if (!candidate.config.persistent && candidate.config.instruction != Instruction::vendor) {
        times.non_persistent = candidate;
        break;
      }
    return cache_.emplace(key, times).first->second;
  }

  // Slices sent from the root before the GEMMs (InputPlacement::root); no overlap.
  double input_us(SplitKind kind, const std::vector<std::vector<SplitPiece>>& pieces) const {
    if (o_.inputs == InputPlacement::replicated || kind == SplitKind::none) return 0;
    const SplitPiece& root = pieces[0].front();
    const double a_bytes = in_bytes() * p_.m * p_.k + scale_bytes_a(p_.m);
    const double b_bytes = in_bytes() * p_.n * p_.k + scale_bytes_b(p_.n);
    switch (kind) {
      case SplitKind::m: {
        const int64_t root_rows = pieces[0].back().row_end - root.row_begin;
        const double moved = in_bytes() * (p_.m - root_rows) * p_.k + scale_bytes_a(p_.m - root_rows);
        // A transposed (stored K x M) is strided by rows of M: packed on the root first.
        const double pack = a_is_k_major(p_.layout) ? 0 : local_copy_us(moved);
        return multi::root_scatter_us(moved, t_) + pack + multi::chain_broadcast_us(b_bytes, t_);
      }
      case SplitKind::n: {
        const double moved = in_bytes() * (p_.n - root.cols()) * p_.k + scale_bytes_b(p_.n - root.cols());
        const double pack = b_is_k_major(p_.layout) ? 0 : local_copy_us(moved);
        return multi::chain_broadcast_us(a_bytes, t_) + multi::root_scatter_us(moved, t_) + pack;
      }
      case SplitKind::k: {
        const double share = double(p_.k - root.depth()) / double(p_.k);
        const double moved_a = share * in_bytes() * p_.m * p_.k;
        const double moved_b = share * in_bytes() * p_.n * p_.k;
        // K-major operands are strided by K: a K slice is packed on the root first.
        const double pack = (a_is_k_major(p_.layout) ? local_copy_us(moved_a) : 0) +
                            (b_is_k_major(p_.layout) ? local_copy_us(moved_b) : 0);
        return multi::root_scatter_us(moved_a + moved_b, t_) + pack;
      }
      case SplitKind::none: break;
    }
    return 0;
  }

  // Chunk i's output communication and the copies that finish it.
  double output_chunk_us(const SplitCandidate& c, int i) const {
    const int g = t_.gpus();
    const bool packed_d = p_.ldd_or_packed() == p_.n;
    switch (c.kind) {
      case SplitKind::none: return 0;
      case SplitKind::m:
      case SplitKind::n: {
        if (o_.output == OutputPlacement::sharded) return 0;
        double moved = 0;
        for (int r = 1; r < g; ++r) {
          const SplitPiece& piece = c.pieces[r][i];
          moved += out_bytes() * piece.rows() * piece.cols();
        }
        // Columns of D (split N), or rows into a padded D, land in staging and are copied into
        // place on the root; whole rows of a packed D are received where they belong.
        const bool staged = c.kind == SplitKind::n || !packed_d;
        return multi::root_gather_us(moved, t_) + (staged ? local_copy_us(moved) : 0);
      }
      case SplitKind::k: {
        const SplitPiece& piece = c.pieces[0][i];
        const double partial = dtype_bytes(c.partial_type) * double(piece.rows()) * p_.n;
        const double out = out_bytes() * double(piece.rows()) * p_.n;
        // fp32 partials: one pass reads them (and C) and writes D; same-type partials into a
        // padded D: one copy; else the reduction lands in D itself.
        const double c_bytes = p_.reads_c ? out : 0;
        const double finish =
            c.partial_type != p_.d_type
                ? multi::transfer_us(partial + out + c_bytes, device_.memory_bandwidth_gbps)
                : (packed_d ? 0 : local_copy_us(out));
        if (o_.output == OutputPlacement::sharded)
          return multi::ring_reduce_scatter_us(partial, t_) + finish / g;
        return multi::chain_reduce_us(partial, t_) + finish;
      }
    }
    return 0;
  }

  std::string parts_text(const SplitCandidate& c) const {
    const int g = t_.gpus();
    auto part_size = [&](int r) {
      const auto& ps = c.pieces[r];
      switch (c.kind) {
        case SplitKind::m: return ps.back().row_end - ps.front().row_begin;
        case SplitKind::n: return ps.front().cols();
        case SplitKind::k: return ps.front().depth();
        case SplitKind::none: break;
      }
      return int64_t(0);
    };
    const char* unit = c.kind == SplitKind::m ? "rows" : c.kind == SplitKind::n ? "columns" : "of K";
    std::vector<int64_t> sizes;
    for (int r = 0; r < g; ++r) sizes.push_back(part_size(r));
    if (std::all_of(sizes.begin(), sizes.end(), [&](int64_t s) { return s == sizes[0]; }))
      return fmt::format("{} x {} {}", g, sizes[0], unit);
    return fmt::format("{} {}", fmt::join(sizes, "/"), unit);
  }

  std::string explain(const SplitCandidate& c) const {
    if (c.kind == SplitKind::none)
      return fmt::format("GPU 0 computes all of it ({:.1f} us); the other GPUs idle, nothing moves",
                         c.compute_us);
    const SplitPiece& first = c.pieces[0].front();
    std::string text = fmt::format("{}; GEMMs {:.1f} us on the slowest GPU ({}x{}x{} first piece)",
                                   parts_text(c), c.compute_us, first.rows(), first.cols(),
                                   first.depth());
    if (c.input_us > 0)
      text += fmt::format("; inputs from GPU 0 first {:.1f} us", c.input_us);
    if (c.output_us > 0) {
      const char* what = c.kind == SplitKind::k
                             ? (o_.output == OutputPlacement::root ? "reduce to GPU 0"
                                                                   : "reduce per row shard")
                             : "gather to GPU 0";
      text += fmt::format("; {} {:.1f} us{}", what, c.output_us,
                          c.kind == SplitKind::k
                              ? fmt::format(" ({} partial sums)", to_string(c.partial_type))
                              : "");
    }
    if (c.chunks > 1)
      text += fmt::format("; overlapped in {} chunks (non-persistent kernels, NCCL beside them): "
                          "{:.1f} us exposed",
                          c.chunks, c.exposed_comm_us);
    return text;
  }

  const GemmProblem& p_;
  const GpuInfo& device_;
  const Topology& t_;
  const SplitOptions& o_;
  std::map<std::tuple<int64_t, int64_t, int64_t, DType>, PieceTimes> cache_;
};

void check_topology(const Topology& t) {
  if (t.gpus() < 1)
    throw InvalidArgument("topology", "0 GPUs", "plan a split for at least one GPU");
  if (t.links.size() != t.devices.size())
    throw InvalidArgument("topology.links", fmt::format("{} rows", t.links.size()),
                          fmt::format("must have one row per GPU ({})", t.gpus()));
  for (const auto& row : t.links)
    if (row.size() != t.devices.size())
      throw InvalidArgument("topology.links", fmt::format("a row of {}", row.size()),
                            fmt::format("must have one link per GPU ({})", t.gpus()));
}

}  // namespace

SplitPlan plan_split(const GemmProblem& problem, const GpuInfo& device, const Topology& topology,
                     const SplitOptions& options) {
  validate(problem);
  // Split K would apply it to each GPU's partial sum, and no split's pieces carry its vectors.
  if (!problem.epilogue.empty())
    throw InvalidArgument("problem.epilogue", problem.epilogue.describe(),
                          "a GEMM split over GPUs has no fused epilogue: run it on one GPU");
  if (problem.scaling == Scaling::rowwise || problem.scaling == Scaling::block_1x128_1x128)
    throw InvalidArgument("problem.scaling", std::string(to_string(problem.scaling)),
                          "a GEMM split over GPUs takes per_tensor or block_1x128_128x128 FP8 "
                          "scales");
  if (problem.weight_format)
    throw InvalidArgument("problem.weight_format", std::string(to_string(*problem.weight_format)),
                          "a GEMM split over GPUs slices B as b_type rows; weight-only GEMMs run "
                          "on one GPU");
  // Its pieces would each need the scales of whole 128-column groups of rows they do not own.
  if (problem.d_type == DType::e4m3)
    throw InvalidArgument("problem.d_type", "e4m3",
                          "a GEMM split over GPUs writes bf16, fp16 or fp32: FP8 output with its "
                          "1x128 scales runs on one GPU");
  check_topology(topology);
  if (std::find(std::begin(multi::kChunkCounts), std::end(multi::kChunkCounts),
                options.max_chunks) == std::end(multi::kChunkCounts))
    throw InvalidArgument("max_chunks", std::to_string(options.max_chunks), "must be 1, 2, 4 or 8");
  SplitPlan plan;
  plan.problem = problem;
  plan.device = device;
  plan.topology = topology;
  plan.options = options;
  plan.single_gpu_us = plan_gemm(problem, device).best().prediction.time_us;

  Pricer pricer(problem, device, topology, options);
  std::vector<SplitKind> kinds = {SplitKind::none};
  if (!options.kind)
    kinds.insert(kinds.end(), {SplitKind::m, SplitKind::n, SplitKind::k});
  else if (*options.kind != SplitKind::none)
    kinds.push_back(*options.kind);
  for (SplitKind kind : kinds) {
    // Each kind with its best chunk count; chunking is only for output communication.
    SplitCandidate best = pricer.price(kind, 1);
    // More chunks only when there is output communication to hide; a kind that cannot be cut
    // into one piece per GPU cannot be cut into more.
    std::string overlap_note;
    double best_overlapped_us = 0;
    for (int chunks : multi::kChunkCounts) {
      if (chunks == 1) continue;
      if (chunks > options.max_chunks || !best.rejected.empty() || best.output_us == 0) break;
      SplitCandidate c = pricer.price(kind, chunks);
      if (!c.rejected.empty()) {  // too few rows for this many chunks: more is worse
        if (chunks == 2) overlap_note = fmt::format("; no overlap: {}", c.rejected);
        break;
      }
      if (best_overlapped_us == 0 || c.total_us < best_overlapped_us) {
        best_overlapped_us = c.total_us;
        overlap_note = fmt::format("; overlap does not pay: its best, {} chunks, predicts {:.1f} us "
                                   "(smaller non-persistent GEMMs, and NCCL holding SMs beside "
                                   "them, cost more than the hidden transfer)",
                                   chunks, c.total_us);
      }
      if (c.total_us < best.total_us) best = std::move(c);
    }
    if (best.chunks == 1) best.explanation += overlap_note;
    plan.candidates.push_back(std::move(best));
  }
  std::stable_sort(plan.candidates.begin(), plan.candidates.end(),
                   [](const SplitCandidate& a, const SplitCandidate& b) {
                     if (a.rejected.empty() != b.rejected.empty()) return a.rejected.empty();
                     return a.rejected.empty() && a.total_us < b.total_us;
                   });
  if (options.kind) {
    const auto forced = std::find_if(plan.candidates.begin(), plan.candidates.end(),
                                     [&](const SplitCandidate& c) { return c.kind == *options.kind; });
    if (!forced->rejected.empty())
      throw InvalidArgument("kind", std::string(to_string(*options.kind)),
                            fmt::format("cannot split this problem over {} GPUs: {}",
                                        topology.gpus(), forced->rejected));
    plan.chosen = *forced;
  } else {
    plan.chosen = plan.candidates.front();  // "none" is always legal
  }
  return plan;
}

}  // namespace autogemm
