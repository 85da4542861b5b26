// Grouped GEMM without a GPU (include/autogemm/grouped.hpp): the problem's rules and their
// errors, the contiguous layout's host helpers, the planner's choices for the MoE suite's
// shapes (legal for a grouped launch: tiles inside one group, no clusters along M, no split-K),
// what the spec describes (tensor maps over every group's rows and B), the cost model's B
// bytes per group, and NVRTC compiles of both layouts' kernels without spills.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/plan.hpp"
#include "codegen/kernel_source.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "plan/rules.hpp"

using namespace autogemm;

namespace {

GemmProblem grouped(Grouping grouping, int64_t groups, int64_t m, int64_t n, int64_t k,
                    int64_t expected_m = 0) {
  GemmProblem p;
  p.grouping = grouping;
  p.num_groups = groups;
  p.m = m;
  p.n = n;
  p.k = k;
  p.expected_m = expected_m;
  return p;
}

std::string rule_of(const GemmProblem& p) {
  try {
    validate(p);
  } catch (const InvalidArgument& e) {
    return e.argument() + ": " + e.rule();
  }
  return {};
}

}  // namespace

TEST(Grouped, ProblemRules) {
  EXPECT_EQ(rule_of(grouped(Grouping::contiguous, 8, 4096, 4096, 7168)), "");
  EXPECT_EQ(rule_of(grouped(Grouping::masked, 16, 64, 4096, 7168)), "");
  EXPECT_NE(rule_of(grouped(Grouping::contiguous, 8, 4100, 4096, 7168)).find("multiple of 128"),
            std::string::npos);
  EXPECT_NE(rule_of(grouped(Grouping::masked, 8, 100, 4096, 7168)).find("multiple of 64"),
            std::string::npos);
  EXPECT_NE(rule_of(grouped(Grouping::masked, 0, 64, 4096, 7168)).find("num_groups"),
            std::string::npos);
  GemmProblem fp8 = grouped(Grouping::masked, 4, 64, 4096, 7168);
  fp8.a_type = fp8.b_type = DType::e4m3;
  fp8.scaling = Scaling::block_1x128_128x128;
  EXPECT_EQ(rule_of(fp8), "");
  fp8.scaling = Scaling::per_tensor;
  EXPECT_NE(rule_of(fp8).find("block scales"), std::string::npos);
  GemmProblem nn = grouped(Grouping::contiguous, 4, 128, 256, 256);
  nn.layout = Layout::nn;
  EXPECT_NE(rule_of(nn).find("layout nt"), std::string::npos);
  GemmProblem padded = grouped(Grouping::contiguous, 4, 128, 256, 256);
  padded.lda = 512;
  EXPECT_NE(rule_of(padded).find("packed"), std::string::npos);
  GemmProblem several;   // an ordinary problem with groups
  several.m = several.n = several.k = 64;
  several.num_groups = 3;
  EXPECT_NE(rule_of(several).find("num_groups"), std::string::npos);
}

TEST(Grouped, ContiguousGroupsArePaddedRuns) {
  const GemmProblem p = grouped(Grouping::contiguous, 4, 512, 256, 256);
  const std::vector<int64_t> rows{1, 0, 129, 100};
  EXPECT_EQ(check_contiguous_groups(p, rows), (std::vector<int64_t>{0, 128, 128, 384}));
  EXPECT_EQ(contiguous_rows(rows), 512);
  EXPECT_THROW(contiguous_rows(std::vector<int64_t>{4, -1}), InvalidArgument);
  const std::vector<int32_t> index = contiguous_group_index(p, rows);
  ASSERT_EQ(index.size(), 512u);
  EXPECT_EQ(index[0], 0);
  EXPECT_EQ(index[1], -1);      // padding of group 0's run
  EXPECT_EQ(index[128], 2);
  EXPECT_EQ(index[256], 2);     // row 128 of group 2
  EXPECT_EQ(index[257], -1);
  EXPECT_EQ(index[384 + 99], 3);
  EXPECT_EQ(index[384 + 100], -1);
  try {
    check_contiguous_groups(p, std::vector<int64_t>{1, 0, 129, 200});
    FAIL() << "groups past m accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "group_rows[3]");
    EXPECT_NE(e.rule().find("m = 512"), std::string::npos) << e.rule();
  }
  EXPECT_THROW(check_contiguous_groups(p, std::vector<int64_t>{1, 2}), InvalidArgument);
  EXPECT_THROW(check_contiguous_groups(p, std::vector<int64_t>{1, -2, 3, 4}), InvalidArgument);
}

