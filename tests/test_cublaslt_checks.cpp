// The documented limits of cuBLASLt's FP8 path, checked on the host before any device work: the
// errors name the argument and the rule (cublaslt.hpp). No GPU needed.
#include <gtest/gtest.h>

#include <string>

#include "autogemm/errors.hpp"
#include "runtime/cublaslt.hpp"

using namespace autogemm;

namespace {

GemmProblem fp8_problem(int64_t m, int64_t n, int64_t k, Layout layout, Scaling scaling) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = DType::e4m3;
  p.d_type = DType::bf16;
  p.layout = layout;
  p.scaling = scaling;
  return p;
}

// Never dereferenced: the checks throw first.
GemmOperands fake_operands() {
  GemmOperands ops;
  ops.a = reinterpret_cast<const void*>(0x10000);
  ops.b = reinterpret_cast<const void*>(0x20000);
  ops.d = reinterpret_cast<void*>(0x30000);
  ops.scale_a = reinterpret_cast<const float*>(0x40000);
  ops.scale_b = reinterpret_cast<const float*>(0x50000);
  return ops;
}

InvalidArgument rejection(const GemmProblem& p) {
  try {
    runtime::cublaslt_gemm(p, fake_operands(), nullptr);
  } catch (const InvalidArgument& e) {
    return e;
  }
  ADD_FAILURE() << "no InvalidArgument";
  return InvalidArgument("", "", "");
}

}  // namespace

// cuBLASLt's FP8 needs "TN" on Hopper, our nt after the swap (cublaslt.cpp); validate() already
// holds FP8 to nt for our own kernel, and the cuBLASLt path must not get past it either.
TEST(CublasLtChecks, Fp8NeedsLayoutNt) {
  for (Layout layout : {Layout::nn, Layout::tn, Layout::tt})
    for (Scaling scaling : {Scaling::per_tensor, Scaling::block_1x128_128x128}) {
      const InvalidArgument e = rejection(fp8_problem(128, 128, 128, layout, scaling));
      EXPECT_EQ(e.argument(), "layout");
      EXPECT_EQ(e.value(), std::string(to_string(layout)));
    }
}

TEST(CublasLtChecks, BlockScalingNeedsMAndNMultiplesOf4) {
  if (const std::string why = runtime::cublaslt_block_scaling_unavailable(); !why.empty())
    GTEST_SKIP() << why;
  const InvalidArgument m = rejection(fp8_problem(1, 128, 256, Layout::nt,
                                                  Scaling::block_1x128_128x128));
  EXPECT_EQ(m.argument(), "m");
  EXPECT_EQ(m.value(), "1");
  EXPECT_NE(m.rule().find("multiples of 4"), std::string::npos) << m.what();
  const InvalidArgument n = rejection(fp8_problem(64, 130, 256, Layout::nt,
                                                  Scaling::block_1x128_128x128));
  EXPECT_EQ(n.argument(), "n");
  EXPECT_EQ(n.value(), "130");
}

TEST(CublasLtChecks, BlockScalesInCublasLtLayoutStartOn16Bytes) {
  if (const std::string why = runtime::cublaslt_block_scaling_unavailable(); !why.empty())
    GTEST_SKIP() << why;
  GemmOperands ops = fake_operands();
  ops.scale_b = reinterpret_cast<const float*>(0x50004);  // float-aligned, not 16-byte aligned
  runtime::CublasLtOptions options;
  options.scales_in_cublaslt_layout = true;
  try {
    runtime::cublaslt_gemm(fp8_problem(128, 128, 256, Layout::nt, Scaling::block_1x128_128x128),
                           ops, nullptr, options);
    FAIL() << "no error for misaligned scales";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "operands.scale_b");
    EXPECT_NE(e.rule().find("16-byte"), std::string::npos) << e.what();
  }
}
