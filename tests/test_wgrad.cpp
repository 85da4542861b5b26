// Weight gradients (issue 52, autogemm/wgrad.hpp): the problem they are (layout tn into fp32,
// C = dW), their refusals, `plan --wgrad` and `bench --wgrad`'s arguments, without a GPU; and on
// an sm_90a GPU, dW += dY^T X in place against float64 over two micro-batches.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/quantize.hpp"
#include "autogemm/wgrad.hpp"
#include "bench/compare.hpp"
#include "plan/kernel_spec.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "cli_test_util.hpp"
#include "cuda/cuda_check.hpp"
#include "error_test_util.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;
using autogemm::testing::expect_invalid;
using autogemm::testing::run_cli;

TEST(Wgrad, IsTheTokenMajorGemmIntoFp32) {
  const GemmProblem p = weight_gradient_problem(16384, 4096, 14336);
  EXPECT_EQ(p.m, 4096);
  EXPECT_EQ(p.n, 14336);
  EXPECT_EQ(p.k, 16384);
  EXPECT_EQ(p.layout, Layout::tn);
  EXPECT_EQ(p.d_type, DType::fp32);
  EXPECT_TRUE(p.reads_c);
  EXPECT_EQ(p.lda_or_packed(), 4096);    // dY [T, N] rows
  EXPECT_EQ(p.ldb_or_packed(), 14336);   // X [T, K] rows
  EXPECT_FALSE(weight_gradient_problem(64, 64, 64, DType::fp16, false, DType::bf16).reads_c);
  EXPECT_NE(expect_invalid([] { weight_gradient_problem(64, 64, 64, DType::bf16, true,
                                                        DType::fp16); },
                           "dw_type")
                .find("fp32"),
            std::string::npos);
  expect_invalid([] { weight_gradient_problem(64, 64, 64, DType::e5m2); }, "type");
  expect_invalid([] { weight_gradient_problem(0, 64, 64); }, "k");
  // Planned on our kernels like any GEMM.
  const Plan plan = plan_gemm(weight_gradient_problem(8192, 8192, 28672), device_preset("h200"));
  EXPECT_EQ(plan.spec.config.instruction, Instruction::wgmma) << plan.spec.config.describe();
}

// FP8: the transposed copies (layout nt) with 1x128 scales along the tokens on both operands,
// planned on our kernel with the rules that kernel needs; the refusals name the argument.
TEST(Wgrad, Fp8IsTheTransposedCopiesScaledAlongTheTokens) {
  const GemmProblem p = weight_gradient_problem(4096, 2048, 7168, DType::e4m3);
  EXPECT_EQ(p.layout, Layout::nt);
  EXPECT_EQ(p.scaling, Scaling::block_1x128_1x128);
  EXPECT_EQ(p.lda_or_packed(), 4096);   // dY^T [N, T] rows
  EXPECT_EQ(p.ldb_or_packed(), 4096);   // X^T [K, T] rows
  EXPECT_TRUE(p.reads_c);
  EXPECT_NE(expect_invalid([] { weight_gradient_problem(4100, 64, 64, DType::e4m3); }, "tokens")
                .find("multiple of 16"),
            std::string::npos);
  expect_invalid([] { grouped_weight_gradient_problem(4096, 64, 64, 4, DType::e4m3); }, "type");
  // The 16-bit entry point refuses an FP8 problem and the FP8 one a 16-bit problem.
  int dummy = 0;
  expect_invalid([&] { weight_gradient(p, &dummy, &dummy, &dummy, nullptr); },
                 "problem.scaling");
  expect_invalid([&] {
    weight_gradient(weight_gradient_problem(64, 64, 64),
                    Fp8WeightGradientOperands{&dummy, reinterpret_cast<float*>(&dummy), &dummy,
                                              reinterpret_cast<float*>(&dummy)},
                    &dummy, nullptr);
  }, "problem.scaling");
  GemmProblem tn = p;
  tn.layout = Layout::tn;
  expect_invalid([&] {
    weight_gradient(tn,
                    Fp8WeightGradientOperands{&dummy, reinterpret_cast<float*>(&dummy), &dummy,
                                              reinterpret_cast<float*>(&dummy)},
                    &dummy, nullptr);
  }, "problem.layout");
  expect_invalid([&] {
    weight_gradient(p, Fp8WeightGradientOperands{&dummy, nullptr, &dummy, nullptr}, &dummy,
                    nullptr);
  }, "operands.dy_t_scales");
  // Grouped FP8 problems and FP8 output are refused by validate, naming them.
  GemmProblem grouped = p;
  grouped.grouping = Grouping::contiguous;
  grouped.num_groups = 2;
  expect_invalid([&] { validate(grouped); }, "scaling");
  GemmProblem fp8_out = p;
  fp8_out.d_type = DType::e4m3;
  fp8_out.reads_c = false;
  expect_invalid([&] { validate(fp8_out); }, "d_type");

  const Plan plan = plan_gemm(p, device_preset("h200"));
  EXPECT_EQ(plan.spec.config.instruction, Instruction::wgmma) << plan.spec.config.describe();
  EXPECT_EQ(plan.spec.config.promotion_buffers, 1);
  EXPECT_FALSE(plan.spec.config.swap_ab);
  EXPECT_FALSE(plan.spec.config.ordered_issue);
  // What the kernel cannot run is refused by name when forced.
  for (const char* config : {"128x128x128 s5 c2 p g8 pb2", "128x64x128 s5 c2 p g8 swap",
                             "256x128x128 s3 c2 p g8 oi"})
    EXPECT_THROW(plan::make_spec(p, GemmConfig::parse(config), device_preset("h200"), "forced"),
                 InvalidArgument)
        << config;
  for (const char* config : {"128x128x128 s4 c2 p g8", "128x160x128 s3 c2 p g8 oi"})
    EXPECT_NO_THROW(plan::make_spec(p, GemmConfig::parse(config), device_preset("h200"), "forced"))
        << config;
}

