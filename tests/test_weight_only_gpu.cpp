// Weight-only GEMM (issue 51): bf16 activations times a packed int4 / mxfp4 / int8 weight, dequantised in
// registers by the decode family (sm90/decode_kernel.cuh weight_main_loop). Without a GPU: the
// problem's rules, the planner's family and its refusals. On an sm_90a GPU: every format against
// a float64 product of the dequantised weight, with tails in M and N, split-K, several row tiles
// and fp32 output.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/weights.hpp"
#include "bench/compare.hpp"
#include "codegen/decode_source.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "bench/tensors.hpp"
#include "bench/weights_bench.hpp"
#include "cuda/cuda_check.hpp"
#include "error_test_util.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;
using autogemm::testing::expect_invalid;

namespace {

GemmProblem weight_problem(int64_t m, int64_t n, int64_t k, WeightFormat f,
                           DType d = DType::bf16) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.d_type = d;
  p.weight_format = f;
  return p;
}

// InvalidArgument naming `argument`, with `value` and `rule` in its message.
template <class Call>
void expect_refused(Call call, const std::string& argument, const std::string& value,
                    const std::string& rule) {
  const std::string what = expect_invalid(call, argument);
  EXPECT_NE(what.find(value), std::string::npos) << what;
  EXPECT_NE(what.find(rule), std::string::npos) << what;
}

}  // namespace

TEST(WeightOnly, ProblemRulesNameTheField) {
  expect_refused([] { validate(weight_problem(4, 256, 1000, WeightFormat::int4_g128)); }, "k",
                 "1000", "multiple of 128");
  expect_refused([] { validate(weight_problem(4, 256, 1000, WeightFormat::int8_channel)); }, "k",
                 "1000", "multiple of 16");
  GemmProblem fp16 = weight_problem(4, 256, 1024, WeightFormat::int4_g128);
  fp16.a_type = fp16.b_type = DType::fp16;
  expect_refused([&] { validate(fp16); }, "a_type", "fp16", "bf16");
  GemmProblem tn = weight_problem(4, 256, 1024, WeightFormat::int4_g128);
  tn.layout = Layout::tn;
  expect_refused([&] { validate(tn); }, "layout", "tn", "[N, K]");
  expect_refused([] { validate(weight_problem(4, 256, 1024, WeightFormat::int4_g128, DType::e4m3)); },
                 "d_type", "e4m3", "bf16, fp16 or fp32");
}

TEST(WeightOnly, PlannedOnTheDecodeFamilyWithPackedBytes) {
  const GpuInfo h200 = device_preset("h200");
  for (WeightFormat f : {WeightFormat::int4_g128, WeightFormat::int4_g128_zp,
                         WeightFormat::mxfp4, WeightFormat::int8_channel})
    for (int64_t m : {1, 16, 64, 256}) {
      const GemmProblem p = weight_problem(m, 4096, 4096, f);
      const Plan plan = plan_gemm(p, h200);
      EXPECT_EQ(plan.best().config.instruction, Instruction::mma) << to_string(f) << " m " << m;
      EXPECT_GE(plan.best().config.num_stages, 1);   // steps of B in flight, in registers
      EXPECT_LE(plan.best().config.num_stages, 4);
      EXPECT_EQ(plan.spec.kernels.front().smem_bytes, 0);
      // The stream is the packed weight: a quarter (int4) or half (int8) of bf16's bytes.
      const double bf16_bytes = 4096.0 * 4096 * 2;
      EXPECT_LT(p.b_bytes(), bf16_bytes * (f == WeightFormat::int8_channel ? 0.51 : 0.27));
    }
  expect_refused([&] { plan_gemm(weight_problem(257, 4096, 4096, WeightFormat::int4_g128), h200); },
                 "m", "257", "dequantize_weight");
  expect_refused(
      [&] { plan_gemm(weight_problem(1, 4096, 4096, WeightFormat::int4_g128), device_preset("a100")); },
      "weight_format", "int4-g128", "decode kernels");
}

