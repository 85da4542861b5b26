// GPU tests of the fused epilogue (issue 50; skipped without a Hopper GPU): D = act(alpha * acc
// * row_scale[m] * col_scale[n] + bias[n]) + beta * C against the float64 reference of the
// whole epilogue (gpu_gemm_util.hpp, bench/epilogue_reference.hpp), with poisoned D and guard
// rows, odd shapes with tails in M, N and K, every activation, both bias types, the scales,
// and each family and path: the tile family's TMA, staged and threads stores, swapped
// operands (D^T: the bias is per kernel row), split-K (applied once, after the sum), the
// ladder's plain steps, and the decode family.
#include <gtest/gtest.h>

#include <tuple>

#include "autogemm/gemm.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;
using autogemm::testing::run_and_check;

namespace {

GemmProblem make(int64_t m, int64_t n, int64_t k, Epilogue e, DType out = DType::bf16,
                 int64_t ldd = 0) {
  GemmProblem p = autogemm::testing::problem(m, n, k);
  p.d_type = out;
  p.ldd = ldd;
  p.epilogue = e;
  return p;
}

Epilogue all_of(Activation a, DType bias = DType::bf16) {
  Epilogue e;
  e.bias = bias;
  e.activation = a;
  e.row_scale = e.col_scale = true;
  return e;
}

const Activation kActivations[] = {Activation::none, Activation::relu, Activation::gelu_tanh,
                                   Activation::gelu_erf, Activation::silu};

// The GEMM with `e` through `config` (planner's choice when null), checked; alpha keeps the
// pre-activation values around 1, where the activations bend.
void expect_fused(const GemmProblem& p, const char* config, float beta, uint64_t seed,
                  bool padded_ld = false) {
  const float alpha = 1.0f / 16;
  const auto check = run_and_check(p, alpha, beta, seed,
                                   config ? std::optional(GemmConfig::parse(config)) : std::nullopt,
                                   padded_ld);
  EXPECT_FALSE(check.used_vendor);
  AUTOGEMM_EXPECT_GEMM_OK(check, (config ? config : "planner") << " " << p.m << "x" << p.n << "x"
                                                                << p.k << " "
                                                                << p.epilogue.describe() << " beta "
                                                                << beta);
}

}  // namespace

TEST(EpilogueGpu, EveryActivationBothBiasTypesTmaStore) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5000;
  for (Activation a : kActivations)
    for (DType bias : {DType::bf16, DType::fp32})
      for (float beta : {0.0f, 0.5f})
        expect_fused(make(1000, 1024, 520, all_of(a, bias)), nullptr, beta, seed++);
}

TEST(EpilogueGpu, EachVectorAloneAndOutputTypes) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5100;
  Epilogue bias_only, row_only, col_only, act_only;
  bias_only.bias = DType::fp32;
  row_only.row_scale = true;
  col_only.col_scale = true;
  act_only.activation = Activation::silu;
  for (const Epilogue& e : {bias_only, row_only, col_only, act_only})
    for (DType out : {DType::bf16, DType::fp16, DType::fp32})
      expect_fused(make(777, 1536, 1032, e, out), nullptr, 0.0f, seed++);
}

// Forced tiles with tails in every dimension, clusters and both consumer counts.
TEST(EpilogueGpu, ForcedTilesWithTails) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5200;
  for (const char* config : {"128x128x64 s4 c2 p g8", "64x208x64 s4 c1 p g8",
                             "128x256x64 s3 c2 p g8 cl2x1/b", "256x128x64 s3 c2 p g8"})
    for (Activation a : {Activation::gelu_tanh, Activation::silu})
      expect_fused(make(515, 1000, 1000, all_of(a)), config, 0.25f, seed++);
}

// Stream-K: a cut tile's epilogue runs once, on the sum, by its last piece (gated too).
TEST(EpilogueGpu, StreamK) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5220;
  for (Activation a : {Activation::gelu_tanh, Activation::silu})
    expect_fused(make(515, 1000, 1000, all_of(a)), "128x128x64 s4 c2 p g8 stk", 0.25f, seed++);
  Epilogue gated = all_of(Activation::silu, DType::fp32);
  gated.gated = true;
  expect_fused(make(515, 2096, 1000, gated), "128x128x64 s5 c2 p g8 stk", 0.5f, seed++);
}

