// The n-tail kernel (plan/n_tail.hpp, GemmConfig::n_tail_kernel): how a call splits into the
// main kernel and the narrow tail kernel, the rules a configuration with it must keep, what the
// cost model and the planner make of it, and that both kernels compile with their
// programmatic-launch instructions.
#include <gtest/gtest.h>

#include "autogemm/plan.hpp"
#include "plan/n_tail.hpp"
#include "plan_test_util.hpp"
#include "runtime/kernel_source.hpp"

using namespace autogemm;
using autogemm::testing::hopper;
using autogemm::testing::problem;
using autogemm::testing::block_fp8_problem;

namespace {

const char* kFp8Tile = "128x128x128 s5 c2 ws p g8 tma/tma pb2";

GemmConfig with_n_tail(const char* config) {
  GemmConfig c = GemmConfig::parse(config);
  c.n_tail_kernel = true;
  return c;
}

}  // namespace

TEST(NTail, ConfigTokensRoundTrip) {
  const GemmConfig c = GemmConfig::parse("128x128x128 s5 c2 ws p g8 tma/tma pb2 ntk");
  EXPECT_TRUE(c.n_tail_kernel);
  EXPECT_FALSE(c.waits_for_primary);
  EXPECT_EQ(c.describe(), "128x128x128 s5 c2 ws p g8 tma/tma pb2 ntk");
  const GemmConfig t = GemmConfig::parse("128x64x128 s5 c2 ws g8 tma/tma pb2 pdlw");
  EXPECT_TRUE(t.waits_for_primary);
  EXPECT_EQ(GemmConfig::parse(t.describe()), t);
}

TEST(NTail, SplitsTheLastColumnOfTilesIntoANarrowKernel) {
  GemmProblem p = block_fp8_problem(4096, 2112, 7168);
  p.ldd = 2200;   // a padded D keeps its leading dimension in both halves
  const plan::NTailSplit s = plan::split_n_tail(p, with_n_tail(kFp8Tile));
  EXPECT_EQ(s.main_columns, 2048);
  EXPECT_EQ(s.main_problem.n, 2048);
  EXPECT_EQ(s.tail_problem.n, 64);
  for (const GemmProblem* q : {&s.main_problem, &s.tail_problem}) {
    EXPECT_EQ(q->ldd, 2200);
    EXPECT_EQ(q->ldc, 2112);   // packed C: the full call's row length
    EXPECT_EQ(q->ldb, 7168);
    EXPECT_EQ(q->m, 4096);
    EXPECT_EQ(q->k, 7168);
  }
  EXPECT_TRUE(s.main_config.n_tail_kernel);     // it launches the tail kernel early
  EXPECT_FALSE(s.main_config.waits_for_primary);
  EXPECT_EQ(s.tail_config.block_n, 64);
  EXPECT_FALSE(s.tail_config.n_tail_kernel);
  EXPECT_TRUE(s.tail_config.waits_for_primary);
  EXPECT_FALSE(s.tail_config.persistent);
  EXPECT_EQ(s.tail_config.cluster_m * s.tail_config.cluster_n, 1);
  // A 16-column remainder of a 256-wide tile: a 16-wide tail kernel.
  const plan::NTailSplit narrow =
      plan::split_n_tail(problem(2048, 4112, 512), with_n_tail("128x256x64 s3 c2 ws p g8 tma/tma"));
  EXPECT_EQ(narrow.main_columns, 4096);
  EXPECT_EQ(narrow.tail_config.block_n, 16);
  // The call launches the two kernels, each with its own columns.
  const auto kernels = runtime::gemm_kernels(p, with_n_tail(kFp8Tile));
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].first.n, 2048);
  EXPECT_EQ(kernels[1].first.n, 64);
  EXPECT_EQ(runtime::gemm_kernels(p, GemmConfig::parse(kFp8Tile)).size(), 1u);
}

