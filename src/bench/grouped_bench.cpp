// `autogemm bench --grouped`: drawing each row's groups, its operands, the checks of our D and
// the timing against the two baselines (grouped_bench.hpp).
#include "bench/grouped_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "bench/compare.hpp"
#include "bench/grouped_baselines.hpp"
#include "bench/grouped_checks.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "jit/log.hpp"

namespace autogemm::bench {

namespace {

int64_t round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

// ---- the drawn layout ------------------------------------------------------------------------

std::vector<int64_t> draw_group_rows(int64_t groups, int64_t m_per_group, uint64_t seed,
                                     uint64_t row_index) {
  if (groups < 1) throw InvalidArgument("groups", std::to_string(groups), "must be >= 1");
  if (m_per_group < 1)
    throw InvalidArgument("m_per_group", std::to_string(m_per_group), "must be >= 1");
  std::seed_seq words{uint32_t(seed), uint32_t(seed >> 32), uint32_t(row_index),
                      uint32_t(row_index >> 32)};
  std::mt19937_64 rng(words);
  // [ceil(0.7 m), floor(1.3 m)] in integers, at least one row.
  const int64_t lo = std::max<int64_t>(1, (7 * m_per_group + 9) / 10);
  const int64_t hi = std::max(lo, 13 * m_per_group / 10);
  const auto span = static_cast<unsigned __int128>(hi - lo + 1);
  std::vector<int64_t> rows(static_cast<std::size_t>(groups));
  // The high word of a 64 x 64-bit product: uniform up to a bias of span / 2^64 (Lemire 2019),
  // and unlike std::uniform_int_distribution the same in every standard library.
  for (int64_t& r : rows) r = lo + static_cast<int64_t>((rng() * span) >> 64);
  return rows;
}

int64_t masked_max_m(std::span<const int64_t> group_rows) {
  int64_t largest = 0;
  for (int64_t r : group_rows) largest = std::max(largest, r);
  return round_up(largest, kMaskedMaxMAlignment);
}

int64_t GroupedItem::valid_rows() const {
  int64_t total = 0;
  for (int64_t r : group_rows) total += r;
  return total;
}

double GroupedItem::useful_flops() const {
  return 2.0 * double(valid_rows()) * double(problem.n) * double(problem.k);
}

double GroupedItem::bytes() const {
  const double valid = double(valid_rows()), n = double(problem.n), k = double(problem.k);
  return valid * k * dtype_bytes(problem.a_type) +
         double(problem.num_groups) * n * k * dtype_bytes(problem.b_type) +
         valid * n * dtype_bytes(problem.d_type);
}

GroupedItem make_grouped_item(const GroupedCase& source, std::size_t index, DType in, DType out,
                              uint64_t seed) {
  GroupedItem item;
  item.source = source;
  item.index = index;
  item.group_rows = draw_group_rows(source.groups, source.m_per_group, seed, index);
  GemmProblem& p = item.problem;
  p.grouping = source.kind;
  p.num_groups = source.groups;
  p.n = source.n;
  p.k = source.k;
  p.expected_m = source.m_per_group;
  p.a_type = p.b_type = in;
  p.d_type = out;
  p.layout = Layout::nt;
  if (source.kind == Grouping::masked) {
    p.m = masked_max_m(item.group_rows);
    for (int64_t g = 0; g < source.groups; ++g) item.row_starts.push_back(g * p.m);
  } else {
    // The layout as the library reads it (grouped.hpp), not a second copy of its rule.
    p.m = contiguous_rows(item.group_rows);
    item.row_starts = check_contiguous_groups(p, item.group_rows);
  }
  validate(p);
  // The inputs depend on the row too (and not on the other rows): a golden-ratio step per row.
  item.input_seed = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t(index) + 1));
  return item;
}