// D staged in chunks: the fused epilogue's vectors read for the whole tile, applied chunk by
// chunk (fp32 and bf16 D, C read and not).
TEST(EpilogueGpu, DStagedInChunks) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5230;
  expect_fused(make(515, 1000, 1000, all_of(Activation::gelu_tanh), DType::fp32),
               "128x256x64 s4 c2 p g8 dc2", 0.25f, seed++);
  expect_fused(make(1000, 1024, 520, all_of(Activation::silu, DType::fp32)),
               "128x256x64 s4 c2 p g8 cl2x1/b dc1", 0.0f, seed++);
}

// Ping-pong consumers: the fused epilogue of one consumer's tile beside the other's k-loop,
// every vector, activations (gelu_tanh with a bias on 64-row tiles: the register rule), gated,
// tails in every dimension and multicast pairs.
TEST(EpilogueGpu, PingPongConsumers) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5250;
  for (Activation a : {Activation::gelu_erf, Activation::silu, Activation::relu})
    expect_fused(make(515, 1000, 1000, all_of(a)), "128x128x64 s5 c2 p g8 pp", 0.25f, seed++);
  expect_fused(make(1000, 1000, 520, all_of(Activation::gelu_tanh)),
               "64x256x64 s4 c2 p g8 cl2x1/b pp", 0.0f, seed++);
  Epilogue gated = all_of(Activation::silu, DType::fp32);
  gated.gated = true;
  expect_fused(make(515, 2096, 1000, gated), "128x128x64 s5 c2 p g8 pp", 0.5f, seed++);
  expect_fused(make(515, 2096, 1000, gated), "64x256x64 s4 c2 p g8 pp", 0.0f, seed++);
}

// D's rows TMA cannot store (N odd, ldd odd): the staged path, C read by the threads.
TEST(EpilogueGpu, StagedStore) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5300;
  for (Activation a : kActivations)
    expect_fused(make(333, 1001, 64, all_of(a, DType::fp32), DType::fp16, 1001), nullptr, 0.5f,
                 seed++);
  expect_fused(make(333, 1001, 200, all_of(Activation::silu)), "64x208x64 s4 c1 p g8", 0.0f,
               seed++);
}

// The ladder's plain steps store from registers (Epilogue::store_threads).
TEST(EpilogueGpu, EveryLadderStep) {
  AUTOGEMM_REQUIRE_GPU();
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  for (const auto& step : ladder::ladder_steps()) {
    const auto check = autogemm::testing::run_ladder_step_and_check(
        make(515, 1000, 1000, all_of(Activation::gelu_erf)), 1.0f / 16, 0.5f, 5400 + step.number,
        step, gpu);
    AUTOGEMM_EXPECT_GEMM_OK(check, "ladder step " << step.number << " " << step.name);
  }
}

// Swapped operands: the kernel computes D^T, so the bias and col_scale are per kernel row and
// row_scale per kernel column; D^T by TMA (aligned rows) and by the threads (ldd odd).
TEST(EpilogueGpu, SwappedOperands) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5500;
  for (const char* config : {"64x32x128 s8 c1 p g8 swap", "64x16x128 s8 c1 p g8 sk2 swap",
                             "128x64x64 s6 c2 p g8 swap"})
    for (const auto& [m, n, k, ldd] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{16, 4096, 2048, 0},
                                       {7, 1000, 1032, 0}, {29, 2112, 7168, 0}, {13, 1000, 520, 1003}})
      for (DType bias : {DType::bf16, DType::fp32})
        expect_fused(make(m, n, k, all_of(Activation::silu, bias), DType::bf16, ldd), config,
                     0.5f, seed++);
  // The planner's choice at swap sizes.
  for (int64_t m : {1, 8, 24, 32})
    expect_fused(make(m, 7168, 2048, all_of(Activation::gelu_tanh)), nullptr, 0.0f, seed++);
}

// Split-K: the last split adds the partial sums and runs the epilogue once.
TEST(EpilogueGpu, SplitK) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5600;
  for (const char* config : {"64x64x64 s8 c1 p g8 sk4", "128x64x64 s6 c2 p g8 cl2x1/b sk3",
                             "64x32x128 s8 c1 p g8 sk2 swap"})
    for (Activation a : {Activation::relu, Activation::gelu_erf, Activation::silu})
      expect_fused(make(128, 2112, 7168, all_of(a)), config, 0.5f, seed++);
}

// The decode family's per-element epilogue, forced and planned.
TEST(EpilogueGpu, DecodeFamily) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5700;
  for (const char* config : {"mma 8x64x128", "mma 16x32x128 sk4", "mma 32x16x64 s3 sk2"})
    for (Activation a : kActivations)
      for (DType out : {DType::bf16, DType::fp32})
        expect_fused(make(11, 1000, 2056, all_of(a, out == DType::fp32 ? DType::fp32 : DType::bf16),
                          out),
                     config, 0.5f, seed++, /*padded_ld=*/true);
  for (int64_t m : {1, 3, 8})
    expect_fused(make(m, 7168, 2048, all_of(Activation::silu)), nullptr, 0.0f, seed++);
}

