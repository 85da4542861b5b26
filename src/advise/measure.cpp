// `autogemm advise --measure` (measure.hpp): the advisor's predicted step GEMM time against the
// same GEMMs run through gemm(), each checked once against the float64 reference. Weight-only
// formats: the weight is a random trained-like layer packed by quantize_weight (as `bench
// --weights` makes it), checked against float64 of A and the dequantised weight.
#include "advise/measure.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "autogemm/config.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/quantize.hpp"
#include "autogemm/weights.hpp"
#include "bench/compare.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "bench/weights_bench.hpp"
#include "cuda/cuda_check.hpp"

namespace autogemm::advise {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// A weight-only GEMM's check runs on the host (every column, the whole of K): its first rows.
constexpr int64_t kWeightCheckedRows = 8;

// One distinct GEMM's device data: A (M x K) and B (N x K), K contiguous, packed; D (M x N).
// FP8: the BF16 originals are kept for the check against the unquantised inputs. Weight-only:
// the packed weight, on the host (its dequantised values are the check's) and the device.
struct GemmData {
  bench::DeviceBuffer a, b, d;
  bench::DeviceBuffer a_bf16, b_bf16;        // FP8 only
  bench::DeviceBuffer scale_a, scale_b;      // FP8 only
  std::optional<PackedWeight> packed;        // weight-only
  bench::DeviceWeight weight;                // weight-only
  GemmOperands ops;
};

bool is_block_fp8(const GemmProblem& p) { return p.scaling == Scaling::block_1x128_128x128; }

// Random inputs, never zeros (bench/tensors.hpp); FP8 quantised from random BF16 data the way a
// user makes them (quantize.hpp), as `autogemm bench` does. D poisoned so unwritten entries show.
GemmData make_data(const GemmProblem& p, uint64_t seed, cudaStream_t stream) {
  const std::size_t a_elems = std::size_t(p.m * p.k), b_elems = std::size_t(p.n * p.k);
  const std::size_t d_elems = std::size_t(p.m * p.n);
  GemmData g;
  g.a = bench::DeviceBuffer(a_elems * dtype_bytes(p.a_type));
  g.d = bench::DeviceBuffer(d_elems * dtype_bytes(p.d_type));
  if (!p.weight_format) g.b = bench::DeviceBuffer(b_elems * dtype_bytes(p.b_type));
  g.ops.b = g.b.get();
  if (p.weight_format) {
    bench::fill_random(g.a.get(), a_elems, p.a_type, seed);
    const std::vector<float> w = bench::random_weight(p.n, p.k, seed + 1);
    g.packed = quantize_weight(w.data(), p.n, p.k, *p.weight_format);
    g.weight = bench::upload_weight(*g.packed);
    g.weight.set_operands(g.ops);
  } else if (is_block_fp8(p)) {
    g.a_bf16 = bench::DeviceBuffer(a_elems * 2);
    g.b_bf16 = bench::DeviceBuffer(b_elems * 2);
    bench::fill_random(g.a_bf16.get(), a_elems, DType::bf16, seed);
    bench::fill_random(g.b_bf16.get(), b_elems, DType::bf16, seed + 1);
    g.scale_a = bench::DeviceBuffer(std::size_t(fp8_scale_count_1x128(p.m, p.k)) * sizeof(float));
    g.scale_b =
        bench::DeviceBuffer(std::size_t(fp8_scale_count_128x128(p.n, p.k)) * sizeof(float));
    quantize_fp8_1x128(g.a_bf16.get(), DType::bf16, p.m, p.k, p.k, g.a.get(),
                       static_cast<float*>(g.scale_a.get()), stream);
    quantize_fp8_128x128(g.b_bf16.get(), DType::bf16, p.n, p.k, p.k, g.b.get(),
                         static_cast<float*>(g.scale_b.get()), stream);
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(quantisation)");
    g.ops.scale_a = static_cast<const float*>(g.scale_a.get());
    g.ops.scale_b = static_cast<const float*>(g.scale_b.get());
  } else {
    bench::fill_random(g.a.get(), a_elems, p.a_type, seed);
    bench::fill_random(g.b.get(), b_elems, p.b_type, seed + 1);
  }
  bench::fill_poison(g.d.get(), d_elems, p.d_type);
  g.ops.a = g.a.get();
  g.ops.d = g.d.get();
  return g;
}

// Weight-only: float64 of the first `rows` rows of A and the dequantised weight, on the host.
std::vector<double> weight_reference_rows(MeasuredGemm& r, const GemmData& g, int64_t rows) {
  const GemmProblem& p = r.predicted.problem;
  r.diff_limit = kBf16DiffLimit;
  r.checked_against = "float64 GEMM of A and the dequantised weight";
  const std::vector<double> a = bench::download_as_double(g.a.get(), std::size_t(rows * p.k),
                                                          p.a_type);
  return bench::weight_reference(a, dequantize_weight(*g.packed), rows, p.n, p.k);
}

// The float64 GEMM of the first `rows` rows on the device: BF16 of the same inputs,
// block-scaled FP8 of the unquantised BF16 inputs.
std::vector<double> device_reference_rows(MeasuredGemm& r, const GemmData& g, int64_t rows,
                                          cudaStream_t stream) {
  const GemmProblem& p = r.predicted.problem;
  GemmProblem ref_problem = p;
  ref_problem.m = rows;
  GemmOperands ref_ops = g.ops;
  if (is_block_fp8(p)) {
    ref_problem.a_type = ref_problem.b_type = DType::bf16;
    ref_problem.scaling = Scaling::none;
    ref_ops.a = g.a_bf16.get();
    ref_ops.b = g.b_bf16.get();
    ref_ops.scale_a = ref_ops.scale_b = nullptr;
    r.diff_limit = kFp8DiffLimit;
    r.checked_against = "float64 GEMM of the unquantised BF16 inputs";
  } else {
    r.diff_limit = p.a_type == DType::bf16 ? kBf16DiffLimit : kFp8DiffLimit;
    r.checked_against = "float64 GEMM of the same inputs";
  }
  const std::size_t elems = std::size_t(rows * p.n);
  bench::DeviceBuffer ref(elems * sizeof(double));
  bench::reference_gemm(ref_problem, ref_ops, static_cast<double*>(ref.get()), stream);
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(reference)");
  std::vector<double> want(elems);
  cuda_check(cudaMemcpy(want.data(), ref.get(), elems * sizeof(double), cudaMemcpyDeviceToHost),
             "cudaMemcpy(reference)");
  return want;
}

// The first rows of D (kCheckedRows; weight-only, whose reference runs on the host,
// kWeightCheckedRows) against their float64 reference.
void check_output(MeasuredGemm& r, const GemmData& g, cudaStream_t stream) {
  const GemmProblem& p = r.predicted.problem;
  const int64_t rows = std::min(p.m, p.weight_format ? kWeightCheckedRows : kCheckedRows);
  const std::vector<double> want = p.weight_format ? weight_reference_rows(r, g, rows)
                                                   : device_reference_rows(r, g, rows, stream);
  const std::vector<double> got =
      bench::download_as_double(g.d.get(), std::size_t(rows * p.n), p.d_type);
  r.checked_rows = rows;
  for (double v : got) r.unwritten += std::isfinite(v) ? 0 : 1;
  r.diff = bench::gemm_diff(got, want);
  if (r.unwritten > 0)
    r.failure = fmt::format("{} of {} checked entries of D not finite", r.unwritten, got.size());
  else if (!(r.diff < r.diff_limit))
    r.failure = fmt::format("diff {:.3g} against the {} is not below {:g}", r.diff,
                            r.checked_against, r.diff_limit);
}

// Checks, then times one distinct GEMM; fills r.
void measure_gemm(MeasuredGemm& r, const MeasureOptions& o, cudaStream_t stream,
                  bench::L2Flusher& flusher) {
  const GemmProblem& p = r.predicted.problem;
  GemmData data = make_data(p, o.seed, stream);
  // The planned configuration, given back to gemm(): it makes the planner's own spec (the same
  // make_spec), and nothing that could pick another one at run time (autotuning, an earlier
  // tuning result) changes what is timed. What ran is still compared with it below.
  GemmOptions options;
  options.device = o.device;
  options.config = GemmConfig::parse(r.predicted.config);
  options.autotune = 0;
  GemmReport report = gemm(p, data.ops, stream, options);   // JIT compile, once
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(first call)");
  r.used_vendor = report.used_vendor;
  r.config_ran = report.config.describe();
  check_output(r, data, stream);
  if (r.failure.empty() && r.config_ran != r.predicted.config)
    r.failure = fmt::format("gemm() ran {} where the planner's prediction is for {} ({})",
                            r.config_ran, r.predicted.config, report.reason);
  const auto call = [&](cudaStream_t s) { gemm(p, data.ops, s, options); };
  r.time = bench::summarize(bench::time_calls(call, o.warmup, o.iters, stream, &flusher));
  r.measured = true;
}

}  // namespace

