// Grouped weight gradients (issue 52, autogemm/wgrad.hpp grouped_weight_gradient): groups along
// K. Without a GPU: the problem, its refusals and check_group_ends' errors, the planner's legal
// choices and their kernels compiled with NVRTC without spills. On an sm_90a GPU: every group's
// dW_g (+)= dY_g^T X_g against float64, runs of every length (empty, one token, whole and
// partial k-blocks), the device-side clamping of ends out of order or past the tokens, and
// groups without tokens left as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/wgrad.hpp"
#include "bench/compare.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "codegen/kernel_source.hpp"
#include "cuda/cuda_check.hpp"
#include "error_test_util.hpp"
#include "gpu_test_util.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "plan/kernel_spec.hpp"
#include "plan/rules.hpp"

using namespace autogemm;
using autogemm::testing::expect_invalid;

TEST(WgradGrouped, ProblemAndRefusals) {
  const GemmProblem p = grouped_weight_gradient_problem(16384, 2048, 7168, 32);
  EXPECT_EQ(p.grouping, Grouping::k_contiguous);
  EXPECT_EQ(p.num_groups, 32);
  EXPECT_EQ(p.layout, Layout::tn);
  EXPECT_EQ(p.stored_rows(), 32 * 2048);   // dW [32, 2048, 7168]
  EXPECT_EQ(p.expected_group_k(), 512);
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 2048 * 7168 * 16384);
  EXPECT_EQ(grouped_weight_gradient_problem(4096, 64, 64, 4, DType::bf16, true, DType::fp32, 100)
                .expected_group_k(),
            100);
  EXPECT_NE(expect_invalid([] { grouped_weight_gradient_problem(4096, 576 + 32, 64, 4); }, "m")
                .find("multiple of 64"),
            std::string::npos);
  expect_invalid([] { grouped_weight_gradient_problem(4096, 64, 64, 0); }, "num_groups");
  expect_invalid([] { grouped_weight_gradient_problem(4096, 64, 64, 4, DType::e4m3); }, "type");
  GemmProblem nt = p;
  nt.layout = Layout::nt;
  expect_invalid([&] { validate(nt); }, "layout");
  GemmProblem fused = p;
  fused.epilogue.activation = Activation::relu;
  expect_invalid([&] { validate(fused); }, "epilogue");
  // Ends the caller knows: one per group, not decreasing, within the tokens.
  const GemmProblem small = grouped_weight_gradient_problem(1000, 64, 64, 3);
  check_group_ends(small, std::vector<int64_t>{0, 500, 1000});
  EXPECT_NE(expect_invalid([&] { check_group_ends(small, std::vector<int64_t>{400, 300, 1000}); },
                           "group_ends[1]")
                .find("must not decrease"),
            std::string::npos);
  EXPECT_NE(expect_invalid([&] { check_group_ends(small, std::vector<int64_t>{0, 10, 1001}); },
                           "group_ends[2]")
                .find("1000 tokens"),
            std::string::npos);
  expect_invalid([&] { check_group_ends(small, std::vector<int64_t>{0, 10}); }, "group_ends");
  expect_invalid([&] { check_group_ends(small, std::vector<int64_t>{-1, 10, 20}); },
                 "group_ends[0]");
  // grouped_weight_gradient() takes only this grouping, and no autotuning.
  const GemmProblem dense = weight_gradient_problem(1000, 64, 64);
  expect_invalid([&] { grouped_weight_gradient(dense, nullptr, nullptr, nullptr, nullptr, nullptr); },
                 "problem.grouping");
  int dummy = 0;
  GemmOptions tuned;
  tuned.autotune = 4;
  expect_invalid([&] { grouped_weight_gradient(small, &dummy, &dummy, &dummy, nullptr, nullptr); },
                 "group_ends");
  expect_invalid([&] { grouped_weight_gradient(small, &dummy, &dummy, &dummy, &dummy, nullptr,
                                               tuned); },
                 "options.autotune");
}

