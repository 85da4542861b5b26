// The decode family (instruction = mma, kernels/sm90/decode_kernel.cuh) without a GPU: its
// configuration text, every rule on both sides of its limit, the planner's choice across the
// two families, and NVRTC compiling its kernels for sm_90a without spills.
#include <gtest/gtest.h>

#include <string>

#include "autogemm/errors.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/plan.hpp"
#include "codegen/kernel_source.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "plan/gemm_search.hpp"
#include "plan/rules.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;
using autogemm::testing::block_fp8_problem;
using autogemm::testing::hopper;
using autogemm::testing::problem;

namespace {

std::string violation(const GemmProblem& p, const std::string& text) {
  const GemmConfig c = GemmConfig::parse(text);
  return plan::kernel_violation(p, plan::kernel_fields(p, c), hopper());
}

}  // namespace

TEST(DecodeFamily, ConfigTextRoundTrips) {
  for (const char* text :
       {"mma 8x64x256", "mma 16x32x128 sk4", "mma 32x16x64 sk32", "mma 8x16x128 s4 sk2"}) {
    const GemmConfig c = GemmConfig::parse(text);
    EXPECT_EQ(c.instruction, Instruction::mma) << text;
    EXPECT_EQ(c.describe(), text);
    EXPECT_EQ(GemmConfig::parse(c.describe()), c);
  }
  const GemmConfig c = GemmConfig::parse("mma 16x64x128 sk3");
  EXPECT_EQ(c.block_m, 16);
  EXPECT_EQ(c.block_n, 64);
  EXPECT_EQ(c.block_k, 128);
  EXPECT_EQ(c.split_k, 3);
  EXPECT_EQ(c.num_stages, 1);
  EXPECT_FALSE(c.persistent);
}

TEST(DecodeFamily, LegalConfigurationsPass) {
  EXPECT_EQ(violation(problem(1, 4096, 4096), "mma 8x64x128"), "");
  EXPECT_EQ(violation(problem(32, 4096, 4096), "mma 32x64x64 sk8"), "");
  EXPECT_EQ(violation(problem(100, 1000, 1000), "mma 32x16x64 sk4"), "");   // tails everywhere
  EXPECT_EQ(violation(block_fp8_problem(16, 2112, 7168), "mma 16x64x256 sk4"), "");
  // Warp rings: no register rule (16x64x256 keeps 32 vectors a step only in shared memory).
  EXPECT_EQ(violation(problem(1, 4096, 4096), "mma 8x16x128 s4"), "");
  EXPECT_EQ(violation(problem(16, 4096, 4096), "mma 16x64x256 s3 sk2"), "");
  EXPECT_EQ(violation(block_fp8_problem(16, 2112, 7168), "mma 16x64x256 s3 sk4"), "");
}

TEST(DecodeFamily, EachRuleAtItsLimit) {
  const GemmProblem p = problem(16, 4096, 4096);
  struct Case {
    const char* config;
    const char* expected;   // a phrase of the reason
  };
  for (const Case& c : {
           Case{"mma 16x64x128 s9", "num_stages = 9"},
           Case{"mma 16x64x32 s3", "whole 128-byte lines"},   // 64 bytes of K a row
           Case{"mma 32x64x1024 s8", "exceed"},               // 4 x 8 x 48 rows x 2 KB
           Case{"mma 16x64x128 c2", "num_consumers = 2"},
           Case{"mma 16x64x128 p", "persistent"},
           Case{"mma 16x64x128 g8", "raster group 8"},
           Case{"mma 16x64x128 cl2x1/b", "cluster 2x1"},
           Case{"mma 16x64x128 pb2", "pb/oi"},
           Case{"mma 16x64x128 ntk", "ntk"},
           Case{"mma 24x64x128", "block_m = 24"},
           Case{"mma 64x64x128", "block_m = 64"},
           Case{"mma 16x48x128", "block_n = 48"},
           Case{"mma 16x128x128", "block_n = 128"},
           Case{"mma 16x64x48", "block_k = 48"},
           Case{"mma 16x64x160", "more than 16"},       // 4 vectors x 5 chunks
           Case{"mma 16x64x128 sk33", "split_k = 33"},
       }) {
    const std::string why = violation(p, c.config);
    EXPECT_NE(why.find(c.expected), std::string::npos) << c.config << ": " << why;
  }
  // One step past each side of the register rule: 4 vectors per chunk at block_m = 16.
  EXPECT_EQ(violation(p, "mma 16x64x128"), "");                 // 4 chunks, 16 vectors
  EXPECT_NE(violation(p, "mma 16x64x160"), "");                 // 5 chunks, 20 vectors
  // Each split needs a step: K = 4096 has 32 steps of 128.
  EXPECT_EQ(violation(p, "mma 16x64x128 sk32"), "");
  EXPECT_NE(violation(problem(16, 4096, 1024), "mma 16x64x128 sk16").find("only 8 steps"),
            std::string::npos);
}

