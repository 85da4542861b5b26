// GPU tests of the decode family (instruction = mma, kernels/sm90/decode_kernel.cuh; skipped
// without a Hopper GPU): forced configurations over its fields on shapes with tails in M, N and
// K, every output type, alpha and beta, padded leading dimensions, and the planner's choice for
// decode sizes, each against the float64 reference with every element checked and guard rows
// and columns left untouched. FP8 is in test_fp8_unquantised_gpu.cpp (DecodeFamily).
#include <gtest/gtest.h>

#include "autogemm/gemm.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;
using autogemm::testing::run_and_check;

namespace {

GemmProblem make(int64_t m, int64_t n, int64_t k, DType in = DType::bf16,
                 DType out = DType::bf16) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in;
  p.d_type = out;
  return p;
}

}  // namespace

TEST(DecodeGpu, ForcedConfigurationsWithTails) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 900;
  // Registers (no sN), then warp rings (sN: 2..8 stages, K tails zero-filled by cp.async).
  for (const char* config : {"mma 8x64x128", "mma 16x32x128 sk4", "mma 32x16x64 sk8",
                             "mma 32x64x64 sk3", "mma 8x16x64 sk16", "mma 16x16x128 sk2",
                             "mma 8x16x128 s4", "mma 16x64x64 s3 sk2", "mma 32x32x64 s2 sk4",
                             "mma 8x32x256 s3 sk3"})
    for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 4096, 4096},
                                  {5, 1000, 1032}, {17, 2112, 7168}, {33, 500, 6144},
                                  {32, 24, 6152}}) {
      const auto check = run_and_check(make(m, n, k), 1.0f, 0.0f, seed++,
                                       GemmConfig::parse(config));
      AUTOGEMM_EXPECT_GEMM_OK(check, config << " " << m << "x" << n << "x" << k);
      EXPECT_EQ(check.config, config);
    }
}

TEST(DecodeGpu, OutputTypesAlphaBetaAndPaddedRows) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 950;
  for (DType in : {DType::bf16, DType::fp16})
    for (DType out : {DType::bf16, DType::fp16, DType::fp32})
      for (const char* config : {"mma 8x64x128", "mma 16x32x64 sk4", "mma 16x16x64 s4 sk2"}) {
        const auto check = run_and_check(make(11, 777, 2056, in, out), 0.75f, -0.5f, seed++,
                                         GemmConfig::parse(config), /*padded_ld=*/true);
        AUTOGEMM_EXPECT_GEMM_OK(check, config << " " << to_string(in) << "->" << to_string(out));
      }
}

// The planner's choice at decode sizes is correct: the decode family up to 8 rows, either
// family past that (the cost model decides; decode_cost.cpp charges 16-row tiles more).
TEST(DecodeGpu, PlannersChoiceAtDecodeSizes) {
  AUTOGEMM_REQUIRE_GPU();
  uint64_t seed = 990;
  for (int64_t m : {1, 3, 8, 13, 16})
    for (const auto& [n, k] : {std::pair<int64_t, int64_t>{7168, 2048}, {2112, 7168},
                               {24576, 1536}, {4096, 14336}}) {
      const auto check = run_and_check(make(m, n, k), 1.0f, 0.0f, seed++);
      AUTOGEMM_EXPECT_GEMM_OK(check, m << "x" << n << "x" << k);
      if (m <= 8)
        EXPECT_EQ(check.config.rfind("mma ", 0), 0u) << m << "x" << n << "x" << k << ": "
                                                     << check.config;
    }
}