// The planner's choice for every row shape of the MoE suite is a legal grouped launch.
TEST(Grouped, PlannerChoicesAreLegalForGroupedLaunches) {
  const GpuInfo h200 = device_preset("h200");
  const struct {
    Grouping grouping;
    int64_t groups, m_per_group, n, k;
  } rows[] = {{Grouping::contiguous, 4, 8192, 4096, 7168}, {Grouping::contiguous, 8, 4096, 7168, 2048},
              {Grouping::contiguous, 32, 512, 4096, 7168}, {Grouping::masked, 1, 1024, 4096, 7168},
              {Grouping::masked, 16, 64, 4096, 7168},     {Grouping::masked, 32, 32, 4096, 7168}};
  for (const auto& r : rows) {
    const int64_t m = r.grouping == Grouping::masked
                          ? (r.m_per_group * 13 / 10 + 63) / 64 * 64
                          : r.groups * ((r.m_per_group * 13 / 10 + 127) / 128 * 128);
    const GemmProblem p = grouped(r.grouping, r.groups, m, r.n, r.k, r.m_per_group);
    const Plan plan = plan_gemm(p, h200);
    SCOPED_TRACE(plan.spec.text);
    ASSERT_FALSE(plan.spec.vendor) << plan.path_reason;
    const GemmConfig& c = plan.best().config;
    // Contiguous tiles stay inside the 128-row runs; masked tiles start at their group.
    if (p.grouping == Grouping::contiguous) EXPECT_LE(c.block_m, 128);
    EXPECT_EQ(c.cluster_m, 1);
    EXPECT_EQ(c.split_k, 1);
    EXPECT_FALSE(c.n_tail_kernel);
    for (const Candidate& candidate : plan.candidates)
      EXPECT_EQ(legality_violation(p, candidate.config, h200), "") << candidate.config.describe();
    // Tensor maps over every stored row of A and D, and B as groups x N rows.
    const KernelLaunch& k = plan.spec.kernels.front();
    for (const TensorMapSpec& map : k.tensor_maps) {
      if (map.operand == 'A' || map.operand == 'D') EXPECT_EQ(map.rows, p.stored_rows());
      if (map.operand == 'B') EXPECT_EQ(map.rows, p.num_groups * p.n);
    }
    // Each group reads its own B: at least that many DRAM bytes.
    EXPECT_GE(plan.best().prediction.dram_bytes, double(p.num_groups) * p.n * p.k * 2);
  }
}

TEST(Grouped, RulesRefuseTilesThatCrossGroups) {
  const GemmProblem masked = grouped(Grouping::masked, 8, 64, 4096, 7168);
  const GemmProblem contiguous = grouped(Grouping::contiguous, 8, 1024, 4096, 7168);
  EXPECT_NE(legality_violation(contiguous, GemmConfig::parse("256x128x64 s3 c2 p g8"),
                               device_preset("h200")),
            "");
  // Masked tiles start at their group's first row: any tile height.
  EXPECT_EQ(legality_violation(masked, GemmConfig::parse("128x128x64 s4 c2 p g8"),
                               device_preset("h200")),
            "");
  for (const char* text : {"128x128x64 s4 c2 p g8 cl2x1/b", "64x64x64 s6 c1 p g8 sk2"})
    EXPECT_NE(legality_violation(masked, GemmConfig::parse(text), device_preset("h200")), "")
        << text;
  EXPECT_EQ(legality_violation(masked, GemmConfig::parse("64x128x64 s6 c1 p g8"),
                               device_preset("h200")),
            "");
}

TEST(Grouped, KernelsCompileWithoutSpills) {
  for (Grouping grouping : {Grouping::contiguous, Grouping::masked})
    for (const char* text : {"128x256x64 s3 c2 p g8 cl1x2/a", "64x128x64 s6 c1 p g8",
                             "fp8 128x128x128 s5 c2 p g8", "fp8 64x128x128 s8 c1 p g8 pb2"}) {
      const bool fp8 = std::string(text).rfind("fp8 ", 0) == 0;
      // Masked FP8 takes 64-row tiles only (grouped_violation).
      if (fp8 && grouping == Grouping::masked && std::string(text).find("fp8 128") == 0) continue;
      GemmProblem p = grouped(grouping, 8, grouping == Grouping::masked ? 128 : 4096, 4096, 7168);
      if (fp8) {
        p.a_type = p.b_type = DType::e4m3;
        p.scaling = Scaling::block_1x128_128x128;
        text += 4;
      }
      const KernelSpec spec = make_kernel_spec(p, GemmConfig::parse(text), device_preset("h200"));
      const jit::CompiledKernel k =
          jit::compile_to_cubin(codegen::gemm_kernel_source(spec.kernels.front(), false));
      EXPECT_FALSE(k.cubin.empty()) << text;
      const jit::PtxasUsage usage = jit::parse_ptxas_usage(k.log);
      EXPECT_FALSE(usage.has_spills()) << to_string(grouping) << " " << text << "\n" << k.log;
      EXPECT_EQ(usage.stack_frame_bytes, 0) << text << "\n" << k.log;
      EXPECT_NE(k.ptx.find("cp.async.bulk.tensor"), std::string::npos);
    }
}

