// The fused epilogue (issue 50) without a GPU: its spelling, validation, the per-call vectors'
// checks, the planner's refusal of cuBLASLt for it, the generated source (a plain problem's is
// what it was; a fused one's differs by one Config line and the name), the plan and compile
// commands, and the float64 reference the GPU tests use.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>
#include <string>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/multi_gpu.hpp"
#include "autogemm/plan.hpp"
#include "bench/epilogue_reference.hpp"
#include "cli_test_util.hpp"
#include "codegen/kernel_source.hpp"
#include "error_test_util.hpp"
#include "plan_test_util.hpp"
#include "runtime/cublaslt.hpp"
#include "runtime/epilogue_operands.hpp"

using namespace autogemm;
using autogemm::testing::expect_invalid;
using autogemm::testing::run_cli;

namespace {

GemmProblem problem(int64_t m, int64_t n, int64_t k, Epilogue e = {}) {
  GemmProblem p = autogemm::testing::problem(m, n, k);
  p.epilogue = e;
  return p;
}

Epilogue silu_bias() {
  Epilogue e;
  e.bias = DType::bf16;
  e.activation = Activation::silu;
  e.row_scale = e.col_scale = true;
  return e;
}

std::string source(const GemmProblem& p, const char* config) {
  return codegen::gemm_kernel_source(
             make_kernel_spec(p, GemmConfig::parse(config), device_preset("h100-sxm")).kernels.front(),
             false)
      .source;
}

}  // namespace

TEST(Epilogue, Spelling) {
  const Epilogue e = parse_epilogue("bias,gelu_tanh,row_scale", DType::bf16);
  EXPECT_EQ(e.bias, DType::bf16);
  EXPECT_EQ(e.activation, Activation::gelu_tanh);
  EXPECT_TRUE(e.row_scale);
  EXPECT_FALSE(e.col_scale);
  EXPECT_EQ(e.describe(), "row_scale, bias bf16, gelu_tanh");
  EXPECT_EQ(e.token(), "rs_bbf16_gelu_tanh");
  EXPECT_EQ(e.formula(), "gelu_tanh(alpha * acc * row_scale[m] + bias[n]) + beta * C");
  EXPECT_EQ(parse_epilogue("bias=fp32,silu,col_scale", DType::bf16).token(), "cs_bfp32_silu");
  EXPECT_EQ(parse_epilogue("gelu", DType::bf16).activation, Activation::gelu_tanh);
  EXPECT_TRUE(parse_epilogue("none", DType::bf16).empty());
  EXPECT_EQ(Epilogue{}.describe(), "none");
  EXPECT_EQ(Epilogue{}.token(), "");
  EXPECT_NE(expect_invalid([] { parse_epilogue("bias,tanh", DType::bf16); }, "epilogue")
                .find("tanh"),
            std::string::npos);
  expect_invalid([] { parse_epilogue("bias=fp16", DType::bf16); }, "epilogue");
  expect_invalid([] { parse_epilogue("relu,silu", DType::bf16); }, "epilogue");
}

TEST(Epilogue, Validation) {
  Epilogue e;
  e.bias = DType::fp16;
  EXPECT_NE(expect_invalid([&] { validate(problem(64, 64, 64, e)); }, "epilogue.bias")
                .find("bf16 or fp32"),
            std::string::npos);
  e.bias = DType::fp32;
  validate(problem(64, 64, 64, e));
  GemmProblem grouped = problem(256, 512, 512, silu_bias());   // vectors per group
  grouped.grouping = Grouping::contiguous;
  grouped.num_groups = 2;
  validate(grouped);
}

// The operand checks of a problem with epilogue `e`.
static void check_epilogue_operands(const Epilogue& e, const GemmOperands& o) {
  GemmProblem p;
  p.m = p.n = p.k = 64;
  p.epilogue = e;
  runtime::check_epilogue_operands(p, o);
}

