// Rowwise FP8 scaling (Scaling::rowwise: one scale per row of A, per token, and per row of B,
// per output channel) without a GPU: validation, the kernel's epilogue and generated Config,
// the kernel's identity, the planner (our tile family only: the decode family and cuBLASLt have
// no rowwise scales, and a problem only they could run is refused by name), the forced tiles
// the GPU tests run, and the paths that refuse it (cuBLASLt, the multi-GPU split).
#include <gtest/gtest.h>

#include <string>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/multi_gpu.hpp"
#include "autogemm/plan.hpp"
#include "cli_test_util.hpp"
#include "codegen/kernel_source.hpp"
#include "error_test_util.hpp"
#include "multi/split_plan.hpp"
#include "plan_test_util.hpp"
#include "runtime/cublaslt.hpp"

using namespace autogemm;
using autogemm::testing::expect_invalid;

namespace {

GemmProblem rowwise(int64_t m, int64_t n, int64_t k) {
  GemmProblem p = autogemm::testing::block_fp8_problem(m, n, k);
  p.scaling = Scaling::rowwise;
  return p;
}

const GpuInfo& h200() {
  static const GpuInfo g = device_preset("h200");
  return g;
}

}  // namespace

TEST(Rowwise, ValidationAndTheKernelsEpilogue) {
  validate(rowwise(64, 2112, 7168));
  EXPECT_EQ(to_string(Scaling::rowwise), "rowwise");
  GemmProblem sixteen = autogemm::testing::problem(64, 128, 128);
  sixteen.scaling = Scaling::rowwise;
  expect_invalid([&] { validate(sixteen); }, "scaling");
  // The row and column scales are A's and B's: an epilogue's own would be a second pair.
  GemmProblem twice = rowwise(64, 128, 128);
  twice.epilogue.row_scale = true;
  EXPECT_NE(expect_invalid([&] { validate(twice); }, "epilogue.row_scale").find("scale_a"),
            std::string::npos);

  GemmProblem fused = rowwise(64, 128, 128);
  fused.epilogue.bias = DType::bf16;
  fused.epilogue.activation = Activation::silu;
  const Epilogue e = kernel_epilogue(fused);
  EXPECT_TRUE(e.row_scale && e.col_scale);
  EXPECT_EQ(e.bias, DType::bf16);
  EXPECT_EQ(e.activation, Activation::silu);
  EXPECT_TRUE(kernel_epilogue(autogemm::testing::block_fp8_problem(64, 128, 128)).empty());
}

TEST(Rowwise, GeneratedConfigAndIdentity) {
  const GemmConfig config = GemmConfig::parse("128x128x128 s4 c2 p g8");
  const KernelSpec spec = make_kernel_spec(rowwise(300, 1000, 1040), config, h200());
  const std::string source = codegen::gemm_kernel_source(spec.kernels.front(), false).source;
  EXPECT_NE(source.find("scaling = 3"), std::string::npos) << source;
  EXPECT_NE(source.find("using epilogue = EpilogueFields<0, 0, true, true>"), std::string::npos)
      << source;
  EXPECT_NE(source.find("_rw"), std::string::npos);
  GemmProblem per_tensor = rowwise(300, 1000, 1040);
  per_tensor.scaling = Scaling::per_tensor;
  EXPECT_NE(spec.kernels.front().identity,
            make_kernel_spec(per_tensor, config, h200()).kernels.front().identity);
  GemmProblem silu = rowwise(300, 1000, 1040);
  silu.epilogue.activation = Activation::silu;
  EXPECT_NE(spec.kernels.front().identity,
            make_kernel_spec(silu, config, h200()).kernels.front().identity);
}

// Decode sizes go to the tile family (swapped tiles): the decode family's FP8 is block-scaled.
TEST(Rowwise, PlannedOnOurTileFamilyOnly) {
  for (int64_t m : {1, 16, 64, 300, 4096}) {
    SCOPED_TRACE(m);
    const Plan plan = plan_gemm(rowwise(m, 2112, 7168), h200());
    for (const Candidate& c : plan.candidates) {
      EXPECT_EQ(c.config.instruction, Instruction::wgmma) << c.config.describe();
      EXPECT_NE(c.config.instruction, Instruction::vendor);
    }
  }
  // An A100 has no wgmma: only cuBLASLt could run it, and it has no rowwise scales here.
  EXPECT_NE(expect_invalid([&] { plan_gemm(rowwise(64, 2048, 1024), device_preset("a100-80g")); },
                           "scaling")
                .find("only autogemm's kernels run rowwise FP8"),
            std::string::npos);
}

// The forced configurations of Fp8GemmGpu.RowwiseScaling are legal (so that test checks the
// kernels, not the rules).
TEST(Rowwise, TheGpuTestsForcedTilesAreLegal) {
  for (const char* config :
       {"64x32x128 s8 c1 p g8 swap", "64x16x128 s8 c1 p g8 sk2 swap", "128x64x128 s6 c2 p g8 sk3",
        "64x96x128 s8 c1 p g8 pb2", "128x128x128 s5 c2 p g8 cl2x1/b pb2",
        "128x128x128 s4 c2 p g8 ntk"}) {
    SCOPED_TRACE(config);
    const KernelSpec spec = make_kernel_spec(rowwise(300, 1040, 1408), GemmConfig::parse(config), h200());
    for (const KernelLaunch& k : spec.kernels)
      EXPECT_NE(codegen::gemm_kernel_source(k, false).source.find("scaling = 3"), std::string::npos);
  }
}

TEST(Rowwise, CublasLtAndTheMultiGpuSplitRefuseIt) {
  GemmOperands ops;
  ops.a = reinterpret_cast<const void*>(0x10000);
  ops.b = reinterpret_cast<const void*>(0x20000);
  ops.d = reinterpret_cast<void*>(0x30000);
  ops.scale_a = reinterpret_cast<const float*>(0x40000);
  ops.scale_b = reinterpret_cast<const float*>(0x50000);
  try {
    runtime::cublaslt_gemm(rowwise(128, 128, 256), ops, nullptr);
    FAIL() << "no refusal";
  } catch (const runtime::CublasLtLimit& e) {
    EXPECT_EQ(e.argument(), "scaling");
    EXPECT_EQ(e.value(), "rowwise");
  }
  expect_invalid([&] { plan_split(rowwise(4096, 4096, 4096), h200(), topology_preset("nvlink", 2)); },
                 "problem.scaling");
}

TEST(Rowwise, PlanAndCompileCommandsTakeScaling) {
  const auto run = autogemm::testing::run_cli(
      "plan --m 64 --n 2112 --k 7168 --dtype fp8 --scaling rowwise --device h200");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("scaling    rowwise"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("epilogue   row_scale, col_scale"), std::string::npos) << run.out;
  for (const char* bad : {"--dtype bf16 --scaling rowwise", "--dtype fp8 --scaling per_row"}) {
    const auto refused = autogemm::testing::run_cli(
        std::string("plan --m 64 --n 64 --k 128 --device h200 ") + bad);
    EXPECT_EQ(refused.exit_code, 2) << bad << "\n" << refused.out;
    EXPECT_NE(refused.out.find("--scaling"), std::string::npos) << refused.out;
  }
}
