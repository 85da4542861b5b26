// `autogemm bench --grouped`: drawing each row's groups, the checks of our D and the timing
// against the two baselines and the dense twin (grouped_bench.hpp). The row's device data is
// grouped_inputs.hpp's.
#include "bench/grouped_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/quantize.hpp"
#include "bench/compare.hpp"
#include "bench/grouped_baselines.hpp"
#include "bench/grouped_checks.hpp"
#include "bench/grouped_dense.hpp"
#include "bench/grouped_inputs.hpp"
#include "bench/reference.hpp"
#include "bench/suite_rows.hpp"
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

bool block_scaled_fp8(const GemmProblem& problem) {
  return problem.a_type == DType::e4m3 && problem.scaling == Scaling::block_1x128_128x128;
}

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

GemmProblem dense_problem(const GemmProblem& grouped, int64_t rows) {
  GemmProblem p;
  p.m = rows;
  p.n = grouped.n;
  p.k = grouped.k;
  p.a_type = grouped.a_type;
  p.b_type = grouped.b_type;
  p.d_type = grouped.d_type;
  p.scaling = grouped.scaling;
  p.layout = Layout::nt;
  return p;
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
  const double groups = double(problem.num_groups);
  double total = valid * k * dtype_bytes(problem.a_type) +
                 groups * n * k * dtype_bytes(problem.b_type) +
                 valid * n * dtype_bytes(problem.d_type);
  if (block_scaled_fp8(problem))
    total += double(sizeof(float)) *
             (double(fp8_scale_count_1x128(valid_rows(), problem.k)) +
              groups * double(fp8_scale_count_128x128(problem.n, problem.k)));
  return total;
}