// The planner's pick for every format over decode and prefill-chunk sizes compiles without
// spills: the occupancy it assumed (launch bounds from plan/decode_cost.cpp's register count)
// leaves ptxas the registers the kernel needs.
TEST(WeightOnly, PlannersPicksCompileWithoutSpills) {
  const GpuInfo h200 = device_preset("h200");
  for (WeightFormat f : {WeightFormat::int4_g128, WeightFormat::int4_g128_zp,
                         WeightFormat::mxfp4, WeightFormat::int8_channel})
    for (int64_t m : {1, 8, 16, 64, 256})
      for (const auto& [n, k] : {std::pair<int64_t, int64_t>{14336, 4096}, {4096, 14336},
                                 {7168, 2048}, {24576, 1536}}) {
        const Plan plan = plan_gemm(weight_problem(m, n, k, f), h200);
        const jit::CompiledKernel kernel =
            jit::compile_to_cubin(codegen::decode_kernel_source(plan.spec.kernels.front()));
        const jit::PtxasUsage usage = jit::parse_ptxas_usage(kernel.log);
        EXPECT_FALSE(usage.has_spills())
            << to_string(f) << " " << m << "x" << n << "x" << k << " "
            << plan.best().config.describe() << "\n" << kernel.log;
      }
}

// D = A W^T for W packed in each format, against float64 of A and the dequantised W.
TEST(WeightOnlyGpu, EveryFormatAgainstFloat64OfTheDequantisedWeight) {
  AUTOGEMM_REQUIRE_GPU();
  struct Case {
    int64_t m, n, k;
    const char* config;   // nullptr: the planner's
    DType d = DType::bf16;
  };
  const std::vector<Case> cases = {
      {1, 4096, 4096, nullptr},       {5, 1000, 2048, nullptr},
      {16, 2048, 1024, nullptr},      {13, 520, 1536, "mma 16x32x128 sk4"},
      {3, 776, 1024, "mma 8x64x256"}, {200, 384, 1024, nullptr},
      {2, 1040, 3072, "mma 8x32x128 s4 sk3"}, {9, 528, 1280, "mma 16x16x128 s2"},
      {64, 1040, 768, nullptr, DType::fp32}};
  uint32_t seed = 5100;
  for (WeightFormat f : {WeightFormat::int4_g128, WeightFormat::int4_g128_zp,
                         WeightFormat::mxfp4, WeightFormat::int8_channel})
    for (const Case& c : cases) {
      std::mt19937 rng(seed++);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> w(size_t(c.n * c.k));
      for (float& x : w) x = normal(rng) * 0.05f;
      const PackedWeight packed = quantize_weight(w.data(), c.n, c.k, f);
      const std::vector<float> deq = dequantize_weight(packed);
      const size_t a_elems = size_t(c.m * c.k);
      bench::DeviceBuffer a_dev(a_elems * 2), d_dev(size_t(c.m * c.n) * dtype_bytes(c.d));
      bench::fill_random(a_dev.get(), a_elems, DType::bf16, seed++);
      const std::vector<double> a = bench::download_as_double(a_dev.get(), a_elems, DType::bf16);
      const bench::DeviceWeight weight = bench::upload_weight(packed);
      bench::fill_poison(d_dev.get(), size_t(c.m * c.n), c.d);
      const GemmProblem p = weight_problem(c.m, c.n, c.k, f, c.d);
      GemmOperands o;
      o.a = a_dev.get();
      o.d = d_dev.get();
      weight.set_operands(o);
      GemmOptions options;
      if (c.config) options.config = GemmConfig::parse(c.config);
      const GemmReport r = gemm(p, o, nullptr, options);
      cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      const std::string what = std::string(to_string(f)) + " " + std::to_string(c.m) + "x" +
                               std::to_string(c.n) + "x" + std::to_string(c.k) + " " +
                               r.config.describe();
      EXPECT_FALSE(r.used_vendor) << what;
      EXPECT_EQ(r.config.instruction, Instruction::mma) << what;
      const std::vector<double> want = bench::weight_reference(a, deq, c.m, c.n, c.k);
      const std::vector<double> got = bench::download_as_double(d_dev.get(), want.size(), c.d);
      // bf16 output: half an ulp (2^-9) of the value; fp32: the sums' fp32 rounding.
      const double rtol = c.d == DType::bf16 ? 1.0 / 256 : 1e-5;
      const auto check = bench::check_result(got, c.n, want, c.m, c.n, 1e-4, rtol, 512, seed);
      EXPECT_LT(check.diff, 1e-5) << what;
      EXPECT_EQ(check.unwritten, 0) << what;
      EXPECT_EQ(check.spot_failures, 0) << what << ": " << check.first_failure;
    }
}

