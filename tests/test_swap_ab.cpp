// Swapped operands (GemmConfig::swap_ab, plan/swap_ab.hpp), without a GPU: the kernel problem
// D^T = B^T A^T for every layout, the configuration text, the rules that refuse a swap, the
// spec a swapped configuration makes (the kernel's operands, its store path, its tensor maps),
// where the planner offers it, and the generated kernel compiling with NVRTC. GPU correctness:
// GemmGpu.SwappedOperandsAreCorrect (tests/test_gemm_gpu.cpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "codegen/kernel_source.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "plan/rules.hpp"
#include "plan/swap_ab.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;
using autogemm::testing::block_fp8_problem;
using autogemm::testing::hopper;
using autogemm::testing::problem;

TEST(SwapAb, KernelProblemIsTheTransposeForEveryLayout) {
  // The kernel's A is the call's B, its B the call's A: each keeps its storage, which is the
  // other letter from the swapped point of view (problem.hpp).
  const std::pair<Layout, Layout> expected[] = {
      {Layout::nt, Layout::nt}, {Layout::nn, Layout::tt}, {Layout::tt, Layout::nn},
      {Layout::tn, Layout::tn}};
  for (const auto& [call_layout, kernel_layout] : expected) {
    GemmProblem p = problem(24, 1000, 520, call_layout);
    p.b_type = DType::fp16;
    p.a_type = DType::fp16;
    p.d_type = DType::fp32;
    p.lda = 600;
    p.ldb = 1040;
    p.ldd = 1003;
    p.reads_c = true;
    const GemmProblem k = plan::swapped_problem(p);
    SCOPED_TRACE(to_string(call_layout));
    EXPECT_EQ(k.m, 1000);
    EXPECT_EQ(k.n, 24);
    EXPECT_EQ(k.k, 520);
    EXPECT_EQ(k.layout, kernel_layout);
    EXPECT_EQ(a_is_k_major(k.layout), b_is_k_major(p.layout));
    EXPECT_EQ(b_is_k_major(k.layout), a_is_k_major(p.layout));
    EXPECT_EQ(k.lda, 1040);
    EXPECT_EQ(k.ldb, 600);
    // C's and D's row strides stay the caller's: the kernel writes them transposed.
    EXPECT_EQ(k.ldd, 1003);
    EXPECT_EQ(k.ldc, 1000);
    EXPECT_EQ(k.d_type, DType::fp32);
    EXPECT_TRUE(k.reads_c);
    // Swapping twice gives the call back (its packed strides made explicit).
    const GemmProblem back = plan::swapped_problem(k);
    EXPECT_EQ(back.m, p.m);
    EXPECT_EQ(back.n, p.n);
    EXPECT_EQ(back.layout, p.layout);
    EXPECT_EQ(back.lda, p.lda);
    EXPECT_EQ(back.ldb, p.ldb);
  }
}

TEST(SwapAb, ConfigurationTextRoundTrips) {
  const GemmConfig c = GemmConfig::parse("64x32x128 s8 c1 p g8 sk2 swap");
  EXPECT_TRUE(c.swap_ab);
  EXPECT_EQ(c.split_k, 2);
  EXPECT_EQ(c.describe(), "64x32x128 s8 c1 p g8 sk2 swap");
  EXPECT_FALSE(GemmConfig::parse("64x32x128 s8 c1 p g8 sk2").swap_ab);
}