// The planner's choices for MoE expert gradients (DeepSeek-V3 and Mixtral-like experts) are
// legal for the layout, and the rules refuse what the kernel cannot run.
TEST(WgradGrouped, PlansAreLegalAndKernelsCompileWithoutSpills) {
  const GpuInfo h200 = device_preset("h200");
  struct Case {
    int64_t tokens, out_features, in_features, groups;
  };
  for (const Case& c : {Case{8192, 2048, 7168, 16}, Case{8192, 7168, 2048, 16},
                        Case{4096, 4096, 14336, 8}, Case{2048, 576, 1000, 4}}) {
    const GemmProblem p =
        grouped_weight_gradient_problem(c.tokens, c.out_features, c.in_features, c.groups);
    const Plan plan = plan_gemm(p, h200);
    SCOPED_TRACE(plan.spec.config.describe());
    EXPECT_FALSE(plan.spec.vendor) << plan.spec.reason;
    const GemmConfig& cfg = plan.spec.config;
    EXPECT_EQ(cfg.instruction, Instruction::wgmma);
    EXPECT_EQ(c.out_features % cfg.block_m, 0);
    EXPECT_EQ(cfg.cluster_m * cfg.cluster_n, 1);
    EXPECT_EQ(cfg.split_k, 1);
    const jit::CompiledKernel k =
        jit::compile_to_cubin(codegen::gemm_kernel_source(plan.spec.kernels.front(), false));
    ASSERT_FALSE(k.cubin.empty());
    const jit::PtxasUsage usage = jit::parse_ptxas_usage(k.log);
    EXPECT_FALSE(usage.has_spills()) << k.log;
    EXPECT_EQ(usage.stack_frame_bytes, 0) << k.log;
    EXPECT_NE(k.ptx.find("wgmma.mma_async"), std::string::npos);
  }
  const GemmProblem p = grouped_weight_gradient_problem(8192, 576, 7168, 8);
  const KernelFields bad_tile = plan::kernel_fields(p, GemmConfig::parse("128x128x64 s4 c2 p g8"));
  EXPECT_NE(plan::grouped_violation(p, bad_tile).find("block_m = 128"), std::string::npos);
  const KernelFields cluster = plan::kernel_fields(p, GemmConfig::parse("64x128x64 s4 c1 p g8 cl1x2/b"));
  EXPECT_NE(plan::grouped_violation(p, cluster).find("cluster"), std::string::npos);
}

// Ping-pong consumers only from 512 tokens an expert (gemm_search.cpp pingpong_choices): below,
// a tile is its fp32 C read and D write, and the pp picks measured 10-44% slower.
TEST(WgradGrouped, PingPongOnlyFromFiveHundredTwelveTokensAnExpert) {
  const GpuInfo h200 = device_preset("h200");
  auto offers_pp = [&](int64_t tokens_per_expert, int64_t m, int64_t n) {
    const GemmProblem p = grouped_weight_gradient_problem(32 * tokens_per_expert, m, n, 32);
    const Plan plan = plan_gemm(p, h200);
    return std::any_of(plan.candidates.begin(), plan.candidates.end(),
                       [](const Candidate& c) { return c.config.pingpong; });
  };
  for (int64_t tokens : {64, 256, 511}) {
    SCOPED_TRACE(tokens);
    EXPECT_FALSE(offers_pp(tokens, 7168, 2048));
    EXPECT_FALSE(offers_pp(tokens, 2048, 768));
  }
  for (int64_t tokens : {512, 2048}) {
    SCOPED_TRACE(tokens);
    EXPECT_TRUE(offers_pp(tokens, 7168, 2048));
  }
  // The measured winner from 512 tokens stays the pick: 4096 x 7168 x 512-token experts.
  const Plan wide = plan_gemm(grouped_weight_gradient_problem(32 * 512, 4096, 7168, 32), h200);
  EXPECT_TRUE(wide.spec.config.pingpong) << wide.spec.config.describe();
}

