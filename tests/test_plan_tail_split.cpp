// Tail split (plan/tail_split.hpp): which tiles of the last wave are split along K and into how
// many ranges, the rules a configuration with it must keep, what the cost model and the
// planner make of it, and that its kernels compile.
#include <gtest/gtest.h>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "plan/gemm_search.hpp"
#include "plan/tail_split.hpp"
#include "plan_test_util.hpp"
#include "runtime/kernel_source.hpp"

using namespace autogemm;
using autogemm::testing::hopper;
using autogemm::testing::problem;
using autogemm::testing::block_fp8_problem;

TEST(TailSplit, SplitsOnlyTheLastPartialWave) {
  // 4096 x 2112 with 128 x 128 tiles in 2 x 1 clusters: 272 cluster tiles on 66 cluster slots,
  // four full waves and 8 tiles left; 66 / 8 = 8 ranges each of the 56 k-blocks.
  const plan::TailSplit t = plan::plan_tail_split(272, 66, 16, 56);
  EXPECT_EQ(t.whole_tiles, 264);
  EXPECT_EQ(t.tail_tiles, 8);
  EXPECT_EQ(t.splits, 8);
  EXPECT_EQ(t.work_items(), 264 + 64);
  // The cap, and the k-blocks each range keeps (at least 4: 20 k-blocks give 5 ranges).
  EXPECT_EQ(plan::plan_tail_split(272, 66, 4, 56).splits, 4);
  EXPECT_EQ(plan::plan_tail_split(265, 66, 16, 20).splits, 5);
}

TEST(TailSplit, NoSplitWhereItCannotHelp) {
  for (const plan::TailSplit t : {plan::plan_tail_split(264, 66, 16, 56),    // full waves
                                  plan::plan_tail_split(272, 66, 1, 56),     // not asked for
                                  plan::plan_tail_split(300, 66, 16, 56),    // 36 left: 66/36 = 1
                                  plan::plan_tail_split(272, 66, 16, 7)}) {  // K too short
    EXPECT_EQ(t.splits, 1);
    EXPECT_EQ(t.tail_tiles, 0);
    EXPECT_EQ(t.work_items(), t.whole_tiles);
  }
}

TEST(TailSplit, FewerTilesThanSlotsSplitsEveryTile) {
  // Less than one wave: every tile is a tail tile, like split-K with a compact workspace.
  const plan::TailSplit t = plan::plan_tail_split(20, 132, 8, 64);
  EXPECT_EQ(t.whole_tiles, 0);
  EXPECT_EQ(t.tail_tiles, 20);
  EXPECT_EQ(t.splits, 6);
  EXPECT_LE(t.work_items(), 132);
}

TEST(TailSplit, TheSplitWaveFitsOneWave) {
  for (int64_t tiles = 1; tiles < 700; tiles += 7)
    for (int64_t slots : {66, 132, 114})
      for (int64_t k_blocks : {4, 9, 56, 128}) {
        const plan::TailSplit t = plan::plan_tail_split(tiles, slots, 16, k_blocks);
        SCOPED_TRACE(::testing::Message() << tiles << " tiles, " << slots << " slots, " << k_blocks);
        if (t.splits > 1) EXPECT_EQ(t.whole_tiles % slots, 0);   // whole waves, then the tail
        else EXPECT_EQ(t.tail_tiles, 0);
        EXPECT_LE(t.tail_tiles * t.splits, slots);
        EXPECT_EQ(t.whole_tiles + t.tail_tiles, tiles);
        EXPECT_GE(k_blocks / t.splits, t.splits > 1 ? plan::kMinKBlocksPerTailSplit : 0);
      }
}