std::vector<GroupedItem> make_grouped_items(const std::vector<GroupedCase>& cases,
                                            const std::string& source, DType in, DType out,
                                            uint64_t seed) {
  std::vector<GroupedItem> items;
  items.reserve(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    try {
      items.push_back(make_grouped_item(cases[i], i, in, out, seed));
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(fmt::format("{} line {} ({})", source, cases[i].line, e.argument()),
                            e.value(), e.rule());
    }
  }
  return items;
}

double same_bytes_share(const GroupedRow& row) {
  if (!row.same_bytes_copy || !(row.ours.median_us > 0)) return 0;
  return row.same_bytes_copy->median_us / row.ours.median_us;
}

// ---- one row on the GPU -------------------------------------------------------------------------

namespace {

std::size_t row_bytes(const GemmProblem& p, char operand) {
  const DType t = operand == 'A' ? p.a_type : p.d_type;
  return std::size_t(operand == 'A' ? p.k : p.n) * std::size_t(dtype_bytes(t));
}

const char* row_of(const void* base, const GemmProblem& p, char operand, int64_t row) {
  return static_cast<const char*>(base) + std::size_t(row) * row_bytes(p, operand);
}

std::vector<unsigned char> download_bytes(const void* device, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  if (bytes > 0)
    cuda_check(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost),
               "cudaMemcpy(grouped bench download)");
  return host;
}

void upload_int32(DeviceBuffer& buffer, const std::vector<int32_t>& values, const char* what) {
  buffer = DeviceBuffer(values.size() * sizeof(int32_t));
  cuda_check(cudaMemcpy(buffer.get(), values.data(), buffer.bytes(), cudaMemcpyHostToDevice), what);
  // A pageable copy may return before its DMA lands; the row's stream does not wait for the
  // legacy default stream (tensors.cpp says the same).
  cuda_check(cudaStreamSynchronize(nullptr), what);
}

// Group g's valid rows of a D as doubles.
std::vector<double> group_rows_of(const void* d, const GroupedItem& item, std::size_t g) {
  const GemmProblem& p = item.problem;
  return download_as_double(row_of(d, p, 'D', item.row_starts[g]),
                            std::size_t(item.group_rows[g] * p.n), p.d_type);
}

// The row's device data: random A and B, our D and the baselines' D poisoned, and the groups'
// sizes as our kernel reads them.
struct GroupedData {
  DeviceBuffer a, b, d_ours, d_base, group_index, masked_m;
  std::vector<unsigned char> poison;   // one element of D as fill_poison leaves it

  GroupedData(const GroupedItem& item, bool baseline) {
    const GemmProblem& p = item.problem;
    const std::size_t rows = std::size_t(p.stored_rows());
    const std::size_t a_count = rows * std::size_t(p.k);
    const std::size_t b_count = std::size_t(p.num_groups * p.n * p.k);
    const std::size_t d_count = rows * std::size_t(p.n);
    // Random everywhere, padding and rows past masked_m included: never zeros (the matrix units
    // run faster on them, baselines.md), and an A row read in place of another changes D rather
    // than adding zeros that hide it.
    a = DeviceBuffer(a_count * dtype_bytes(p.a_type));
    b = DeviceBuffer(b_count * dtype_bytes(p.b_type));
    fill_random(a.get(), a_count, p.a_type, item.input_seed);
    fill_random(b.get(), b_count, p.b_type, item.input_seed + 1);
    d_ours = DeviceBuffer(d_count * dtype_bytes(p.d_type));
    fill_poison(d_ours.get(), d_count, p.d_type);
    poison = download_bytes(d_ours.get(), std::size_t(dtype_bytes(p.d_type)));
    if (baseline) {
      d_base = DeviceBuffer(d_count * dtype_bytes(p.d_type));
      fill_poison(d_base.get(), d_count, p.d_type);
    }
    if (p.grouping == Grouping::contiguous) {
      upload_int32(group_index, contiguous_group_index(p, item.group_rows),
                   "cudaMemcpy(group_index)");
    } else {
      upload_int32(masked_m, std::vector<int32_t>(item.group_rows.begin(), item.group_rows.end()),
                   "cudaMemcpy(masked_m)");
    }
  }

