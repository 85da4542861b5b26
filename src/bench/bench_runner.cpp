// `autogemm bench` measurement and planning: one row per case (bench_runner.hpp).
#include "bench/bench_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <cmath>
#include <limits>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/quantize.hpp"
#include "bench/compare.hpp"
#include "bench/copy_bandwidth.hpp"
#include "bench/epilogue_case.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "jit/log.hpp"
#include "runtime/autotune.hpp"
#include "runtime/cublaslt.hpp"
#include "cuda/cuda_check.hpp"

namespace autogemm::bench {

namespace {

std::size_t a_elements(const GemmProblem& p) { return operand_elements(p, 'A'); }
std::size_t b_elements(const GemmProblem& p) { return operand_elements(p, 'B'); }
std::size_t d_elements(const GemmProblem& p) { return operand_elements(p, 'D'); }

double tflops_at(const GemmProblem& p, double us) { return us > 0 ? p.flops() / us * 1e-6 : 0; }

// The FP8 per-tensor variant's scales: two device floats of 1.0.
struct PerTensorScales {
  DeviceBuffer scale_a{sizeof(float)}, scale_b{sizeof(float)};
  PerTensorScales() {
    upload_from_double(scale_a.get(), {1.0}, DType::fp32);
    upload_from_double(scale_b.get(), {1.0}, DType::fp32);
  }
};

}  // namespace

std::string dtype_label(const GemmProblem& problem) {
  if (problem.a_type == DType::e4m3 || problem.a_type == DType::e5m2) return "fp8";
  return std::string(to_string(problem.a_type));
}

namespace {

// FP8 inputs the way a user makes them (tensors.hpp: BF16 data quantised to e4m3 with 1 x 128
// and 128 x 128 block scales). The quantisation is timed like the GEMMs (L2 flushed before each
// call, median).
struct Fp8Inputs {
  Fp8Scales scales;
  double quantize_us = 0;
};

Fp8Inputs make_fp8_inputs(const GemmProblem& problem, void* a, void* b,
                          const BenchOptions& options, cudaStream_t stream, L2Flusher& flusher) {
  const int64_t m = problem.m, n = problem.n, k = problem.k;
  Fp8Inputs out;
  out.scales = make_fp8_scales(m, n, k, problem.scaling);
  const Fp8Sources sources = make_fp8_sources(m, n, k, options.seed);
  auto quantize_both = [&](cudaStream_t s) {
    quantize_fp8_sources(sources, m, n, k, a, b, out.scales, s, problem.scaling);
  };
  const auto times = time_calls(quantize_both, std::max(options.warmup, 1), std::max(options.iters, 1),
                                stream, &flusher);
  out.quantize_us = summarize(times).median_us;
  return out;
}

// True for the FP8 rows: block-scaled e4m3 inputs quantised by make_fp8_inputs (1x128 on both
// operands: FP8 weight gradients).
bool is_fp8_case(const GemmProblem& problem) {
  return problem.scaling == Scaling::block_1x128_128x128 ||
         problem.scaling == Scaling::block_1x128_1x128;
}

// The item's problem as the bench runs it (beta = 0, or with reads_c D += A B: beta = 1 and C
// is D, the weight gradient's accumulation), checked; FP8 only with block scales.
GemmProblem bench_problem(const BenchItem& item) {
  GemmProblem problem = item.problem;
  if (problem.reads_c && !problem.epilogue.empty())
    throw InvalidArgument("epilogue", problem.epilogue.describe(),
                          "accumulating rows (D += A B) are timed as plain GEMMs");
  validate(problem);
  if (problem.scaling == Scaling::per_tensor)
    throw InvalidArgument("scaling", "per_tensor",
                          "the bench measures FP8 with block_1x128_128x128 scales (it times the "
                          "per-tensor cuBLASLt variant alongside)");
  if (is_fp8_case(problem)) check_quantised_fp8_problem(problem);
  return problem;
}

// Runs one step of a baseline (its first call, or preparing its scales). A step cuBLASLt
// declines (cublaslt_refusal: a documented limit such as block-scaled FP8's M and N multiples
// of 4, no algorithm for the shape, a library without block scaling) leaves the baseline n/a with
// the reason in `why`. Any other error propagates and fails the row (run_case), or stops the
// bench when the CUDA context is lost.
template <typename Step>
bool try_baseline_step(const GemmProblem& problem, std::string& why, Step&& step) {
  try {
    step();
    return true;
  } catch (const Error& e) {
    std::optional<std::string> refused = cublaslt_refusal(e);
    if (!refused) throw;
    why = std::move(*refused);
  }
  log(2, "bench {}x{}x{}: no cuBLASLt baseline: {}", problem.m, problem.n, problem.k, why);
  return false;
}

// One case's device data and the operands of its three calls (ours, the baseline, FP8's
// per-tensor cuBLASLt). Filled in place: the operands point into the buffers.
struct CaseData {
  DeviceBuffer a, b;
  std::optional<Fp8Inputs> fp8;
  DeviceBuffer d_ours, d_base;           // d_base: the baseline's D (and the per-tensor call's)
  DeviceBuffer d_initial;                // accumulating rows: D before the first call (C)
  DeviceBuffer lt_scale_a, lt_scale_b;   // FP8 block scales in cuBLASLt's layout
  std::optional<PerTensorScales> per_tensor;   // FP8 with a baseline
  bool baseline_refused = false;         // preparing the baseline failed (see its reason)
  GemmOperands ours_ops, base_ops, per_tensor_ops;
  std::optional<EpilogueCase> epilogue;  // a fused epilogue's vectors and plain/unfused calls
};

// Inputs once, random (never constant: matrix units run faster on zeros, baselines.md); FP8
// inputs quantised from BF16, the quantisation timed. Both D poisoned, so unwritten entries show.
void fill_inputs(CaseData& data, const GemmProblem& problem, const BenchOptions& options,
                 cudaStream_t stream, L2Flusher& flusher) {
  const int in_bytes = dtype_bytes(problem.a_type), out_bytes = dtype_bytes(problem.d_type);
  data.a = DeviceBuffer(a_elements(problem) * in_bytes);
  data.b = DeviceBuffer(b_elements(problem) * in_bytes);
  if (is_fp8_case(problem)) {
    data.fp8 = make_fp8_inputs(problem, data.a.get(), data.b.get(), options, stream, flusher);
  } else {
    fill_random(data.a.get(), a_elements(problem), problem.a_type, options.seed);
    fill_random(data.b.get(), b_elements(problem), problem.b_type, options.seed + 1);
  }
  data.d_ours = DeviceBuffer(d_elements(problem) * out_bytes);
  data.d_base = DeviceBuffer(options.baseline ? d_elements(problem) * out_bytes : 0);
  if (problem.reads_c) {
    // Accumulating: both D start from the same random values, kept for the float64 check.
    const std::size_t bytes = d_elements(problem) * out_bytes;
    data.d_initial = DeviceBuffer(bytes);
    fill_random(data.d_initial.get(), d_elements(problem), problem.d_type, options.seed + 7);
    cuda_check(cudaMemcpy(data.d_ours.get(), data.d_initial.get(), bytes,
                          cudaMemcpyDeviceToDevice),
               "cudaMemcpy(initial D)");
    if (options.baseline)
      cuda_check(cudaMemcpy(data.d_base.get(), data.d_initial.get(), bytes,
                            cudaMemcpyDeviceToDevice),
                 "cudaMemcpy(initial D)");
    return;
  }
  fill_poison(data.d_ours.get(), d_elements(problem), problem.d_type);
  if (options.baseline) fill_poison(data.d_base.get(), d_elements(problem), problem.d_type);
}

// The three calls' operands: the same A and B, ours into d_ours, the baselines into d_base. FP8:
// our block scales, cuBLASLt's converted once here so that the timed baseline call is the matmul
// alone, and per-tensor scales of 1.
void set_operands(CaseData& data, const GemmProblem& problem, const BenchOptions& options,
                  cudaStream_t stream, BenchRow& row) {
  const bool fp8 = is_fp8_case(problem);
  GemmOperands& ours = data.ours_ops;
  ours.a = data.a.get();
  ours.b = data.b.get();
  ours.d = data.d_ours.get();
  if (fp8) {
    ours.scale_a = static_cast<const float*>(data.fp8->scales.a.get());
    ours.scale_b = static_cast<const float*>(data.fp8->scales.b.get());
    if (options.baseline) {
      const runtime::CublasLtBlockScaleSizes sizes = runtime::cublaslt_block_scale_sizes(problem);
      data.lt_scale_a = DeviceBuffer(sizes.a_floats * sizeof(float));
      data.lt_scale_b = DeviceBuffer(sizes.b_floats * sizeof(float));
      // cuBLASLt's own transform: a refusal leaves the baseline n/a, as a refused call does
      // (1x128 B scales: cuBLASLt has none on Hopper; its per-tensor FP8 is timed beside).
      const bool converted = try_baseline_step(problem, row.baseline_unavailable, [&] {
        runtime::to_cublaslt_block_scales(problem, ours.scale_a, ours.scale_b,
                                          static_cast<float*>(data.lt_scale_a.get()),
                                          static_cast<float*>(data.lt_scale_b.get()), stream);
      });
      if (!converted) data.baseline_refused = true;
      data.per_tensor.emplace();
    }
  }
  // A fused epilogue: its vectors for ours and cuBLASLt's fused epilogue (bias only).
  if (!problem.epilogue.empty()) data.epilogue = make_epilogue_case(problem, ours, options.seed);
  if (problem.reads_c) {   // D += A B in place (beta = 1, C = D), each call on its own D
    ours.c = ours.d;
    ours.beta = 1.0f;
  }
  data.base_ops = ours;
  data.base_ops.d = data.d_base.get();
  if (problem.reads_c) data.base_ops.c = data.d_base.get();
  data.base_ops.scale_a = fp8 ? static_cast<const float*>(data.lt_scale_a.get()) : nullptr;
  data.base_ops.scale_b = fp8 ? static_cast<const float*>(data.lt_scale_b.get()) : nullptr;
  data.per_tensor_ops = data.base_ops;
  if (data.per_tensor) {
    data.per_tensor_ops.scale_a = static_cast<const float*>(data.per_tensor->scale_a.get());
    data.per_tensor_ops.scale_b = static_cast<const float*>(data.per_tensor->scale_b.get());
  }
}

using Call = std::function<void(cudaStream_t)>;

// The case's calls on its operands: ours (gemm(), keeping its last report), the baseline
// (cuBLASLt, block-scaled for FP8) and FP8's per-tensor cuBLASLt. Refers to `data`.
class CaseCalls {
 public:
  CaseCalls(const GemmProblem& problem, const CaseData& data, const BenchOptions& options)
      : problem_(problem), data_(data) {
    gemm_options_.device = options.device;
    gemm_options_.config = options.config;   // --config (experiments)
    gemm_options_.autotune = options.autotune;
    lt_options_.scales_in_cublaslt_layout = true;
    per_tensor_options_.per_tensor_fp8 = true;
  }
  CaseCalls(const CaseCalls&) = delete;
  CaseCalls& operator=(const CaseCalls&) = delete;