TEST(Epilogue, OperandChecks) {
  const Epilogue e = silu_bias();
  alignas(16) static float storage[16];
  GemmOperands o;
  o.bias = storage;
  o.row_scale = storage;
  o.col_scale = storage;
  check_epilogue_operands(e, o);
  GemmOperands missing = o;
  missing.col_scale = nullptr;
  EXPECT_NE(expect_invalid([&] { check_epilogue_operands(e, missing); }, "col_scale")
                .find("problem.epilogue.col_scale"),
            std::string::npos);
  // A vector the epilogue does not read is a mistake, not a no-op.
  EXPECT_NE(expect_invalid([&] { check_epilogue_operands(Epilogue{}, o); }, "bias")
                .find("does not read it"),
            std::string::npos);
  // Elements are read one by one: a vector starting at any element is taken (a slice of a
  // longer one), a pointer inside an element is not.
  GemmOperands sliced = o;
  sliced.bias = reinterpret_cast<const char*>(storage) + 2;   // bf16: element 1
  sliced.row_scale = storage + 1;
  check_epilogue_operands(e, sliced);
  GemmOperands odd = o;
  odd.bias = reinterpret_cast<const char*>(storage) + 1;
  EXPECT_NE(expect_invalid([&] { check_epilogue_operands(e, odd); }, "bias")
                .find("2-byte aligned"),
            std::string::npos);
  odd = o;
  odd.col_scale = reinterpret_cast<const float*>(reinterpret_cast<const char*>(storage) + 2);
  expect_invalid([&] { check_epilogue_operands(e, odd); }, "col_scale");
}

// cuBLASLt has no SiLU or row scales: where only it could run, a fused call is refused, and
// where the planner weighs copying unaligned rows against it, it is not a candidate.
TEST(Epilogue, NeverPlannedOnCuBlasLt) {
  const std::string why = expect_invalid(
      [] { plan_gemm(problem(512, 512, 512, silu_bias()), device_preset("a100-80g")); },
      "epilogue");
  EXPECT_NE(why.find("only autogemm's kernels fuse it"), std::string::npos) << why;
  GemmProblem unaligned = problem(1300, 1777, 1001, silu_bias());
  unaligned.layout = Layout::tn;
  unaligned.a_type = unaligned.b_type = DType::fp16;
  const Plan plan = plan_gemm(unaligned, device_preset("h100-sxm"));
  for (const Candidate& c : plan.candidates)
    EXPECT_NE(c.config.instruction, Instruction::vendor) << c.config.describe();
  EXPECT_EQ(plan.spec.problem.epilogue, silu_bias());
}

// A plain problem's generated source has no trace of the epilogue (so its kernels and cache
// keys are what they were before it existed), and a fused one's differs from it by exactly one
// Config line and the name's suffix, in both families.
TEST(Epilogue, GeneratedSourceOfAPlainProblemUnchanged) {
  for (const char* config : {"128x128x64 s4 c2 p g8", "64x32x128 s8 c1 p g8 sk2 swap",
                             "mma 16x32x128 sk4"}) {
    SCOPED_TRACE(config);
    const std::string plain = source(problem(1000, 1024, 520), config);
    EXPECT_EQ(plain.find("pilogue"), std::string::npos) << plain;
    EXPECT_EQ(plain.find("_epi_"), std::string::npos);
    std::string fused = source(problem(1000, 1024, 520, silu_bias()), config);
    const std::string line =
        "  using epilogue = EpilogueFields<1, 4, true, true>;   // row_scale, col_scale, bias "
        "bf16, silu\n";
    ASSERT_NE(fused.find(line), std::string::npos) << fused;
    fused.erase(fused.find(line), line.size());
    for (std::size_t at; (at = fused.find("_epi_rs_cs_bbf16_silu")) != std::string::npos;)
      fused.erase(at, std::string("_epi_rs_cs_bbf16_silu").size());
    EXPECT_EQ(fused, plain);
  }
}

// The launcher keeps one compiled kernel per identity: two epilogues that compile to different
// kernels must not share one (a bf16 bias's kernel read an fp32 bias as bf16 on an H200).
TEST(Epilogue, SelectsTheCompiledKernel) {
  const auto identity = [](const Epilogue& e) {
    return make_kernel_spec(problem(1000, 1024, 520, e), GemmConfig::parse("128x128x64 s4 c2 p g8"),
                            device_preset("h100-sxm"))
        .kernels.front()
        .identity;
  };
  Epilogue fp32_bias = silu_bias(), relu = silu_bias();
  fp32_bias.bias = DType::fp32;
  relu.activation = Activation::relu;
  const std::string plain = identity(Epilogue{}), fused = identity(silu_bias());
  EXPECT_NE(plain, fused);
  EXPECT_NE(fused, identity(fp32_bias));
  EXPECT_NE(fused, identity(relu));
  EXPECT_EQ(fused, identity(silu_bias()));
}