  void repoison_base(const GemmProblem& p) {
    fill_poison(d_base.get(), std::size_t(p.stored_rows() * p.n), p.d_type);
  }
};

// Masked rows: every row of our D at or past masked_m[g] must still be the poison, bit for bit
// (grouped.hpp: D keeps whatever they held). Sets row.poison_changed; returns what is wrong, ""
// when nothing. `when` starts the message ("after the timed calls: ").
std::string check_untouched_rows(GroupedRow& row, const GroupedData& data, const char* when) {
  const GroupedItem& item = row.item;
  const GemmProblem& p = item.problem;
  if (p.grouping != Grouping::masked) return {};
  row.poison_changed = 0;
  std::string first;
  for (std::size_t g = 0; g < item.group_rows.size(); ++g) {
    const int64_t valid = item.group_rows[g];
    const std::vector<unsigned char> rest =
        download_bytes(row_of(data.d_ours.get(), p, 'D', item.row_starts[g] + valid),
                       std::size_t(p.m - valid) * row_bytes(p, 'D'));
    const PoisonCount count = count_not_poison(rest, data.poison);
    if (count.changed > 0 && first.empty())
      first = fmt::format("group {} row {} column {}", g, valid + count.first / p.n,
                          count.first % p.n);
    row.poison_changed += count.changed;
  }
  if (row.poison_changed == 0) return {};
  return fmt::format("{}{} entries of rows at or past masked_m[g] changed (first: {}; they must "
                     "keep what D held)",
                     when, row.poison_changed, first);
}

// Our D's valid rows: every entry written, and each group's diff against the float64 reference
// on reference_ranges of its rows (the worst group is the row's diff). Fills the row's fields;
// returns what is wrong, "" when nothing.
std::string check_valid_rows(GroupedRow& row, const GroupedData& data, cudaStream_t stream) {
  const GroupedItem& item = row.item;
  const GemmProblem& p = item.problem;
  const int64_t budget = reference_rows_per_group(p.num_groups, p.n, p.k);
  GemmProblem ref;   // one range of one group as a plain GEMM
  ref.n = p.n;
  ref.k = p.k;
  ref.a_type = p.a_type;
  ref.b_type = p.b_type;
  ref.d_type = p.d_type;
  DeviceBuffer d_ref(std::size_t(std::min(budget, p.m) * p.n) * sizeof(double));
  WorstGroup worst;
  std::string first_unwritten;
  row.unwritten = 0;
  row.checked_rows = 0;
  for (std::size_t g = 0; g < item.group_rows.size(); ++g) {
    const std::vector<double> ours = group_rows_of(data.d_ours.get(), item, g);
    if (const int64_t unwritten = count_non_finite(ours); unwritten > 0) {
      if (first_unwritten.empty()) {
        const int64_t at = std::find_if(ours.begin(), ours.end(),
                                        [](double v) { return !std::isfinite(v); }) -
                           ours.begin();
        first_unwritten = fmt::format("group {} row {} column {}", g, at / p.n, at % p.n);
      }
      row.unwritten += unwritten;
    }
    std::vector<double> got, want;
    for (const RowRange& range : reference_ranges(item.group_rows[g], budget)) {
      ref.m = range.count;
      GemmOperands ops;
      ops.a = row_of(data.a.get(), p, 'A', item.row_starts[g] + range.first);
      ops.b = static_cast<const char*>(data.b.get()) +
              std::size_t(g) * std::size_t(p.n * p.k) * dtype_bytes(p.b_type);
      reference_gemm(ref, ops, static_cast<double*>(d_ref.get()), stream);
      cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(float64 reference)");
      const std::size_t count = std::size_t(range.count * p.n), at = want.size();
      want.resize(at + count);
      cuda_check(cudaMemcpy(want.data() + at, d_ref.get(), count * sizeof(double),
                            cudaMemcpyDeviceToHost),
                 "cudaMemcpy(float64 reference)");
      got.insert(got.end(), ours.begin() + range.first * p.n,
                 ours.begin() + (range.first + range.count) * p.n);
      row.checked_rows += range.count;
    }
    take_worse(worst, gemm_diff(got, want), int64_t(g));
  }
  row.diff = worst.diff;
  row.worst_group = worst.group;
  std::string wrong;
  if (!(row.diff < row.diff_limit))
    wrong = fmt::format("group {}: diff {:.3e} against the float64 reference is not under {:.0e}",
                        row.worst_group, row.diff, row.diff_limit);
  if (row.unwritten > 0)
    wrong += fmt::format("{}{} outputs of valid rows not written (first: {})",
                         wrong.empty() ? "" : "; ", row.unwritten, first_unwritten);
  return wrong;
}

