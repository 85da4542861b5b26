// `autogemm bench --wgrad` on a grouped suite: drawing each row's runs, the checks of our dW and
// the timing against the per-expert cuBLASLt loop (grouped_wgrad_bench.hpp).
#include "bench/grouped_wgrad_bench.hpp"

#include <cublas_v2.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "autogemm/errors.hpp"
#include "autogemm/wgrad.hpp"
#include "bench/compare.hpp"
#include "bench/grouped_baselines.hpp"
#include "bench/grouped_checks.hpp"
#include "bench/grouped_wgrad_baseline.hpp"
#include "bench/reference.hpp"
#include "bench/suite_rows.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "jit/log.hpp"

namespace autogemm::bench {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

// ---- the drawn runs --------------------------------------------------------------------------

double GroupedWgradItem::d_bytes() const {
  return double(problem.num_groups) * double(problem.m) * double(problem.n) *
         dtype_bytes(problem.d_type);
}

double GroupedWgradItem::bytes() const {
  const double inputs =
      double(tokens()) * double(problem.m + problem.n) * dtype_bytes(problem.a_type);
  return inputs + 2 * d_bytes();
}

GroupedWgradItem make_grouped_wgrad_item(const GroupedWgradCase& source, std::size_t index,
                                         DType in, uint64_t seed) {
  if (in != DType::bf16 && in != DType::fp16)
    throw InvalidArgument("dtype", std::string(to_string(in)),
                          "weight gradients run on bf16 or fp16 inputs");
  GroupedWgradItem item;
  item.source = source;
  item.index = index;
  // The grouped GEMM suite's draw (each at least one token): the same generator, so the same
  // seed and row index give the same runs on every platform.
  item.group_tokens = draw_group_rows(source.groups, source.tokens_per_group, seed, index);
  int64_t end = 0;
  for (int64_t t : item.group_tokens) item.group_ends.push_back(end += t);
  if (end > std::numeric_limits<int32_t>::max())
    throw InvalidArgument("tokens", std::to_string(end),
                          "the runs' ends are int32 on the device: at most 2^31 - 1 tokens");
  item.problem = grouped_weight_gradient_problem(end, source.m, source.n, source.groups, in,
                                                 /*accumulate=*/true, DType::fp32,
                                                 source.tokens_per_group);
  check_group_ends(item.problem, item.group_ends);
  // The inputs depend on the row too (and not on the other rows): a golden-ratio step per row,
  // as the grouped GEMM suite's.
  item.input_seed = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t(index) + 1));
  return item;
}

std::vector<GroupedWgradItem> make_grouped_wgrad_items(const std::vector<GroupedWgradCase>& cases,
                                                       const std::string& source, DType in,
                                                       uint64_t seed) {
  std::vector<GroupedWgradItem> items;
  items.reserve(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    try {
      items.push_back(make_grouped_wgrad_item(cases[i], i, in, seed));
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(fmt::format("{} line {} ({})", source, cases[i].line, e.argument()),
                            e.value(), e.rule());
    }
  }
  return items;
}

// ---- measuring one row -------------------------------------------------------------------------

double same_bytes_share(const GroupedWgradRow& row) {
  if (!row.same_bytes_copy || row.ours.median_us <= 0) return 0;
  return row.same_bytes_copy->median_us / row.ours.median_us;
}

namespace {

// The float64 check covers at most this many entries of a row's dW (over all experts): the
// reference and our entries travel to the host as doubles, and line 20 of wgrad-moe.csv (940 M
// entries, all of them within the multiply-add budget) spent 24 s of its 34 s there on the H200
// machine. The loop's comparison covers every entry on the device.
constexpr int64_t kReferenceMaxEntries = int64_t(1) << 25;

// Rows of each expert's dW the float64 reference checks: within its multiply-add budget (an
// output row of expert g costs n x T_g, all experts' n x T: the budget of one group of n x T)
// and kReferenceMaxEntries, never fewer than kReferenceMinRowsPerGroup (a tile at each edge).
int64_t reference_rows_per_expert(const GemmProblem& p) {
  const int64_t by_fmas = reference_rows_per_group(1, p.n, p.k);
  const int64_t by_entries = kReferenceMaxEntries / (p.num_groups * p.n);
  return std::max(kReferenceMinRowsPerGroup, std::min(by_fmas, by_entries));
}

void cublas_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw CudaError(fmt::format("{}: {}: {}", what, cublasGetStatusName(status),
                                cublasGetStatusString(status)));
}

