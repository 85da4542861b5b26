// `autogemm bench` measurement and planning: one row per case (bench_runner.hpp).
#include "bench/bench_runner.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "bench/compare.hpp"
#include "bench/tensors.hpp"
#include "jit/log.hpp"
#include "runtime/cublaslt.hpp"
#include "runtime/cuda_check.hpp"

namespace autogemm::bench {

namespace {

constexpr int64_t kScaleBlock = 128;  // FP8 block scaling granularity (problem.hpp)

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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
  const int in_bytes = dtype_bytes(problem.a_type), out_bytes = dtype_bytes(problem.d_type);

  // Inputs once, random (never constant: matrix units run faster on zeros, baselines.md).
  DeviceBuffer a(a_elements(problem) * in_bytes), b(b_elements(problem) * in_bytes);
  fill_random(a.get(), a_elements(problem), problem.a_type, options.seed);
  fill_random(b.get(), b_elements(problem), problem.b_type, options.seed + 1);
  DeviceBuffer d_ours(d_elements(problem) * out_bytes);
  DeviceBuffer d_base(options.baseline ? d_elements(problem) * out_bytes : 0);
  fill_poison(d_ours.get(), d_elements(problem), problem.d_type);
  if (options.baseline) fill_poison(d_base.get(), d_elements(problem), problem.d_type);

  GemmOperands ours_ops;
  ours_ops.a = a.get();
  ours_ops.b = b.get();
  ours_ops.d = d_ours.get();
  DeviceBuffer scale_a, scale_b, lt_scale_a, lt_scale_b;
  std::optional<PerTensorScales> per_tensor;
  Stream stream;
  if (fp8) {
    // Scales in [0.5, 2): positive, not powers of two, so a transposed or misread scale layout
    // shows in diff.
    const std::size_t a_scales = std::size_t(problem.m * ceil_div(problem.k, kScaleBlock));
    const std::size_t b_scales =
        std::size_t(ceil_div(problem.n, kScaleBlock) * ceil_div(problem.k, kScaleBlock));
    scale_a = DeviceBuffer(a_scales * sizeof(float));
    scale_b = DeviceBuffer(b_scales * sizeof(float));
    fill_uniform(scale_a.get(), a_scales, DType::fp32, options.seed + 2, 0.5, 2.0);
    fill_uniform(scale_b.get(), b_scales, DType::fp32, options.seed + 3, 0.5, 2.0);
    ours_ops.scale_a = static_cast<const float*>(scale_a.get());
    ours_ops.scale_b = static_cast<const float*>(scale_b.get());
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
  gemm_options.config = options.config;
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

  // First calls (JIT compile, cuBLASLt heuristic) and the comparison, before any timing.
  run_ours(stream.get());
  if (options.baseline) run_baseline(stream.get());
  cuda_check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize(first run)");

  BenchRow row;
  row.problem = problem;
  row.tag = item.tag;
  row.config = report.config.describe();
  row.used_vendor = report.used_vendor;
  row.reason = report.reason;
  const std::vector<double> ours_d = download_as_double(d_ours.get(), d_elements(problem), problem.d_type);
  for (double v : ours_d) row.unwritten += std::isfinite(v) ? 0 : 1;
  row.diff = std::numeric_limits<double>::quiet_NaN();
  if (options.baseline)
    row.diff = gemm_diff(ours_d, download_as_double(d_base.get(), d_elements(problem), problem.d_type));

  std::vector<std::function<void(cudaStream_t)>> calls = {run_ours};
  if (options.baseline) calls.push_back(run_baseline);
  if (per_tensor) calls.push_back(run_per_tensor);  // writes d_base after the comparison
  const auto times = time_interleaved(calls, options.warmup, options.iters, stream.get(), &flusher);

  row.ours = summarize(times[0]);
  row.tflops = tflops_at(problem, row.ours.median_us);
  row.gbps = row.ours.median_us > 0 ? problem.min_bytes() / row.ours.median_us * 1e-3 : 0;
  if (options.baseline) {
    row.baseline = summarize(times[1]);
    row.baseline_tflops = tflops_at(problem, row.baseline->median_us);
    row.ratio = row.ours.median_us > 0 ? row.baseline->median_us / row.ours.median_us : 0;
  }
  if (per_tensor) {
    row.baseline_fp8_per_tensor = summarize(times[2]);
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