  Call ours() {
    return [this](cudaStream_t s) { report_ = gemm(problem_, data_.ours_ops, s, gemm_options_); };
  }
  Call baseline() {
    return [this](cudaStream_t s) {
      runtime::cublaslt_gemm(problem_, data_.base_ops, s, lt_options_);
    };
  }
  Call per_tensor() {
    return [this](cudaStream_t s) {
      runtime::cublaslt_gemm(problem_, data_.per_tensor_ops, s, per_tensor_options_);
    };
  }
  // A fused epilogue's comparisons: our plain GEMM, and it followed by the epilogue's kernel.
  Call plain() {
    return [this](cudaStream_t s) { run_plain(*data_.epilogue, gemm_options_, s); };
  }
  Call unfused() {
    return [this](cudaStream_t s) { run_unfused(*data_.epilogue, problem_, gemm_options_, s); };
  }
  const GemmReport& report() const { return report_; }

 private:
  const GemmProblem& problem_;
  const CaseData& data_;
  GemmOptions gemm_options_;
  runtime::CublasLtOptions lt_options_, per_tensor_options_;
  GemmReport report_;
};

// Which calls ran their first call, and so are compared and timed.
struct BaselinesRun {
  bool ours = false;
  bool baseline = false;
  bool per_tensor = false;
};

// First calls (JIT compile, cuBLASLt heuristic), before any timing. Ours first: when it throws,
// the row fails and nothing else runs; when cuBLASLt declines it (gemm() sent it there: no kernel
// of ours takes the shape), the row is not served (ours_unavailable) and nothing else runs
// either: the baseline is the same library on the same problem. The per-tensor call writes
// d_base too, so it goes before the baseline that is compared.
BaselinesRun run_first_calls(CaseCalls& calls, const CaseData& data, const GemmProblem& problem,
                             const BenchOptions& options, cudaStream_t stream, BenchRow& row) {
  BaselinesRun run;
  try {
    calls.ours()(stream);
  } catch (const Error& e) {
    std::optional<std::string> refused = cublaslt_refusal(e);
    if (!refused) throw;
    row.ours_unavailable = std::move(*refused);
    log(2, "bench {}x{}x{}: not served: gemm() runs it through cuBLASLt, which declined: {}",
        problem.m, problem.n, problem.k, row.ours_unavailable);
    return run;
  }
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(our first call)");
  run.ours = true;
  if (data.epilogue) calls.unfused()(stream);   // compiled before timing; its D is checked
  run.per_tensor = data.per_tensor &&
                   try_baseline_step(problem, row.baseline_fp8_per_tensor_unavailable,
                                     [&] { calls.per_tensor()(stream); });
  run.baseline = options.baseline && !data.baseline_refused &&
                 try_baseline_step(problem, row.baseline_unavailable,
                                   [&] { calls.baseline()(stream); });
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(first run)");
  return run;
}

// Rows [0, rows) of D (ld = ldd) as a rows x N list.
std::vector<double> first_rows(const std::vector<double>& d, const GemmProblem& p, int64_t rows) {
  std::vector<double> out(std::size_t(rows * p.n));
  const int64_t ld = p.ldd_or_packed();
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(d.begin() + r * ld, p.n, out.begin() + r * p.n);
  return out;
}

// The float64 reference of the first `rows` rows of the case's D: the GEMM of its inputs, or
// for FP8 of the unquantised BF16 data they were quantised from (made again from the seed).
std::vector<double> float64_reference(const GemmProblem& problem, const CaseData& data,
                                      const BenchOptions& options, int64_t rows,
                                      cudaStream_t stream) {
  GemmProblem ref = problem;
  ref.epilogue = Epilogue{};   // the product alone; the epilogue in float64 on the host
  ref.lda = problem.lda_or_packed();   // kept: A stored K x M has rows of M elements
  ref.ldb = problem.ldb_or_packed();
  ref.ldc = problem.ldc_or_packed();
  ref.m = rows;
  GemmOperands ops = data.ours_ops;
  if (problem.reads_c) ops.c = data.d_initial.get();   // D before the first call
  ops.bias = nullptr;
  ops.row_scale = ops.col_scale = nullptr;
  std::optional<Fp8Sources> sources;
  if (is_fp8_case(problem)) {
    sources = make_fp8_sources(problem.m, problem.n, problem.k, options.seed);
    ref.a_type = ref.b_type = DType::bf16;
    ref.scaling = Scaling::none;
    ops.a = sources->a.get();
    ops.b = sources->b.get();
    ops.scale_a = ops.scale_b = nullptr;
  }
  DeviceBuffer d_ref(std::size_t(rows * problem.n) * sizeof(double));
  reference_gemm(ref, ops, static_cast<double*>(d_ref.get()), stream);
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(float64 reference)");
  std::vector<double> want(std::size_t(rows * problem.n));
  cuda_check(cudaMemcpy(want.data(), d_ref.get(), want.size() * sizeof(double),
                        cudaMemcpyDeviceToHost),
             "cudaMemcpy(float64 reference)");
  if (data.epilogue) apply_epilogue_to_reference(problem, *data.epilogue, rows, want);
  return want;
}

// What our first call ran, how many of D's entries it left unwritten, and its diff against the
// baseline's D, or, where the baseline was asked for and could not run, against the float64
// reference. A D that is not right fails the row (it is still timed).
void check_first_outputs(BenchRow& row, const GemmReport& report, const CaseData& data,
                         const BenchOptions& options, bool baseline_ran, cudaStream_t stream) {
  const GemmProblem& problem = row.problem;
  row.config = report.config.describe();
  row.used_vendor = report.used_vendor;
  row.reason = report.reason;
  row.diff_limit = diff_limit(problem);
  const std::vector<double> ours_d =
      download_as_double(data.d_ours.get(), d_elements(problem), problem.d_type);
  const int64_t ld = problem.ldd_or_packed();
  for (int64_t r = 0; r < problem.m; ++r)
    for (int64_t c = 0; c < problem.n; ++c)
      row.unwritten += std::isfinite(ours_d[std::size_t(r * ld + c)]) ? 0 : 1;
  row.diff = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> wrong;
  if (data.epilogue && options.baseline) {
    // Ours and the unfused sequence against the float64 reference with the whole epilogue
    // (cuBLASLt's fused epilogue, where it ran, was checked by cuBLASLt's own tests, not here).
    row.diff_ref = "float64";
    row.checked_rows = reference_check_rows(problem);
    const std::vector<double> want =
        float64_reference(problem, data, options, row.checked_rows, stream);
    row.diff = gemm_diff(first_rows(ours_d, problem, row.checked_rows), want);
    const double unfused_diff = gemm_diff(
        first_rows(download_as_double(data.epilogue->d_unfused.get(), d_elements(problem),
                                      problem.d_type),
                   problem, row.checked_rows),
        want);
    if (!(unfused_diff < row.diff_limit))
      wrong.push_back(fmt::format("the unfused sequence's diff {:.3e} is not under {:.0e}",
                                  unfused_diff, row.diff_limit));
  } else if (baseline_ran) {
    row.diff_ref = "cublaslt";
    row.checked_rows = problem.m;
    row.diff = gemm_diff(
        first_rows(ours_d, problem, problem.m),
        first_rows(download_as_double(data.d_base.get(), d_elements(problem), problem.d_type),
                   problem, problem.m));
  } else if (options.baseline) {
    row.diff_ref = "float64";
    row.checked_rows = reference_check_rows(problem);
    row.diff = gemm_diff(first_rows(ours_d, problem, row.checked_rows),
                         float64_reference(problem, data, options, row.checked_rows, stream));
  }
  if (!row.diff_ref.empty() && !(row.diff < row.diff_limit))
    wrong.push_back(fmt::format("diff {:.3e} against {} is not under {:.0e}", row.diff,
                                row.diff_ref, row.diff_limit));
  if (row.unwritten > 0)
    wrong.push_back(fmt::format("{} outputs not written", row.unwritten));
  for (const std::string& w : wrong)
    row.failure += (row.failure.empty() ? "wrong result: " : "; ") + w;
}

// Each timed call's times: ours, then the baselines that ran, then the same-bytes copy if timed.
struct CaseTimes {
  std::vector<std::vector<double>> per_call;
  bool copy_timed = false;
  bool epilogue_timed = false;   // our plain GEMM and the unfused sequence, after the baselines
};

// Times ours, the baselines that ran and, for a memory-bound row, a copy of its bytes, in one
// interleaved loop.
CaseTimes time_calls_interleaved(CaseCalls& calls, BaselinesRun run, const BenchRow& row,
                                 const BenchOptions& options, cudaStream_t stream,
                                 L2Flusher& flusher) {
  std::vector<Call> timed = {calls.ours()};
  if (run.baseline) timed.push_back(calls.baseline());
  if (run.per_tensor) timed.push_back(calls.per_tensor());  // writes d_base after the comparison
  const bool epilogue = !row.problem.epilogue.empty();
  if (epilogue) {
    timed.push_back(calls.plain());
    timed.push_back(calls.unfused());
  }
  // A short memory-bound GEMM is judged against the 1 GiB copy bandwidth, whose launch and
  // first-byte latency are spread over 2 GiB; this copy of the row's own bytes, timed in the same
  // loop, shows what a kernel that only moves them costs (on the H100 a 15.9 MB copy took
  // 8.0-8.3 us, 1.9 TB/s: 64% of the 1 GiB copy's 3009 GB/s).
  const SameBytesCopy copy(
      is_memory_bound(row) ? static_cast<std::size_t>(row.problem.min_bytes() / 2) : 0, stream);
  const bool time_copy = copy.enabled();
  if (time_copy) timed.push_back([&](cudaStream_t s) { copy(s); });
  CaseTimes times;
  times.per_call = time_interleaved(timed, options.warmup, options.iters, stream,
                                    options.flush_l2 ? &flusher : nullptr);
  times.copy_timed = time_copy;
  times.epilogue_timed = epilogue;
  return times;
}

// The row's timings and rates from time_calls_interleaved's times.
void fill_timings(BenchRow& row, const CaseTimes& case_times, BaselinesRun run) {
  const GemmProblem& problem = row.problem;
  const std::vector<std::vector<double>>& times = case_times.per_call;
  if (case_times.copy_timed) row.same_bytes_copy = summarize(times.back());
  row.ours = summarize(times[0]);
  row.tflops = tflops_at(problem, row.ours.median_us);
  row.gbps = row.ours.median_us > 0 ? problem.min_bytes() / row.ours.median_us * 1e-3 : 0;
  if (run.baseline) {
    row.baseline = summarize(times[1]);
    row.baseline_tflops = tflops_at(problem, row.baseline->median_us);
    row.ratio = row.ours.median_us > 0 ? row.baseline->median_us / row.ours.median_us : 0;
  }
  std::size_t next = run.baseline ? 2 : 1;
  if (run.per_tensor) {
    row.baseline_fp8_per_tensor = summarize(times[next++]);
    row.baseline_fp8_per_tensor_tflops = tflops_at(problem, row.baseline_fp8_per_tensor->median_us);
  }
  if (case_times.epilogue_timed) {
    row.plain = summarize(times[next++]);
    row.unfused = summarize(times[next++]);
  }
}

// The cost model's time for the configuration that ran (none for the vendor path, or where the
// model has no figure for the device).
void fill_prediction(BenchRow& row, const GemmReport& report, const GpuInfo& gpu) {
  if (report.used_vendor) return;
  try {
    row.predicted_us = predict(row.problem, report.config, gpu).time_us;
  } catch (const Error& e) {
    log(2, "bench: no prediction for {}: {}", row.config, e.what());
  }
}

}  // namespace

double diff_limit(const GemmProblem& problem) {
  return problem.a_type == DType::e4m3 || problem.a_type == DType::e5m2 ? kDiffLimitFp8
                                                                        : kDiffLimit16Bit;
}

int64_t reference_check_rows(const GemmProblem& p) {
  const double per_row = double(p.n) * double(p.k);
  if (double(p.m) * per_row <= kReferenceCheckMaxFmas) return p.m;
  const int64_t rows = int64_t(kReferenceCheckMaxFmas / per_row) / 128 * 128;
  return std::min(p.m, std::max<int64_t>(rows, 128));
}

void check_item(const BenchItem& item) { (void)bench_problem(item); }

std::optional<std::string> cublaslt_refusal(const std::exception& error) {
  if (const auto* refusal = dynamic_cast<const runtime::CublasLtRefusal*>(&error))
    return std::string(refusal->reason());
  return std::nullopt;
}

std::string cuda_context_lost() {
  (void)cudaGetLastError();   // a launch error that is not sticky is reported once, then gone
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return {};
  (void)cudaGetLastError();
  const cudaError_t again = cudaDeviceSynchronize();   // a sticky error comes back every time
  if (again == cudaSuccess) return {};
  e = again;
  return cuda_error_text(e, "cudaDeviceSynchronize");
}

BenchRow run_case(const BenchItem& item, const BenchOptions& options, const GpuInfo& gpu,
                  L2Flusher& flusher) {
  const GemmProblem problem = bench_problem(item);
  BenchRow row;
  row.problem = problem;
  row.tag = item.tag;
  row.diff = std::numeric_limits<double>::quiet_NaN();
  row.diff_limit = diff_limit(problem);
  try {
    Stream stream;
    CaseData data;
    fill_inputs(data, problem, options, stream.get(), flusher);
    if (data.fp8) row.quantize_us = data.fp8->quantize_us;
    set_operands(data, problem, options, stream.get(), row);

    CaseCalls calls(problem, data, options);
    const BaselinesRun run = run_first_calls(calls, data, problem, options, stream.get(), row);
    if (!run.ours) return row;   // not served: nothing to check or time
    check_first_outputs(row, calls.report(), data, options, run.baseline, stream.get());
    const CaseTimes times = time_calls_interleaved(calls, run, row, options, stream.get(), flusher);
    fill_timings(row, times, run);
    fill_prediction(row, calls.report(), gpu);
  } catch (const Error& e) {
    if (const std::string lost = cuda_context_lost(); !lost.empty())
      throw CudaError(fmt::format("bench {}x{}x{}: {} (the CUDA context is lost: {}; the bench "
                                  "stops)", problem.m, problem.n, problem.k, e.what(), lost));
    row.failure += (row.failure.empty() ? "" : "; ") + std::string(e.what());
    log(2, "bench {}x{}x{}: FAILED: {}", problem.m, problem.n, problem.k, row.failure);
  }
  return row;
}

std::vector<BenchRow> run_bench(
    const std::vector<BenchItem>& items, const BenchOptions& options, const GpuInfo& gpu,
    const std::function<void(std::size_t, std::size_t, const BenchItem*)>& progress) {
  for (const BenchItem& item : items) check_item(item);   // bad input before any measuring
  cuda_check(cudaSetDevice(options.device), "cudaSetDevice");
  L2Flusher flusher;
  // --autotune ranks candidates as the bench times them (runtime/autotune.hpp).
  std::optional<runtime::AutotuneFlush> autotune_flush;
  if (options.flush_l2) autotune_flush.emplace([&flusher](cudaStream_t s) { flusher.flush(s); });
  std::vector<BenchRow> rows;
  rows.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (progress) progress(i, items.size(), &items[i]);
    rows.push_back(run_case(items[i], options, gpu, flusher));
  }
  if (progress) progress(items.size(), items.size(), nullptr);
  return rows;
}