// Appends `what` to the row's failure ("wrong result: " first).
void add_wrong(GroupedRow& row, const std::string& what) {
  if (what.empty()) return;
  row.failure += (row.failure.empty() ? "wrong result: " : "; ") + what;
}

// A baseline's D against ours over every valid row: the worst group's diff.
WorstGroup compare_to_ours(const GroupedItem& item, const GroupedData& data) {
  WorstGroup worst;
  for (std::size_t g = 0; g < item.group_rows.size(); ++g)
    take_worse(worst,
               gemm_diff(group_rows_of(data.d_base.get(), item, g),
                         group_rows_of(data.d_ours.get(), item, g)),
               int64_t(g));
  return worst;
}

// Runs a baseline's first call: "" when it ran, else why the library declined it (the baseline
// is n/a). Any other error propagates and fails the row.
std::string declined_reason(const std::function<void()>& first_call) {
  try {
    first_call();
    return {};
  } catch (const CublasGroupedDeclined& e) {
    return e.what();
  } catch (const Error& e) {
    if (std::optional<std::string> refused = cublaslt_refusal(e)) return *refused;
    throw;
  }
}

// The baseline's first call, and its D compared with ours (which is already checked).
void first_baseline_call(GroupedBaseline& baseline, const char* name, GroupedRow& row,
                         const GroupedData& data, cudaStream_t stream,
                         const std::function<void()>& call) {
  baseline.unavailable = declined_reason([&] {
    call();
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(baseline first call)");
  });
  if (!baseline.unavailable.empty()) {
    log(2, "grouped bench line {}: no {} baseline: {}", row.item.source.line, name,
        baseline.unavailable);
    return;
  }
  const WorstGroup worst = compare_to_ours(row.item, data);
  baseline.diff_to_ours = worst.diff;
  if (!(worst.diff < row.diff_limit))
    add_wrong(row, fmt::format("ours and the {} disagree: group {} diff {:.3e} over its valid "
                               "rows (not under {:.0e})",
                               name, worst.group, worst.diff, row.diff_limit));
}

using Call = std::function<void(cudaStream_t)>;

void fill_baseline_time(GroupedBaseline& baseline, const std::vector<double>& times,
                        const TimingStats& ours) {
  baseline.time = summarize(times);
  baseline.ratio = ours.median_us > 0 ? baseline.time->median_us / ours.median_us : 0;
}

}  // namespace

