// Legality rules of the sm_90a kernel family, one rule at a time: each rejection names the
// value and the limit it broke, and the boundary values on both sides are checked.
#include <gtest/gtest.h>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "plan_test_util.hpp"
#include "kernels/sm90/gemm_layout.cuh"
#include "plan/rules.hpp"
#include "cli/cli_common.hpp"

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
  c.raster_group = 8;
  return c;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The ladder's teaching switches: no producer warpgroup, plain loads and stores.
LadderSwitches unspecialised(LoadPath load = LoadPath::threads) {
  LadderSwitches s;
  s.warp_specialized = false;
  s.load_path = load;
  s.store_path = load == LoadPath::threads ? StorePath::threads : StorePath::tma;
  return s;
}

// The rules a kernel with the ladder's switches must keep (the planner's preferences aside).
std::string ladder_violation(const GemmProblem& p, const GemmConfig& c,
                             const LadderSwitches& switches) {
  return plan::kernel_violation(p, plan::kernel_fields(p, c, switches), hopper());
}

}  // namespace

TEST(PlanLegality, SmemBytesIsTheKernelsLayout) {
  const GemmProblem p = problem(4096, 4096, 4096);
  for (int stages : {1, 3, 6}) {
    GemmConfig c = tile(128, 256, 2, stages);
    EXPECT_EQ(gemm_smem_bytes(p, c),
              sm90::make_smem_layout(128, 256, 64, stages, 2, 2, 256, 0).total_bytes);
    // No D staging with the ladder's plain stores.
    EXPECT_EQ(plan::gemm_smem_bytes(p, plan::kernel_fields(p, c, unspecialised())),
              sm90::make_smem_layout(128, 256, 64, stages, 2, 2, 0, 0).total_bytes);
    // D rows ending mid 16-byte chunk are staged too (the threads store them from there).
    GemmProblem ragged = p;
    ragged.n = 4100;
    ragged.ldd = 4104;
    EXPECT_EQ(plan::kernel_fields(ragged, c).store_path, StorePath::staged);
    EXPECT_EQ(gemm_smem_bytes(ragged, c),
              sm90::make_smem_layout(128, 256, 64, stages, 2, 2, 256, 0).total_bytes);
  }
  GemmProblem fp32_out = p;
  fp32_out.d_type = DType::fp32;
  EXPECT_EQ(gemm_smem_bytes(fp32_out, tile(64, 128, 1, 5)),
            sm90::make_smem_layout(64, 128, 64, 5, 2, 4, 128, 0).total_bytes);
  // D in chunks: the staging holds one chunk's boxes (2 x 32 fp32 columns), not block_n.
  GemmConfig chunked = tile(128, 256, 2, 4);
  chunked.d_chunk_boxes = 2;
  EXPECT_EQ(gemm_smem_bytes(fp32_out, chunked),
            sm90::make_smem_layout(128, 256, 64, 4, 2, 4, 64, 0).total_bytes);
  EXPECT_EQ(sm90::make_smem_layout(128, 256, 64, 4, 2, 4, 64, 0).d_bytes, 128 * 64 * 4);
  // Block-scaled FP8 adds one scale slot per stage (128 A scales + 2 B scales, 16-byte
  // rounded); per-tensor FP8 does not.
  GemmProblem fp8 = cli::make_problem(4096, 4096, 4096, "fp8", "nt", 0, 0, 0);
  GemmConfig fp8_tile128 = tile(128, 128, 2, 5);
  fp8_tile128.block_k = 128;
  const auto with_scales = sm90::make_smem_layout(128, 128, 128, 5, 1, 2, 128, 2);
  EXPECT_EQ(with_scales.scale_stage_bytes, 528);
  EXPECT_EQ(with_scales.barrier_offset, with_scales.scale_offset + 5 * 528);
  EXPECT_EQ(gemm_smem_bytes(fp8, fp8_tile128), with_scales.total_bytes);
  fp8.scaling = Scaling::per_tensor;
  EXPECT_EQ(gemm_smem_bytes(fp8, fp8_tile128),
            sm90::make_smem_layout(128, 128, 128, 5, 1, 2, 128, 0).total_bytes);
}

TEST(PlanLegality, CommonConfigurationsAreLegal) {
  const GemmProblem p = problem(4096, 4096, 4096);
  for (const GemmConfig& c : {tile(128, 256, 2, 3), tile(128, 128, 1, 6), tile(64, 64, 1, 8),
                              tile(256, 128, 2, 3)})
    EXPECT_EQ(legality_violation(p, c, hopper()), "") << c.describe();
}