namespace {

// Every group of one call against float64: dW_g = dw0_g + alpha_sum dY_g^T X_g for groups with
// tokens (accumulating twice: alpha_sum 2; once without accumulate: D = the product), dw0_g
// bit for bit for groups without.
void check_grouped_call(int64_t tokens, int64_t m, int64_t n, const std::vector<int32_t>& ends,
                        bool accumulate, const GemmOptions& options = {}) {
  const int64_t groups = int64_t(ends.size());
  SCOPED_TRACE(::testing::Message() << tokens << " tokens, " << m << " x " << n << ", "
                                    << groups << " groups, accumulate " << accumulate);
  const GemmProblem p =
      grouped_weight_gradient_problem(tokens, m, n, groups, DType::bf16, accumulate);
  const std::size_t d_count = std::size_t(groups * m * n);
  bench::DeviceBuffer dy(std::size_t(tokens * m) * 2), x(std::size_t(tokens * n) * 2),
      dw(d_count * 4), dw0(d_count * 4), ref(std::size_t(m * n) * 8),
      ends_device(ends.size() * 4);
  bench::fill_random(dy.get(), std::size_t(tokens * m), DType::bf16, 17);
  bench::fill_random(x.get(), std::size_t(tokens * n), DType::bf16, 18);
  bench::fill_random(dw0.get(), d_count, DType::fp32, 19);
  cuda_check(cudaMemcpy(dw.get(), dw0.get(), d_count * 4, cudaMemcpyDeviceToDevice), "cudaMemcpy");
  cuda_check(cudaMemcpy(ends_device.get(), ends.data(), ends.size() * 4, cudaMemcpyHostToDevice),
             "cudaMemcpy");
  const auto* ends_ptr = static_cast<const int32_t*>(ends_device.get());
  const GemmReport r =
      grouped_weight_gradient(p, dy.get(), x.get(), dw.get(), ends_ptr, nullptr, options);
  if (accumulate)
    grouped_weight_gradient(p, dy.get(), x.get(), dw.get(), ends_ptr, nullptr, options);
  if (options.config) EXPECT_EQ(r.config, *options.config);
  cuda_check(cudaDeviceSynchronize(), "grouped_weight_gradient");
  const std::vector<double> got = bench::download_as_double(dw.get(), d_count, DType::fp32);
  const std::vector<double> before = bench::download_as_double(dw0.get(), d_count, DType::fp32);
  const std::size_t group_count = std::size_t(m * n);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t start = g == 0 ? 0 : std::clamp<int64_t>(ends[g - 1], 0, tokens);
    const int64_t stop = std::clamp<int64_t>(ends[g], start, tokens);
    const std::vector<double> got_g(got.begin() + g * group_count,
                                    got.begin() + (g + 1) * group_count);
    const std::vector<double> before_g(before.begin() + g * group_count,
                                       before.begin() + (g + 1) * group_count);
    if (stop == start) {   // no tokens: untouched
      EXPECT_EQ(got_g, before_g) << "group " << g << " has no tokens but its dW changed";
      continue;
    }
    const int64_t t = stop - start;
    const GemmProblem dense = weight_gradient_problem(t, m, n, DType::bf16, accumulate);
    GemmOperands o;
    o.a = static_cast<const char*>(dy.get()) + start * m * 2;
    o.b = static_cast<const char*>(x.get()) + start * n * 2;
    o.c = accumulate ? static_cast<const char*>(dw0.get()) + g * group_count * 4 : nullptr;
    o.alpha = accumulate ? 2.0f : 1.0f;
    o.beta = accumulate ? 1.0f : 0.0f;
    bench::reference_gemm(dense, o, static_cast<double*>(ref.get()), nullptr);
    cuda_check(cudaDeviceSynchronize(), "reference_gemm");
    std::vector<double> want(group_count);
    cuda_check(cudaMemcpy(want.data(), ref.get(), want.size() * 8, cudaMemcpyDeviceToHost),
               "cudaMemcpy");
    // Truncating fp32 adds per 16-deep step (test_wgrad.cpp): two calls' worth.
    const double truncation =
        2.0 * (double(t) / 16 + 1) * std::ldexp(1.0, -23) * std::sqrt(double(t)) / 3 + 1e-6;
    const auto check = bench::check_result(got_g, n, want, m, n, truncation, 1e-5, 256, 10 + g);
    EXPECT_LT(check.diff, 1e-5) << "group " << g << " (" << t << " tokens) "
                                << r.config.describe();
    EXPECT_EQ(check.unwritten, 0) << "group " << g;
    EXPECT_EQ(check.spot_failures, 0) << "group " << g << ": " << check.first_failure;
  }
}

}  // namespace

TEST(WgradGroupedGpu, EveryGroupAgainstFloat64) {
  AUTOGEMM_REQUIRE_GPU();
  // Runs of every kind: empty (first, middle), one token, 63/64/65, long, the last to the end.
  check_grouped_call(3000, 256, 1000, {0, 1, 64, 127, 192, 192, 1000, 1065, 3000}, true);
  check_grouped_call(3000, 256, 1000, {0, 1, 64, 127, 192, 192, 1000, 1065, 3000}, false);
  // MoE-sized experts, uneven around 512 tokens each.
  check_grouped_call(4096, 2048, 1024, {450, 1000, 1530, 2048, 2600, 3000, 3600, 4096}, true);
  // The device-side rule: an end before its start is an empty group, past the tokens clamped.
  check_grouped_call(777, 128, 520, {100, 50, 700, 5000}, true);
  // Tokens not covered by any group add nothing.
  check_grouped_call(1024, 64, 136, {300, 700}, true);
}

// Ping-pong consumers (whole tiles in turn, one's epilogue beside the other's k-loop) on the
// same runs: empty groups (whose tiles have no k-blocks), one-token runs, tails in N, and
// CTAs with odd and even numbers of tiles (the last turn handed to the consumer with none).
TEST(WgradGroupedGpu, PingPongConsumersAgainstFloat64) {
  AUTOGEMM_REQUIRE_GPU();
  for (const char* text : {"128x128x64 s5 c2 p g8 pp", "64x128x64 s6 c2 p g8 pp"}) {
    SCOPED_TRACE(text);
    GemmOptions options;
    options.config = GemmConfig::parse(text);
    check_grouped_call(3000, 256, 1000, {0, 1, 64, 127, 192, 192, 1000, 1065, 3000}, true,
                       options);
    check_grouped_call(3000, 256, 1000, {0, 1, 64, 127, 192, 192, 1000, 1065, 3000}, false,
                       options);
    check_grouped_call(4096, 2048, 1024, {450, 1000, 1530, 2048, 2600, 3000, 3600, 4096}, true,
                       options);
  }
}