double geomean_ratio(const std::vector<BenchRow>& rows) {
  std::vector<double> ratios;
  for (const BenchRow& r : rows)
    if (r.baseline && r.failure.empty()) ratios.push_back(r.ratio);
  return geometric_mean(ratios);
}

std::size_t rows_without_baseline(const std::vector<BenchRow>& rows) {
  return std::size_t(std::count_if(rows.begin(), rows.end(), [](const BenchRow& r) {
    return !r.baseline && !r.baseline_unavailable.empty() && r.ours_unavailable.empty();
  }));
}

std::size_t rows_not_served(const std::vector<BenchRow>& rows) {
  return std::size_t(std::count_if(rows.begin(), rows.end(),
                                   [](const BenchRow& r) { return !r.ours_unavailable.empty(); }));
}

std::size_t failed_rows(const std::vector<BenchRow>& rows) {
  return std::size_t(std::count_if(rows.begin(), rows.end(),
                                   [](const BenchRow& r) { return !r.failure.empty(); }));
}

std::vector<BenchRow> timed_rows(const std::vector<BenchRow>& rows) {
  std::vector<BenchRow> out;
  for (const BenchRow& r : rows)
    if (r.ours.samples > 0) out.push_back(r);
  return out;
}

std::vector<PlanRow> plan_items(const std::vector<BenchItem>& items, const GpuInfo& device,
                                const std::optional<GemmConfig>& config) {
  std::vector<PlanRow> rows;
  rows.reserve(items.size());
  for (const BenchItem& item : items) {
    PlanRow row;
    row.problem = item.problem;
    row.tag = item.tag;
    if (config) {
      row.config = config->describe();
      row.path_reason = "forced by --config";
      row.predicted_us = predict(item.problem, *config, device).time_us;
    } else {
      const Plan plan = plan_gemm(item.problem, device);
      row.config = plan.best().config.describe();
      row.path_reason = plan.path_reason;
      row.predicted_us = plan.best().prediction.time_us;
    }
    row.predicted_tflops = tflops_at(item.problem, row.predicted_us);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace autogemm::bench