TEST(PlanLegality, SharedMemoryOverTheOptInLimit) {
  const GemmProblem p = problem(4096, 4096, 4096);
  // 128x256 bf16: 48 KB per stage + 64 KB of D staging: 3 stages fit, 4 do not.
  EXPECT_EQ(legality_violation(p, tile(128, 256, 2, 3), hopper()), "");
  const GemmConfig four = tile(128, 256, 2, 4);
  const std::string why = legality_violation(p, four, hopper());
  EXPECT_TRUE(contains(why, "smem " + std::to_string(gemm_smem_bytes(p, four)) + " B")) << why;
  EXPECT_TRUE(contains(why, "232448")) << why;
  EXPECT_EQ(plan::max_stages_that_fit(p, plan::kernel_fields(p, four), hopper(), 8), 3);
}

TEST(PlanLegality, ConsumersOwnWholeM64Slabs) {
  const std::string why = legality_violation(problem(512, 512, 512), tile(64, 128, 2), hopper());
  EXPECT_TRUE(contains(why, "block_m / num_consumers = 64 / 2")) << why;
  EXPECT_TRUE(contains(why, "multiple of 64")) << why;
}

TEST(PlanLegality, AccumulatorsWithinTheRegisterBudget) {
  const GemmProblem p = problem(4096, 4096, 4096);
  // One consumer beside the producer: 240 - 64 = 176 registers; 128 rows = 2 slabs of N/2.
  EXPECT_EQ(legality_violation(p, tile(128, 176, 1, 4), hopper()), "");
  std::string why = legality_violation(p, tile(128, 192, 1, 4), hopper());
  EXPECT_TRUE(contains(why, "accumulators 192 registers")) << why;
  EXPECT_TRUE(contains(why, "> 176")) << why;
  why = legality_violation(p, tile(128, 256, 1, 3), hopper());
  EXPECT_TRUE(contains(why, "accumulators 256 registers")) << why;
  // Two consumers: 232 - 64 = 168; each owns 128 of 256 rows.
  EXPECT_EQ(legality_violation(p, tile(256, 160, 2, 2), hopper()), "");
  why = legality_violation(p, tile(256, 176, 2, 2), hopper());
  EXPECT_TRUE(contains(why, "accumulators 176 registers")) << why;
  EXPECT_TRUE(contains(why, "> 168")) << why;
  // Without warp specialisation (the ladder's early steps): 255 - 64 = 191.
  GemmConfig plain = tile(128, 176, 1, 2);
  EXPECT_EQ(ladder_violation(p, plain, unspecialised(LoadPath::tma)), "");
  plain.block_n = 192;
  EXPECT_TRUE(contains(ladder_violation(p, plain, unspecialised(LoadPath::tma)), "> 191"));
  EXPECT_EQ(plan::accumulator_registers(tile(128, 256, 2)), 128);
  EXPECT_EQ(plan::consumer_register_budget(plan::kernel_fields(p, tile(128, 256, 2))), 232);
  EXPECT_EQ(plan::consumer_register_budget(plan::kernel_fields(p, tile(128, 128, 1))), 240);
}

TEST(PlanLegality, TileSizesOutsideTheFamily) {
  const GemmProblem p = problem(4096, 4096, 4096);
  EXPECT_TRUE(contains(legality_violation(p, tile(96, 128, 1), hopper()), "block_m = 96"));
  EXPECT_TRUE(contains(legality_violation(p, tile(128, 20, 1), hopper()), "block_n = 20"));
  EXPECT_EQ(legality_violation(p, tile(128, 24, 1), hopper()), "");
  EXPECT_TRUE(contains(legality_violation(p, tile(128, 272, 2), hopper()), "block_n = 272"));
  GemmConfig wrong_k = tile(128, 128, 1);
  wrong_k.block_k = 32;
  EXPECT_TRUE(contains(legality_violation(p, wrong_k, hopper()), "block_k = 32"));
  // N = 8 tiles are part of the family (tiny N).
  EXPECT_EQ(legality_violation(problem(64, 8, 64), tile(64, 8, 1, 8), hopper()), "");
}