double MeasuredGemm::ratio() const {
  return measured && predicted.time_us > 0 ? time.median_us / predicted.time_us : 0;
}

double StepMeasurement::error_pct() const {
  return measured_us > 0 ? (predicted_us - measured_us) / measured_us * 100 : kNaN;
}

bool StepMeasurement::passed() const {
  if (!not_measured.empty() || gemms.empty()) return false;
  return std::all_of(gemms.begin(), gemms.end(),
                     [](const MeasuredGemm& g) { return g.measured && g.failure.empty(); });
}

bool measurable(Format f) {
  return f == Format::bf16 || f == Format::fp8_block || weight_only(f);
}

StepMeasurement plan_step_measurement(const std::string& phase, int64_t tokens,
                                      const std::vector<StepGemm>& gemms,
                                      const FormatAssessment& s, const GpuInfo& device) {
  StepMeasurement step;
  step.phase = phase;
  step.tokens = tokens;
  step.format = s.format;
  step.advisor_gemm_us = phase == "prefill" ? s.prefill_gemm_us : s.decode_gemm_us;
  if (!s.available)
    step.not_measured = "not available: " + s.gate;
  else if (!s.ours)
    step.not_measured = "no kernel of our own (the advisor's figure is a roofline)";
  else if (!measurable(s.format))
    step.not_measured =
        "--measure runs bf16, fp8-block and the weight-only int8, int4 and mxfp4 (the formats "
        "autogemm quantises)";
  for (const StepGemm& g : gemms) {
    MeasuredGemm m;
    m.gemm = g;
    m.predicted = predict_step_gemm(g, s.format, s.ours, device);
    step.predicted_us += double(g.count) * m.predicted.time_us;
    step.gemms.push_back(std::move(m));
  }
  return step;
}