TEST(SwapAb, RulesRefuseWhatCannotSwap) {
  const GpuInfo gpu = hopper();
  const auto refusal = [&](const GemmProblem& p, const char* config) {
    return legality_violation(p, GemmConfig::parse(config), gpu);
  };
  EXPECT_EQ(refusal(problem(32, 7168, 2048), "64x32x128 s8 c1 p g8 swap"), "");
  // Forced, a swap runs at any M (the planner offers it only up to 32 rows).
  EXPECT_EQ(refusal(problem(300, 1000, 1000), "128x64x64 s6 c2 p g8 swap"), "");
  // Block-scaled FP8 swaps too; the block_n scales of the call's rows take the stage's block_m
  // row-scale slot, so block_n may not exceed block_m.
  EXPECT_EQ(refusal(block_fp8_problem(32, 7168, 2048), "64x32x128 s8 c1 p g8 pb2 swap"), "");
  EXPECT_NE(refusal(block_fp8_problem(32, 7168, 2048), "64x128x128 s4 c1 p g8 swap")
                .find("block_n = 128 > block_m = 64"),
            std::string::npos);
  // The unswapped kernel's 128-column B-block rule does not apply: the tile's columns take one
  // scale each (block_n 48 with two temporaries is refused unswapped).
  EXPECT_EQ(refusal(block_fp8_problem(32, 7168, 2048), "64x48x128 s6 c1 p g8 pb2 swap"), "");
  EXPECT_NE(refusal(block_fp8_problem(32, 7168, 2048), "128x32x128 s8 c2 p g8 pb2 swap")
                .find("num_consumers = 2 and promotion_buffers = 2"),
            std::string::npos);
  EXPECT_NE(refusal(problem(16, 7168, 2048), "mma 16x32x128 s3 swap")
                .find("swap_ab with instruction = mma"),
            std::string::npos);
  EXPECT_NE(refusal(problem(32, 2100, 2048), "64x32x64 s8 c1 p g8 ntk swap")
                .find("swap_ab with n_tail_kernel"),
            std::string::npos);
  // The kernel's block_n holds the call's rows: an N-major kernel B (the call's A stored
  // K x M) needs whole 64-column slabs, as any N-major B does.
  EXPECT_NE(refusal(problem(32, 7168, 2048, Layout::tn), "64x32x128 s6 c1 p g8 swap")
                .find("block_n = 32: B is N-major"),
            std::string::npos);
  EXPECT_EQ(refusal(problem(32, 7168, 2048, Layout::tn), "64x64x128 s6 c1 p g8 swap"), "");
}

TEST(SwapAb, GroupedProblemsDoNotSwap) {
  GemmProblem p = problem(1024, 4096, 7168);
  p.grouping = Grouping::contiguous;
  p.num_groups = 8;
  KernelFields fields;
  fields.config = GemmConfig::parse("128x64x64 s6 c2 p g8 swap");
  fields.store_path = StorePath::threads;
  EXPECT_NE(plan::swap_ab_violation(p, fields).find("swap_ab with grouping = contiguous"),
            std::string::npos);
}

TEST(SwapAb, SpecRunsTheKernelOnTheTransposedProblem) {
  const GpuInfo gpu = hopper();
  GemmProblem p = problem(32, 7168, 2048);
  p.ldd = 7176;
  const KernelSpec spec = make_kernel_spec(p, GemmConfig::parse("64x32x128 s8 c1 p g8 sk2 swap"), gpu);
  ASSERT_EQ(spec.kernels.size(), 1u);
  EXPECT_EQ(spec.problem.m, 32);   // the call's, as the caller gave it
  const KernelLaunch& k = spec.kernels.front();
  EXPECT_EQ(k.problem.m, 7168);
  EXPECT_EQ(k.problem.n, 32);
  EXPECT_EQ(k.problem.ldd, 7176);
  // The caller's rows (7168 columns, 7176 apart) are TMA's to store: D^T is staged as them.
  EXPECT_EQ(k.fields.store_path, StorePath::tma);

  // 7168 / 64 tiles of the call's N, one column of 32 of its rows, two splits.
  EXPECT_EQ(k.work_items, 112 * 2);
  // A's map is over the call's B (7168 rows of 2048), B's over the call's A; D's over the
  // call's D: 32 rows of 7168, boxes of block_n = 32 rows by 64 columns (128 bytes).
  ASSERT_EQ(k.tensor_maps.size(), 3u);
  const auto map = [&](char operand) {
    return *std::find_if(k.tensor_maps.begin(), k.tensor_maps.end(),
                         [&](const TensorMapSpec& m) { return m.operand == operand; });
  };
  EXPECT_EQ(map('A').rows, 7168);
  EXPECT_EQ(map('A').box_outer, 64);
  EXPECT_EQ(map('B').rows, 32);
  EXPECT_EQ(map('B').box_outer, 32);
  EXPECT_EQ(map('D').rows, 32);
  EXPECT_EQ(map('D').row_length, 7168);
  EXPECT_EQ(map('D').ld, 7176);
  EXPECT_EQ(map('D').box_inner, 64);
  EXPECT_EQ(map('D').box_outer, 32);
  // Rows ending mid 16-byte chunk (N = 7167): the threads write D^T from the registers.
  GemmProblem ragged = problem(32, 7167, 2048);
  const KernelSpec ragged_spec =
      make_kernel_spec(ragged, GemmConfig::parse("64x32x128 s8 c1 p g8 sk2 swap"), gpu);
  EXPECT_EQ(ragged_spec.kernels.front().fields.store_path, StorePath::threads);
  EXPECT_EQ(ragged_spec.kernels.front().tensor_maps.size(), 2u);
  // The split-K workspace is laid out over the kernel's tiles.
  EXPECT_EQ(spec.split_k.counters, 112);
  EXPECT_EQ(spec.split_k.partial_floats, 112 * 2 * 64 * 32);
  // The launcher checks the call's B pointer against the A map's rule (and A's against B's).
  GemmOperands ops;
  alignas(16) static char buffer[64];
  ops.a = buffer;
  ops.b = buffer + 8;   // not 16-byte aligned: the kernel's A
  ops.d = buffer;
  EXPECT_NE(plan::operand_violation(spec, ops).find("b = "), std::string::npos)
      << plan::operand_violation(spec, ops);
}