TEST(PlanLegality, NMajorBIsLoadedIn64ColumnSlabs) {
  for (Layout layout : {Layout::nn, Layout::tn}) {
    const GemmProblem p = problem(1024, 1024, 1024, layout);
    const std::string why = legality_violation(p, tile(128, 48, 1), hopper());
    EXPECT_TRUE(contains(why, "block_n = 48")) << why;
    EXPECT_TRUE(contains(why, "multiple of 64")) << why;
    EXPECT_EQ(legality_violation(p, tile(128, 128, 1), hopper()), "");
  }
  // K-major B takes any width of the family.
  EXPECT_EQ(legality_violation(problem(1024, 1024, 1024, Layout::tt), tile(128, 48, 1), hopper()),
            "");
}

TEST(PlanLegality, TmaBoxesFollowTheLayout) {
  const GemmConfig c = tile(128, 128, 2);
  const GemmProblem nt = problem(1000, 2000, 3000, Layout::nt);
  auto boxes = plan::gemm_tma_boxes(nt, plan::kernel_fields(nt, c));
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_EQ(boxes[0].operand, "A");  // K-major A: {64, block_m} over {K, M}
  EXPECT_EQ(boxes[0].description.box_dims, (std::vector<uint32_t>{64, 128}));
  EXPECT_EQ(boxes[0].description.global_dims, (std::vector<uint64_t>{3000, 1000}));
  EXPECT_EQ(boxes[1].description.box_dims, (std::vector<uint32_t>{64, 128}));
  EXPECT_EQ(boxes[1].description.global_dims, (std::vector<uint64_t>{3000, 2000}));
  EXPECT_EQ(boxes[2].operand, "D");  // each consumer stores its 64 rows, 64-column slabs
  EXPECT_EQ(boxes[2].description.box_dims, (std::vector<uint32_t>{64, 64}));
  EXPECT_EQ(boxes[2].description.global_strides, (std::vector<uint64_t>{2000 * 2}));
  const GemmProblem tn = problem(1000, 2000, 3000, Layout::tn);
  boxes = plan::gemm_tma_boxes(tn, plan::kernel_fields(tn, c));
  EXPECT_EQ(boxes[0].description.box_dims, (std::vector<uint32_t>{64, 64}));  // {64, block_k}
  EXPECT_EQ(boxes[0].description.global_dims, (std::vector<uint64_t>{1000, 3000}));
  EXPECT_EQ(boxes[1].description.global_dims, (std::vector<uint64_t>{2000, 3000}));
}

// D's and C's maps: 128-byte boxes (128-byte swizzle) and one tail box of block_n % 64 columns
// (bf16; % 32 fp32), swizzled with its row where that row is 32 or 64 bytes, dense otherwise.
TEST(PlanLegality, DBoxesAre128ByteSlabsAndOneTail) {
  using plan::Swizzle;
  struct Case {
    int block_n;
    DType out;
    std::vector<std::pair<uint32_t, Swizzle>> d_boxes;   // {columns, swizzle}, main then tail
  };
  const std::vector<Case> cases = {
      {256, DType::bf16, {{64, Swizzle::b128}}},
      {240, DType::bf16, {{64, Swizzle::b128}, {48, Swizzle::none}}},
      {208, DType::bf16, {{64, Swizzle::b128}, {16, Swizzle::b32}}},
      {224, DType::bf16, {{64, Swizzle::b128}, {32, Swizzle::b64}}},
      {48, DType::bf16, {{48, Swizzle::none}}},
      {16, DType::bf16, {{16, Swizzle::b32}}},
      {80, DType::fp32, {{32, Swizzle::b128}, {16, Swizzle::b64}}},
      {64, DType::fp32, {{32, Swizzle::b128}}},
  };
  for (const Case& c : cases) {
    GemmProblem p = problem(1000, 4000, 1000, Layout::nt);
    p.d_type = c.out;
    p.reads_c = true;
    const GemmConfig config = tile(64, c.block_n, 1);
    const auto boxes = plan::gemm_tma_boxes(p, plan::kernel_fields(p, config));
    std::vector<std::pair<uint32_t, Swizzle>> d, cmaps;
    for (const auto& box : boxes) {
      EXPECT_EQ(plan::tma_violation(box.description), "") << box.operand << " " << c.block_n;
      if (box.operand == "A" || box.operand == "B") continue;
      EXPECT_EQ(box.description.box_dims[1], 64u);   // the consumer's rows
      (box.operand == "D" ? d : cmaps)
          .push_back({box.description.box_dims[0], box.description.swizzle});
      // A tail box is any narrower than 128 bytes.
      EXPECT_EQ(box.tail, box.description.box_dims[0] != uint32_t(128 / dtype_bytes(c.out)))
          << box.operand << " " << c.block_n;
    }
    EXPECT_EQ(d, c.d_boxes) << "block_n " << c.block_n;
    EXPECT_EQ(cmaps, c.d_boxes) << "block_n " << c.block_n;
  }
}