TEST(Epilogue, PlanCommandShowsIt) {
  const auto run = run_cli(
      "plan --m 4096 --n 4096 --k 4096 --bias bf16 --activation silu --row-scale --device h100-sxm");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("epilogue   row_scale, bias bf16, silu: D = silu(alpha * acc * "
                         "row_scale[m] + bias[n]) + beta * C, fused"),
            std::string::npos)
      << run.out;
  const auto json = run_cli("plan --m 64 --n 4096 --k 4096 --bias fp32 --json --device h100-sxm");
  EXPECT_EQ(json.exit_code, 0) << json.out;
  EXPECT_NE(json.out.find("\"epilogue\": \"bias fp32\""), std::string::npos) << json.out;
  const auto plain = run_cli("plan --m 64 --n 4096 --k 4096 --device h100-sxm");
  EXPECT_EQ(plain.out.find("epilogue"), std::string::npos) << plain.out;
  for (const char* bad : {"--bias fp16", "--activation tanh"}) {
    const auto refused = run_cli(std::string("plan --m 64 --n 64 --k 64 --device h100-sxm ") + bad);
    EXPECT_EQ(refused.exit_code, 2) << bad << "\n" << refused.out;
    EXPECT_NE(refused.out.find(std::string(bad).substr(0, std::string(bad).find(' '))),
              std::string::npos)
        << refused.out;
  }
  const auto split = run_cli("plan --m 4096 --n 4096 --k 4096 --gpus 2 --bias bf16 --device h100-sxm");
  EXPECT_EQ(split.exit_code, 2) << split.out;
  EXPECT_NE(split.out.find("--bias = bf16: is not taken with --gpus"), std::string::npos)
      << split.out;
}

