// CI checks of the device code without a GPU: every ladder configuration and the planner's
// choice for every public-suite shape compile with NVRTC for sm_90a, ptxas reports no spills,
// and the PTX holds the instructions the design promises (wgmma, TMA).
#include <gtest/gtest.h>

#include "autogemm/device.hpp"
#include "autogemm/plan.hpp"
#include "bench/suite.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "runtime/kernel_source.hpp"
#include "runtime/ladder.hpp"

using namespace autogemm;

namespace {

void expect_compiles_clean(const GemmProblem& p, const GemmConfig& c, bool expect_tma) {
  const jit::KernelSource src = runtime::gemm_kernel_source(p, c);
  const jit::CompiledKernel k = jit::compile_to_cubin(src);
  EXPECT_FALSE(k.cubin.empty()) << src.name;
  const jit::PtxasUsage usage = jit::parse_ptxas_usage(k.log);
  EXPECT_FALSE(usage.has_spills()) << src.name << ": " << usage.spill_store_bytes
                                   << " B spill stores, " << usage.spill_load_bytes << " B loads";
  EXPECT_EQ(usage.stack_frame_bytes, 0) << src.name;
  EXPECT_NE(k.ptx.find("wgmma.mma_async"), std::string::npos) << src.name;
  if (expect_tma) EXPECT_NE(k.ptx.find("cp.async.bulk.tensor"), std::string::npos) << src.name;
  // ptxas serialising wgmma (C7515 / C7511) costs a lot; the source must avoid it.
  EXPECT_EQ(k.log.find("C7515"), std::string::npos) << src.name << "\n" << k.log;
  EXPECT_EQ(k.log.find("C7511"), std::string::npos) << src.name << "\n" << k.log;
  EXPECT_EQ(k.log.find("C7508"), std::string::npos) << "setmaxnreg ignored: " << src.name;
}

GemmProblem bf16_problem(int64_t m, int64_t n, int64_t k) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

}  // namespace

TEST(KernelCompile, EveryLadderStep) {
  for (const auto& step : runtime::ladder_steps()) {
    SCOPED_TRACE(step.name);
    expect_compiles_clean(bf16_problem(8192, 8192, 8192), step.config,
                          step.config.load_path == LoadPath::tma);
  }
}

TEST(KernelCompile, PlannersChoiceForEveryPublicSuiteShape) {
  const auto cases = bench::load_suite(std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/gemm-public.csv");
  ASSERT_EQ(cases.size(), 20u);
  const GpuInfo h100 = device_preset("h100-sxm");
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << c.m << "x" << c.n << "x" << c.k);
    const Plan plan = plan_gemm(bf16_problem(c.m, c.n, c.k), h100);
    ASSERT_EQ(plan.best().config.instruction, Instruction::wgmma);
    expect_compiles_clean(plan.problem, plan.best().config, true);
  }
}

TEST(KernelCompile, OtherLayoutsAndOutputTypes) {
  const GpuInfo h100 = device_preset("h100-sxm");
  for (Layout layout : {Layout::nn, Layout::tn, Layout::tt})
    for (DType out : {DType::fp16, DType::fp32}) {
      GemmProblem p = bf16_problem(1000, 1024, 520);
      p.a_type = p.b_type = DType::fp16;
      p.layout = layout;
      p.d_type = out;
      SCOPED_TRACE(std::string(to_string(layout)) + " " + std::string(to_string(out)));
      expect_compiles_clean(p, plan_gemm(p, h100).best().config, true);
    }
}

TEST(KernelCompile, SplitKConfigurations) {
  for (const char* config : {"64x64x64 s8 c1 ws p g8 tma/tma sk4",
                             "128x64x64 s6 c2 ws p g8 cl2x1/b tma/tma sk3"}) {
    SCOPED_TRACE(config);
    expect_compiles_clean(bf16_problem(128, 2112, 7168), GemmConfig::parse(config), true);
  }
}