TEST(PlanLegality, ClusterShapes) {
  const GemmProblem p = problem(4096, 4096, 4096);
  GemmConfig c = tile(128, 128, 1);
  c.cluster_m = 2;
  c.multicast = Multicast::b;
  EXPECT_EQ(legality_violation(p, c, hopper()), "");
  c.multicast = Multicast::a;  // A is shared along N, not M
  EXPECT_TRUE(contains(legality_violation(p, c, hopper()), "multicast a with cluster 2x1"));
  c.cluster_n = 2;
  EXPECT_TRUE(contains(legality_violation(p, c, hopper()), "cluster 2x2 has 4 CTAs"));
  c.cluster_m = 1;
  EXPECT_EQ(legality_violation(p, c, hopper()), "");
  c.multicast = Multicast::b;
  EXPECT_TRUE(contains(legality_violation(p, c, hopper()), "multicast b with cluster 1x2"));
}

TEST(PlanLegality, MulticastNeedsEvenTileAndSmCounts) {
  GemmConfig c = tile(128, 128, 1);
  c.cluster_m = 2;
  c.multicast = Multicast::b;
  // 3 tiles along M (M = 300): the cluster does not divide it.
  std::string why = legality_violation(problem(300, 4096, 4096), c, hopper());
  EXPECT_TRUE(contains(why, "3 tiles along M")) << why;
  EXPECT_TRUE(contains(why, "odd")) << why;
  EXPECT_EQ(legality_violation(problem(256, 4096, 4096), c, hopper()), "");
  why = legality_violation(problem(256, 4096, 4096), c, hopper(131));
  EXPECT_TRUE(contains(why, "131 SMs")) << why;
  GemmConfig along_n = tile(128, 128, 1);
  along_n.cluster_n = 2;
  along_n.multicast = Multicast::a;
  why = legality_violation(problem(4096, 4224, 4096), along_n, hopper());  // 33 tiles along N
  EXPECT_TRUE(contains(why, "33 tiles along N")) << why;
}

TEST(PlanLegality, ThreadsLoadPathIsTheUnspecialisedKMajorPath) {
  GemmConfig c = tile(128, 128, 1, 1);
  LadderSwitches threads = unspecialised();
  threads.warp_specialized = true;
  EXPECT_TRUE(contains(ladder_violation(problem(1024, 1024, 1024), c, threads), "no producer"));
  threads.warp_specialized = false;
  EXPECT_EQ(ladder_violation(problem(1024, 1024, 1024), c, threads), "");
  EXPECT_TRUE(contains(ladder_violation(problem(1024, 1024, 1024, Layout::tn), c, threads),
                       "layout tn"));
  // Without the producer there is nobody to issue multicast loads.
  c.cluster_m = 2;
  EXPECT_TRUE(contains(ladder_violation(problem(1024, 1024, 1024), c,
                                        unspecialised(LoadPath::tma)),
                       "without warp specialisation"));
}

TEST(PlanLegality, ClustersNeedDeviceSupport) {
  GpuInfo no_clusters = hopper();
  no_clusters.caps.clusters = false;
  GemmConfig c = tile(128, 128, 1);
  c.cluster_m = 2;
  c.multicast = Multicast::b;
  const std::string why = legality_violation(problem(4096, 4096, 4096), c, no_clusters);
  EXPECT_TRUE(contains(why, "no thread-block clusters")) << why;
}

TEST(PlanLegality, WgmmaOnlyOnSm90) {
  GpuInfo blackwell = hopper(148);
  blackwell.cc = {10, 0};
  blackwell.caps = *arch_capabilities(blackwell.cc);
  const std::string why =
      legality_violation(problem(4096, 4096, 4096), tile(128, 128, 1), blackwell);
  EXPECT_TRUE(contains(why, "instruction = wgmma")) << why;
  EXPECT_TRUE(contains(why, "cc 10.0")) << why;
  // The vendor library takes any valid problem.
  GemmConfig vendor;
  vendor.instruction = Instruction::vendor;
  EXPECT_EQ(legality_violation(problem(4096, 4096, 4096), vendor, blackwell), "");
}

