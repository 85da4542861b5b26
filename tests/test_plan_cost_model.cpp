// The cost model: tile and wave counts against hand computation, and the direction of each
// term (narrow tiles fill the last wave, multicast halves the shared operand's L2 traffic,
// grouped rasterisation saves DRAM re-reads, short K and narrow wgmmas lose efficiency).
#include <gtest/gtest.h>

#include <cmath>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;

namespace {

using autogemm::testing::hopper;
using autogemm::testing::problem;

GemmConfig tile(int block_m, int block_n, int num_consumers, int num_stages = 4) {
  GemmConfig c;
  c.block_m = block_m;
  c.block_n = block_n;
  c.block_k = 64;
  c.num_consumers = num_consumers;
  c.num_stages = num_stages;
  return c;
}

}  // namespace

TEST(PlanCostModel, WavesMatchHandComputation) {
  struct Case {
    int64_t m, n;
    int block_m, block_n, sm_count;
    int64_t tiles, waves;
    int busy;
  };
  const Case cases[] = {
      // 2 x 56 tiles on 132 SMs: one wave, 20 SMs idle.
      {256, 7168, 128, 128, 132, 112, 1, 112},
      // 32 x 16 = 512 tiles: 3 full waves of 132, then 512 - 396 = 116.
      {4096, 4096, 128, 256, 132, 512, 4, 116},
      // 64 x ceil(8192/224) = 64 x 37 = 2368 tiles: 17 x 132 = 2244, then 124.
      {8192, 8192, 128, 224, 132, 2368, 18, 124},
      // H100 PCIe (114 SMs): 16 x 16 = 256 tiles: 2 x 114 = 228, then 28.
      {2048, 2048, 128, 128, 114, 256, 3, 28},
      // Ragged edges: ceil(1000/64) x ceil(1000/48) = 16 x 21 = 336 tiles: 264, then 72.
      {1000, 1000, 64, 48, 132, 336, 3, 72},
      // Fewer tiles than SMs.
      {1, 1, 64, 16, 132, 1, 1, 1},
  };
  for (const Case& c : cases) {
    const Prediction p =
        predict(problem(c.m, c.n, 4096), tile(c.block_m, c.block_n, 1, 2), hopper(c.sm_count));
    SCOPED_TRACE(::testing::Message() << c.m << "x" << c.n << " tile " << c.block_m << "x"
                                    << c.block_n);
    EXPECT_EQ(p.num_tiles, c.tiles);
    EXPECT_EQ(p.waves, c.waves);
    EXPECT_EQ(p.busy_sms, c.busy);
    EXPECT_DOUBLE_EQ(p.last_wave_utilization, double(c.busy) / c.sm_count);
  }
}

TEST(PlanCostModel, ClustersAndCapsShrinkTheResidentGrid) {
  // 131 SMs hold 65 clusters of 2 = 130 CTAs: 512 tiles -> 130, 130, 130, 122.
  GemmConfig c = tile(128, 256, 2, 3);
  c.cluster_m = 2;
  c.multicast = Multicast::b;
  Prediction p = predict(problem(4096, 4096, 4096), c, hopper(131));
  EXPECT_EQ(p.waves, 4);
  EXPECT_EQ(p.busy_sms, 122);
}

TEST(PlanCostModel, NarrowerTilesFillTheLastWave) {
  // DeepSeek-V3-like shape: M = 256, N = K = 7168 on 132 SMs. 128x128 leaves 20 SMs idle.
  // On an H200's DRAM (4.8 TB/s) the tiles, not the DRAM, set the time; on an H100's 3.35
  // TB/s the model has this row DRAM-bound, where every tile width takes the same time.
  GpuInfo device = hopper();
  device.memory_bandwidth_gbps = 4800;
  const GemmProblem p = problem(256, 7168, 7168);
  const Prediction square = predict(p, tile(128, 128, 2, 6), device);
  EXPECT_EQ(square.busy_sms, 112);
  // 128x112: 2 x 64 = 128 tiles, still one wave, each tile 12.5% shorter.
  const Prediction narrow = predict(p, tile(128, 112, 2, 6), device);
  EXPECT_EQ(narrow.num_tiles, 128);
  EXPECT_EQ(narrow.busy_sms, 128);
  EXPECT_LT(narrow.compute_us, square.compute_us);
  EXPECT_LT(narrow.time_us, square.time_us);
  // The planner sees it too.
  const Plan plan = plan_gemm(p, device);
  EXPECT_GT(plan.best().prediction.busy_sms, 112);
  EXPECT_LT(plan.best().prediction.time_us, square.time_us);
}