TEST(DecodeFamily, ProblemRules) {
  const char* config = "mma 8x64x128";
  EXPECT_NE(violation(problem(8, 4096, 4096, Layout::tn), config).find("layout = tn"),
            std::string::npos);
  EXPECT_NE(violation(problem(8, 4096, 4100), config).find("k = 4100"), std::string::npos);
  GemmProblem padded = problem(8, 4096, 4096);
  padded.lda = 4100;
  EXPECT_NE(violation(padded, config).find("lda = 4100"), std::string::npos);
  GemmProblem per_tensor = block_fp8_problem(8, 4096, 4096);
  per_tensor.scaling = Scaling::per_tensor;
  EXPECT_NE(violation(per_tensor, "mma 8x64x128").find("scaling = per_tensor"),
            std::string::npos);
  // Block-scaled steps are whole 128-element scale blocks (64 e4m3 is one chunk, not a block).
  EXPECT_NE(violation(block_fp8_problem(8, 4096, 4096), "mma 8x64x64").find("block_k = 64"),
            std::string::npos);
  GpuInfo ampere = hopper();
  ampere.cc = {8, 0};
  const GemmConfig c = GemmConfig::parse(config);
  const GemmProblem p = problem(8, 4096, 4096);
  EXPECT_NE(plan::kernel_violation(p, plan::kernel_fields(p, c), ampere).find("sm_90a"),
            std::string::npos);
}

TEST(DecodeFamily, ForcedConfigurationIsRefusedWithTheRule) {
  try {
    make_kernel_spec(problem(16, 4096, 4096), GemmConfig::parse("mma 16x64x128 s9"), hopper());
    FAIL() << "a decode configuration with 9 stages was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "config");
    EXPECT_NE(e.rule().find("num_stages = 9"), std::string::npos) << e.rule();
  }
}

TEST(DecodeFamily, SpecHasNoTensorMapsAndSizesItsWorkspace) {
  const GemmProblem p = problem(20, 1000, 4096);
  const KernelSpec spec = make_kernel_spec(p, GemmConfig::parse("mma 16x32x128 sk4"), hopper());
  ASSERT_EQ(spec.kernels.size(), 1u);
  const KernelLaunch& k = spec.kernels.front();
  EXPECT_TRUE(k.tensor_maps.empty());
  EXPECT_EQ(k.threads_per_cta, 128);
  EXPECT_EQ(k.smem_bytes, 0);   // registers: no ring
  // ceil(20 / 16) = 2 tiles of A rows, ceil(1000 / 32) = 32 of B rows, 4 splits.
  EXPECT_EQ(k.work_items, 2 * 32 * 4);
  EXPECT_EQ(k.grid_ctas, k.work_items);
  EXPECT_EQ(spec.split_k.counters, 2 * 32);
  EXPECT_EQ(spec.split_k.flags, 2 * 32 * 4);
  EXPECT_EQ(spec.split_k.partial_floats, 2 * 32 * 4 * 16 * 32);
  EXPECT_FALSE(spec.a_scales_k_block_major);
  // A warp ring: 4 warps x 3 stages x (16 rows of B + 16 of A) x 128 bf16.
  const KernelSpec ring = make_kernel_spec(p, GemmConfig::parse("mma 16x32x128 s3 sk4"), hopper());
  EXPECT_EQ(ring.kernels.front().smem_bytes, 4 * 3 * 32 * 256);
}

TEST(DecodeFamily, PlannerPicksItForDecodeAndNotForPrefill) {
  const GpuInfo h200 = device_preset("h200");
  for (int64_t m : {1, 4, 8}) {
    const Plan plan = plan_gemm(problem(m, 7168, 2048), h200);
    EXPECT_EQ(plan.best().config.instruction, Instruction::mma) << "M = " << m;
    EXPECT_NE(plan.path_reason.find("decode family"), std::string::npos) << plan.path_reason;
  }
  // Up to 8 rows, BF16 streams through the warp rings (measured faster than the register path
  // on every decode row, H200).
  for (int64_t m : {1, 8}) {
    const Plan plan = plan_gemm(problem(m, 7168, 2048), h200);
    EXPECT_GT(plan.best().config.num_stages, 1) << "M = " << m;
    EXPECT_NE(plan.path_reason.find("cp.async ring per warp"), std::string::npos)
        << plan.path_reason;
  }
  // Past 8 rows (decode_cost.cpp): BF16 rings at 16 rows beat the tile family on the decode
  // rows, and stay; block-scaled FP8 rings are charged 1.8x and lose them, to the register
  // path on 2112 x 7168 and to the tile family on the wide rows, as measured.
  EXPECT_EQ(plan_gemm(problem(16, 2112, 7168), h200).best().config.instruction, Instruction::mma);
  EXPECT_EQ(plan_gemm(problem(16, 24576, 1536), h200).best().config.instruction, Instruction::mma);
  GemmProblem fp8 = problem(16, 2112, 7168);
  fp8.a_type = fp8.b_type = DType::e4m3;
  fp8.scaling = Scaling::block_1x128_128x128;
  EXPECT_EQ(plan_gemm(fp8, h200).best().config.describe(), "mma 16x16x256");
  GemmProblem fp8_short = problem(16, 7168, 2048);   // tile family 9.7 us, the rings' best 11.9
  fp8_short.a_type = fp8_short.b_type = DType::e4m3;
  fp8_short.scaling = Scaling::block_1x128_128x128;
  EXPECT_EQ(plan_gemm(fp8_short, h200).best().config.instruction, Instruction::wgmma);
  for (int64_t m : {17, 32, 128, 4096}) {
    const Plan plan = plan_gemm(problem(m, 7168, 2048), h200);
    EXPECT_EQ(plan.best().config.instruction, Instruction::wgmma) << "M = " << m;
  }
  // A problem the family cannot take is planned on the tile family, with the reason listed.
  const Plan tn = plan_gemm(problem(8, 4096, 4096, Layout::tn), h200);
  EXPECT_EQ(tn.best().config.instruction, Instruction::wgmma);
  bool listed = false;
  for (const auto& r : tn.rejected)
    listed |= r.config.instruction == Instruction::mma && r.reason.find("layout = tn") != std::string::npos;
  EXPECT_TRUE(listed);
}