TEST(SwapAb, PlannerOffersSwapsForFewRowsOfAOrRowsToFit) {
  const GpuInfo gpu = hopper();
  const auto swapped_candidates = [&](const GemmProblem& p) {
    const Plan plan = plan_gemm(p, gpu);
    return std::count_if(plan.candidates.begin(), plan.candidates.end(),
                         [](const Candidate& c) { return c.config.swap_ab; });
  };
  EXPECT_GT(swapped_candidates(problem(32, 7168, 2048)), 0);
  // The plan says why: the transposed problem and the transposed store.
  const Plan chosen = plan_gemm(problem(32, 7168, 2048), gpu);
  ASSERT_TRUE(chosen.best().config.swap_ab) << chosen.best().config.describe();
  EXPECT_NE(chosen.path_reason.find("D^T = B^T A^T (the 32 rows of A along wgmma's N)"),
            std::string::npos) << chosen.path_reason;
  EXPECT_NE(chosen.path_reason.find("D^T staged as the caller's rows, TMA store"),
            std::string::npos)
      << chosen.path_reason;
  EXPECT_GT(swapped_candidates(problem(17, 4096, 4096)), 0);
  EXPECT_EQ(swapped_candidates(problem(128, 4096, 4096)), 0);
  EXPECT_GT(swapped_candidates(block_fp8_problem(32, 7168, 2048)), 0);
  // The weight-bound middle (B 90% of the bytes, 64-row slabs padding a quarter of their rows,
  // FP8 up to 64 rows): only swapped tiles of 128 weight rows and one consumer holding every
  // row in one column.
  for (const GemmProblem& middle : {problem(33, 4096, 4096), problem(80, 8192, 8192),
                                    block_fp8_problem(40, 7168, 2048),
                                    block_fp8_problem(37, 8192, 8192), problem(146, 29568, 8192)}) {
    const Plan plan = plan_gemm(middle, gpu);
    SCOPED_TRACE(fmt::format("{}x{}x{}", middle.m, middle.n, middle.k));
    EXPECT_TRUE(plan::weight_bound_middle(middle));
    for (const Candidate& c : plan.candidates)
      EXPECT_TRUE(plan::middle_swap_tile(middle, c.config)) << c.config.describe();
  }
  // Two consumers on 16-bit middle tiles wider than 128 columns, one on narrower ones and with
  // stream-K (offered past one wave of tiles: 130 x 18432 x 7168 runs it).
  for (const GemmProblem& middle : {problem(164, 6144, 4096), problem(145, 5120, 5120),
                                    problem(146, 29568, 8192), problem(95, 28672, 4096),
                                    problem(130, 18432, 7168)}) {
    const Plan plan = plan_gemm(middle, gpu);
    SCOPED_TRACE(fmt::format("{}x{}x{}", middle.m, middle.n, middle.k));
    ASSERT_FALSE(plan.candidates.empty());
    for (const Candidate& c : plan.candidates)
      EXPECT_EQ(c.config.num_consumers, c.config.stream_k || c.config.block_n <= 128 ? 1 : 2)
          << c.config.describe();
    const GemmConfig& best = plan.best().config;
    EXPECT_EQ(best.num_consumers, middle.m > 128 && middle.n != 18432 ? 2 : 1) << best.describe();
    EXPECT_EQ(best.stream_k, middle.n == 18432) << best.describe();
  }
  // Past the 176 columns one consumer holds, two consumers make no middle tile: the rows keep
  // every tile the planner has (they lost swapped: 220 x 10240 x 8192 58.6 -> 105.1 us).
  for (const GemmProblem& wide : {problem(188, 6144, 4096), problem(220, 10240, 8192)}) {
    const Plan plan = plan_gemm(wide, gpu);
    EXPECT_TRUE(plan::weight_bound_middle(wide));
    EXPECT_TRUE(std::none_of(plan.candidates.begin(), plan.candidates.end(),
                             [&](const Candidate& c) { return plan::middle_swap_tile(wide, c.config); }));
    EXPECT_TRUE(std::any_of(plan.candidates.begin(), plan.candidates.end(),
                            [](const Candidate& c) { return !c.config.swap_ab; }));
  }
  EXPECT_FALSE(plan::weight_bound_middle(problem(64, 4096, 4096)));   // whole 64-row slabs
  EXPECT_FALSE(plan::weight_bound_middle(problem(54, 4096, 4096)));   // 10 of 64 rows padded
  EXPECT_FALSE(plan::weight_bound_middle(block_fp8_problem(80, 28672, 8192)));  // FP8 past 64
  EXPECT_FALSE(plan::weight_bound_middle(problem(100, 512, 512)));    // B 78% of the bytes
  EXPECT_FALSE(plan::weight_bound_middle(problem(257, 8192, 8192)));  // past the middle
  EXPECT_EQ(swapped_candidates(problem(100, 512, 512)), 0);
  // 16-bit rows of A to fit along wgmma's N (kSwapAbFitMinM..kSwapAbFitMaxM) with N and K long
  // enough; not FP8, not short K, not narrow N, not many rows.
  EXPECT_GT(swapped_candidates(problem(852, 4096, 7168)), 0);
  EXPECT_EQ(swapped_candidates(block_fp8_problem(852, 4096, 7168)), 0);
  EXPECT_EQ(swapped_candidates(problem(852, 4096, 256)), 0);
  EXPECT_EQ(swapped_candidates(problem(852, 512, 7168)), 0);
  EXPECT_EQ(swapped_candidates(problem(5000, 4096, 7168)), 0);
  // ... nor where TMA cannot store the caller's rows (they end mid 16-byte chunk).
  EXPECT_EQ(swapped_candidates(problem(852, 4095, 7168)), 0);
  // There the tile widths step by wgmma's 8 from 16 to 256 columns (of the call's rows); the
  // unswapped ones by 16.
  const Plan fitted = plan_gemm(problem(2200, 3000, 6000), gpu);
  const auto offers_width = [&](bool swapped, int width) {
    return std::any_of(fitted.candidates.begin(), fitted.candidates.end(),
                       [&](const Candidate& c) {
                         return c.config.swap_ab == swapped && c.config.block_n == width;
                       });
  };
  EXPECT_TRUE(offers_width(true, 208));
  EXPECT_TRUE(offers_width(true, 200));
  EXPECT_TRUE(offers_width(true, 24));
  EXPECT_FALSE(offers_width(false, 200));
  // Swapped tiles run without multicast pairs (gemm_search.hpp multicast_offered); unswapped
  // ones of the same call keep them.
  for (const Candidate& c : fitted.candidates)
    if (c.config.swap_ab) EXPECT_EQ(c.config.multicast, Multicast::none) << c.config.describe();
  EXPECT_TRUE(std::any_of(fitted.candidates.begin(), fitted.candidates.end(),
                          [](const Candidate& c) { return c.config.multicast != Multicast::none; }));
  // Every swapped candidate holds all of M in one tile, the narrowest (M rounded up to 8), of
  // 64 or 128 rows of N.
  const Plan plan = plan_gemm(problem(24, 12288, 4096), gpu);
  for (const Candidate& c : plan.candidates)
    if (c.config.swap_ab) {
      EXPECT_EQ(c.config.block_n, 24) << c.config.describe();
      EXPECT_LE(c.config.block_m, 128) << c.config.describe();
    }
}