TEST(PlanCostModel, TimeIsWavesOfTheSlowestResourcePlusFixed) {
  for (const GemmProblem& p : {problem(4096, 4096, 4096), problem(256, 7168, 7168),
                               problem(64, 64, 64), problem(16384, 1024, 65536)}) {
    for (const GemmConfig& c : {tile(128, 256, 2, 3), tile(64, 64, 1, 8)}) {
      const Prediction pr = predict(p, c, hopper());
      // A sum of per-wave maxima is at least the max of the per-resource sums.
      EXPECT_GE(pr.time_us + 1e-9,
                std::max({pr.compute_us, pr.memory_us, pr.l2_us}) + pr.fixed_us);
      EXPECT_LE(pr.time_us,
                pr.compute_us + pr.memory_us + pr.l2_us + pr.store_us + pr.fixed_us + 1e-9);
      EXPECT_GE(pr.fixed_us, 3.0);  // at least a launch
      EXPECT_NEAR(pr.tflops * pr.time_us * 1e6, p.flops(), p.flops() * 1e-12);
      EXPECT_GE(pr.dram_bytes, p.min_bytes());
      EXPECT_GT(pr.mma_efficiency, 0);
      EXPECT_LE(pr.mma_efficiency, 1);
      // Never faster than the device's peak.
      EXPECT_LT(pr.tflops, hopper().peak_bf16_tflops());
    }
  }
}

TEST(PlanCostModel, MulticastHalvesTheSharedOperandsL2Traffic) {
  const GemmProblem p = problem(4096, 4096, 4096);
  GemmConfig c = tile(128, 128, 1, 6);
  const Prediction alone = predict(p, c, hopper());
  c.cluster_m = 2;
  c.multicast = Multicast::b;
  const Prediction shared_b = predict(p, c, hopper());
  // 1024 tiles, each reading a 128 x 4096 bf16 slab of B: half of that no longer leaves L2.
  EXPECT_DOUBLE_EQ(alone.l2_bytes - shared_b.l2_bytes, 1024 * 128.0 * 4096 * 2 / 2);
  EXPECT_LT(shared_b.l2_us, alone.l2_us);
  EXPECT_EQ(shared_b.compute_us, alone.compute_us);
}

TEST(PlanCostModel, RowsOffSectorsPayAThirdMoreL2Bytes) {
  // K = 1000 bf16: rows 2000 bytes apart, 16 mod 32 (every other row starts mid-sector).
  // The same tiles on rows padded to 1008 elements (2016 bytes, whole sectors) are charged
  // 1/1.3 of the bytes.
  const GemmConfig c = tile(128, 128, 2, 6);
  GemmProblem whole = problem(4096, 4096, 1000);
  whole.lda = whole.ldb = 1008;
  const Prediction aligned = predict(whole, c, hopper());
  GemmProblem a_off = whole;
  a_off.lda = 1000;
  GemmProblem both_off = a_off;
  both_off.ldb = 1000;
  const Prediction a_split = predict(a_off, c, hopper());
  const Prediction both_split = predict(both_off, c, hopper());
  // A and B tiles are the same size here, so A alone adds 0.3 of half the bytes.
  EXPECT_NEAR(a_split.l2_bytes / aligned.l2_bytes, 1.15, 1e-9);
  EXPECT_NEAR(both_split.l2_bytes / aligned.l2_bytes, 1.3, 1e-9);
  EXPECT_GE(both_split.time_us, aligned.time_us);
  // Whole 32-byte sectors that are not whole 128-byte lines (K = 2000: 4000 bytes) are not
  // charged: the probe measured 3-4% there.
  const GemmProblem sectors = problem(4096, 4096, 2000);
  GemmProblem lines = sectors;
  lines.lda = lines.ldb = 2048;
  EXPECT_DOUBLE_EQ(predict(sectors, c, hopper()).l2_bytes, predict(lines, c, hopper()).l2_bytes);
}