// The kernels' TMA loads need 16-byte row strides; a call whose rows break the rule is judged
// on the padded copies the spec adds (plan/operand_copy.hpp), so it stays legal.
TEST(PlanLegality, TmaNeedsSixteenByteRowStrides) {
  GemmProblem p = problem(1000, 1000, 1001);  // packed A rows: 1001 bf16 = 2002 bytes
  const std::string why =
      plan::kernel_violation(p, plan::kernel_fields(p, tile(128, 128, 1)), hopper());
  EXPECT_TRUE(contains(why, "lda = 1001")) << why;
  EXPECT_EQ(legality_violation(p, tile(128, 128, 1), hopper()), "");
  p.lda = 1008;
  p.ldb = 1008;
  EXPECT_EQ(plan::kernel_violation(p, plan::kernel_fields(p, tile(128, 128, 1)), hopper()), "");
}

TEST(PlanLegality, InvalidProblemThrows) {
  EXPECT_THROW(legality_violation(problem(0, 64, 64), tile(128, 128, 1), hopper()),
               InvalidArgument);
}

// FP8 promotes every k-block through a second fp32 fragment as large as the accumulators
// (kernels/sm90/fp8_promotion.cuh), so the register rule counts them twice; block scaling also
// limits a tile to two 128-column B scale blocks.
TEST(PlanLegality, Fp8PromotionDoublesTheAccumulators) {
  GemmProblem p = problem(4096, 4096, 4096);
  p.a_type = p.b_type = DType::e4m3;
  p.scaling = Scaling::block_1x128_128x128;
  auto fp8_tile = [](int block_m, int block_n, int num_consumers) {
    GemmConfig c = tile(block_m, block_n, num_consumers, 4);
    c.block_k = 128;
    return c;
  };
  // Two consumers: 2 x 80 = 160 <= 232 - 64 = 168; 2 x 88 = 176 is not.
  EXPECT_EQ(legality_violation(p, fp8_tile(128, 160, 2), hopper()), "");
  std::string why = legality_violation(p, fp8_tile(128, 176, 2), hopper());
  EXPECT_TRUE(contains(why, "+ FP8 promotion temporaries 88 = 176")) << why;
  EXPECT_TRUE(contains(why, "> 168")) << why;
  // The same tile is legal for bf16 (88 <= 168).
  GemmConfig bf16_tile = fp8_tile(128, 176, 2);
  bf16_tile.block_k = 64;
  EXPECT_EQ(legality_violation(problem(4096, 4096, 4096), bf16_tile, hopper()), "");
  // One consumer with two m64 slabs: 2 x 2 x 40 = 160 <= 176; 2 x 2 x 48 = 192 is not.
  EXPECT_EQ(legality_violation(p, fp8_tile(128, 80, 1), hopper()), "");
  why = legality_violation(p, fp8_tile(128, 96, 1), hopper());
  EXPECT_TRUE(contains(why, "= 192 registers")) << why;
  // 64 x 176: 2 x 88 = 176 fits one consumer, but a 176-column tile can touch three B scale
  // blocks (e.g. columns 112..287); per-tensor scaling has no such limit.
  why = legality_violation(p, fp8_tile(64, 176, 1), hopper());
  EXPECT_TRUE(contains(why, "block_n = 176")) << why;
  EXPECT_TRUE(contains(why, "3 128-column B scale blocks")) << why;
  EXPECT_EQ(legality_violation(p, fp8_tile(64, 96, 1), hopper()), "");   // straddles at most 2
  GemmProblem per_tensor = p;
  per_tensor.scaling = Scaling::per_tensor;
  EXPECT_EQ(legality_violation(per_tensor, fp8_tile(64, 176, 1), hopper()), "");
  // FP8 tiles arrive by TMA only, and block scales need the producer warpgroup.
  why = ladder_violation(p, fp8_tile(64, 64, 1), unspecialised());
  EXPECT_TRUE(contains(why, "TMA only")) << why;
  why = ladder_violation(p, fp8_tile(64, 64, 1), unspecialised(LoadPath::tma));
  EXPECT_TRUE(contains(why, "second warp")) << why;
}