// The cost model counts a swapped kernel's one pass over the call's B in DRAM round trips, as
// it does an unswapped one whose rows fill at most half a tile: 64x32x128 s8 over K = 14336
// is 112 k-blocks, 13 passes of its ring after the fill (3.8 us each, cost_model.cpp), more
// than the DRAM time of its bytes; split 2 halves the passes and is DRAM-bound.
TEST(SwapAb, OnePassRingCostsSwappedTiles) {
  const GpuInfo gpu = hopper();
  const GemmProblem p = problem(32, 4096, 14336);
  const Prediction whole = predict(p, GemmConfig::parse("64x32x128 s8 c1 p g8 swap"), gpu);
  const Prediction split = predict(p, GemmConfig::parse("64x32x128 s8 c1 p g8 sk2 swap"), gpu);
  EXPECT_GE(whole.time_us - whole.fixed_us, 13 * 3.8 - 1e-9);
  EXPECT_GT(13 * 3.8, whole.memory_us);
  EXPECT_LT(split.time_us, whole.time_us);
}

namespace {

// The generated swapped kernel for `p` and `config`: D^T in the source, compiled by NVRTC
// without spills, wgmma in its PTX, and a TMA store exactly where the spec stages D^T as the
// caller's rows.
void expect_swapped_kernel_compiles(const GemmProblem& p, const char* config) {
  SCOPED_TRACE(config);
  const KernelSpec spec = make_kernel_spec(p, GemmConfig::parse(config), device_preset("h100-sxm"));
  EXPECT_FALSE(spec.a_scales_k_block_major);
  const jit::KernelSource src = codegen::gemm_kernel_source(spec.kernels.front(), false);
  EXPECT_NE(src.source.find("d_transposed = true"), std::string::npos);
  EXPECT_NE(src.name.find("_dT"), std::string::npos) << src.name;
  const jit::CompiledKernel k = jit::compile_to_cubin(src);
  EXPECT_FALSE(k.cubin.empty());
  EXPECT_FALSE(jit::parse_ptxas_usage(k.log).has_spills()) << k.log;
  EXPECT_NE(k.ptx.find("wgmma.mma_async"), std::string::npos);
  const bool tma_store = spec.kernels.front().fields.store_path == StorePath::tma;
  EXPECT_EQ(k.ptx.find("cp.async.bulk.tensor.2d.global.shared") != std::string::npos, tma_store);
}

}  // namespace