TEST(PlanCostModel, SixteenBitTilesOverlapCloseToTheirLargestTerm) {
  // Two waves of 16-bit tiles: each wave's on-SM time combines the matrix-unit, L2 and shared-memory
  // times by a norm of 8, so the waves lie within 3^(1/8) = 1.15x of the largest term (a norm
  // of 4, kept for FP8, allows 1.32x).
  const GemmProblem p = problem(1024, 4224, 4096);   // 8 x 33 = 264 tiles of 128 x 128
  const GemmConfig c = tile(128, 128, 2, 6);
  const Prediction pr = predict(p, c, hopper());
  ASSERT_EQ(pr.waves, 2);
  const double on_sm = pr.time_us - pr.fixed_us;
  const double largest = std::max(pr.compute_us, pr.l2_us);
  EXPECT_GE(on_sm + 1e-9, largest);
  EXPECT_LE(on_sm, std::pow(3.0, 1.0 / 8) * largest * 1.0001);
}

TEST(PlanCostModel, DramIsCompulsoryWhenOperandsFitInL2) {
  const GemmProblem p = problem(2048, 2048, 2048);  // A + B = 16 MB < half of 50 MB
  for (int group : {1, 8, 16})
    for (RasterOrder order : {RasterOrder::along_m, RasterOrder::along_n}) {
      GemmConfig c = tile(128, 128, 1);
      c.raster_group = group;
      c.raster_order = order;
      EXPECT_DOUBLE_EQ(predict(p, c, hopper()).dram_bytes, p.min_bytes());
    }
}

TEST(PlanCostModel, GroupedRasterSavesDramRereads) {
  // A and B are 512 MB each: L2 holds neither, so plain row-by-row order re-reads B once per
  // wave while groups of 8 M-tiles re-read it once per group.
  const GemmProblem p = problem(16384, 16384, 16384);
  GemmConfig plain = tile(128, 256, 2, 3);
  plain.raster_group = 1;
  GemmConfig grouped = plain;
  grouped.raster_group = 8;
  const Prediction plain_p = predict(p, plain, hopper());
  const Prediction grouped_p = predict(p, grouped, hopper());
  EXPECT_LT(grouped_p.dram_bytes, plain_p.dram_bytes);
  EXPECT_GT(grouped_p.dram_bytes, p.min_bytes());
  // By hand: 128 M-tiles in bands of 8 = 16 bands, each sweeping all of B (512 MB). A band of
  // A (8 x 128 rows x 16384 x 2 B = 32 MB) exceeds the usable half of L2 (25 MB), so it is
  // re-read once per wave of its band: 8 x 64 tiles / 132 resident CTAs = 3.88 waves.
  const double a = 16384.0 * 16384 * 2, b = a, d = a;
  EXPECT_NEAR(grouped_p.dram_bytes, a * (8.0 * 64 / 132) + b * 16 + d, 1.0);
}