namespace {
const std::string kSuite = std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/wgrad-dense.csv";
}  // namespace

TEST(Wgrad, PlanAndBenchArguments) {
  const auto run = run_cli("plan --wgrad --m 4096 --n 14336 --k 16384 --device h200");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("wgrad      dW [4096, 14336] += dY^T X over 16384 tokens"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("-> fp32, layout tn"), std::string::npos) << run.out;
  const auto fp8 = run_cli("plan --wgrad --m 4096 --n 7168 --k 8192 --dtype fp8 --device h200");
  EXPECT_EQ(fp8.exit_code, 0) << fp8.out;
  EXPECT_NE(fp8.out.find("dY^T [4096, 8192] and X^T [7168, 8192] e4m3 with one scale per 128 "
                         "tokens"),
            std::string::npos)
      << fp8.out;
  for (const char* bad : {"plan --wgrad --m 64 --n 64 --k 64 --out-dtype bf16 --device h200",
                          "plan --wgrad --m 64 --n 64 --k 64 --layout nt --bias bf16 --device h200",
                          "plan --wgrad --m 64 --n 64 --k 72 --dtype fp8 --device h200",
                          "bench --wgrad SUITE --dtype e5m2 --device h200",
                          "bench --wgrad SUITE --out-dtype bf16 --device h200",
                          "bench --wgrad SUITE --accumulate --bias bf16 --device h200"}) {
    std::string args = bad;
    if (const auto at = args.find("SUITE"); at != std::string::npos) args.replace(at, 5, kSuite);
    const auto refused = run_cli(args);
    EXPECT_EQ(refused.exit_code, 2) << bad << "\n" << refused.out;
  }
  const auto planned = run_cli("bench --wgrad " + kSuite + " --device h200");
  EXPECT_EQ(planned.exit_code, 0) << planned.out;
  EXPECT_NE(planned.out.find("llama3-70b-gateup-T8192"), std::string::npos) << planned.out;
}

// dW += dY^T X in place, twice, from a random fp32 dW: against dW0 + 2 dY^T X in float64.
TEST(WgradGpu, AccumulatesInPlaceAgainstFloat64) {
  AUTOGEMM_REQUIRE_GPU();
  for (const auto& [t, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {4096, 2048, 1024}, {1000, 520, 1000}, {16384, 256, 7168}, {77, 4096, 136}}) {
    const GemmProblem p = weight_gradient_problem(t, n, k);
    bench::DeviceBuffer dy(std::size_t(t * n) * 2), x(std::size_t(t * k) * 2),
        dw(std::size_t(n * k) * 4), dw0(std::size_t(n * k) * 4), ref(std::size_t(n * k) * 8);
    bench::fill_random(dy.get(), std::size_t(t * n), DType::bf16, 7);
    bench::fill_random(x.get(), std::size_t(t * k), DType::bf16, 8);
    bench::fill_random(dw0.get(), std::size_t(n * k), DType::fp32, 9);
    cuda_check(cudaMemcpy(dw.get(), dw0.get(), std::size_t(n * k) * 4, cudaMemcpyDeviceToDevice),
               "cudaMemcpy");
    const GemmReport r = weight_gradient(p, dy.get(), x.get(), dw.get(), nullptr);
    weight_gradient(p, dy.get(), x.get(), dw.get(), nullptr);
    EXPECT_FALSE(r.used_vendor) << r.reason;
    // The reference: dW0 + 2 (dY^T X), alpha 2 on the plain product plus C = dW0.
    GemmOperands o;
    o.a = dy.get();
    o.b = x.get();
    o.c = dw0.get();
    o.alpha = 2.0f;
    o.beta = 1.0f;
    bench::reference_gemm(p, o, static_cast<double*>(ref.get()), nullptr);
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const std::vector<double> got = bench::download_as_double(dw.get(), std::size_t(n * k),
                                                              DType::fp32);
    std::vector<double> want(std::size_t(n * k));
    cuda_check(cudaMemcpy(want.data(), ref.get(), want.size() * 8, cudaMemcpyDeviceToHost),
               "cudaMemcpy");
    // The matrix units add each 16-deep step into the fp32 accumulator with truncation (biased,
    // up to 2^-23 of the partial sum), so the error grows with t / 16 steps times the partial
    // sum's size, sqrt(t) / 3 for values uniform in [-1, 1); two calls. At t = 16384 that is
    // 1.0e-2 where the H200 measured 1.7e-3; a wrong term is of order 1.
    const double truncation =
        2.0 * (double(t) / 16) * std::ldexp(1.0, -23) * std::sqrt(double(t)) / 3;
    const auto check = bench::check_result(got, k, want, n, k, truncation, 1e-5, 512, 10);
    EXPECT_LT(check.diff, 1e-5) << t << "x" << n << "x" << k << " " << r.config.describe();
    EXPECT_EQ(check.unwritten, 0);
    EXPECT_EQ(check.spot_failures, 0) << check.first_failure;
  }
}