// MXFP4 over the e8m0 range: every row its own scale exponent (2^-87 .. 2^88), every e2m1 code
// (0.5, the bf16 subnormal before the 2^126 multiply, among them), each row checked on its own
// against float64 (a row of tiny weights would vanish in a whole-matrix diff).
TEST(WeightOnlyGpu, Mxfp4ScalesOverTheExponentRange) {
  AUTOGEMM_REQUIRE_GPU();
  const int64_t m = 4, n = 176, k = 1024;
  std::mt19937 rng(5151);
  std::vector<uint8_t> blocks(size_t(n * k / 2)), scales(size_t(n * k / 32));
  for (uint8_t& b : blocks) b = uint8_t(rng());
  for (int64_t row = 0; row < n; ++row)
    for (int64_t g = 0; g < k / 32; ++g)
      scales[size_t(row * (k / 32) + g)] = uint8_t(40 + row + (g % 2));   // 40 .. 216
  const PackedWeight packed = import_mxfp4(blocks.data(), scales.data(), n, k);
  const std::vector<float> deq = dequantize_weight(packed);
  bench::DeviceBuffer a_dev(size_t(m * k) * 2), d_dev(size_t(m * n) * 4);
  bench::fill_random(a_dev.get(), size_t(m * k), DType::bf16, 5152);
  const std::vector<double> a = bench::download_as_double(a_dev.get(), size_t(m * k), DType::bf16);
  const bench::DeviceWeight weight = bench::upload_weight(packed);
  bench::fill_poison(d_dev.get(), size_t(m * n), DType::fp32);
  GemmOperands o;
  o.a = a_dev.get();
  o.d = d_dev.get();
  weight.set_operands(o);
  const GemmReport r = gemm(weight_problem(m, n, k, WeightFormat::mxfp4, DType::fp32), o, nullptr, GemmOptions{});
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  EXPECT_FALSE(r.used_vendor);
  const std::vector<double> want = bench::weight_reference(a, deq, m, n, k);
  const std::vector<double> got = bench::download_as_double(d_dev.get(), want.size(), DType::fp32);
  for (int64_t col = 0; col < n; ++col) {   // D's column col is W's row col
    double xy = 0, xx = 0;
    for (int64_t row = 0; row < m; ++row) {
      const double x = got[size_t(row * n + col)], y = want[size_t(row * n + col)];
      xy += x * y, xx += x * x + y * y;
    }
    ASSERT_GT(xx, 0) << "W row " << col;
    EXPECT_LT(1 - 2 * xy / xx, 1e-6) << "W row " << col << ", scale 2^" << int(scales[size_t(col * (k / 32))]) - 127;
  }
}

// A weight-only call and a BF16 call of the same shape in one process each run their own kernel
// (the runtime's plan cache keys the format): the BF16 call reads the dequantised weight as
// bf16 and agrees with the weight-only call.
TEST(WeightOnlyGpu, SameShapeInBf16RunsItsOwnKernel) {
  AUTOGEMM_REQUIRE_GPU();
  const int64_t m = 4, n = 2048, k = 1024;
  std::mt19937 rng(77);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> w(size_t(n * k));
  for (float& x : w) x = normal(rng);
  const PackedWeight packed = quantize_weight(w.data(), n, k, WeightFormat::int4_g128);
  const std::vector<float> deq = dequantize_weight(packed);
  bench::DeviceBuffer a(size_t(m * k) * 2), b(size_t(n * k) * 2), d_w(size_t(m * n) * 2),
      d_b(size_t(m * n) * 2);
  bench::fill_random(a.get(), size_t(m * k), DType::bf16, 78);
  const bench::DeviceWeight weight = bench::upload_weight(packed);
  bench::upload_from_double(b.get(), std::vector<double>(deq.begin(), deq.end()), DType::bf16);
  GemmOperands weights, plain;
  weights.a = plain.a = a.get();
  weight.set_operands(weights);
  weights.d = d_w.get();
  plain.b = b.get();
  plain.d = d_b.get();
  GemmProblem p = weight_problem(m, n, k, WeightFormat::int4_g128), bf16 = p;
  bf16.weight_format.reset();
  for (int round = 0; round < 2; ++round) {
    gemm(p, weights, nullptr);
    const GemmReport r = gemm(bf16, plain, nullptr);
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const auto got_w = bench::download_as_double(d_w.get(), size_t(m * n), DType::bf16);
    const auto got_b = bench::download_as_double(d_b.get(), size_t(m * n), DType::bf16);
    // The dequantised int4 x bf16 scale values are not all bf16 (12 significant bits), so the
    // BF16 weight is a rounding of them: the two agree to bf16's precision, not bit for bit.
    EXPECT_LT(bench::gemm_diff(got_w, got_b), 1e-4) << r.config.describe();
  }
}