TEST(NTail, RulesNameWhatTheyNeed) {
  const GpuInfo gpu = hopper();
  // Legal: 64 of 128 columns left over.
  EXPECT_EQ(legality_violation(block_fp8_problem(4096, 2112, 7168), with_n_tail(kFp8Tile), gpu), "");
  // More than half a tile left over (2100 mod 128 = 52 is fine, 2200 mod 128 = 24 too; 2000 mod
  // 128 = 80 is not), nothing left over, and no whole column of tiles.
  EXPECT_NE(legality_violation(block_fp8_problem(4096, 2000, 7168), with_n_tail(kFp8Tile), gpu)
                .find("block_n / 2 = 64 columns (it holds 80)"),
            std::string::npos);
  EXPECT_NE(legality_violation(block_fp8_problem(4096, 2048, 7168), with_n_tail(kFp8Tile), gpu)
                .find("it holds 0"),
            std::string::npos);
  EXPECT_NE(legality_violation(block_fp8_problem(4096, 64, 7168), with_n_tail(kFp8Tile), gpu), "");
  // Block scales: the tail must start on a 128-column B scale block.
  EXPECT_NE(legality_violation(block_fp8_problem(4096, 2144, 7168),
                               with_n_tail("128x64x128 s8 c2 ws p g8 tma/tma pb2"), gpu)
                .find("inside a 128-column B scale block"),
            std::string::npos);
  // Whole-K tiles of a persistent main kernel only.
  GemmConfig split = with_n_tail("64x128x64 s6 c1 ws p g8 tma/tma sk2");
  EXPECT_NE(legality_violation(problem(64, 2112, 7168), split, gpu).find("split_k = 2"),
            std::string::npos);
  GemmConfig not_persistent = with_n_tail("128x128x64 s4 c2 ws g8 tma/tma");
  EXPECT_NE(legality_violation(problem(4096, 2112, 1024), not_persistent, gpu).find("persistent"),
            std::string::npos);
  // D's rows ending inside a 16-byte chunk (2100 bf16, rows padded to 2104): the tail's TMA
  // store would pass N.
  GemmProblem ragged = problem(4096, 2100, 1024);
  ragged.ldc = ragged.ldd = 2104;
  EXPECT_NE(legality_violation(ragged, with_n_tail("128x128x64 s4 c2 ws p g8 tma/tma"), gpu)
                .find("N = 2100 bf16: D's rows end inside a 16-byte chunk"),
            std::string::npos);
  GemmConfig both = with_n_tail(kFp8Tile);
  both.waits_for_primary = true;
  EXPECT_NE(legality_violation(block_fp8_problem(4096, 2112, 7168), both, gpu), "");
  // A cluster must divide the main kernel's tiles (16 along N; the full call's 17 would not),
  // and the tail kernel has none.
  EXPECT_EQ(legality_violation(block_fp8_problem(4096, 2112, 7168),
                               with_n_tail("128x128x128 s5 c2 ws p g8 cl1x2/a tma/tma pb2"), gpu),
            "");
}

TEST(NTail, CostModelFillsTheLastWaveAndThePlannerTakesIt) {
  const GpuInfo gpu = hopper();
  const GemmProblem p = block_fp8_problem(4096, 2112, 7168);
  // 128 x 128: 544 tiles in 5 waves, the fifth 16 tiles; with the tail kernel 512 whole tiles
  // and 32 half tiles are 528 tiles' work: 4 waves.
  const Prediction plain = predict(p, GemmConfig::parse(kFp8Tile), gpu);
  const Prediction tail = predict(p, with_n_tail(kFp8Tile), gpu);
  EXPECT_EQ(plain.waves, 5);
  EXPECT_EQ(tail.waves, 4);
  EXPECT_LT(tail.time_us, plain.time_us * 0.9);
  EXPECT_TRUE(plan_gemm(p, gpu).best().config.n_tail_kernel);
  // Not offered where the last column of tiles is full or more than half full.
  for (const Candidate& c : plan_gemm(block_fp8_problem(4096, 2048, 7168), gpu).candidates)
    EXPECT_FALSE(c.config.n_tail_kernel) << c.config.describe();
}

TEST(NTail, BothKernelsCompileWithTheirLaunchInstructions) {
  const GemmProblem p = block_fp8_problem(1000, 2112, 1024);
  const auto kernels = runtime::gemm_kernels(p, with_n_tail(kFp8Tile));
  ASSERT_EQ(kernels.size(), 2u);
  const std::string main = runtime::gemm_kernel_source(kernels[0].first, kernels[0].second).source;
  const std::string tail = runtime::gemm_kernel_source(kernels[1].first, kernels[1].second).source;
  EXPECT_NE(main.find("launch_dependents = true"), std::string::npos);
  EXPECT_NE(main.find("n = 2048,"), std::string::npos);
  EXPECT_NE(tail.find("waits_for_primary = true"), std::string::npos);
  EXPECT_NE(tail.find("n = 64,"), std::string::npos);
  EXPECT_NE(tail.find("block_n = 64,"), std::string::npos);
}