TEST(PlanCostModel, ShortKAndNarrowWgmmaLoseEfficiency) {
  const Prediction long_k = predict(problem(4096, 4096, 8192), tile(128, 256, 2, 3), hopper());
  const Prediction short_k = predict(problem(4096, 4096, 64), tile(128, 256, 2, 3), hopper());
  EXPECT_LT(short_k.mma_efficiency, 0.6 * long_k.mma_efficiency);
  const Prediction narrow = predict(problem(4096, 4096, 8192), tile(128, 64, 2), hopper());
  EXPECT_LT(narrow.mma_efficiency, long_k.mma_efficiency);
  const Prediction one_consumer = predict(problem(4096, 4096, 8192), tile(128, 128, 1), hopper());
  const Prediction two_consumers = predict(problem(4096, 4096, 8192), tile(128, 128, 2), hopper());
  EXPECT_LT(one_consumer.mma_efficiency, two_consumers.mma_efficiency);
}

TEST(PlanCostModel, PersistentSavesThePipelineFillOfLaterWaves) {
  GemmConfig persistent = tile(128, 128, 2);
  GemmConfig per_tile = persistent;
  per_tile.persistent = false;
  const GemmProblem one_wave = problem(1024, 1024, 1024);  // 64 tiles
  EXPECT_DOUBLE_EQ(predict(one_wave, persistent, hopper()).time_us,
                   predict(one_wave, per_tile, hopper()).time_us);
  const GemmProblem many = problem(8192, 8192, 1024);  // 4096 tiles, 32 waves
  EXPECT_LT(predict(many, persistent, hopper()).time_us, predict(many, per_tile, hopper()).time_us);
}

// FP8 runs at twice the bf16 rate less its promotion; promoting from two temporaries hides
// most of that, one temporary exposes it every k-block.
TEST(PlanCostModel, Fp8UsesTheFp8PeakLessThePromotion) {
  GemmProblem p = problem(8192, 8192, 8192);
  p.a_type = p.b_type = DType::e4m3;
  p.scaling = Scaling::per_tensor;
  GemmConfig c = tile(128, 128, 2, 4);
  c.block_k = 128;
  c.promotion_buffers = 2;
  const Prediction overlapped = predict(p, c, hopper());
  c.promotion_buffers = 1;
  const Prediction exposed = predict(p, c, hopper());
  const Prediction bf16 = predict(problem(8192, 8192, 8192), tile(128, 128, 2, 4), hopper());
  EXPECT_LT(overlapped.compute_us, 0.65 * bf16.compute_us);
  EXPECT_GT(overlapped.compute_us, 0.5 * bf16.compute_us);
  EXPECT_GT(exposed.compute_us, 1.2 * overlapped.compute_us);
}

TEST(PlanCostModel, VendorIsARoofline) {
  GemmConfig vendor;
  vendor.instruction = Instruction::vendor;
  const GemmProblem p = problem(4096, 4096, 4096);
  const Prediction pr = predict(p, vendor, hopper());
  EXPECT_GT(pr.time_us, pr.compute_us);
  EXPECT_DOUBLE_EQ(pr.dram_bytes, p.min_bytes());
  EXPECT_LT(pr.tflops, hopper().peak_bf16_tflops());
}

TEST(PlanCostModel, BadInputThrows) {
  EXPECT_THROW(predict(problem(0, 64, 64), tile(128, 128, 1), hopper()), InvalidArgument);
  EXPECT_THROW(predict(problem(64, 64, 64), tile(0, 128, 1), hopper()), InvalidArgument);
}