// A grid past one wave of resident CTAs pays for its last CTAs' chain (decode_cost.cpp). On the
// H200, 1 x 7168 x 2048 as mma 8x16x128 (448 CTAs, 3 an SM at 134 registers: 1.13 waves) took
// 15.4 us where mma 8x16x64 (6 an SM: one wave) took 13.0; the model before the tail term
// charged the one-wave grid for its busiest SM instead, and the planner ran the first.
TEST(DecodeFamily, APartialSecondWaveCostsItsTail) {
  const GpuInfo h200 = device_preset("h200");
  const GemmProblem p = problem(1, 7168, 2048);
  const Prediction two_waves = predict(p, GemmConfig::parse("mma 8x16x128"), h200);
  const Prediction one_wave = predict(p, GemmConfig::parse("mma 8x16x64"), h200);
  EXPECT_EQ(two_waves.waves, 2);
  EXPECT_EQ(one_wave.waves, 1);
  // The same bytes at the same saturated rate; the tail is half of a CTA's 64 KB over its 24 KB
  // in flight, one round trip each: 1.3 us.
  EXPECT_NEAR(two_waves.time_us - one_wave.time_us, 0.5 * 65536.0 / 24576.0, 0.05);
  EXPECT_NE(plan_gemm(p, h200).best().config.describe(), "mma 8x16x128");
}

// NVRTC compiles the family for sm_90a: 16-bit and block-scaled FP8 inputs, each output type,
// split-K, the widest steps the register rule allows; no spills, mma.sync in the PTX.
TEST(DecodeFamily, KernelsCompileWithoutSpills) {
  struct Case {
    GemmProblem problem;
    const char* config;
  };
  GemmProblem fp16 = problem(5, 4096, 4096);
  fp16.a_type = fp16.b_type = DType::fp16;
  fp16.d_type = DType::fp32;
  GemmProblem with_c = problem(3, 1000, 1032);
  with_c.reads_c = true;
  for (const Case& c : {Case{problem(1, 4096, 4096), "mma 8x64x128"},
                        Case{problem(32, 7168, 2048), "mma 32x64x64 sk4"},
                        Case{with_c, "mma 16x16x128 sk3"},
                        Case{fp16, "mma 8x32x64 sk2"},
                        Case{block_fp8_problem(16, 2112, 7168), "mma 16x64x256 sk4"},
                        Case{block_fp8_problem(32, 2112, 7168), "mma 32x64x128"},
                        // Warp rings (their layout checked against the launch's shared memory
                        // by a static_assert).
                        Case{problem(1, 4096, 4096), "mma 8x64x128 s3"},
                        Case{with_c, "mma 16x16x64 s6 sk2"},
                        Case{block_fp8_problem(13, 2112, 7168), "mma 16x32x256 s4"},
                        Case{block_fp8_problem(4, 7168, 2048), "mma 8x16x512 s3 sk2"}}) {
    const KernelSpec spec = make_kernel_spec(c.problem, GemmConfig::parse(c.config), hopper());
    const jit::KernelSource src = codegen::gemm_kernel_source(spec.kernels.front(), false);
    const jit::CompiledKernel k = jit::compile_to_cubin(src);
    EXPECT_FALSE(k.cubin.empty()) << src.name;
    const jit::PtxasUsage usage = jit::parse_ptxas_usage(k.log);
    EXPECT_FALSE(usage.has_spills()) << src.name << "\n" << k.log;
    EXPECT_EQ(usage.stack_frame_bytes, 0) << src.name;
    EXPECT_NE(k.ptx.find("mma.sync.aligned"), std::string::npos) << src.name;
    const bool ring = spec.kernels.front().fields.config.num_stages > 1;
    EXPECT_NE(k.ptx.find(ring ? "cp.async.cg.shared" : "ld.global.nc.L1::no_allocate.v4"),
              std::string::npos)
        << src.name;
    if (ring) EXPECT_NE(k.ptx.find("ldmatrix.sync.aligned.m8n8.x4"), std::string::npos);
    std::printf("%s: %d registers\n", src.name.c_str(), usage.registers);
  }
}
