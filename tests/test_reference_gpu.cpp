// The reference GEMM against a tiny CPU computation, exactly: inputs are small multiples of
// 1/8 (exact in every input type), so every product and partial sum is exact in float64 and
// the GPU must agree to the last bit, whatever its summation order.
#include <gtest/gtest.h>

#include <random>

#include "autogemm/errors.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "gpu_test_util.hpp"
#include "cuda/cuda_check.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

struct HostCase {
  GemmProblem problem;
  std::vector<double> a, b, c;        // as stored (leading dimensions applied)
  std::vector<double> scale_a, scale_b;
  double alpha = 1, beta = 0;
};

// Values k/8 with |k| <= 15: at most 4 significant bits and at least 2^-3, so exact in bf16,
// fp16 and e4m3 (1 implicit + 3 stored mantissa bits, normal from 2^-6).
std::vector<double> dyadic(std::size_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> value(-15, 15);
  std::vector<double> v(count);
  for (double& x : v) x = value(rng) / 8.0;
  return v;
}

std::vector<double> powers_of_two(std::size_t count, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> exponent(-3, 3);
  std::vector<double> v(count);
  for (double& x : v) x = std::ldexp(1.0, exponent(rng));
  return v;
}

double a_at(const HostCase& h, int64_t row, int64_t kk) {
  const GemmProblem& p = h.problem;
  double v = a_is_k_major(p.layout) ? h.a[std::size_t(row * p.lda_or_packed() + kk)]
                                    : h.a[std::size_t(kk * p.lda_or_packed() + row)];
  const int64_t k_blocks = (p.k + 127) / 128;
  if (p.scaling == Scaling::per_tensor) v *= h.scale_a[0];
  if (p.scaling == Scaling::block_1x128_128x128) v *= h.scale_a[std::size_t(row * k_blocks + kk / 128)];
  return v;
}

double b_at(const HostCase& h, int64_t kk, int64_t col) {
  const GemmProblem& p = h.problem;
  double v = b_is_k_major(p.layout) ? h.b[std::size_t(col * p.ldb_or_packed() + kk)]
                                    : h.b[std::size_t(kk * p.ldb_or_packed() + col)];
  const int64_t k_blocks = (p.k + 127) / 128;
  if (p.scaling == Scaling::per_tensor) v *= h.scale_b[0];
  if (p.scaling == Scaling::block_1x128_128x128)
    v *= h.scale_b[std::size_t((col / 128) * k_blocks + kk / 128)];
  return v;
}

std::vector<double> cpu_gemm(const HostCase& h) {
  const GemmProblem& p = h.problem;
  std::vector<double> d(std::size_t(p.m * p.n));
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t c = 0; c < p.n; ++c) {
      double acc = 0;
      for (int64_t kk = 0; kk < p.k; ++kk) acc += a_at(h, r, kk) * b_at(h, kk, c);
      double out = h.alpha * acc;
      if (h.beta != 0) out += h.beta * h.c[std::size_t(r * p.ldc_or_packed() + c)];
      d[std::size_t(r * p.n + c)] = out;
    }
  return d;
}

HostCase make_case(GemmProblem p, double alpha, double beta, uint64_t seed) {
  std::mt19937_64 rng(seed);
  HostCase h;
  h.problem = p;
  h.alpha = alpha;
  h.beta = beta;
  const int64_t a_rows = a_is_k_major(p.layout) ? p.m : p.k;
  const int64_t b_rows = b_is_k_major(p.layout) ? p.n : p.k;
  h.a = dyadic(std::size_t(a_rows * p.lda_or_packed()), rng);
  h.b = dyadic(std::size_t(b_rows * p.ldb_or_packed()), rng);
  h.c = dyadic(std::size_t(p.m * p.ldc_or_packed()), rng);
  const int64_t k_blocks = (p.k + 127) / 128;
  if (p.scaling == Scaling::per_tensor) {
    h.scale_a = {0.5};
    h.scale_b = {4.0};
  } else if (p.scaling == Scaling::block_1x128_128x128) {
    h.scale_a = powers_of_two(std::size_t(p.m * k_blocks), rng);
    h.scale_b = powers_of_two(std::size_t((p.n + 127) / 128 * k_blocks), rng);
  }
  return h;
}