GroupedRow run_grouped_case(const GroupedItem& item, const BenchOptions& options,
                            L2Flusher& flusher) {
  const GemmProblem& p = item.problem;
  GroupedRow row;
  row.item = item;
  row.diff = kNaN;
  row.diff_limit = diff_limit(p);
  row.loop.diff_to_ours = row.batched.diff_to_ours = kNaN;
  try {
    Stream stream;
    GroupedData data(item, options.baseline);
    GroupedOperands ops;
    ops.a = data.a.get();
    ops.b = data.b.get();
    ops.d = data.d_ours.get();
    ops.group_index = static_cast<const int32_t*>(data.group_index.get());
    ops.masked_m = static_cast<const int32_t*>(data.masked_m.get());
    GemmOptions gemm_options;
    gemm_options.device = options.device;
    gemm_options.config = options.config;   // --config (experiments)
    const Call ours = [&](cudaStream_t s) { (void)grouped_gemm(p, ops, s, gemm_options); };

    // Our first call (JIT compile) and its checks; when it throws the row fails here.
    const GemmReport report = grouped_gemm(p, ops, stream.get(), gemm_options);
    cuda_check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize(our first call)");
    row.config = report.config.describe();
    row.reason = report.reason;
    add_wrong(row, check_valid_rows(row, data, stream.get()));
    add_wrong(row, check_untouched_rows(row, data, ""));

    // The baselines' first calls (cuBLASLt heuristics, cuBLAS set-up), each compared with ours.
    std::optional<CublasLtGroupLoop> loop;
    std::optional<CapturedWork> loop_graph;
    std::optional<CublasGroupedBatched> batched;
    if (options.baseline) {
      loop.emplace(item, data.a.get(), data.b.get(), data.d_base.get());
      first_baseline_call(row.loop, "cuBLASLt loop", row, data, stream.get(),
                          [&] { (*loop)(stream.get()); });
      if (row.loop.unavailable.empty()) {
        try {
          loop_graph.emplace([&](cudaStream_t s) { (*loop)(s); }, stream.get());
        } catch (const Error& e) {
          if (const std::string lost = cuda_context_lost(); !lost.empty()) throw;
          row.loop.note = fmt::format("timed call by call: the loop could not be captured in a "
                                      "CUDA graph ({})",
                                      e.what());
        }
      }
      data.repoison_base(p);
      first_baseline_call(row.batched, "cublasGemmGroupedBatchedEx", row, data, stream.get(), [&] {
        batched.emplace(item, data.a.get(), data.b.get(), data.d_base.get());
        (*batched)(stream.get());
      });
      if (!row.batched.unavailable.empty()) batched.reset();
    }

    // Timed in one interleaved loop: ours, the baselines that ran, and for a masked row a copy
    // of its own bytes (read half, write half: the bytes a grouped GEMM must move).
    std::vector<Call> calls = {ours};
    const bool loop_ran = loop && row.loop.unavailable.empty();
    if (loop_ran)
      calls.push_back(loop_graph ? Call([&](cudaStream_t s) { loop_graph->launch(s); })
                                 : Call([&](cudaStream_t s) { (*loop)(s); }));
    if (batched) calls.push_back([&](cudaStream_t s) { (*batched)(s); });
    const std::size_t copy_bytes = std::size_t(item.bytes() / 2) / 16 * 16;
    const bool time_copy = p.grouping == Grouping::masked && copy_bytes > 0;
    DeviceBuffer copy_src(time_copy ? copy_bytes : 0), copy_dst(time_copy ? copy_bytes : 0);
    if (time_copy) {
      cuda_check(cudaMemsetAsync(copy_src.get(), 0x5a, copy_bytes, stream.get()),
                 "cudaMemsetAsync(same-bytes copy source)");
      calls.push_back([&](cudaStream_t s) {
        cuda_check(cudaMemcpyAsync(copy_dst.get(), copy_src.get(), copy_bytes,
                                   cudaMemcpyDeviceToDevice, s),
                   "cudaMemcpyAsync(same-bytes copy)");
      });
    }
    const std::vector<std::vector<double>> times =
        time_interleaved(calls, options.warmup, options.iters, stream.get(),
                         options.flush_l2 ? &flusher : nullptr);
    std::size_t next = 0;
    row.ours = summarize(times[next++]);
    row.tflops = row.ours.median_us > 0 ? item.useful_flops() / row.ours.median_us * 1e-6 : 0;
    row.gbps = row.ours.median_us > 0 ? item.bytes() / row.ours.median_us * 1e-3 : 0;
    if (loop_ran) fill_baseline_time(row.loop, times[next++], row.ours);
    if (batched) fill_baseline_time(row.batched, times[next++], row.ours);
    if (time_copy) row.same_bytes_copy = summarize(times[next++]);

    // Every timed call wrote D again: the rows past masked_m must still be untouched.
    add_wrong(row, check_untouched_rows(row, data, "after the timed calls: "));
  } catch (const Error& e) {
    if (const std::string lost = cuda_context_lost(); !lost.empty())
      throw CudaError(fmt::format("grouped bench line {}: {} (the CUDA context is lost: {})",
                                  item.source.line, e.what(), lost));
    row.failure += (row.failure.empty() ? "" : "; ") + std::string(e.what());
  }
  if (!row.failure.empty())
    log(2, "grouped bench line {}: FAILED: {}", item.source.line, row.failure);
  return row;
}

