// The n-tail kernel (plan/n_tail.hpp, GemmConfig::n_tail_kernel): how a call splits into the
// main kernel and the narrow tail kernel, the rules a configuration with it must keep, what the
// cost model and the planner make of it, and that both kernels compile with their
// programmatic-launch instructions.
#include <gtest/gtest.h>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "codegen/kernel_source.hpp"
#include "plan/n_tail.hpp"
#include "plan/rules.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;
using autogemm::testing::hopper;
using autogemm::testing::problem;
using autogemm::testing::block_fp8_problem;

namespace {

const char* kFp8Tile = "128x128x128 s5 c2 p g8 pb2";

GemmConfig with_n_tail(const char* config) {
  GemmConfig c = GemmConfig::parse(config);
  c.n_tail_kernel = true;
  return c;
}

plan::NTailSplit split(const GemmProblem& p, const GemmConfig& c) {
  return plan::split_n_tail(p, plan::kernel_fields(p, c));
}

}  // namespace

TEST(NTail, ConfigTokensRoundTrip) {
  const GemmConfig c = GemmConfig::parse("128x128x128 s5 c2 p g8 pb2 ntk");
  EXPECT_TRUE(c.n_tail_kernel);
  EXPECT_EQ(c.describe(), "128x128x128 s5 c2 p g8 pb2 ntk");
  // The tail kernel's own role (it waits for the main kernel) is derived, never given.
  EXPECT_THROW(GemmConfig::parse("128x64x128 s5 c2 g8 pb2 pdlw"), InvalidArgument);
}

TEST(NTail, SplitsTheLastColumnOfTilesIntoANarrowKernel) {
  GemmProblem p = block_fp8_problem(4096, 2112, 7168);
  p.ldd = 2200;   // a padded D keeps its leading dimension in both halves
  const plan::NTailSplit s = split(p, with_n_tail(kFp8Tile));
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
  EXPECT_TRUE(s.main_fields.launch_dependents);   // it launches the tail kernel early
  EXPECT_FALSE(s.main_fields.waits_for_primary);
  EXPECT_FALSE(s.main_fields.config.n_tail_kernel);
  EXPECT_EQ(s.tail_fields.config.block_n, 64);
  EXPECT_FALSE(s.tail_fields.config.n_tail_kernel);
  EXPECT_FALSE(s.tail_fields.launch_dependents);
  EXPECT_TRUE(s.tail_fields.waits_for_primary);
  EXPECT_FALSE(s.tail_fields.config.persistent);
  EXPECT_EQ(s.tail_fields.config.cluster_m * s.tail_fields.config.cluster_n, 1);
  // A 16-column remainder of a 256-wide tile: a 16-wide tail kernel.
  const plan::NTailSplit narrow =
      split(problem(2048, 4112, 512), with_n_tail("128x256x64 s3 c2 p g8"));
  EXPECT_EQ(narrow.main_columns, 4096);
  EXPECT_EQ(narrow.tail_fields.config.block_n, 16);
  // The spec launches the two kernels, each with its own columns, the tail as a dependent.
  const KernelSpec spec = make_kernel_spec(p, with_n_tail(kFp8Tile), hopper());
  ASSERT_EQ(spec.kernels.size(), 2u);
  EXPECT_EQ(spec.kernels[0].problem.n, 2048);
  EXPECT_EQ(spec.kernels[0].first_column, 0);
  EXPECT_EQ(spec.kernels[1].problem.n, 64);
  EXPECT_EQ(spec.kernels[1].first_column, 2048);
  EXPECT_TRUE(spec.kernels[1].fields.waits_for_primary);
  EXPECT_FALSE(spec.kernels[1].fields.config.persistent);
  // One CTA per narrow tile: 32 tile rows x 1 column.
  EXPECT_EQ(spec.kernels[1].grid_ctas, 32);
  EXPECT_EQ(make_kernel_spec(p, GemmConfig::parse(kFp8Tile), hopper()).kernels.size(), 1u);
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
                               with_n_tail("128x64x128 s8 c2 p g8 pb2"), gpu)
                .find("inside a 128-column B scale block"),
            std::string::npos);
  // Whole-K tiles of a persistent main kernel only.
  GemmConfig split = with_n_tail("64x128x64 s6 c1 p g8 sk2");
  EXPECT_NE(legality_violation(problem(64, 2112, 7168), split, gpu).find("split_k = 2"),
            std::string::npos);
  GemmConfig not_persistent = with_n_tail("128x128x64 s4 c2 g8");
  EXPECT_NE(legality_violation(problem(4096, 2112, 1024), not_persistent, gpu).find("persistent"),
            std::string::npos);
  // D's rows ending inside a 16-byte chunk (2100 bf16, rows padded to 2104): the tail's TMA
  // store would pass N.
  GemmProblem ragged = problem(4096, 2100, 1024);
  ragged.ldc = ragged.ldd = 2104;
  EXPECT_NE(legality_violation(ragged, with_n_tail("128x128x64 s4 c2 p g8"), gpu)
                .find("N = 2100 bf16, ldd = 2104: D's rows end inside a 16-byte chunk"),
            std::string::npos);
  // D's rows a stride TMA cannot store (ldd = 2113 bf16): staged for the threads, no tail kernel.
  GemmProblem unaligned = problem(4096, 2112, 1024);
  unaligned.ldd = 2113;
  EXPECT_NE(legality_violation(unaligned, with_n_tail("128x128x64 s4 c2 p g8"), gpu)
                .find("ldd = 2113"),
            std::string::npos);
  // A cluster must divide the main kernel's tiles (16 along N; the full call's 17 would not),
  // and the tail kernel has none.
  EXPECT_EQ(legality_violation(block_fp8_problem(4096, 2112, 7168),
                               with_n_tail("128x128x128 s5 c2 p g8 cl1x2/a pb2"), gpu),
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
  const KernelSpec spec = make_kernel_spec(p, with_n_tail(kFp8Tile), hopper());
  ASSERT_EQ(spec.kernels.size(), 2u);
  const std::string main = codegen::gemm_kernel_source(spec.kernels[0], false).source;
  const std::string tail = codegen::gemm_kernel_source(spec.kernels[1], false).source;
  EXPECT_NE(main.find("launch_dependents = true"), std::string::npos);
  EXPECT_NE(main.find("n = 2048,"), std::string::npos);
  EXPECT_NE(tail.find("waits_for_primary = true"), std::string::npos);
  EXPECT_NE(tail.find("n = 64,"), std::string::npos);
  EXPECT_NE(tail.find("block_n = 64,"), std::string::npos);
}