// Runs the reference on the GPU for the host case and returns D_ref.
std::vector<double> gpu_reference(const HostCase& h) {
  const GemmProblem& p = h.problem;
  DeviceBuffer a(h.a.size() * dtype_bytes(p.a_type)), b(h.b.size() * dtype_bytes(p.b_type));
  DeviceBuffer c(h.c.size() * dtype_bytes(p.d_type));
  DeviceBuffer sa(h.scale_a.size() * sizeof(float)), sb(h.scale_b.size() * sizeof(float));
  DeviceBuffer d(std::size_t(p.m * p.n) * sizeof(double));
  upload_from_double(a.get(), h.a, p.a_type);
  upload_from_double(b.get(), h.b, p.b_type);
  upload_from_double(c.get(), h.c, p.d_type);
  upload_from_double(sa.get(), h.scale_a, DType::fp32);
  upload_from_double(sb.get(), h.scale_b, DType::fp32);
  GemmOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.c = h.beta != 0 ? c.get() : nullptr;
  ops.alpha = float(h.alpha);
  ops.beta = float(h.beta);
  ops.scale_a = static_cast<const float*>(sa.get());
  ops.scale_b = static_cast<const float*>(sb.get());
  reference_gemm(p, ops, static_cast<double*>(d.get()), nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(reference)");
  std::vector<double> out(std::size_t(p.m * p.n));
  cuda_check(cudaMemcpy(out.data(), d.get(), out.size() * sizeof(double), cudaMemcpyDeviceToHost),
             "cudaMemcpy(reference D)");
  return out;
}

GemmProblem shape(int64_t m, int64_t n, int64_t k, DType in, Layout layout) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in;
  p.d_type = DType::fp32;
  p.layout = layout;
  return p;
}

void expect_exact(const HostCase& h, const std::string& label) {
  const auto want = cpu_gemm(h);
  const auto got = gpu_reference(h);
  int64_t mismatches = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i] && mismatches++ < 3)
      ADD_FAILURE() << label << ": D[" << i / std::size_t(h.problem.n) << "]["
                    << i % std::size_t(h.problem.n) << "] = " << got[i] << ", CPU " << want[i];
  EXPECT_EQ(mismatches, 0) << label;
}

}  // namespace

TEST(ReferenceGpu, MatchesCpuExactlyForEveryLayoutAndType) {
  AUTOGEMM_REQUIRE_GPU();
  for (DType in : {DType::bf16, DType::fp16})
    for (Layout layout : {Layout::nt, Layout::nn, Layout::tn, Layout::tt})
      expect_exact(make_case(shape(37, 29, 45, in, layout), 1.0, 0.0, 1),
                   std::string(to_string(in)) + " " + std::string(to_string(layout)));
}

TEST(ReferenceGpu, LeadingDimensionsAlphaBetaAndC) {
  AUTOGEMM_REQUIRE_GPU();
  for (Layout layout : {Layout::nt, Layout::nn, Layout::tn, Layout::tt}) {
    GemmProblem p = shape(33, 18, 21, DType::bf16, layout);
    p.lda = (a_is_k_major(layout) ? p.k : p.m) + 5;
    p.ldb = (b_is_k_major(layout) ? p.k : p.n) + 3;
    p.ldc = p.n + 7;
    p.d_type = DType::bf16;  // C is read as bf16
    p.reads_c = true;
    expect_exact(make_case(p, 1.5, -0.25, 2), "ld/alpha/beta " + std::string(to_string(layout)));
  }
}

TEST(ReferenceGpu, Fp8PerTensorAndBlockScales) {
  AUTOGEMM_REQUIRE_GPU();
  // K = 300 and N = 200 span three K blocks and two N blocks, the last of each partial.
  GemmProblem p = shape(20, 200, 300, DType::e4m3, Layout::nt);
  p.scaling = Scaling::per_tensor;
  expect_exact(make_case(p, 1.0, 0.0, 3), "e4m3 per-tensor");
  p.scaling = Scaling::block_1x128_128x128;
  expect_exact(make_case(p, 0.5, 0.0, 4), "e4m3 block-scaled");
}

TEST(ReferenceGpu, MissingOperandsAreErrors) {
  AUTOGEMM_REQUIRE_GPU();
  GemmProblem p = shape(8, 8, 8, DType::bf16, Layout::nt);
  DeviceBuffer d(64 * sizeof(double));
  GemmOperands ops;
  EXPECT_THROW(reference_gemm(p, ops, static_cast<double*>(d.get()), nullptr), InvalidArgument);
  DeviceBuffer a(64 * 2), b(64 * 2);
  ops.a = a.get();
  ops.b = b.get();
  ops.beta = 1.0f;  // without C
  EXPECT_THROW(reference_gemm(p, ops, static_cast<double*>(d.get()), nullptr), InvalidArgument);
}
