#pragma once
// Runs one GEMM through autogemm::gemm() on random data and checks it against the float64
// reference: diff, every element written, exact spot checks, and guard regions around D that
// must stay poisoned. A problem with a fused epilogue gets random vectors (scales in [0.5, 1.5))
// and the reference applies the whole epilogue in float64 (bench/epilogue_reference.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "autogemm/gemm.hpp"
#include "bench/compare.hpp"
#include "bench/epilogue_reference.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "ladder/ladder.hpp"
#include "runtime/launch.hpp"

namespace autogemm::testing {

struct GemmCheck {
  bench::CheckReport report;
  int64_t guard_violations = 0;   // elements outside M x N (padding columns, guard rows) changed
  bool used_vendor = false;
  std::string config;
  std::string reason;             // GemmReport::reason
  // FP8 output (d_type e4m3): D dequantised with its scales before the comparison, whose diff
  // must then be below 1e-3 (e4m3 keeps 4 significant bits); scales more than 1e-3 off the
  // amax / 448 of the reference's 128 columns are counted.
  double diff_limit = 1e-5;
  int64_t scale_mismatches = 0;
};

inline int64_t round_up_to(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Stored shape (rows x row length) of A and B for the problem's layout.
inline std::pair<int64_t, int64_t> stored_a(const GemmProblem& p) {
  return a_is_k_major(p.layout) ? std::pair{p.m, p.k} : std::pair{p.k, p.m};
}
inline std::pair<int64_t, int64_t> stored_b(const GemmProblem& p) {
  return b_is_k_major(p.layout) ? std::pair{p.n, p.k} : std::pair{p.k, p.n};
}

// D (M x N, or M x N / 2 gated) gets `guard_rows` poisoned rows above and below and ldd padded
// past its columns; when `padded_ld`,
// A, B and C are given leading dimensions larger than their rows too. `stream`: where the GEMM
// runs (the inputs are ready on the device before it starts).
// `call` runs the GEMM (autogemm::gemm() in run_and_check below).
using GemmCall =
    std::function<GemmReport(const GemmProblem&, const GemmOperands&, cudaStream_t)>;

inline GemmCheck run_call_and_check(GemmProblem p, float alpha, float beta, uint64_t seed,
                                    bool padded_ld, cudaStream_t stream, const GemmCall& call) {
  const int64_t guard_rows = 2;
  const auto [a_rows, a_len] = stored_a(p);
  const auto [b_rows, b_len] = stored_b(p);
  if (padded_ld) {
    p.lda = round_up_to(a_len + 24, 8);
    p.ldb = round_up_to(b_len + 40, 8);
    p.ldc = round_up_to(p.d_cols() + 8, 8);
  }
  // Padding columns act as a guard on the right; a caller's own ldd past D's columns (any
  // alignment) is kept. FP8 output rows are whole 16-byte chunks (TMA).
  const int64_t n_d = p.d_cols();
  const bool fp8_out = p.d_type == DType::e4m3;
  if (p.ldd <= n_d) p.ldd = round_up_to(n_d + 16, fp8_out ? 16 : 8);
  const int64_t lda = p.lda_or_packed(), ldb = p.ldb_or_packed(), ldc = p.ldc_or_packed();
  const int in_bytes = dtype_bytes(p.a_type), out_bytes = dtype_bytes(p.d_type);

  bench::DeviceBuffer a(size_t(a_rows) * lda * in_bytes), b(size_t(b_rows) * ldb * in_bytes);
  bench::DeviceBuffer c(size_t(p.m) * ldc * out_bytes);
  const size_t d_elems = size_t(p.m + 2 * guard_rows) * p.ldd;
  bench::DeviceBuffer d(d_elems * out_bytes), ref(size_t(p.m) * p.n * sizeof(double));
  bench::fill_random(a.get(), size_t(a_rows) * lda, p.a_type, seed);
  bench::fill_random(b.get(), size_t(b_rows) * ldb, p.b_type, seed + 1);
  bench::fill_random(c.get(), size_t(p.m) * ldc, p.d_type, seed + 2);
  bench::fill_poison(d.get(), d_elems, p.d_type);

  GemmOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.c = beta != 0.0f ? c.get() : nullptr;
  ops.d = static_cast<char*>(d.get()) + size_t(guard_rows) * p.ldd * out_bytes;
  ops.alpha = alpha;
  ops.beta = beta;
  const Epilogue& e = p.epilogue;
  bench::DeviceBuffer bias(e.bias ? size_t(p.n) * dtype_bytes(*e.bias) : 0);
  bench::DeviceBuffer row_scale(e.row_scale ? size_t(p.m) * 4 : 0);
  bench::DeviceBuffer col_scale(e.col_scale ? size_t(p.n) * 4 : 0);
  bench::EpilogueVectors vectors;
  if (e.bias) {
    bench::fill_random(bias.get(), size_t(p.n), *e.bias, seed + 4);
    vectors.bias = bench::download_as_double(bias.get(), size_t(p.n), *e.bias);
    ops.bias = bias.get();
  }
  if (e.row_scale) {
    bench::fill_uniform(row_scale.get(), size_t(p.m), DType::fp32, seed + 5, 0.5, 1.5);
    vectors.row_scale = bench::download_as_double(row_scale.get(), size_t(p.m), DType::fp32);
    ops.row_scale = static_cast<const float*>(row_scale.get());
  }
  if (e.col_scale) {
    bench::fill_uniform(col_scale.get(), size_t(p.n), DType::fp32, seed + 6, 0.5, 1.5);
    vectors.col_scale = bench::download_as_double(col_scale.get(), size_t(p.n), DType::fp32);
    ops.col_scale = static_cast<const float*>(col_scale.get());
  }
  if (stream != nullptr) cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize before gemm");
  const int64_t scale_groups = (n_d + 127) / 128;
  bench::DeviceBuffer d_scale(fp8_out ? size_t(p.m) * scale_groups * 4 : 0);
  if (fp8_out) ops.d_scale = static_cast<float*>(d_scale.get());
  GemmReport r = call(p, ops, stream);
  GemmProblem ref_problem = p;
  ref_problem.reads_c = beta != 0.0f;
  GemmOperands ref_ops = ops;
  if (!e.empty()) {   // the product alone (M x N); the epilogue on the host below
    ref_problem.epilogue = Epilogue{};
    ref_problem.ldd = 0;   // a gated D's ldd is for N / 2 columns
    ref_problem.reads_c = false;
    ref_ops.alpha = 1.0f;
    ref_ops.beta = 0.0f;
  }
  bench::reference_gemm(ref_problem, ref_ops, static_cast<double*>(ref.get()), nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after gemm");

  std::vector<double> got = bench::download_as_double(d.get(), d_elems, p.d_type);
  std::vector<double> want(size_t(p.m) * p.n);
  cuda_check(cudaMemcpy(want.data(), ref.get(), want.size() * sizeof(double), cudaMemcpyDeviceToHost),
             "cudaMemcpy(reference)");
  if (!e.empty()) {
    const std::vector<double> c_values =
        beta != 0.0f ? bench::download_as_double(c.get(), size_t(p.m) * ldc, p.d_type)
                     : std::vector<double>{};
    bench::apply_epilogue_reference(e, vectors, p.m, p.n, alpha, beta, c_values, ldc, want);
  }
  GemmCheck out;
  double max_scale = 0;
  if (fp8_out) {
    // Each scale against its 128 columns of the reference; D dequantised with it.
    const std::vector<double> scales =
        bench::download_as_double(d_scale.get(), size_t(p.m) * scale_groups, DType::fp32);
    for (int64_t row = 0; row < p.m; ++row)
      for (int64_t g = 0; g < scale_groups; ++g) {
        double amax = 0;
        for (int64_t col = 128 * g; col < std::min(n_d, 128 * g + 128); ++col)
          amax = std::max(amax, std::abs(want[size_t(row * n_d + col)]));
        const double scale = scales[size_t(row * scale_groups + g)];
        const double expected = std::max(amax / 448, 1.17549435e-38);
        if (!(std::abs(scale - expected) <= 1e-3 * expected)) ++out.scale_mismatches;
        max_scale = std::max(max_scale, scale);
        for (int64_t col = 128 * g; col < std::min(n_d, 128 * g + 128); ++col)
          got[size_t((guard_rows + row) * p.ldd + col)] *= scale;
      }
    out.diff_limit = 1e-3;
  }
  out.used_vendor = r.used_vendor;
  out.config = r.config.describe();
  out.reason = r.reason;
  std::vector<double> inside(got.begin() + guard_rows * p.ldd, got.begin() + (guard_rows + p.m) * p.ldd);
  // Output rounding dominates: bf16 keeps 8 significant bits, fp16 11, fp32 24; FP32
  // accumulation adds about K * 2^-24 relative.
  // FP8 output: 4 significant bits, and subnormals spaced 2^-9 of a scale.
  const double rtol = p.d_type == DType::bf16   ? 1.0 / 128
                      : p.d_type == DType::fp16 ? 1.0 / 1024
                      : fp8_out                 ? 1.0 / 16
                                                : 1e-5;
  const double atol = (fp8_out ? max_scale / 512 : rtol) + 1e-6 * double(p.k);
  out.report = bench::check_result(inside, p.ldd, want, p.m, n_d, atol, rtol, 512, seed + 3);
  for (int64_t row = 0; row < p.m + 2 * guard_rows; ++row)
    for (int64_t col = 0; col < p.ldd; ++col) {
      const bool inside_d = row >= guard_rows && row < guard_rows + p.m && col < n_d;
      if (!inside_d && !std::isnan(got[size_t(row) * p.ldd + col])) ++out.guard_violations;
    }
  return out;
}

inline GemmCheck run_and_check(GemmProblem p, float alpha, float beta, uint64_t seed,
                               std::optional<GemmConfig> config = std::nullopt,
                               bool padded_ld = false, int autotune = 0,
                               cudaStream_t stream = nullptr) {
  GemmOptions options;
  options.config = config;
  options.autotune = autotune;
  return run_call_and_check(p, alpha, beta, seed, padded_ld, stream,
                            [&](const GemmProblem& q, const GemmOperands& ops, cudaStream_t s) {
                              return gemm(q, ops, s, options);
                            });
}

// A ladder step, made into a spec by the ladder (and the planner's rules) and launched.
inline GemmCheck run_ladder_step_and_check(const GemmProblem& p, float alpha, float beta,
                                           uint64_t seed, const ladder::LadderStep& step,
                                           const GpuInfo& gpu) {
  return run_call_and_check(p, alpha, beta, seed, false, nullptr,
                            [&](const GemmProblem& q, const GemmOperands& ops, cudaStream_t s) {
                              GemmProblem with_c = q;
                              with_c.reads_c = ops.beta != 0.0f;
                              const KernelSpec spec = ladder::step_spec(with_c, step, gpu);
                              runtime::launch(spec, ops, s);
                              GemmReport report;
                              report.config = spec.config;
                              report.reason = spec.reason;
                              return report;
                            });
}

#define AUTOGEMM_EXPECT_GEMM_OK(check, label)                                               \
  do {                                                                                      \
    EXPECT_LT((check).report.diff, (check).diff_limit) << label << " [" << (check).config << "]"; \
    EXPECT_EQ((check).scale_mismatches, 0) << label << " [" << (check).config << "]";      \
    EXPECT_EQ((check).report.unwritten, 0) << label << " [" << (check).config << "]";      \
    EXPECT_EQ((check).report.spot_failures, 0)                                              \
        << label << " [" << (check).config << "] " << (check).report.first_failure;        \
    EXPECT_EQ((check).guard_violations, 0) << label << " [" << (check).config << "]";      \
  } while (0)

}  // namespace autogemm::testing
