#pragma once
// Runs one GEMM through autogemm::gemm() on random data and checks it against the float64
// reference: diff, every element written, exact spot checks, and guard regions around D that
// must stay poisoned. A problem with a fused epilogue gets random vectors (scales in [0.5, 1.5))
// and the reference applies the whole epilogue in float64 (bench/epilogue_reference.hpp).
#include <gtest/gtest.h>

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
};

inline int64_t round_up_to(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Stored shape (rows x row length) of A and B for the problem's layout.
inline std::pair<int64_t, int64_t> stored_a(const GemmProblem& p) {
  return a_is_k_major(p.layout) ? std::pair{p.m, p.k} : std::pair{p.k, p.m};
}
inline std::pair<int64_t, int64_t> stored_b(const GemmProblem& p) {
  return b_is_k_major(p.layout) ? std::pair{p.n, p.k} : std::pair{p.k, p.n};
}

// D gets `guard_rows` poisoned rows above and below and ldd padded past N; when `padded_ld`,
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
    p.ldc = round_up_to(p.n + 8, 8);
  }
  // Padding columns act as a guard on the right; a caller's own ldd past N (any alignment) is
  // kept.
  if (p.ldd <= p.n) p.ldd = round_up_to(p.n + 16, 8);
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
  GemmReport r = call(p, ops, stream);
  GemmProblem ref_problem = p;
  ref_problem.reads_c = beta != 0.0f;
  GemmOperands ref_ops = ops;
  if (!e.empty()) {   // the product alone; the epilogue on the host below
    ref_problem.epilogue = Epilogue{};
    ref_problem.reads_c = false;
    ref_ops.alpha = 1.0f;
    ref_ops.beta = 0.0f;
  }
  bench::reference_gemm(ref_problem, ref_ops, static_cast<double*>(ref.get()), nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize after gemm");

  const std::vector<double> got = bench::download_as_double(d.get(), d_elems, p.d_type);
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
  out.used_vendor = r.used_vendor;
  out.config = r.config.describe();
  out.reason = r.reason;
  std::vector<double> inside(got.begin() + guard_rows * p.ldd, got.begin() + (guard_rows + p.m) * p.ldd);
  // Output rounding dominates: bf16 keeps 8 significant bits, fp16 11, fp32 24; FP32
  // accumulation adds about K * 2^-24 relative.
  const double rtol = p.d_type == DType::bf16 ? 1.0 / 128 : p.d_type == DType::fp16 ? 1.0 / 1024 : 1e-5;
  const double atol = rtol + 1e-6 * double(p.k);
  out.report = bench::check_result(inside, p.ldd, want, p.m, p.n, atol, rtol, 512, seed + 3);
  for (int64_t row = 0; row < p.m + 2 * guard_rows; ++row)
    for (int64_t col = 0; col < p.ldd; ++col) {
      const bool inside_d = row >= guard_rows && row < guard_rows + p.m && col < p.n;
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
    EXPECT_LT((check).report.diff, 1e-5) << label << " [" << (check).config << "]";        \
    EXPECT_EQ((check).report.unwritten, 0) << label << " [" << (check).config << "]";      \
    EXPECT_EQ((check).report.spot_failures, 0)                                              \
        << label << " [" << (check).config << "] " << (check).report.first_failure;        \
    EXPECT_EQ((check).guard_violations, 0) << label << " [" << (check).config << "]";      \
  } while (0)

}  // namespace autogemm::testing