// With every SM pulling, a k-block costs a fixed ~71 cycles (at the model's 1.98 GHz) besides
// its bytes (H100 decode rows: BF16 64x16 one atom 223 cycles for 10 KB, two atoms 383 for 20 KB):
// the same bytes in half as many k-blocks (two swizzle atoms of K per stage) take 56 x 71 cycles
// less, and a single SM pulling alone is held to its port.
TEST(PlanCostModel, EveryKBlockCostsTheSharedL2AFixedOverhead) {
  const GemmProblem p = problem(64, 2112, 7168);   // 132 tiles of 64 x 16
  GemmConfig one_atom = tile(64, 16, 1, 8);
  GemmConfig two_atoms = one_atom;
  two_atoms.block_k = 128;
  const Prediction one = predict(p, one_atom, hopper());
  const Prediction two = predict(p, two_atoms, hopper());
  EXPECT_DOUBLE_EQ(one.l2_bytes, two.l2_bytes);
  EXPECT_NEAR(one.l2_us - two.l2_us, 56 * 71 / 1980.0, 1e-9);
  // 132 x 80 rows x 7168 x 2 B at 57 B/clk per SM, plus 56 k-blocks x 71 cycles.
  const double tile_bytes = 80.0 * 7168 * 2;
  EXPECT_NEAR(two.l2_us, 56 * 71 / 1980.0 + tile_bytes / (57 * 1980.0), 1e-9);
  // One tile alone: no other SM shares the L2, only the SM's port (64 B/clk at 80%) limits it.
  const Prediction alone = predict(problem(64, 16, 7168), two_atoms, hopper());
  EXPECT_NEAR(alone.l2_us, tile_bytes / (64 * 0.8 * 1980.0), 1e-9);
}

// Two-consumer tiles store D in 128-byte boxes and one tail box: 256 bf16 columns are 4 boxes of
// 64, 240 are 3 of 64 and one of 48. Measured (H200), a 240-wide tile still runs ~0.4 us longer
// than its box rows say; one-consumer tiles did not show it and are not charged.
TEST(PlanCostModel, TailBoxCostsTwoConsumerTilesEpilogueTime) {
  // N = 3840 = 16 x 240 = 15 x 256: both widths run 4 waves of 128-row tiles (512 and 480
  // tiles) and 8 of 64-row tiles (1024 and 960), so their fixed costs differ by the epilogue.
  const GemmProblem p = problem(4096, 3840, 1536);
  const GpuInfo device = hopper(132);
  auto fixed = [&](int block_m, int block_n, int num_consumers) {
    const Prediction pr = predict(p, tile(block_m, block_n, num_consumers), device);
    EXPECT_EQ(pr.waves, block_m == 128 ? 4 : 8) << block_m << "x" << block_n;
    return pr.fixed_us;
  };
  // Two consumers: the tail box costs more than the 16 columns' bytes save (4 waves x 0.4 us).
  EXPECT_GT(fixed(128, 240, 2), fixed(128, 256, 2) + 1.0);
  EXPECT_LT(fixed(128, 240, 2), fixed(128, 256, 2) + 1.6);
  // One consumer: bytes only, so the narrower tile's epilogue is the shorter.
  EXPECT_LT(fixed(64, 240, 1), fixed(64, 256, 1));
}

// K = 24: each tile is its D's store. Measured (H200, TMA store, 10445 x 12664 x 24 bf16):
// 128x256 c2 127-131 us, 256x128 c2 160, 64x256 c1 148, 64x208 c1 156 (209-212 when its D
// left in 13 boxes of 16 columns). The model must put the wide two-consumer tile first, and
// 512-byte row segments before 256-byte ones, and a long-K tile of the same shape must not be
// paced by its store.
TEST(PlanCostModel, ShortKTilesArePacedByTheirDStore) {
  const GemmProblem p = problem(10445, 12664, 24);
  const Prediction wide = predict(p, tile(128, 256, 2, 3), hopper());
  const Prediction tall = predict(p, tile(256, 128, 2, 3), hopper());
  const Prediction one_consumer = predict(p, tile(64, 256, 1, 3), hopper());
  const Prediction narrow_boxes = predict(p, tile(64, 208, 1, 5), hopper());
  EXPECT_LT(wide.time_us, one_consumer.time_us);
  EXPECT_LT(one_consumer.time_us, tall.time_us);
  EXPECT_LT(wide.time_us, narrow_boxes.time_us);
  EXPECT_GT(wide.store_us, wide.compute_us);
  const Prediction long_k = predict(problem(10445, 12664, 4096), tile(128, 256, 2, 3), hopper());
  EXPECT_LT(long_k.store_us, long_k.compute_us);
}