// Two FP8 promotion temporaries: legal where three fragments fit the register rule, never for
// 16-bit inputs or a single stage; the planner offers them for FP8 only.
TEST(PlanLegality, PromotionBuffers) {
  const GpuInfo h100 = device_preset("h100-sxm");
  GemmProblem fp8 = cli::make_problem(4096, 7168, 7168, "fp8", "nt", 0, 0, 0);
  GemmProblem bf16 = cli::make_problem(4096, 7168, 7168, "bf16", "nt", 0, 0, 0);
  const GemmConfig pb2 = GemmConfig::parse("128x128x128 s5 c2 p g8 pb2");
  EXPECT_EQ(legality_violation(fp8, pb2, h100), "");
  // Block scales travel with the stages: the sixth 128x128 stage no longer fits 227 KB.
  const std::string six = legality_violation(fp8, GemmConfig::parse("128x128x128 s6 c2 p g8 pb2"), h100);
  EXPECT_NE(six.find("smem"), std::string::npos) << six;
  // A per-tile B scale split with two temporaries sends ptxas into minutes and spills.
  const std::string straddle = legality_violation(fp8, GemmConfig::parse("64x96x128 s8 c1 p g8 pb2"), h100);
  EXPECT_NE(straddle.find("promotion_buffers = 1"), std::string::npos) << straddle;
  EXPECT_EQ(legality_violation(fp8, GemmConfig::parse("64x96x128 s8 c1 p g8"), h100), "");
  GemmProblem per_tensor = fp8;
  per_tensor.scaling = Scaling::per_tensor;
  EXPECT_EQ(legality_violation(per_tensor, GemmConfig::parse("64x96x128 s8 c1 p g8 pb2"), h100), "");
  const std::string sixteen = legality_violation(bf16, GemmConfig::parse("128x128x64 s6 c2 p g8 pb2"), h100);
  EXPECT_NE(sixteen.find("promotion_buffers = 2"), std::string::npos) << sixteen;
  const std::string wide = legality_violation(fp8, GemmConfig::parse("128x160x128 s5 c2 p g8 pb2"), h100);
  EXPECT_NE(wide.find("temporaries 160 = 240"), std::string::npos) << wide;
  EXPECT_EQ(legality_violation(fp8, GemmConfig::parse("128x160x128 s5 c2 p g8"), h100), "");
  bool fp8_offers_pb2 = false;
  for (const auto& c : plan_gemm(fp8, h100).candidates) fp8_offers_pb2 |= c.config.promotion_buffers == 2;
  EXPECT_TRUE(fp8_offers_pb2);
  for (const auto& c : plan_gemm(bf16, h100).candidates) EXPECT_EQ(c.config.promotion_buffers, 1);
}

// The search offers D in chunks as a second variant of a tile where it buys ring stages: fp32
// D (a weight gradient's 128x256 tile: 2 stages staging the whole tile, 4 in chunks of 64
// columns), never 16-bit D (not yet measured) nor ping-pong's tiles.
TEST(PlanLegality, ChunkedDIsOfferedForFp32DWithADeeperRing) {
  GemmProblem wgrad = cli::make_problem(4096, 4096, 16384, "bf16", "tn", 0, 0, 0);
  wgrad.d_type = DType::fp32;
  wgrad.reads_c = true;
  const Plan plan = plan_gemm(wgrad, hopper());
  int chunked = 0;
  for (const Candidate& c : plan.candidates) {
    if (c.config.d_chunk_boxes == 0) continue;
    ++chunked;
    EXPECT_EQ(c.config.d_chunk_boxes, 2) << c.config.describe();
    EXPECT_FALSE(c.config.pingpong) << c.config.describe();
    EXPECT_EQ(legality_violation(wgrad, c.config, hopper()), "") << c.config.describe();
    GemmConfig whole = c.config;
    whole.d_chunk_boxes = 0;
    EXPECT_NE(legality_violation(wgrad, whole, hopper()), "") << whole.describe();
    if (c.config.block_m == 128 && c.config.block_n == 256 && c.config.block_k == 64)
      EXPECT_EQ(c.config.num_stages, 4) << c.config.describe();
  }
  EXPECT_GT(chunked, 0);
  GemmProblem bf16_out = wgrad;
  bf16_out.d_type = DType::bf16;
  for (const Candidate& c : plan_gemm(bf16_out, hopper()).candidates)
    EXPECT_EQ(c.config.d_chunk_boxes, 0) << c.config.describe();
}