// The fused epilogue per group (bias and column scales [groups, N], a scale per stored row): the
// same tiles compile without spills, and the column vectors are read at the group's offset.
TEST(Grouped, FusedEpilogueKernelsCompileWithoutSpills) {
  for (Grouping grouping : {Grouping::contiguous, Grouping::masked})
    for (const char* text : {"128x256x64 s3 c2 p g8 cl1x2/a", "64x128x64 s6 c1 p g8",
                             "fp8 128x128x128 s5 c2 p g8", "fp8 64x128x128 s8 c1 p g8 pb2"}) {
      const bool fp8 = std::string(text).rfind("fp8 ", 0) == 0;
      if (fp8 && grouping == Grouping::masked && std::string(text).find("fp8 128") == 0) continue;
      GemmProblem p = grouped(grouping, 8, grouping == Grouping::masked ? 128 : 4096, 4096, 7168);
      p.epilogue.bias = DType::fp32;
      p.epilogue.activation = Activation::silu;
      p.epilogue.row_scale = p.epilogue.col_scale = true;
      if (fp8) {
        p.a_type = p.b_type = DType::e4m3;
        p.scaling = Scaling::block_1x128_128x128;
        text += 4;
      }
      validate(p);
      const KernelSpec spec = make_kernel_spec(p, GemmConfig::parse(text), device_preset("h200"));
      const jit::KernelSource source = codegen::gemm_kernel_source(spec.kernels.front(), false);
      EXPECT_NE(source.source.find("using epilogue = EpilogueFields<2, 4, true, true>"),
                std::string::npos);
      const jit::CompiledKernel k = jit::compile_to_cubin(source);
      const jit::PtxasUsage usage = jit::parse_ptxas_usage(k.log);
      EXPECT_FALSE(usage.has_spills()) << to_string(grouping) << " " << text << "\n" << k.log;
      EXPECT_EQ(usage.stack_frame_bytes, 0) << text << "\n" << k.log;
    }
}

// The gated epilogue per group (MoE SwiGLU): the planner's tiles and forced ones, BF16 and FP8,
// both layouts, compile without spills; D's maps are the groups' N / 2 columns.
TEST(Grouped, GatedEpilogueKernelsCompileWithoutSpills) {
  for (Grouping grouping : {Grouping::contiguous, Grouping::masked})
    for (const char* text : {"", "128x256x64 s3 c2 p g8 cl1x2/a", "64x128x64 s6 c1 p g8",
                             "fp8 ", "fp8 64x128x128 s8 c1 p g8 pb2"}) {
      const bool fp8 = std::string(text).rfind("fp8 ", 0) == 0;
      GemmProblem p = grouped(grouping, 8, grouping == Grouping::masked ? 128 : 4096, 4096, 7168);
      p.epilogue.bias = DType::bf16;
      p.epilogue.activation = Activation::silu;
      p.epilogue.gated = true;
      if (fp8) {
        p.a_type = p.b_type = DType::e4m3;
        p.scaling = Scaling::block_1x128_128x128;
        text += 4;
      }
      validate(p);
      const GpuInfo h200 = device_preset("h200");
      const GemmConfig config = *text ? GemmConfig::parse(text) : plan_gemm(p, h200).best().config;
      const KernelSpec spec = make_kernel_spec(p, config, h200);
      for (const TensorMapSpec& d : spec.kernels.front().tensor_maps)
        if (d.operand == 'D') EXPECT_EQ(d.row_length, 2048) << text;
      const jit::KernelSource source = codegen::gemm_kernel_source(spec.kernels.front(), false);
      EXPECT_NE(source.source.find("EpilogueFields<1, 4, false, false, true>"), std::string::npos);
      const jit::CompiledKernel k = jit::compile_to_cubin(source);
      const jit::PtxasUsage usage = jit::parse_ptxas_usage(k.log);
      EXPECT_FALSE(usage.has_spills())
          << to_string(grouping) << " " << config.describe() << "\n" << k.log;
      EXPECT_EQ(usage.stack_frame_bytes, 0) << config.describe() << "\n" << k.log;
    }
}

// Block-scaled FP8 grouped problems plan onto the tile family (masked: 64-row tiles).
TEST(Grouped, Fp8PlansAreLegal) {
  for (Grouping grouping : {Grouping::contiguous, Grouping::masked}) {
    GemmProblem p = grouped(grouping, 16, grouping == Grouping::masked ? 128 : 16 * 128, 4096,
                            7168, 64);
    p.a_type = p.b_type = DType::e4m3;
    p.scaling = Scaling::block_1x128_128x128;
    const Plan plan = plan_gemm(p, device_preset("h200"));
    ASSERT_FALSE(plan.spec.vendor) << plan.path_reason;
    EXPECT_EQ(legality_violation(p, plan.best().config, device_preset("h200")), "");
    if (grouping == Grouping::masked) EXPECT_EQ(plan.best().config.block_m, 64);
    EXPECT_FALSE(plan.spec.a_scales_k_block_major);
  }
}