TEST(TailSplit, RulesNameTheConflict) {
  GemmConfig c = GemmConfig::parse("128x128x128 s5 c2 ws p g8 tma/tma ts8");
  EXPECT_EQ(plan::tail_split_violation(c), "");
  GemmConfig with_split_k = c;
  with_split_k.split_k = 2;
  EXPECT_NE(plan::tail_split_violation(with_split_k).find("split_k = 2"), std::string::npos);
  GemmConfig not_persistent = c;
  not_persistent.persistent = false;
  EXPECT_NE(plan::tail_split_violation(not_persistent).find("persistent"), std::string::npos);
  GemmConfig zero = c;
  zero.tail_split = 0;
  EXPECT_NE(plan::tail_split_violation(zero).find("tail_split = 0"), std::string::npos);
  // The kernel generator refuses it too, naming the field.
  try {
    runtime::gemm_kernel_source(block_fp8_problem(4096, 2112, 7168), with_split_k);
    FAIL() << "split-K with a tail split compiled";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "config.tail_split");
  }
}

TEST(TailSplit, CostModelChargesOnlyTheShorterLastWave) {
  const GpuInfo device = hopper();
  const GemmProblem p = block_fp8_problem(4096, 2112, 7168);
  GemmConfig whole = GemmConfig::parse("128x128x128 s5 c2 ws p g8 cl2x1/b tma/tma pb2");
  GemmConfig split = whole;
  split.tail_split = 8;
  const Prediction a = predict(p, whole, device), b = predict(p, split, device);
  EXPECT_EQ(a.waves, 5);
  EXPECT_EQ(b.waves, 5);
  EXPECT_EQ(a.busy_sms, 16);
  EXPECT_EQ(b.busy_sms, 128);   // 16 tiles x 8 ranges
  EXPECT_EQ(b.tail_tiles, 16);
  EXPECT_EQ(b.tail_splits, 8);
  // The fifth wave shrinks from a whole tile to an eighth of one; partial tiles and the second
  // kernel cost a few microseconds back.
  const double wave = (a.time_us - a.fixed_us) / 5;
  EXPECT_LT(b.time_us, a.time_us - 0.5 * wave);
  EXPECT_GT(b.fixed_us, a.fixed_us);
  // Full waves: the same prediction as without.
  const GemmProblem full = block_fp8_problem(4096, 4224, 7168);   // 33 x 32 = 1056 = 8 x 132 tiles
  GemmConfig full_split = GemmConfig::parse("128x128x128 s5 c2 ws p g8 tma/tma pb2");
  const Prediction c = predict(full, full_split, device);
  full_split.tail_split = 8;
  EXPECT_EQ(predict(full, full_split, device).time_us, c.time_us);
}

TEST(TailSplit, PlannerSplitsThePartialWaveOf4096x2112) {
  const GemmProblem p = block_fp8_problem(4096, 2112, 7168);
  const Plan plan = plan_gemm(p, hopper());
  if (plan::kPlanTailSplits) {
    EXPECT_GT(plan.best().config.tail_split, 1) << plan.best().config.describe();
    EXPECT_GT(plan.best().prediction.tail_splits, 1);
  } else {
    for (const Candidate& c : plan.candidates) EXPECT_EQ(c.config.tail_split, 1);
  }
  // Choices: only where the last wave is partial, and never with split-K.
  GemmConfig c = GemmConfig::parse("128x128x128 s5 c2 ws p g8 tma/tma pb2");
  EXPECT_EQ(plan::tail_split_choices(p, c, hopper()), (std::vector<int>{1, 8}));
  EXPECT_EQ(plan::tail_split_choices(block_fp8_problem(4096, 4224, 7168), c, hopper()),
            (std::vector<int>{1}));
  c.split_k = 2;
  EXPECT_EQ(plan::tail_split_choices(p, c, hopper()), (std::vector<int>{1}));
}

TEST(TailSplit, Describe) {
  GemmConfig c = GemmConfig::parse("256x128x128 s3 c2 ws p g8 cl2x1/b tma/tma ts14 oi");
  EXPECT_EQ(c.tail_split, 14);
  EXPECT_EQ(c.describe(), "256x128x128 s3 c2 ws p g8 cl2x1/b tma/tma ts14 oi");
  EXPECT_THROW(GemmConfig::parse("128x128x128 s5 c2 ws p tma/tma tsx"), InvalidArgument);
}