TEST(Epilogue, Float64Reference) {
  EXPECT_DOUBLE_EQ(bench::activation_reference(Activation::relu, -2.0), 0.0);
  EXPECT_NEAR(bench::activation_reference(Activation::gelu_erf, 1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(bench::activation_reference(Activation::gelu_tanh, 1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(bench::activation_reference(Activation::silu, 1.0), 0.7310585786300049, 1e-15);
  Epilogue e = silu_bias();
  e.activation = Activation::relu;
  bench::EpilogueVectors v{{1.0, -10.0}, {2.0}, {0.5, 3.0}};
  std::vector<double> d = {4.0, 1.0};   // 1 x 2
  bench::apply_epilogue_reference(e, v, 1, 2, 0.5, 2.0, {1.0, 1.0}, 2, d);
  // relu(0.5 * 4 * 2 * 0.5 + 1) + 2 = 5; relu(0.5 * 1 * 2 * 3 - 10) + 2 = 2.
  EXPECT_DOUBLE_EQ(d[0], 5.0);
  EXPECT_DOUBLE_EQ(d[1], 2.0);
}

// The cost model charges the fused epilogue's arithmetic per output element (plan/cost_model.cpp,
// fitted on 128x256 tiles of 4096 x 32768 x 512, H200): nothing for a plain problem, more for a
// longer activation, more for a two-MUFU activation into fp32 D, twice per element on a
// one-consumer tile.
TEST(Epilogue, CostModelChargesItsArithmetic) {
  const GpuInfo h200 = device_preset("h200");
  const auto time = [&](Epilogue e, const char* config, DType d_type = DType::bf16) {
    GemmProblem p = problem(4096, 32768, 512, e);
    p.d_type = d_type;
    return predict(p, GemmConfig::parse(config), h200).time_us;
  };
  const char* two = "128x256x64 s3 c2 p g8";
  const double plain = time({}, two);
  Epilogue bias, gelu, erf;
  bias.bias = DType::bf16;
  gelu = bias;
  gelu.activation = Activation::gelu_tanh;
  erf = bias;
  erf.activation = Activation::gelu_erf;
  // 31 tiles per SM at ~1.0, 2.1 and 4.3 us a tile (gelu_tanh into bf16 D: one tanh.approx).
  EXPECT_NEAR(time(bias, two) - plain, 32.0, 4.0);
  EXPECT_NEAR(time(gelu, two) - plain, 66.0, 6.0);
  EXPECT_NEAR(time(erf, two) - plain, 135.0, 10.0);
  // Into fp32 D, x / (1 + e^-y) keeps its exp and reciprocal: ~3.2 us a tile.
  EXPECT_NEAR(time(gelu, two, DType::fp32) - time({}, two, DType::fp32), 100.0, 8.0);
  const char* one = "64x256x64 s4 c1 p g8";
  const double per_tile_two = (time(gelu, two) - plain) / (128.0 * 256);
  const double per_tile_one = (time(gelu, one) - time({}, one)) / (64.0 * 256);
  EXPECT_GT(per_tile_one, 1.5 * per_tile_two);
}

// The gated epilogue and FP8 output: spelling, the problem's rules, the planner's and the
// generated Config's, and the interleaving helper.
TEST(Epilogue, GatedAndFp8OutputRules) {
  Epilogue swiglu = parse_epilogue("silu,gated", DType::bf16);
  EXPECT_TRUE(swiglu.gated);
  EXPECT_EQ(swiglu.describe(), "gated silu");
  EXPECT_EQ(swiglu.token(), "silu_glu");
  GemmProblem p = problem(64, 4096, 1024, swiglu);
  EXPECT_EQ(p.d_cols(), 2048);
  EXPECT_EQ(p.ldd_or_packed(), 2048);
  validate(p);
  // The problem's rules, each naming its argument.
  EXPECT_NE(expect_invalid([&] { validate(problem(64, 4104, 1024, swiglu)); }, "n").find("16"),
            std::string::npos);
  Epilogue no_activation;
  no_activation.gated = true;
  expect_invalid([&] { validate(problem(64, 4096, 1024, no_activation)); }, "epilogue.activation");
  GemmProblem narrow_ldd = p;
  narrow_ldd.ldd = 2000;
  EXPECT_NE(expect_invalid([&] { validate(narrow_ldd); }, "ldd").find("N / 2"), std::string::npos);
  GemmProblem fp8_out = problem(100, 1000, 512);
  fp8_out.d_type = DType::e4m3;
  expect_invalid([&] { validate(fp8_out); }, "n");
  fp8_out.n = 1024;
  validate(fp8_out);
  fp8_out.reads_c = true;
  expect_invalid([&] { validate(fp8_out); }, "reads_c");
  fp8_out.reads_c = false;
  fp8_out.ldd = 1032;
  expect_invalid([&] { validate(fp8_out); }, "ldd");
  fp8_out.ldd = 0;
  // The planner: 128-column scale groups need block_n 128 or 256 (256 gated), the TMA store,
  // no swapped tiles, no decode family; FP8 inputs cannot hold a gated FP8 tile.
  const GpuInfo h200 = device_preset("h200");
  for (int64_t m : {1, 16, 64, 4096}) {
    fp8_out.m = m;
    const Plan plan = plan_gemm(fp8_out, h200);
    EXPECT_EQ(plan.spec.config.block_n % 128, 0) << m << " " << plan.spec.config.describe();
    EXPECT_FALSE(plan.spec.config.swap_ab) << m;
    EXPECT_EQ(plan.spec.config.instruction, Instruction::wgmma) << m;
    GemmProblem gated = problem(m, 14336, 4096, swiglu);
    const Plan gated_plan = plan_gemm(gated, h200);
    EXPECT_EQ(gated_plan.spec.config.block_n % 16, 0) << m;
    EXPECT_EQ(gated_plan.spec.config.instruction, Instruction::wgmma) << m;
    gated.d_type = DType::e4m3;
    EXPECT_EQ(plan_gemm(gated, h200).spec.config.block_n, 256) << m;
  }
  GemmProblem fp8_gated = problem(64, 14336, 4096, swiglu);
  fp8_gated.a_type = fp8_gated.b_type = DType::e4m3;
  fp8_gated.scaling = Scaling::block_1x128_128x128;
  plan_gemm(fp8_gated, h200);   // bf16 output: served
  fp8_gated.d_type = DType::e4m3;
  EXPECT_NE(expect_invalid([&] { plan_gemm(fp8_gated, h200); }, "d_type").find("quantize_fp8"),
            std::string::npos);
  EXPECT_NE(legality_violation(fp8_out, GemmConfig::parse("128x64x64 s4 c2 p g8"), h200)
                .find("128-column scale groups"),
            std::string::npos);
  EXPECT_NE(legality_violation(problem(64, 4096, 1024, swiglu),
                               GemmConfig::parse("64x24x64 s4 c1 p g8"), h200)
                .find("runs of 8"),
            std::string::npos);
  // The Config: out_kind 3 and the gated flag, only where set.
  GemmProblem fp8_swiglu = problem(1000, 2048, 512, swiglu);
  fp8_swiglu.d_type = DType::e4m3;
  const std::string src = source(fp8_swiglu, "128x256x64 s3 c2 p g8");
  EXPECT_NE(src.find("out_kind = 3, out_bytes = 1"), std::string::npos) << src;
  EXPECT_NE(src.find("EpilogueFields<0, 4, false, false, true>"), std::string::npos) << src;
  // cuBLASLt has neither; a GEMM split over GPUs writes no FP8 output.
  EXPECT_FALSE(runtime::cublaslt_epilogue_unavailable(swiglu, 0.0f).empty());
  GemmProblem split = problem(4096, 4096, 4096);
  split.d_type = DType::e4m3;
  expect_invalid([&] { plan_split(split, h200, topology_preset("nvlink", 2)); }, "problem.d_type");
}

TEST(Epilogue, InterleaveGateUp) {
  // Two halves of 16 rows x 3 elements: runs of 8 rows alternate gate, up.
  std::vector<uint16_t> gate(16 * 3), up(16 * 3), out(32 * 3);
  for (std::size_t i = 0; i < gate.size(); ++i) {
    gate[i] = uint16_t(i);
    up[i] = uint16_t(1000 + i);
  }
  interleave_gate_up(gate.data(), up.data(), out.data(), 16, 3, 2);
  EXPECT_EQ(out[0], 0);             // gate row 0
  EXPECT_EQ(out[8 * 3], 1000);      // up row 0
  EXPECT_EQ(out[16 * 3], 8 * 3);    // gate row 8
  EXPECT_EQ(out[24 * 3 + 2], 1000 + 8 * 3 + 2);   // up row 8, last element
  expect_invalid([&] { interleave_gate_up(gate.data(), up.data(), out.data(), 12, 3, 2); },
                 "rows");
  // The reference: column c of D is act(gate column 16 (c / 8) + c % 8) * up (the one 8 after).
  Epilogue e;
  e.activation = Activation::relu;
  e.gated = true;
  std::vector<double> d(32);
  for (int j = 0; j < 32; ++j) d[j] = j < 8 || (j >= 16 && j < 24) ? -1.0 + j : 2.0;
  bench::apply_epilogue_reference(e, {}, 1, 32, 1.0, 0.0, {}, 0, d);
  ASSERT_EQ(d.size(), 16u);
  EXPECT_DOUBLE_EQ(d[0], 0.0);        // relu(-1) * 2
  EXPECT_DOUBLE_EQ(d[3], 2.0 * 2);    // relu(2) * 2
  EXPECT_DOUBLE_EQ(d[8], 15.0 * 2);   // gate column 16: relu(15) * 2
}

TEST(Epilogue, PlanCommandShowsGatedAndFp8Output) {
  const auto run = run_cli(
      "plan --m 64 --n 4096 --k 1024 --activation silu --gated --out-dtype fp8 --device h200");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("epilogue   gated silu: D = silu(g) * u + beta * C"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("output     e4m3, quantised by the epilogue"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("d_scale [64, 16]"), std::string::npos) << run.out;
  for (const char* bad : {"--gated --activation silu --n 4104", "--gated --n 4096"}) {
    const auto refused =
        run_cli(std::string("plan --m 64 --k 1024 --device h200 ") + bad +
                (std::string(bad).find("--n") == std::string::npos ? " --n 4096" : ""));
    EXPECT_EQ(refused.exit_code, 2) << bad << "\n" << refused.out;
  }
}