void measure_step(StepMeasurement& step, const MeasureOptions& o,
                  const std::function<void(std::size_t, std::size_t, const MeasuredGemm&)>&
                      progress) {
  if (!step.not_measured.empty())
    throw InvalidArgument("format", std::string(to_string(step.format)),
                          "not measured: " + step.not_measured);
  if (o.warmup < 0) throw InvalidArgument("--warmup", std::to_string(o.warmup), "must be >= 0");
  if (o.iters < 1) throw InvalidArgument("--iters", std::to_string(o.iters), "must be >= 1");
  cuda_check(cudaSetDevice(o.device), "cudaSetDevice");
  // Each distinct problem once; its repeats take its figures.
  using Key = std::tuple<int64_t, int64_t, int64_t>;
  std::map<Key, std::size_t> first;
  std::vector<std::size_t> distinct;
  for (std::size_t i = 0; i < step.gemms.size(); ++i) {
    const GemmProblem& p = step.gemms[i].predicted.problem;
    if (first.emplace(Key{p.m, p.n, p.k}, i).second) distinct.push_back(i);
  }
  bench::Stream stream;
  bench::L2Flusher flusher;
  for (std::size_t j = 0; j < distinct.size(); ++j) {
    MeasuredGemm& r = step.gemms[distinct[j]];
    if (progress) progress(j, distinct.size(), r);
    measure_gemm(r, o, stream.get(), flusher);
  }
  step.measured_us = 0;
  for (MeasuredGemm& r : step.gemms) {
    const GemmProblem& p = r.predicted.problem;
    const MeasuredGemm& src = step.gemms[first.at(Key{p.m, p.n, p.k})];
    if (&src != &r) {
      const StepGemm own = r.gemm;
      r = src;
      r.gemm = own;
    }
    step.measured_us += double(r.gemm.count) * r.time.median_us;
  }
}

}  // namespace autogemm::advise