// The gated epilogue (D = act(gate) * up over B's rows interleaved in runs of 8, N / 2
// columns): every activation, with the vectors before the gate, C, every output type, tails in
// M, N and K, and every store path a gated tile takes: TMA, staged rows (D's row ending mid
// chunk, ldd odd), the ladder's register stores, split-K, clusters and both consumer counts.
TEST(EpilogueGpu, GatedEveryActivationAndPath) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5800;
  const auto gated = [](Activation a, bool vectors) {
    Epilogue e = vectors ? all_of(a, DType::fp32) : Epilogue{};
    e.activation = a;
    e.gated = true;
    return e;
  };
  for (Activation a : {Activation::relu, Activation::gelu_tanh, Activation::gelu_erf,
                       Activation::silu})
    for (bool vectors : {false, true})
      expect_fused(make(1000, 2080, 520, gated(a, vectors)), nullptr, vectors ? 0.5f : 0.0f,
                   seed++);
  for (DType out : {DType::fp16, DType::fp32})
    expect_fused(make(515, 1040, 1000, gated(Activation::silu, true), out), nullptr, 0.25f,
                 seed++);
  for (const char* config : {"128x128x64 s4 c2 p g8", "64x208x64 s4 c1 p g8",
                             "128x256x64 s3 c2 p g8 cl2x1/b", "256x128x64 s3 c2 p g8",
                             "64x64x64 s8 c1 p g8 sk4", "128x64x64 s6 c2 p g8 cl2x1/b sk3"})
    expect_fused(make(515, 2096, 1000, gated(Activation::gelu_erf, true)), config, 0.5f, seed++);
  // Staged rows: an odd ldd (D's N / 2 columns are whole 16-byte chunks whenever N is a
  // multiple of 16).
  expect_fused(make(333, 1040, 200, gated(Activation::silu, true), DType::bf16, 1001), nullptr,
               0.5f, seed++);
  std::string reason;
  const GpuInfo& gpu = *autogemm::testing::sm90_gpu(&reason);
  for (const auto& step : ladder::ladder_steps()) {
    const auto check = autogemm::testing::run_ladder_step_and_check(
        make(515, 1008, 1000, gated(Activation::silu, true)), 1.0f / 16, 0.5f, 5850 + step.number,
        step, gpu);
    AUTOGEMM_EXPECT_GEMM_OK(check, "gated, ladder step " << step.number << " " << step.name);
  }
  // Decode sizes: the planner keeps to the tile family (the decode family refuses gated).
  for (int64_t m : {1, 16, 64})
    expect_fused(make(m, 14336, 4096, gated(Activation::silu, false)), nullptr, 0.0f, seed++);
}

// FP8 output: D quantised to e4m3 by the epilogue with one scale per row per 128 columns, each
// checked against the reference's amax / 448 and D dequantised against the float64 result
// (diff < 1e-3): plain, fused and gated, tails in M, K and in the last scale group (N mod 128
// = 16), both tile widths, clusters and split-K.
TEST(EpilogueGpu, Fp8Output) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 5900;
  Epilogue plain, swiglu;
  swiglu.activation = Activation::silu;
  swiglu.gated = true;
  for (const Epilogue& e : {plain, all_of(Activation::gelu_tanh), all_of(Activation::silu)})
    for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1000, 1040, 520},
                                  {4096, 4096, 1024}, {64, 7168, 2048}, {7, 4096, 4096}})
      expect_fused(make(m, n, k, e, DType::e4m3), nullptr, 0.0f, seed++);
  for (const char* config : {"128x128x64 s4 c2 p g8", "128x256x64 s3 c2 p g8 cl2x1/b",
                             "64x128x64 s8 c1 p g8 sk4", "256x128x64 s3 c2 p g8"})
    expect_fused(make(515, 1040, 1000, all_of(Activation::relu), DType::e4m3), config, 0.0f,
                 seed++);
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1000, 2080, 520},
                                {64, 14336, 4096}, {4096, 8192, 1024}})
    expect_fused(make(m, n, k, swiglu, DType::e4m3), nullptr, 0.0f, seed++);
  expect_fused(make(300, 2080, 520, swiglu, DType::e4m3), "128x256x64 s3 c2 p g8 sk2", 0.0f,
               seed++);
}