// cuBLAS on the row's stream, for the work on whole dW tensors that stays on the device: the
// experts' starting dW and the loop's comparison with ours (a row's dW is up to 3.8 GB; the
// host round trips took a third of the suite's time).
class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    cublas_check(cublasCreate(&handle_), "cublasCreate");
    try {
      cublas_check(cublasSetStream(handle_, stream), "cublasSetStream");
    } catch (...) {
      (void)cublasDestroy(handle_);
      throw;
    }
  }
  ~CublasHandle() { (void)cublasDestroy(handle_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// The row's device data: dY, X, the random dW every check starts from, our dW and the loop's
// (both copies of it), and the runs' ends as the kernel reads them.
struct WgradInputs {
  DeviceBuffer dy, x, dw_start, dw_ours, dw_loop, ends;

  WgradInputs(const GroupedWgradItem& item, bool baseline, const CublasHandle& cublas,
              cudaStream_t stream) {
    const GemmProblem& p = item.problem;
    const std::size_t tokens = std::size_t(item.tokens());
    const std::size_t dw_count = std::size_t(p.num_groups * p.m * p.n);
    const std::size_t dw_bytes = dw_count * std::size_t(dtype_bytes(p.d_type));
    dy = DeviceBuffer(tokens * std::size_t(p.m) * std::size_t(dtype_bytes(p.a_type)));
    x = DeviceBuffer(tokens * std::size_t(p.n) * std::size_t(dtype_bytes(p.b_type)));
    dw_start = DeviceBuffer(dw_bytes);
    dw_ours = DeviceBuffer(dw_bytes);
    if (baseline) dw_loop = DeviceBuffer(dw_bytes);
    fill_random(dy.get(), tokens * std::size_t(p.m), p.a_type, item.input_seed);
    fill_random(x.get(), tokens * std::size_t(p.n), p.b_type, item.input_seed + 1);
    fill_start(item, cublas, stream);
    // On the row's stream (non-blocking: a plain cudaMemcpy would not order before its work).
    for (const DeviceBuffer* copy : {&dw_ours, &dw_loop})
      if (copy->get() != nullptr)
        cuda_check(cudaMemcpyAsync(copy->get(), dw_start.get(), dw_bytes,
                                   cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync(starting dW)");
    const std::vector<int32_t> ends(item.group_ends.begin(), item.group_ends.end());
    this->ends = DeviceBuffer(ends.size() * sizeof(int32_t));
    cuda_check(cudaMemcpyAsync(this->ends.get(), ends.data(), this->ends.bytes(),
                               cudaMemcpyHostToDevice, stream),
               "cudaMemcpyAsync(group_ends)");
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(grouped wgrad inputs)");
  }

  const int32_t* group_ends() const { return static_cast<const int32_t*>(ends.get()); }

 private:
  // Expert 0's starting dW random (fill_random), expert g's the same times 1 + g / groups: every
  // expert starts from different values (an expert reading another's dW shows), and the host
  // makes and uploads one expert's m x n rather than the whole, up to 3.8 GB (4 s a row).
  void fill_start(const GroupedWgradItem& item, const CublasHandle& cublas, cudaStream_t stream) {
    const GemmProblem& p = item.problem;
    const int64_t count = p.m * p.n;
    auto* start = static_cast<float*>(dw_start.get());
    fill_random(start, std::size_t(count), DType::fp32, item.input_seed + 2);
    for (int64_t g = 1; g < p.num_groups; ++g) {
      float* expert = start + g * count;
      cuda_check(cudaMemcpyAsync(expert, start, std::size_t(count) * sizeof(float),
                                 cudaMemcpyDeviceToDevice, stream),
                 "cudaMemcpyAsync(expert's starting dW)");
      const float factor = 1.0f + float(g) / float(p.num_groups);
      cublas_check(cublasSscal_64(cublas.get(), count, &factor, expert, 1),
                   "cublasSscal(expert's starting dW)");
    }
  }
};

std::size_t group_offset_bytes(const GemmProblem& p, int64_t group, int64_t row) {
  return std::size_t((group * p.m + row) * p.n) * std::size_t(dtype_bytes(p.d_type));
}

const char* at(const DeviceBuffer& buffer, std::size_t offset) {
  return static_cast<const char*>(buffer.get()) + offset;
}

// Appends `what` to the row's failure ("wrong result: " first).
void add_wrong(GroupedWgradRow& row, const std::string& what) {
  if (what.empty()) return;
  row.failure += (row.failure.empty() ? "wrong result: " : "; ") + what;
}

// Our dW after one call from dw_start, each expert against the float64 reference of its dense
// problem (dw_start_g + dY_g^T X_g) on reference_ranges of its rows (the worst expert is the
// row's diff). Fills the row's fields; returns what is wrong, "" when nothing.
std::string check_against_float64(GroupedWgradRow& row, const WgradInputs& data,
                                  cudaStream_t stream) {
  const GroupedWgradItem& item = row.item;
  const GemmProblem& p = item.problem;
  const int64_t budget = reference_rows_per_expert(p);
  const std::vector<RowRange> ranges = reference_ranges(p.m, budget);
  const std::size_t element = std::size_t(dtype_bytes(p.a_type));
  DeviceBuffer d_ref(std::size_t(std::min(budget, p.m) * p.n) * sizeof(double));
  WorstGroup worst;
  row.checked_rows = 0;
  for (const RowRange& range : ranges) row.checked_rows += range.count;
  int64_t start = 0;
  for (std::size_t g = 0; g < item.group_tokens.size(); ++g) {
    const int64_t tokens = item.group_tokens[g];
    std::vector<double> got, want;
    for (const RowRange& range : ranges) {
      // Rows [first, first + count) of dW_g: those columns of dY_g (row stride m) against X_g.
      GemmProblem ref = weight_gradient_problem(tokens, range.count, p.n, p.a_type,
                                                /*accumulate=*/true, p.d_type);
      ref.lda = p.m;
      GemmOperands ops;
      ops.a = at(data.dy, std::size_t(start * p.m + range.first) * element);
      ops.b = at(data.x, std::size_t(start * p.n) * element);
      ops.c = at(data.dw_start, group_offset_bytes(p, int64_t(g), range.first));
      ops.beta = 1.0f;
      reference_gemm(ref, ops, static_cast<double*>(d_ref.get()), stream);
      cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(float64 reference)");
      const std::size_t count = std::size_t(range.count * p.n), from = want.size();
      want.resize(from + count);
      cuda_check(cudaMemcpy(want.data() + from, d_ref.get(), count * sizeof(double),
                            cudaMemcpyDeviceToHost),
                 "cudaMemcpy(float64 reference)");
      const std::vector<double> ours = download_as_double(
          at(data.dw_ours, group_offset_bytes(p, int64_t(g), range.first)), count, p.d_type);
      row.unwritten += count_non_finite(ours);
      got.insert(got.end(), ours.begin(), ours.end());
    }
    take_worse(worst, gemm_diff(got, want), int64_t(g));
    start += tokens;
  }
  row.diff = worst.diff;
  row.worst_group = worst.group;
  std::string wrong;
  if (!(row.diff < row.diff_limit))
    wrong = fmt::format("expert {}: diff {:.3e} against the float64 reference is not under {:.0e}",
                        row.worst_group, row.diff, row.diff_limit);
  if (row.unwritten > 0)
    wrong += fmt::format("{}{} non-finite entries in the checked rows of dW",
                         wrong.empty() ? "" : "; ", row.unwritten);
  return wrong;
}

// The loop's dW against ours over every entry, expert by expert (both from dw_start after one
// call), on the device: DeepGEMM's diff 1 - 2 sum(x y) / sum(x^2 + y^2) is
// |x - y|^2 / (|x|^2 + |y|^2), three norms in fp32 (cuBLAS's scaled nrm2) and a difference.
// A non-finite entry makes the expert's diff NaN, the worst. The loop's dW is left as its
// difference to ours (finite: the timed calls accumulate into it all the same).
WorstGroup compare_loop_to_ours(const GroupedWgradItem& item, WgradInputs& data,
                                const CublasHandle& cublas) {
  const GemmProblem& p = item.problem;
  const int64_t count = p.m * p.n;
  const auto norm = [&](const float* x) {
    float result = 0;   // host pointer mode: returned once computed
    cublas_check(cublasSnrm2_64(cublas.get(), count, x, 1, &result), "cublasSnrm2(dW)");
    return double(result);
  };
  WorstGroup worst;
  for (int64_t g = 0; g < p.num_groups; ++g) {
    const float* ours = static_cast<const float*>(data.dw_ours.get()) + g * count;
    float* loop = static_cast<float*>(data.dw_loop.get()) + g * count;
    const double ours_norm = norm(ours), loop_norm = norm(loop);
    const double squares = ours_norm * ours_norm + loop_norm * loop_norm;
    const float minus_one = -1.0f;
    cublas_check(cublasSaxpy_64(cublas.get(), count, &minus_one, ours, 1, loop, 1),
                 "cublasSaxpy(loop's dW - ours)");
    const double difference = norm(loop);
    take_worse(worst, squares == 0 ? difference : difference * difference / squares, g);
  }
  return worst;
}

// The loop's first call (cuBLASLt heuristics), its dW compared with ours, and its CUDA graph.
// cuBLASLt declining an expert leaves the loop n/a; any other error propagates and fails the row.
void start_loop(std::optional<CublasLtWgradLoop>& loop, std::optional<CapturedWork>& graph,
                GroupedWgradRow& row, WgradInputs& data, const CublasHandle& cublas,
                cudaStream_t stream) {
  try {
    loop.emplace(row.item, data.dy.get(), data.x.get(), data.dw_loop.get());
    (*loop)(stream);
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(loop first call)");
  } catch (const Error& e) {
    const std::optional<std::string> refused = cublaslt_refusal(e);
    if (!refused) throw;
    row.loop.unavailable = *refused;
    loop.reset();
    log(2, "grouped wgrad bench line {}: no cuBLASLt loop: {}", row.item.source.line, *refused);
    return;
  }
  const WorstGroup worst = compare_loop_to_ours(row.item, data, cublas);
  row.loop.diff_to_ours = worst.diff;
  if (!(worst.diff < row.diff_limit))
    add_wrong(row, fmt::format("ours and the cuBLASLt loop disagree: expert {} diff {:.3e} over "
                               "its dW (not under {:.0e})",
                               worst.group, worst.diff, row.diff_limit));
  try {
    graph.emplace([&](cudaStream_t s) { (*loop)(s); }, stream);
  } catch (const Error& e) {
    if (const std::string lost = cuda_context_lost(); !lost.empty()) throw;
    row.loop.note = fmt::format("timed call by call: the loop could not be captured in a CUDA "
                                "graph ({})",
                                e.what());
  }
}

using Call = std::function<void(cudaStream_t)>;

// Ours, the loop (its graph when captured) and a copy of the row's own bytes (read half, write
// half) in one interleaved loop; fills the row's times.
void time_row(GroupedWgradRow& row, const Call& ours, const std::optional<CublasLtWgradLoop>& loop,
              const std::optional<CapturedWork>& graph, const BenchOptions& options,
              cudaStream_t stream, L2Flusher& flusher) {
  const GroupedWgradItem& item = row.item;
  std::vector<Call> calls = {ours};
  if (loop)
    calls.push_back(graph ? Call([&](cudaStream_t s) { graph->launch(s); })
                          : Call([&](cudaStream_t s) { (*loop)(s); }));
  const SameBytesCopy copy(std::size_t(item.bytes() / 2), stream);
  calls.push_back([&](cudaStream_t s) { copy(s); });
  const std::vector<std::vector<double>> times = time_interleaved(
      calls, options.warmup, options.iters, stream, options.flush_l2 ? &flusher : nullptr);
  std::size_t next = 0;
  row.ours = summarize(times[next++]);
  row.tflops = row.ours.median_us > 0 ? item.flops() / row.ours.median_us * 1e-6 : 0;
  row.gbps = row.ours.median_us > 0 ? item.bytes() / row.ours.median_us * 1e-3 : 0;
  if (loop) {
    row.loop.time = summarize(times[next++]);
    row.loop.ratio = row.ours.median_us > 0 ? row.loop.time->median_us / row.ours.median_us : 0;
  }
  row.same_bytes_copy = summarize(times[next++]);
}

// Seconds since the last call (the first: since construction), for the phases' log line.
class PhaseClock {
 public:
  double lap() {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - last_).count();
    last_ = now;
    return seconds;
  }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

GroupedWgradRow unmeasured_row(const GroupedWgradItem& item) {
  GroupedWgradRow row;
  row.item = item;
  row.diff = row.loop.diff_to_ours = kNaN;
  row.diff_limit = diff_limit(item.problem);
  return row;
}

}  // namespace

GroupedWgradRow run_grouped_wgrad_case(const GroupedWgradItem& item, const BenchOptions& options,
                                       L2Flusher& flusher) {
  const GemmProblem& p = item.problem;
  GroupedWgradRow row = unmeasured_row(item);
  PhaseClock clock;
  try {
    Stream stream;
    const CublasHandle cublas(stream.get());
    WgradInputs data(item, options.baseline, cublas, stream.get());
    const double inputs_s = clock.lap();
    GemmOptions gemm_options;
    gemm_options.device = options.device;
    gemm_options.config = options.config;   // --config (experiments)
    const Call ours = [&](cudaStream_t s) {
      (void)grouped_weight_gradient(p, data.dy.get(), data.x.get(), data.dw_ours.get(),
                                    data.group_ends(), s, gemm_options);
    };

    // Our first call (JIT compile) from the fresh dW, and its check; when it throws the row
    // fails here.
    const GemmReport report = grouped_weight_gradient(p, data.dy.get(), data.x.get(),
                                                      data.dw_ours.get(), data.group_ends(),
                                                      stream.get(), gemm_options);
    cuda_check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize(our first call)");
    row.config = report.config.describe();
    row.reason = report.reason;
    const double first_call_s = clock.lap();
    add_wrong(row, check_against_float64(row, data, stream.get()));
    const double check_s = clock.lap();

    std::optional<CublasLtWgradLoop> loop;
    std::optional<CapturedWork> graph;
    if (options.baseline) start_loop(loop, graph, row, data, cublas, stream.get());
    const double loop_s = clock.lap();
    data.dw_start = DeviceBuffer();   // checked: the copy's buffers take its place
    time_row(row, ours, loop, graph, options, stream.get(), flusher);
    // Where a row's time goes, for whoever trims the suite (AUTOGEMM_LOG=3).
    log(3, "grouped wgrad bench line {}: inputs {:.2f} s, our first call {:.2f} s, float64 "
           "check {:.2f} s, loop's first call and comparison {:.2f} s, timing {:.2f} s",
        item.source.line, inputs_s, first_call_s, check_s, loop_s, clock.lap());
  } catch (const Error& e) {
    fail_row(row, e, "grouped wgrad bench");
  }
  return finished_row(std::move(row), "grouped wgrad bench");
}

std::vector<GroupedWgradRow> run_grouped_wgrad_bench(
    const std::vector<GroupedWgradItem>& items, const BenchOptions& options,
    const std::function<void(std::size_t, std::size_t, const GroupedWgradItem*)>& progress) {
  return run_suite_rows<GroupedWgradRow>(
      items, options, progress,
      [&](const GroupedWgradItem& item, L2Flusher& flusher) {
        return run_grouped_wgrad_case(item, options, flusher);
      },
      unmeasured_row);
}

double grouped_wgrad_geomean_loop_ratio(const std::vector<GroupedWgradRow>& rows) {
  std::vector<double> ratios;
  for (const GroupedWgradRow& r : rows)
    if (r.loop.time && r.failure.empty()) ratios.push_back(r.loop.ratio);
  return geometric_mean(ratios);
}

std::size_t grouped_wgrad_rows_without_loop(const std::vector<GroupedWgradRow>& rows) {
  return std::size_t(std::count_if(rows.begin(), rows.end(), [](const GroupedWgradRow& r) {
    return !r.loop.unavailable.empty();
  }));
}

std::size_t grouped_wgrad_failed_rows(const std::vector<GroupedWgradRow>& rows) {
  return std::size_t(std::count_if(rows.begin(), rows.end(),
                                   [](const GroupedWgradRow& r) { return !r.failure.empty(); }));
}

// ---- planning without a GPU ----------------------------------------------------------------

std::vector<PlanRow> plan_grouped_wgrad_items(const std::vector<GroupedWgradItem>& items,
                                              const GpuInfo& device,
                                              const std::optional<GemmConfig>& config) {
  std::vector<BenchItem> planned;
  planned.reserve(items.size());
  for (const GroupedWgradItem& item : items) planned.push_back({item.problem, item.source.tag});
  return plan_items(planned, device, config);
}

}  // namespace autogemm::bench
