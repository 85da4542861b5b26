// CI checks of the device code without a GPU: every ladder configuration and the planner's
// choice for every public-suite shape compile with NVRTC for sm_90a, ptxas reports no spills,
// and the PTX holds the instructions the design promises (wgmma, TMA).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/wgrad.hpp"
#include "bench/suite.hpp"
#include "cli/cli_common.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "codegen/kernel_source.hpp"
#include "ladder/ladder.hpp"
#include "plan/kernel_spec.hpp"
#include "runtime/scale_layout.hpp"

using namespace autogemm;

namespace {

// The first (main) kernel's source of the spec a call with `c` would launch on an H100.
jit::KernelSource source_of(const GemmProblem& p, const GemmConfig& c) {
  return codegen::gemm_kernel_source(
      make_kernel_spec(p, c, device_preset("h100-sxm")).kernels.front(), false);
}

jit::CompiledKernel expect_source_compiles_clean(const jit::KernelSource& src, bool expect_tma) {
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
  return k;
}

jit::CompiledKernel expect_compiles_clean(const GemmProblem& p, const GemmConfig& c,
                                          bool expect_tma) {
  return expect_source_compiles_clean(source_of(p, c), expect_tma);
}

// One of the library's small helper kernels (an embedded header with an extern "C" kernel),
// compiled for sm_90a as launch_simple_kernel would.
jit::CompiledKernel compile_helper_kernel(const std::string& header, const std::string& kernel) {
  jit::KernelSource src;
  src.name = kernel + "_test";
  src.source = "#include \"" + header + "\"\n";
  src.kernel_name = kernel;
  src.arch = "sm_90a";
  jit::CompiledKernel k = jit::compile_to_cubin(src);
  EXPECT_FALSE(k.cubin.empty()) << header;
  EXPECT_FALSE(jit::parse_ptxas_usage(k.log).has_spills()) << k.log;
  return k;
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
  for (const auto& step : ladder::ladder_steps()) {
    SCOPED_TRACE(step.name);
    const KernelSpec spec =
        ladder::step_spec(bf16_problem(8192, 8192, 8192), step, device_preset("h100-sxm"));
    expect_source_compiles_clean(codegen::gemm_kernel_source(spec.kernels.front(), false),
                                 step.switches.load_path == LoadPath::tma);
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
  for (const char* config : {"64x64x64 s8 c1 p g8 sk4",
                             "128x64x64 s6 c2 p g8 cl2x1/b sk3"}) {
    SCOPED_TRACE(config);
    expect_compiles_clean(bf16_problem(128, 2112, 7168), GemmConfig::parse(config), true);
  }
}

// --- FP8 (block-scaled and per-tensor): the same kernel with promotion (fp8_promotion.cuh) ---

namespace {

GemmProblem fp8_problem(int64_t m, int64_t n, int64_t k, Scaling scaling) {
  GemmProblem p = cli::make_problem(m, n, k, "fp8", "nt", 0, 0, 0);
  p.scaling = scaling;
  return p;
}

// Compiles cleanly (no spills, TMA) and issues the k32 FP8 wgmma of the tile's width, with the
// scales copied into the stages by cp.async and tracked by the full barrier (block scaling,
// fp8_scale_copy.cuh) or read once by plain loads (per-tensor).
jit::CompiledKernel expect_fp8_compiles_clean(const GemmProblem& p, const GemmConfig& c) {
  const jit::CompiledKernel k = expect_compiles_clean(p, c, true);
  const std::string mma = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(c.block_n) +
                          "k32.f32." + std::string(to_string(p.a_type)) + "." +
                          std::string(to_string(p.b_type));
  EXPECT_NE(k.ptx.find(mma), std::string::npos) << c.describe() << ": no " << mma;
  EXPECT_EQ(k.ptx.find("k16.f32"), std::string::npos) << c.describe();
  if (p.scaling == Scaling::block_1x128_128x128) {
    EXPECT_NE(k.ptx.find("cp.async.ca.shared"), std::string::npos) << c.describe();
    EXPECT_NE(k.ptx.find("cp.async.mbarrier.arrive.noinc"), std::string::npos) << c.describe();
    EXPECT_NE(k.ptx.find("ld.shared.f32"), std::string::npos) << c.describe();
    EXPECT_EQ(k.ptx.find("ld.global.nc.f32"), std::string::npos) << c.describe();
  } else {
    EXPECT_NE(k.ptx.find("ld.global.nc.f32"), std::string::npos) << c.describe();
  }
  return k;
}

}  // namespace

TEST(KernelCompile, Fp8PlannersChoiceForEveryPublicSuiteShape) {
  const auto cases = bench::load_suite(std::string(AUTOGEMM_SOURCE_DIR) + "/bench/suites/gemm-public.csv");
  ASSERT_EQ(cases.size(), 20u);
  const GpuInfo h100 = device_preset("h100-sxm");
  for (const auto& c : cases) {
    // --dtype fp8 means block scaling (1x128 A, 128x128 B); per-tensor for the big-tile rows,
    // where registers are tightest.
    std::vector<Scaling> scalings = {Scaling::block_1x128_128x128};
    if (c.m >= 4096) scalings.push_back(Scaling::per_tensor);
    for (Scaling scaling : scalings) {
      const GemmProblem p = fp8_problem(c.m, c.n, c.k, scaling);
      SCOPED_TRACE(testing::Message() << c.m << "x" << c.n << "x" << c.k << " " << to_string(scaling));
      const Plan plan = plan_gemm(p, h100);
      ASSERT_EQ(plan.best().config.instruction, Instruction::wgmma) << plan.path_reason;
      EXPECT_EQ(plan.best().config.block_k, 128);
      expect_fp8_compiles_clean(plan.problem, plan.best().config);
    }
  }
}

// The planner's register rule for FP8 (accumulators + promotion temporaries + headroom within
// the setmaxnreg budget) must be enough: the widest tiles it allows compile without spills.
TEST(KernelCompile, Fp8WidestLegalTilesDoNotSpill) {
  const GpuInfo h100 = device_preset("h100-sxm");
  struct Case {
    const char* config;
    Scaling scaling;
  };
  for (const Case& c : {Case{"128x160x128 s4 c2 p g8", Scaling::block_1x128_128x128},
                        Case{"256x80x128 s4 c2 p g8", Scaling::block_1x128_128x128},
                        Case{"128x80x128 s4 c1 p g8", Scaling::block_1x128_128x128},
                        Case{"64x160x128 s4 c1 p g8", Scaling::block_1x128_128x128},
                        Case{"64x176x128 s4 c1 p g8", Scaling::per_tensor}}) {
    SCOPED_TRACE(c.config);
    const GemmProblem p = fp8_problem(4096, 7168, 7168, c.scaling);
    const GemmConfig config = GemmConfig::parse(c.config);
    EXPECT_EQ(legality_violation(p, config, h100), "");
    expect_fp8_compiles_clean(p, config);
  }
}

// Two promotion temporaries: the widest tiles the register rule allows (192 fragment registers
// in 232 or 240) compile without spills and without ptxas serialising the wgmmas (C7514: a
// wait_group 1 across the loop's back edge; gemm_kernel.cuh runs chunks of 8 k-blocks).
TEST(KernelCompile, Fp8OverlappedPromotionWidestTiles) {
  const GpuInfo h100 = device_preset("h100-sxm");
  for (const char* text : {"128x128x128 s5 c2 p g8 cl2x1/b pb2",
                           "64x128x128 s8 c1 p g8 pb2",
                           "64x64x128 s8 c1 p g8 sk4 pb2"}) {
    SCOPED_TRACE(text);
    const GemmProblem p = fp8_problem(4096, 7168, 7168, Scaling::block_1x128_128x128);
    const GemmConfig config = GemmConfig::parse(text);
    EXPECT_EQ(legality_violation(p, config, h100), "");
    expect_fp8_compiles_clean(p, config);
  }
  // One fragment more (216 registers) is rejected by the planner: ptxas would spill it.
  const GemmProblem p = fp8_problem(4096, 7168, 7168, Scaling::block_1x128_128x128);
  EXPECT_NE(legality_violation(p, GemmConfig::parse("128x144x128 s5 c2 p g8 pb2"), h100), "");
  EXPECT_NE(legality_violation(p, GemmConfig::parse("64x144x128 s6 c1 p g8 pb2"), h100), "");
}

// Ordered issue: with one temporary the slabs go one at a time, so 256x128 and 128x192 hold
// 192 fragment registers like pb2's 128x128 and compile without spills; the rules reject it
// for one consumer, without the producer warpgroup, and for 16-bit inputs.
TEST(KernelCompile, OrderedIssueWidestTiles) {
  const GpuInfo h100 = device_preset("h100-sxm");
  const GemmProblem p = fp8_problem(4096, 7168, 7168, Scaling::block_1x128_128x128);
  for (const char* text : {"256x128x128 s3 c2 p g8 cl2x1/b oi",
                           "128x192x128 s4 c2 p g8 cl2x1/b oi",
                           "128x128x128 s5 c2 p g8 pb2 oi"}) {
    SCOPED_TRACE(text);
    const GemmConfig config = GemmConfig::parse(text);
    EXPECT_EQ(legality_violation(p, config, h100), "");
    const jit::CompiledKernel k = expect_fp8_compiles_clean(p, config);
    EXPECT_NE(k.ptx.find("bar.arrive"), std::string::npos);   // the turn hand-off
  }
  // Without ordered issue 256x128 needs two slab temporaries: 256 registers.
  EXPECT_NE(legality_violation(p, GemmConfig::parse("256x128x128 s3 c2 p g8"), h100), "");
  EXPECT_NE(legality_violation(p, GemmConfig::parse("128x128x128 s6 c1 p g8 oi"), h100), "");
  EXPECT_THROW(source_of(p, GemmConfig::parse("128x128x128 s6 c1 p g8 oi")), InvalidArgument);
  const GemmProblem bf16 = bf16_problem(4096, 4096, 4096);
  EXPECT_NE(legality_violation(bf16, GemmConfig::parse("128x128x64 s4 c2 p g8 oi"), h100), "");
  EXPECT_THROW(source_of(bf16, GemmConfig::parse("128x128x64 s4 c2 p g8 oi")), InvalidArgument);
}

// Ping-pong consumers: the weight gradients' tiles (dense and experts') and a forward one
// compile without spills, each consumer with a whole tile's accumulators, and pass the turns.
TEST(KernelCompile, PingPongConsumers) {
  const GpuInfo h200 = device_preset("h200");
  const GemmProblem dense = weight_gradient_problem(4096, 4096, 14336);
  const GemmProblem experts = grouped_weight_gradient_problem(16384, 4096, 7168, 32);
  const GemmProblem forward = bf16_problem(4096, 4096, 4096);
  const auto fused = [](Activation a, bool gated) {
    GemmProblem p = bf16_problem(4096, 4096, 512);
    p.epilogue.bias = DType::fp32;
    p.epilogue.activation = a;
    p.epilogue.row_scale = p.epilogue.col_scale = true;
    p.epilogue.gated = gated;
    return p;
  };
  for (const auto& [p, text] : std::vector<std::pair<GemmProblem, const char*>>{
           {dense, "128x128x64 s5 c2 p g8 pp"},
           {dense, "128x128x64 s5 c2 p g8 cl2x1/b pp"},
           {experts, "128x128x64 s5 c2 p g8 pp"},
           {forward, "64x256x64 s4 c2 p g8 pp"},
           {fused(Activation::gelu_erf, false), "128x128x64 s5 c2 p g8 pp"},
           {fused(Activation::silu, true), "128x128x64 s5 c2 p g8 pp"},
           {fused(Activation::gelu_tanh, false), "64x256x64 s4 c2 p g8 cl2x1/b pp"}}) {
    SCOPED_TRACE(text);
    const GemmConfig config = GemmConfig::parse(text);
    ASSERT_EQ(legality_violation(p, config, h200), "");
    const jit::KernelSource src = codegen::gemm_kernel_source(
        make_kernel_spec(p, config, h200).kernels.front(), false);
    EXPECT_NE(src.name.find("_pp"), std::string::npos) << src.name;
    const jit::CompiledKernel k = expect_source_compiles_clean(src, true);
    EXPECT_NE(k.ptx.find("bar.arrive"), std::string::npos);   // the turns' hand-offs
  }
  // A bias with gelu_tanh spills on two-slab ping-pong tiles of 128 accumulators.
  EXPECT_NE(legality_violation(fused(Activation::gelu_tanh, false),
                               GemmConfig::parse("128x128x64 s5 c2 p g8 pp"), h200)
                .find("gelu_tanh"),
            std::string::npos);
}

// The copy of A or B into rows TMA can describe (plan/operand_copy.hpp) compiles with NVRTC:
// no shared memory, no spills, and each chunk leaves in one 16-byte store.
TEST(KernelCompile, PadRowsKernel) {
  const jit::CompiledKernel k = compile_helper_kernel("sm90/pad_rows.cuh", "autogemm_pad_rows");
  EXPECT_EQ(jit::parse_ptxas_usage(k.log).static_smem_bytes, 0) << k.log;
  EXPECT_NE(k.ptx.find("st.global.v4.u32"), std::string::npos);
}

// The A-scale transposition the launcher runs for large M compiles with NVRTC, with its 32 x 33
// staging tile as the only shared memory, and the launcher's rule picks it by M and scaling.
TEST(KernelCompile, ScaleTransposeKernel) {
  const jit::CompiledKernel k =
      compile_helper_kernel("sm90/scale_transpose.cuh", "autogemm_scale_a_transpose");
  EXPECT_EQ(jit::parse_ptxas_usage(k.log).static_smem_bytes, 32 * 33 * 4) << k.log;

  // 128-row tiles: K = 8192 (64 k-blocks, 32 KB of scale rows) transposes, 8064 does not;
  // 256-row tiles already from 32 k-blocks. Small M, per-tensor scales: never.
  const GemmConfig tile128 = GemmConfig::parse("128x128x128 s5 c2 p g8 pb2");
  const GemmConfig tile256 = GemmConfig::parse("256x128x128 s3 c2 p g8 oi");
  GemmProblem p = fp8_problem(plan::kTransposedAScalesMinM, 7168, 8192, Scaling::block_1x128_128x128);
  EXPECT_TRUE(plan::a_scales_k_block_major(p, tile128));
  const runtime::AScaleStrides natural = runtime::natural_a_scale_strides(p);
  EXPECT_EQ(natural.row, 64);
  EXPECT_EQ(natural.k_block, 1);
  p.k = 8064;
  EXPECT_FALSE(plan::a_scales_k_block_major(p, tile128));
  EXPECT_TRUE(plan::a_scales_k_block_major(p, tile256));
  p.k = 8192;
  p.m = plan::kTransposedAScalesMinM - 1;
  EXPECT_FALSE(plan::a_scales_k_block_major(p, tile128));
  p.m = 4096;
  p.scaling = Scaling::per_tensor;
  EXPECT_FALSE(plan::a_scales_k_block_major(p, tile128));
}

// Tiles that straddle B scale blocks (96, 48: split known at tile start), tiny N, clusters with
// multicast, a non-persistent grid, fp32/fp16 output, e5m2 x e4m3, split-K, K not a multiple
// of 128, and per-tensor scaling with a four-stage ring.
TEST(KernelCompile, Fp8Variants) {
  struct Case {
    const char* config;
    int64_t m, n, k;
    Scaling scaling;
    DType a, b, d;
  };
  const Scaling blk = Scaling::block_1x128_128x128, pt = Scaling::per_tensor;
  const DType e4 = DType::e4m3, e5 = DType::e5m2;
  for (const Case& c : {
           Case{"128x96x128 s6 c2 p g8", 4096, 7168, 7232, blk, e4, e4, DType::bf16},
           Case{"64x48x128 s8 c1 p g8", 64, 2112, 7168, blk, e4, e4, DType::bf16},
           Case{"64x8x128 s8 c1 p g8", 16, 8, 1040, blk, e4, e4, DType::fp32},
           Case{"128x128x128 s5 c2 p g8 cl2x1/b", 4096, 4096, 4096, blk, e4, e4, DType::bf16},
           Case{"64x32x128 s8 c1 p g8 cl1x2/a", 128, 2112, 7168, blk, e4, e4, DType::bf16},
           Case{"128x144x128 s4 c2 g8", 4096, 2112, 7168, blk, e5, e4, DType::fp32},
           Case{"128x112x128 s5 c2 p g8", 1000, 1000, 1008, pt, e4, e5, DType::fp16},
           Case{"64x64x128 s8 c1 p g8 sk4", 64, 2112, 7168, blk, e4, e4, DType::bf16},
           Case{"128x64x128 s4 c2 p g8", 512, 512, 512, pt, e4, e4, DType::bf16}}) {
    SCOPED_TRACE(c.config);
    GemmProblem p = fp8_problem(c.m, c.n, c.k, c.scaling);
    p.a_type = c.a;
    p.b_type = c.b;
    p.d_type = c.d;
    expect_fp8_compiles_clean(p, GemmConfig::parse(c.config));
  }
}

TEST(KernelCompile, Fp8SourceRules) {
  GemmProblem p = fp8_problem(256, 1024, 1024, Scaling::block_1x128_128x128);
  // A 176-column tile can touch three 128-column B scale blocks; the promotion selects from two.
  GemmConfig wide = GemmConfig::parse("64x176x128 s4 c1 p g8");
  try {
    source_of(p, wide);
    ADD_FAILURE() << "block_n = 176 accepted for block scaling";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("block_n = 176"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("B scale blocks"), std::string::npos) << e.what();
  }
  p.scaling = Scaling::per_tensor;   // one scale: any width
  EXPECT_NO_THROW(source_of(p, wide));
  GemmConfig bf16_k = GemmConfig::parse("64x64x64 s4 c1 p g8");
  EXPECT_THROW(source_of(p, bf16_k), InvalidArgument);   // 64 bytes of K
  const std::string source = source_of(p, GemmConfig::parse("64x64x128 s4 c1 p g8")).source;
  EXPECT_NE(source.find("in_bytes = 1, scaling = 1"), std::string::npos) << source;
}

TEST(KernelCompile, TwoAtomKBlocks) {
  for (Layout layout : {Layout::nt, Layout::tn, Layout::nn}) {
    GemmProblem p = bf16_problem(1000, 2112, 7168);
    p.layout = layout;
    SCOPED_TRACE(std::string(to_string(layout)));
    expect_compiles_clean(p, GemmConfig::parse("128x128x128 s3 c1 p g8"), true);
    expect_compiles_clean(p, GemmConfig::parse("128x192x128 s2 c2 p g8 cl2x1/b"), true);
  }
}

// --- the fused epilogue (sm90/fused_epilogue.cuh): every store path, both families ----------

namespace {

Epilogue fused(Activation a, DType bias, bool scales = true) {
  Epilogue e;
  e.bias = bias;
  e.activation = a;
  e.row_scale = e.col_scale = scales;
  return e;
}

}  // namespace

// Each variant compiles for sm_90a without spills (the widest tiles, where registers are
// tightest, included), and reads its vectors by the read-only path.
TEST(KernelCompile, FusedEpilogueVariants) {
  struct Case {
    GemmProblem problem;
    const char* config;   // nullptr: the planner's choice
    Epilogue epilogue;
    bool tma;
  };
  GemmProblem staged = bf16_problem(333, 1001, 64);   // D staged, stored by the threads
  staged.d_type = DType::fp16;
  staged.ldd = 1001;
  GemmProblem fp8 = fp8_problem(4096, 7168, 2048, Scaling::block_1x128_128x128);
  const Case cases[] = {
      {bf16_problem(4096, 4096, 4096), nullptr, fused(Activation::silu, DType::bf16), true},
      {bf16_problem(4096, 4096, 4096), "128x256x64 s3 c2 p g8 cl2x1/b",
       fused(Activation::gelu_erf, DType::fp32), true},
      {staged, nullptr, fused(Activation::gelu_tanh, DType::fp32), true},
      {bf16_problem(32, 4096, 2048), "64x32x128 s8 c1 p g8 sk2 swap",
       fused(Activation::silu, DType::bf16), true},
      {bf16_problem(32, 1001, 1000), "64x32x64 s8 c1 p g8 swap",   // D^T by the threads
       fused(Activation::relu, DType::fp32), true},
      {bf16_problem(128, 2112, 7168), "128x64x64 s6 c2 p g8 cl2x1/b sk3",
       fused(Activation::relu, DType::bf16, false), true},
      {fp8, nullptr, fused(Activation::gelu_tanh, DType::bf16), true},
  };
  for (const Case& c : cases) {
    GemmProblem p = c.problem;
    p.epilogue = c.epilogue;
    const GemmConfig config =
        c.config ? GemmConfig::parse(c.config) : plan_gemm(p, device_preset("h100-sxm")).best().config;
    SCOPED_TRACE(config.describe() + " " + p.epilogue.describe());
    const jit::CompiledKernel k = expect_compiles_clean(p, config, c.tma);
    EXPECT_NE(k.ptx.find("ld.global.nc"), std::string::npos);
    std::printf("%s: %d registers\n", source_of(p, config).name.c_str(),
                jit::parse_ptxas_usage(k.log).registers);
  }
  // The ladder's plain steps (register stores), and the decode family.
  const auto steps = ladder::ladder_steps();
  GemmProblem ladder_problem = bf16_problem(515, 1000, 1000);
  ladder_problem.epilogue = fused(Activation::silu, DType::bf16);
  expect_source_compiles_clean(
      codegen::gemm_kernel_source(
          ladder::step_spec(ladder_problem, steps.front(), device_preset("h100-sxm")).kernels.front(),
          false),
      false);
  for (const char* config : {"mma 16x32x128 sk4", "mma 8x64x128 s3"}) {
    GemmProblem p = bf16_problem(11, 4096, 4096);
    p.epilogue = fused(Activation::gelu_erf, DType::bf16);
    const jit::CompiledKernel k = jit::compile_to_cubin(source_of(p, GemmConfig::parse(config)));
    EXPECT_FALSE(jit::parse_ptxas_usage(k.log).has_spills()) << config << "\n" << k.log;
    EXPECT_NE(k.ptx.find("mma.sync.aligned"), std::string::npos) << config;
  }
}

// bench --epilogue's unfused baseline: the same arithmetic as a kernel of its own.
TEST(KernelCompile, UnfusedEpilogueKernel) {
  const jit::CompiledKernel k =
      compile_helper_kernel("bench/unfused_epilogue.cuh", "autogemm_unfused_epilogue");
  EXPECT_NE(k.ptx.find("ld.global.nc"), std::string::npos);
}

// Rowwise FP8 (a scale per row of A and of B, applied by the fused epilogue): 128x128 tiles,
// two temporaries, swapped and split-K tiles, with and without a bias and SiLU, compile without
// spills, and the main loop reads no scale (its promotion multiplies by nothing).
TEST(KernelCompile, RowwiseFp8) {
  for (const char* config : {"128x128x128 s4 c2 p g8", "128x128x128 s5 c2 p g8 cl2x1/b pb2",
                             "64x32x128 s8 c1 p g8 sk2 swap", "128x64x128 s6 c2 p g8 sk3",
                             "64x48x128 s8 c1 p g8 sk3 pb2"})
    for (bool fused_bias : {false, true}) {
      GemmProblem p = fp8_problem(4096, 7168, 2048, Scaling::rowwise);
      if (fused_bias) p.epilogue = fused(Activation::silu, DType::bf16, false);
      SCOPED_TRACE(std::string(config) + (fused_bias ? " bias silu" : ""));
      const jit::CompiledKernel k = expect_compiles_clean(p, GemmConfig::parse(config), true);
      EXPECT_NE(k.ptx.find("ld.global.nc"), std::string::npos);   // the epilogue's vectors
    }
}

// The transposed FP8 quantisation of weight gradients' operands compiles without spills, its
// tile of x in registers and only its column maxima and transposed bytes in shared memory.
TEST(KernelCompile, TransposedQuantisationKernel) {
  const jit::CompiledKernel k = compile_helper_kernel("quant/quantize_1x128_transposed.cuh",
                                                      "autogemm_quantize_fp8_1x128_transposed");
  const jit::PtxasUsage usage = jit::parse_ptxas_usage(k.log);
  EXPECT_LE(usage.static_smem_bytes, 8 * 128 * 4 + 128 * 4 + 128 * 144) << k.log;
  EXPECT_NE(k.ptx.find("cvt.rn.satfinite.e4m3x2.f32"), std::string::npos);
  EXPECT_NE(k.ptx.find("st.global.v4"), std::string::npos);
}

// Row-band signals (GemmProblem::signal_bands): the tensor-parallel band configurations compile
// clean with the band walk and the signal (the acq_rel add and the system-scope release after
// the bulk stores' completion) and C's band gate (the system-scope acquire before C's load), FP8
// and ping-pong included; the rules refuse what the band walk cannot do.
TEST(KernelCompile, RowBandSignals) {
  for (const auto& [dtype, config] :
       {std::pair{DType::bf16, "128x256x64 s3 c2 p g8 cl2x1/b"},
        std::pair{DType::bf16, "128x224x64 s3 c2 p g8"}, std::pair{DType::bf16, "128x128x64 s4 c2 p g8 pp"},
        std::pair{DType::e4m3, "128x128x128 s5 c2 p g8 cl2x1/b"}}) {
    GemmProblem p = bf16_problem(3840, 28672, 4096);
    if (dtype == DType::e4m3) p.a_type = p.b_type = DType::e4m3, p.scaling = Scaling::block_1x128_128x128;
    p.signal_bands = 4;
    const jit::CompiledKernel k = expect_compiles_clean(p, GemmConfig::parse(config), true);
    EXPECT_NE(k.ptx.find("atom.acq_rel.gpu.global.add.u32"), std::string::npos) << config;
    EXPECT_NE(k.ptx.find("fence.acq_rel.sys"), std::string::npos) << config;
    EXPECT_NE(k.ptx.find("fence.proxy.async.global"), std::string::npos) << config;
    EXPECT_NE(k.ptx.find("ld.acquire.sys.global.u32"), std::string::npos) << config;
    p.signal_bands = 0;   // and the plain kernel has none of it
    const std::string plain = jit::compile_to_cubin(source_of(p, GemmConfig::parse(config))).ptx;
    EXPECT_EQ(plain.find("fence.acq_rel.sys"), std::string::npos) << config;
    EXPECT_EQ(plain.find("ld.acquire.sys"), std::string::npos) << config;
  }
  GemmProblem p = bf16_problem(3840, 28672, 4096);
  p.signal_bands = 2;
  const GpuInfo h100 = device_preset("h100-sxm");
  for (const char* refused : {"128x256x64 s3 c2 p g8 sk2", "128x256x64 s3 c2 p g8n",
                              "mma 16x32x128 sk4"}) {
    const std::string why = legality_violation(p, GemmConfig::parse(refused), h100);
    EXPECT_NE(why.find("signal_bands"), std::string::npos) << refused << ": " << why;
  }
  EXPECT_THROW(make_kernel_spec(p, GemmConfig::parse("128x256x64 s3 c2 p g8 sk2"), h100),
               InvalidArgument);
}