// FP8 end to end: dY and X (bf16) quantised along the tokens by quantize_fp8_1x128_transposed,
// then dW += dY^T X from the transposed copies. Against float64 of the unquantised inputs (the
// issue's FP8 bound, diff < 1e-3) and of the dequantised operands (the kernel's own arithmetic).
TEST(WgradGpu, Fp8FromTheTransposedQuantisation) {
  AUTOGEMM_REQUIRE_GPU();
  for (const auto& [t, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {4096, 2048, 1024}, {1040, 520, 1000}, {16, 256, 136}}) {
    const GemmProblem p = weight_gradient_problem(t, n, k, DType::e4m3);
    const int64_t t_blocks = (t + 127) / 128;
    bench::DeviceBuffer dy(std::size_t(t * n) * 2), x(std::size_t(t * k) * 2),
        dy_t(std::size_t(n * t)), x_t(std::size_t(k * t)),
        dy_s(std::size_t(n * t_blocks) * 4), x_s(std::size_t(k * t_blocks) * 4),
        dw(std::size_t(n * k) * 4), dw0(std::size_t(n * k) * 4), ref(std::size_t(n * k) * 8);
    bench::fill_random(dy.get(), std::size_t(t * n), DType::bf16, 17);
    bench::fill_random(x.get(), std::size_t(t * k), DType::bf16, 18);
    bench::fill_random(dw0.get(), std::size_t(n * k), DType::fp32, 19);
    cuda_check(cudaMemcpy(dw.get(), dw0.get(), std::size_t(n * k) * 4, cudaMemcpyDeviceToDevice),
               "cudaMemcpy");
    quantize_fp8_1x128_transposed(dy.get(), DType::bf16, t, n, n, dy_t.get(),
                                  static_cast<float*>(dy_s.get()));
    quantize_fp8_1x128_transposed(x.get(), DType::bf16, t, k, k, x_t.get(),
                                  static_cast<float*>(x_s.get()));
    const Fp8WeightGradientOperands ops{dy_t.get(), static_cast<const float*>(dy_s.get()),
                                        x_t.get(), static_cast<const float*>(x_s.get())};
    const GemmReport r = weight_gradient(p, ops, dw.get(), nullptr);
    EXPECT_FALSE(r.used_vendor) << r.reason;
    cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const std::vector<double> got = bench::download_as_double(dw.get(), std::size_t(n * k),
                                                              DType::fp32);
    const auto reference = [&](const GemmProblem& problem, GemmOperands o) {
      o.c = dw0.get();
      o.beta = 1.0f;
      bench::reference_gemm(problem, o, static_cast<double*>(ref.get()), nullptr);
      std::vector<double> want(std::size_t(n * k));
      cuda_check(cudaMemcpy(want.data(), ref.get(), want.size() * 8, cudaMemcpyDeviceToHost),
                 "cudaMemcpy");
      return want;
    };
    GemmOperands unquantised;
    unquantised.a = dy.get();
    unquantised.b = x.get();
    const std::vector<double> exact = reference(weight_gradient_problem(t, n, k), unquantised);
    EXPECT_LT(bench::gemm_diff(got, exact), 1e-3) << t << "x" << n << "x" << k;
    GemmOperands dequantised;
    dequantised.a = dy_t.get();
    dequantised.b = x_t.get();
    dequantised.scale_a = static_cast<const float*>(dy_s.get());
    dequantised.scale_b = static_cast<const float*>(x_s.get());
    const std::vector<double> own = reference(p, dequantised);
    const auto check = bench::check_result(got, k, own, n, k, 0.0, 1e-3, 512, 11);
    EXPECT_LT(check.diff, 1e-5) << t << "x" << n << "x" << k << " " << r.config.describe();
    EXPECT_EQ(check.unwritten, 0);
  }
}