std::vector<GroupedRow> run_grouped_bench(
    const std::vector<GroupedItem>& items, const BenchOptions& options,
    const std::function<void(std::size_t, std::size_t, const GroupedItem*)>& progress) {
  cuda_check(cudaSetDevice(options.device), "cudaSetDevice");
  L2Flusher flusher;
  std::vector<GroupedRow> rows;
  rows.reserve(items.size());
  std::string lost;   // set once the CUDA context is gone: the remaining rows cannot run
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (progress) progress(i, items.size(), &items[i]);
    if (!lost.empty()) {
      GroupedRow row;
      row.item = items[i];
      row.diff = row.loop.diff_to_ours = row.batched.diff_to_ours = kNaN;
      row.diff_limit = diff_limit(items[i].problem);
      row.failure = "not run: " + lost;
      rows.push_back(std::move(row));
      continue;
    }
    try {
      rows.push_back(run_grouped_case(items[i], options, flusher));
    } catch (const CudaError& e) {
      // Only a lost context comes out of run_grouped_case: this row failed with it, and no
      // later row can run in this process.
      GroupedRow row;
      row.item = items[i];
      row.diff = row.loop.diff_to_ours = row.batched.diff_to_ours = kNaN;
      row.diff_limit = diff_limit(items[i].problem);
      row.failure = e.what();
      rows.push_back(std::move(row));
      lost = fmt::format("the CUDA context was lost at line {}", items[i].source.line);
    }
  }
  if (progress) progress(items.size(), items.size(), nullptr);
  return rows;
}

// ---- the suite's figures ------------------------------------------------------------------------

namespace {

double geomean_of(const std::vector<GroupedRow>& rows, GroupedBaseline GroupedRow::*baseline) {
  std::vector<double> ratios;
  for (const GroupedRow& r : rows)
    if ((r.*baseline).time && r.failure.empty()) ratios.push_back((r.*baseline).ratio);
  return geometric_mean(ratios);
}

}  // namespace

double geomean_loop_ratio(const std::vector<GroupedRow>& rows) {
  return geomean_of(rows, &GroupedRow::loop);
}

double geomean_batched_ratio(const std::vector<GroupedRow>& rows) {
  return geomean_of(rows, &GroupedRow::batched);
}

std::size_t grouped_rows_without_baseline(const std::vector<GroupedRow>& rows) {
  return std::size_t(std::count_if(rows.begin(), rows.end(), [](const GroupedRow& r) {
    return !r.loop.unavailable.empty() || !r.batched.unavailable.empty();
  }));
}

std::size_t grouped_failed_rows(const std::vector<GroupedRow>& rows) {
  return std::size_t(std::count_if(rows.begin(), rows.end(),
                                   [](const GroupedRow& r) { return !r.failure.empty(); }));
}

}  // namespace autogemm::bench