GroupedItem make_grouped_item(const GroupedCase& source, std::size_t index, DType in, DType out,
                              uint64_t seed) {
  if (in != DType::bf16 && in != DType::fp16 && in != DType::e4m3)
    throw InvalidArgument("dtype", std::string(to_string(in)),
                          "the grouped bench takes bf16 or fp16 inputs, or e4m3 (block-scaled "
                          "FP8 quantised from BF16 data by quantize.hpp)");
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
  if (in == DType::e4m3) p.scaling = Scaling::block_1x128_128x128;
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

std::size_t d_row_bytes(const GemmProblem& p) {
  return std::size_t(p.n) * std::size_t(dtype_bytes(p.d_type));
}

const char* d_row(const void* d, const GemmProblem& p, int64_t row) {
  return static_cast<const char*>(d) + std::size_t(row) * d_row_bytes(p);
}

// Group g's valid rows of a D as doubles.
std::vector<double> group_rows_of(const void* d, const GroupedItem& item, std::size_t g) {
  const GemmProblem& p = item.problem;
  return download_as_double(d_row(d, p, item.row_starts[g]),
                            std::size_t(item.group_rows[g] * p.n), p.d_type);
}

// Masked rows: every row of our D at or past masked_m[g] must still be the poison, bit for bit
// (grouped.hpp: D keeps whatever they held). Sets row.poison_changed; returns what is wrong, ""
// when nothing. `when` starts the message ("after the timed calls: ").
std::string check_untouched_rows(GroupedRow& row, const GroupedInputs& data, const char* when) {
  const GroupedItem& item = row.item;
  const GemmProblem& p = item.problem;
  if (p.grouping != Grouping::masked) return {};
  row.poison_changed = 0;
  std::string first;
  for (std::size_t g = 0; g < item.group_rows.size(); ++g) {
    const int64_t valid = item.group_rows[g];
    const std::vector<unsigned char> rest =
        download_bytes(d_row(data.d_ours.get(), p, item.row_starts[g] + valid),
                       std::size_t(p.m - valid) * d_row_bytes(p));
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
std::string check_valid_rows(GroupedRow& row, const GroupedInputs& data, cudaStream_t stream) {
  const GroupedItem& item = row.item;
  const GemmProblem& p = item.problem;
  const int64_t budget = reference_rows_per_group(p.num_groups, p.n, p.k);
  GemmProblem ref;   // one range of one group as a plain GEMM (FP8: of the unquantised data)
  ref.n = p.n;
  ref.k = p.k;
  ref.a_type = ref.b_type = data.reference_type();
  ref.d_type = p.d_type;
  const std::size_t ref_element = std::size_t(dtype_bytes(ref.a_type));
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
      ops.a = static_cast<const char*>(data.reference_a()) +
              std::size_t(item.row_starts[g] + range.first) * std::size_t(p.k) * ref_element;
      ops.b = static_cast<const char*>(data.reference_b()) +
              std::size_t(g) * std::size_t(p.n * p.k) * ref_element;
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
WorstGroup compare_to_ours(const GroupedItem& item, const GroupedInputs& data) {
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
                         const GroupedInputs& data, cudaStream_t stream,
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

// The row's calls other than ours that ran their first call, so are timed: the baselines (with
// the loop's CUDA graph when it could be captured) and the dense twin.
struct OtherCalls {
  std::optional<CublasLtGroupLoop> loop;
  std::optional<CapturedWork> loop_graph;
  std::optional<CublasGroupedBatched> batched;
  std::optional<DenseTwin> dense;
};

// The baselines' first calls (cuBLASLt heuristics and FP8 scale conversion, cuBLAS set-up), each
// compared with ours; a baseline that cannot take the row is n/a (batched: every FP8 row).
void start_baselines(OtherCalls& calls, GroupedRow& row, GroupedInputs& data,
                     cudaStream_t stream) {
  const GroupedItem& item = row.item;
  const GroupedOperands base_ops = data.baseline_operands();
  first_baseline_call(row.loop, "cuBLASLt loop", row, data, stream, [&] {
    calls.loop.emplace(item, base_ops, stream);
    (*calls.loop)(stream);
  });
  if (!row.loop.unavailable.empty()) {
    calls.loop.reset();
  } else {
    try {
      calls.loop_graph.emplace([&](cudaStream_t s) { (*calls.loop)(s); }, stream);
    } catch (const Error& e) {
      if (const std::string lost = cuda_context_lost(); !lost.empty()) throw;
      row.loop.note = fmt::format("timed call by call: the loop could not be captured in a "
                                  "CUDA graph ({})",
                                  e.what());
    }
  }
  data.repoison_base();
  if (std::string why = grouped_batched_unavailable(item.problem); !why.empty()) {
    row.batched.unavailable = std::move(why);
    return;
  }
  first_baseline_call(row.batched, "cublasGemmGroupedBatchedEx", row, data, stream, [&] {
    calls.batched.emplace(item, data.a.get(), data.b.get(), data.d_base.get());
    (*calls.batched)(stream);
  });
  if (!row.batched.unavailable.empty()) calls.batched.reset();
}

// The dense twin's first call (JIT compile). When gemm() does not run it (or its D cannot be
// allocated) its column is n/a with the reason and the row goes on.
void start_dense(OtherCalls& calls, GroupedRow& row, const GroupedInputs& data,
                 const BenchOptions& options, cudaStream_t stream) {
  GemmOptions gemm_options;
  gemm_options.device = options.device;
  gemm_options.autotune = options.autotune;   // not --config: that names a grouped configuration
  try {
    calls.dense.emplace(row.item, data, gemm_options);
    (*calls.dense)(stream);
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(dense twin first call)");
    row.dense.config = calls.dense->report().config.describe();
  } catch (const Error& e) {
    if (const std::string lost = cuda_context_lost(); !lost.empty()) throw;
    calls.dense.reset();
    const GemmProblem twin = dense_twin_problem(row.item);
    row.dense.unavailable = fmt::format("gemm() of {} x {} x {}: {}", twin.m, twin.n, twin.k,
                                        e.what());
    log(2, "grouped bench line {}: no dense twin: {}", row.item.source.line,
        row.dense.unavailable);
  }
}

void fill_baseline_time(GroupedBaseline& baseline, const std::vector<double>& times,
                        const TimingStats& ours) {
  baseline.time = summarize(times);
  baseline.ratio = ours.median_us > 0 ? baseline.time->median_us / ours.median_us : 0;
}

void fill_dense_time(GroupedRow& row, const std::vector<double>& times) {
  GroupedDense& dense = row.dense;
  dense.time = summarize(times);
  dense.tflops = dense.time->median_us > 0
                     ? row.item.useful_flops() / dense.time->median_us * 1e-6
                     : 0;
  dense.ratio = row.ours.median_us > 0 ? dense.time->median_us / row.ours.median_us : 0;
}

// Times ours and the other calls that ran in one interleaved loop, with for a masked row a copy
// of its own bytes (read half, write half: the bytes a grouped GEMM must move), and fills the
// row's times.
void time_row(GroupedRow& row, const Call& ours, OtherCalls& other, const BenchOptions& options,
              cudaStream_t stream, L2Flusher& flusher) {
  const GroupedItem& item = row.item;
  std::vector<Call> calls = {ours};
  if (other.loop)
    calls.push_back(other.loop_graph ? Call([&](cudaStream_t s) { other.loop_graph->launch(s); })
                                     : Call([&](cudaStream_t s) { (*other.loop)(s); }));
  if (other.batched) calls.push_back([&](cudaStream_t s) { (*other.batched)(s); });
  if (other.dense) calls.push_back([&](cudaStream_t s) { (*other.dense)(s); });
  const SameBytesCopy copy(
      item.problem.grouping == Grouping::masked ? std::size_t(item.bytes() / 2) : 0, stream);
  const bool time_copy = copy.enabled();
  if (time_copy) calls.push_back([&](cudaStream_t s) { copy(s); });
  const std::vector<std::vector<double>> times = time_interleaved(
      calls, options.warmup, options.iters, stream, options.flush_l2 ? &flusher : nullptr);
  std::size_t next = 0;
  row.ours = summarize(times[next++]);
  row.tflops = row.ours.median_us > 0 ? item.useful_flops() / row.ours.median_us * 1e-6 : 0;
  row.gbps = row.ours.median_us > 0 ? item.bytes() / row.ours.median_us * 1e-3 : 0;
  if (other.loop) fill_baseline_time(row.loop, times[next++], row.ours);
  if (other.batched) fill_baseline_time(row.batched, times[next++], row.ours);
  if (other.dense) fill_dense_time(row, times[next++]);
  if (time_copy) row.same_bytes_copy = summarize(times[next++]);
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
    GroupedInputs data(item, options.baseline);
    const GroupedOperands ops = data.operands();
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
    data.release_sources();   // FP8: the reference was their only reader

    OtherCalls other;
    if (options.baseline) start_baselines(other, row, data, stream.get());
    start_dense(other, row, data, options, stream.get());
    time_row(row, ours, other, options, stream.get(), flusher);

    // Every timed call wrote D again: the rows past masked_m must still be untouched.
    add_wrong(row, check_untouched_rows(row, data, "after the timed calls: "));
  } catch (const Error& e) {
    fail_row(row, e, "grouped bench");
  }
  return finished_row(std::move(row), "grouped bench");
}

std::vector<GroupedRow> run_grouped_bench(
    const std::vector<GroupedItem>& items, const BenchOptions& options,
    const std::function<void(std::size_t, std::size_t, const GroupedItem*)>& progress) {
  return run_suite_rows<GroupedRow>(
      items, options, progress,
      [&](const GroupedItem& item, L2Flusher& flusher) {
        return run_grouped_case(item, options, flusher);
      },
      [](const GroupedItem& item) {
        GroupedRow row;
        row.item = item;
        row.diff = row.loop.diff_to_ours = row.batched.diff_to_ours = kNaN;
        row.diff_limit = diff_limit(item.problem);
        return row;
      });
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

namespace {

bool counts_for_dense_target(const GroupedRow& r) {
  return r.item.problem.grouping == Grouping::contiguous && r.dense.time && r.failure.empty();
}

}  // namespace

double geomean_dense_ratio_contiguous(const std::vector<GroupedRow>& rows) {
  std::vector<double> ratios;
  for (const GroupedRow& r : rows)
    if (counts_for_dense_target(r)) ratios.push_back(r.dense.ratio);
  return geometric_mean(ratios);
}

const GroupedRow* lowest_dense_ratio_contiguous(const std::vector<GroupedRow>& rows) {
  const GroupedRow* lowest = nullptr;
  for (const GroupedRow& r : rows)
    if (counts_for_dense_target(r) && (lowest == nullptr || r.dense.ratio < lowest->dense.ratio))
      lowest = &r;
  return lowest;
}

}  // namespace autogemm::bench