TEST(SwapAb, GeneratedKernelCompilesAndStoresTransposed) {
  expect_swapped_kernel_compiles(problem(32, 1000, 1000), "64x32x128 s8 c1 p g8 sk2 swap");
  expect_swapped_kernel_compiles(problem(32, 1000, 1000), "128x64x64 s6 c2 p g8 cl2x1/b swap");
  expect_swapped_kernel_compiles(problem(5, 1000, 1000), "64x8x64 s8 c1 p g8 swap");
  expect_swapped_kernel_compiles(problem(32, 1001, 1000), "64x32x64 s8 c1 p g8 swap");   // threads
  expect_swapped_kernel_compiles(problem(852, 4096, 7168), "128x224x64 s3 c2 p g8 cl2x1/b swap");
  expect_swapped_kernel_compiles(problem(700, 1100, 776), "256x128x64 s2 c2 p g8 swap");
}

// Block-scaled FP8 swapped: the scale warp copies the call's A scales as the tile's column
// scales (fp8_scale_copy.cuh produce_swapped_scales), the promotion multiplies per column.
TEST(SwapAb, BlockScaledFp8KernelCompiles) {
  expect_swapped_kernel_compiles(block_fp8_problem(13, 1000, 1024), "64x16x128 s8 c1 p g8 pb2 swap");
  expect_swapped_kernel_compiles(block_fp8_problem(32, 1000, 1024), "128x32x128 s8 c2 p g8 sk4 swap");
  expect_swapped_kernel_compiles(block_fp8_problem(32, 1000, 1024), "256x32x128 s4 c2 p g8 swap");
}

