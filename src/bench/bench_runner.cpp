// `autogemm bench` measurement and planning: one row per case (bench_runner.hpp).
#include "bench/bench_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/quantize.hpp"
#include "bench/compare.hpp"
#include "bench/copy_bandwidth.hpp"
#include "bench/tensors.hpp"
#include "jit/log.hpp"
#include "runtime/cublaslt.hpp"
#include "runtime/cuda_check.hpp"

namespace autogemm::bench {

namespace {

// Rows (as stored) times leading dimension: the elements a packed operand occupies.
std::size_t a_elements(const GemmProblem& p) {
  return std::size_t((a_is_k_major(p.layout) ? p.m : p.k) * p.lda_or_packed());
}
std::size_t b_elements(const GemmProblem& p) {
  return std::size_t((b_is_k_major(p.layout) ? p.n : p.k) * p.ldb_or_packed());
}
std::size_t d_elements(const GemmProblem& p) { return std::size_t(p.m * p.ldd_or_packed()); }

double tflops_at(const GemmProblem& p, double us) { return us > 0 ? p.flops() / us * 1e-6 : 0; }

// A non-blocking stream for one bench run (no implicit sync with the legacy default stream).
class Stream {
 public:
  Stream() {
    cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~Stream() { (void)cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

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

// FP8 inputs the way a user makes them: BF16 A (M x K) and B (N x K), quantised to e4m3 with
// 1 x 128 (A) and 128 x 128 (B) block scales by quantize.hpp. The quantisation is timed like the
// GEMMs (L2 flushed before each call, median).
struct Fp8Inputs {
  DeviceBuffer scale_a, scale_b;
  double quantize_us = 0;
};

void check_fp8_problem(const GemmProblem& problem) {
  if (problem.a_type != DType::e4m3 || problem.b_type != DType::e4m3)
    throw InvalidArgument("a_type", std::string(to_string(problem.a_type)),
                          "the bench makes FP8 inputs by quantising BF16 data to e4m3 "
                          "(quantize.hpp); both inputs must be e4m3");
  if (problem.layout != Layout::nt)
    throw InvalidArgument("layout", std::string(to_string(problem.layout)),
                          "FP8 inputs are quantised along K, which must be contiguous in both: nt");
  if (problem.lda_or_packed() != problem.k || problem.ldb_or_packed() != problem.k)
    throw InvalidArgument(problem.lda_or_packed() != problem.k ? "lda" : "ldb",
                          std::to_string(problem.lda_or_packed() != problem.k
                                             ? problem.lda_or_packed()
                                             : problem.ldb_or_packed()),
                          fmt::format("quantised FP8 operands are packed: must be K = {}",
                                      problem.k));
}

Fp8Inputs make_fp8_inputs(const GemmProblem& problem, void* a, void* b,
                          const BenchOptions& options, cudaStream_t stream, L2Flusher& flusher) {
  const int64_t m = problem.m, n = problem.n, k = problem.k;
  Fp8Inputs out;
  out.scale_a = DeviceBuffer(std::size_t(fp8_scale_count_1x128(m, k)) * sizeof(float));
  out.scale_b = DeviceBuffer(std::size_t(fp8_scale_count_128x128(n, k)) * sizeof(float));
  DeviceBuffer a_bf16(std::size_t(m * k) * 2), b_bf16(std::size_t(n * k) * 2);
  fill_random(a_bf16.get(), std::size_t(m * k), DType::bf16, options.seed);
  fill_random(b_bf16.get(), std::size_t(n * k), DType::bf16, options.seed + 1);
  auto* scale_a = static_cast<float*>(out.scale_a.get());
  auto* scale_b = static_cast<float*>(out.scale_b.get());
  auto quantize_both = [&](cudaStream_t s) {
    quantize_fp8_1x128(a_bf16.get(), DType::bf16, m, k, k, a, scale_a, s);
    quantize_fp8_128x128(b_bf16.get(), DType::bf16, n, k, k, b, scale_b, s);
  };
  const auto times = time_calls(quantize_both, std::max(options.warmup, 1), std::max(options.iters, 1),
                                stream, &flusher);
  out.quantize_us = summarize(times).median_us;
  return out;
}

}  // namespace

BenchRow run_case(const BenchItem& item, const BenchOptions& options, const GpuInfo& gpu,
                  L2Flusher& flusher) {
  GemmProblem problem = item.problem;
  problem.reads_c = false;  // beta = 0
  validate(problem);
  if (problem.scaling == Scaling::per_tensor)
    throw InvalidArgument("scaling", "per_tensor",
                          "the bench measures FP8 with block_1x128_128x128 scales (it times the "
                          "per-tensor cuBLASLt variant alongside)");
  const bool fp8 = problem.scaling == Scaling::block_1x128_128x128;
  if (fp8) check_fp8_problem(problem);
  const int in_bytes = dtype_bytes(problem.a_type), out_bytes = dtype_bytes(problem.d_type);

  BenchRow row;
  row.problem = problem;
  row.tag = item.tag;

  // Inputs once, random (never constant: matrix units run faster on zeros, baselines.md).
  Stream stream;
  DeviceBuffer a(a_elements(problem) * in_bytes), b(b_elements(problem) * in_bytes);
  std::optional<Fp8Inputs> fp8_inputs;
  if (fp8) {
    fp8_inputs = make_fp8_inputs(problem, a.get(), b.get(), options, stream.get(), flusher);
    row.quantize_us = fp8_inputs->quantize_us;
  } else {
    fill_random(a.get(), a_elements(problem), problem.a_type, options.seed);
    fill_random(b.get(), b_elements(problem), problem.b_type, options.seed + 1);
  }
  DeviceBuffer d_ours(d_elements(problem) * out_bytes);
  DeviceBuffer d_base(options.baseline ? d_elements(problem) * out_bytes : 0);
  fill_poison(d_ours.get(), d_elements(problem), problem.d_type);
  if (options.baseline) fill_poison(d_base.get(), d_elements(problem), problem.d_type);

  GemmOperands ours_ops;
  ours_ops.a = a.get();
  ours_ops.b = b.get();
  ours_ops.d = d_ours.get();
  DeviceBuffer lt_scale_a, lt_scale_b;
  std::optional<PerTensorScales> per_tensor;
  if (fp8) {
    ours_ops.scale_a = static_cast<const float*>(fp8_inputs->scale_a.get());
    ours_ops.scale_b = static_cast<const float*>(fp8_inputs->scale_b.get());
    if (options.baseline) {
      // Converted once here so that the timed baseline call is the matmul alone.
      const runtime::CublasLtBlockScaleSizes sizes = runtime::cublaslt_block_scale_sizes(problem);
      lt_scale_a = DeviceBuffer(sizes.a_floats * sizeof(float));
      lt_scale_b = DeviceBuffer(sizes.b_floats * sizeof(float));
      runtime::to_cublaslt_block_scales(problem, ours_ops.scale_a, ours_ops.scale_b,
                                        static_cast<float*>(lt_scale_a.get()),
                                        static_cast<float*>(lt_scale_b.get()), stream.get());
      per_tensor.emplace();
    }
  }
  GemmOperands base_ops = ours_ops;
  base_ops.d = d_base.get();
  base_ops.scale_a = fp8 ? static_cast<const float*>(lt_scale_a.get()) : nullptr;
  base_ops.scale_b = fp8 ? static_cast<const float*>(lt_scale_b.get()) : nullptr;
  GemmOperands per_tensor_ops = base_ops;
  if (per_tensor) {
    per_tensor_ops.scale_a = static_cast<const float*>(per_tensor->scale_a.get());
    per_tensor_ops.scale_b = static_cast<const float*>(per_tensor->scale_b.get());
  }

  GemmOptions gemm_options;
  gemm_options.device = options.device;
  gemm_options.config = options.config;   // --config (experiments)
  gemm_options.autotune = options.autotune;
  GemmReport report;
  auto run_ours = [&](cudaStream_t s) { report = gemm(problem, ours_ops, s, gemm_options); };
  runtime::CublasLtOptions lt_options;
  lt_options.scales_in_cublaslt_layout = true;
  auto run_baseline = [&](cudaStream_t s) {
    runtime::cublaslt_gemm(problem, base_ops, s, lt_options);
  };
  runtime::CublasLtOptions per_tensor_options;
  per_tensor_options.per_tensor_fp8 = true;
  auto run_per_tensor = [&](cudaStream_t s) {
    runtime::cublaslt_gemm(problem, per_tensor_ops, s, per_tensor_options);
  };
  // An FP8 baseline cuBLASLt cannot run (no block scaling in this library, a shape outside its
  // documented limits) leaves its column empty with the reason; the others still run. A BF16/FP16
  // baseline that fails is a real error and propagates.
  auto try_first_call = [&](const std::function<void(cudaStream_t)>& call, std::string* why) {
    if (!fp8) {
      call(stream.get());
      return true;
    }
    try {
      call(stream.get());
      return true;
    } catch (const Error& e) {
      *why = e.what();
      log(2, "bench {}x{}x{}: {}", problem.m, problem.n, problem.k, *why);
      return false;
    }
  };

  // First calls (JIT compile, cuBLASLt heuristic) and the comparison, before any timing.
  // The per-tensor call writes d_base too, so it goes before the baseline that is compared.
  run_ours(stream.get());
  const bool per_tensor_runs =
      per_tensor && try_first_call(run_per_tensor, &row.baseline_fp8_per_tensor_unavailable);
  const bool baseline =
      options.baseline && try_first_call(run_baseline, &row.baseline_unavailable);
  cuda_check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize(first run)");

  row.config = report.config.describe();
  row.used_vendor = report.used_vendor;
  row.reason = report.reason;
  const std::vector<double> ours_d = download_as_double(d_ours.get(), d_elements(problem), problem.d_type);
  for (double v : ours_d) row.unwritten += std::isfinite(v) ? 0 : 1;
  row.diff = std::numeric_limits<double>::quiet_NaN();
  if (baseline)
    row.diff = gemm_diff(ours_d, download_as_double(d_base.get(), d_elements(problem), problem.d_type));

  std::vector<std::function<void(cudaStream_t)>> calls = {run_ours};
  if (baseline) calls.push_back(run_baseline);
  if (per_tensor_runs) calls.push_back(run_per_tensor);  // writes d_base after the comparison
  // A short memory-bound GEMM is judged against the 1 GiB copy bandwidth, whose launch and
  // first-byte latency are spread over 2 GiB; this copy of the row's own bytes, timed in the same
  // loop, shows what a kernel that only moves them costs (docs/perf/notes.md section 17).
  const std::size_t copy_bytes = static_cast<std::size_t>(problem.min_bytes() / 2) / 16 * 16;
  const bool time_copy = is_memory_bound(row) && copy_bytes > 0;
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
  const auto times = time_interleaved(calls, options.warmup, options.iters, stream.get(),
                                      options.flush_l2 ? &flusher : nullptr);
  if (time_copy) row.same_bytes_copy = summarize(times.back());

  row.ours = summarize(times[0]);
  row.tflops = tflops_at(problem, row.ours.median_us);
  row.gbps = row.ours.median_us > 0 ? problem.min_bytes() / row.ours.median_us * 1e-3 : 0;
  if (baseline) {
    row.baseline = summarize(times[1]);
    row.baseline_tflops = tflops_at(problem, row.baseline->median_us);
    row.ratio = row.ours.median_us > 0 ? row.baseline->median_us / row.ours.median_us : 0;
  }
  if (per_tensor_runs) {
    row.baseline_fp8_per_tensor = summarize(times[baseline ? 2 : 1]);
    row.baseline_fp8_per_tensor_tflops = tflops_at(problem, row.baseline_fp8_per_tensor->median_us);
  }
  if (!report.used_vendor) {
    try {
      row.predicted_us = predict(problem, report.config, gpu).time_us;
    } catch (const Error& e) {
      log(2, "bench: no prediction for {}: {}", row.config, e.what());
    }
  }
  return row;
}

std::vector<BenchRow> run_bench(
    const std::vector<BenchItem>& items, const BenchOptions& options, const GpuInfo& gpu,
    const std::function<void(std::size_t, std::size_t, const BenchItem*)>& progress) {
  cuda_check(cudaSetDevice(options.device), "cudaSetDevice");
  L2Flusher flusher;
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
    if (r.baseline) ratios.push_back(r.ratio);
  return geometric_mean(ratios);
}

std::vector<PlanRow> plan_items(const std::vector<BenchItem>& items, const GpuInfo& device) {
  std::vector<PlanRow> rows;
  rows.reserve(items.size());
  for (const BenchItem& item : items) {
    const Plan plan = plan_gemm(item.problem, device);
    PlanRow row;
    row.problem = item.problem;
    row.tag = item.tag;
    row.config = plan.best().config.describe();
    row.path_reason = plan.path_reason;
    row.predicted_us = plan.best().prediction.time_us;
    row.predicted_tflops = tflops_at(item.problem, row.predicted_us);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace autogemm::bench
