// The documented limits of cuBLASLt's FP8 path, checked on the host before any device work: the
// errors name the argument and the rule (cublaslt.hpp); which of them, and which cuBLASLt
// statuses, are cuBLASLt declining a problem (CublasLtRefusal) rather than a failure. No GPU
// needed.
#include <gtest/gtest.h>

#include <functional>
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

// ---- declining a problem is typed ----------------------------------------------------------
// A caller tells "cuBLASLt cannot serve this problem" (CublasLtRefusal: the bench shows such a
// baseline as n/a) from a failure of the call (which fails a bench row) by type, not by whether
// the message came from InvalidArgument or CudaError.

namespace {

bool is_refusal(const std::exception& e) {
  return dynamic_cast<const runtime::CublasLtRefusal*>(&e) != nullptr;
}

}  // namespace

TEST(CublasLtChecks, StatusesThatDeclineAreRefusalsOthersAreFailures) {
  EXPECT_TRUE(runtime::cublaslt_status_is_refusal(CUBLAS_STATUS_NOT_SUPPORTED));
  EXPECT_TRUE(runtime::cublaslt_status_is_refusal(CUBLAS_STATUS_ARCH_MISMATCH));
  for (cublasStatus_t failure :
       {CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_ALLOC_FAILED,
        CUBLAS_STATUS_INVALID_VALUE, CUBLAS_STATUS_MAPPING_ERROR, CUBLAS_STATUS_EXECUTION_FAILED,
        CUBLAS_STATUS_INTERNAL_ERROR, CUBLAS_STATUS_LICENSE_ERROR})
    EXPECT_FALSE(runtime::cublaslt_status_is_refusal(failure)) << failure;
  // The heuristic declines with a refusing status, or with success and no algorithm (the
  // e5m2 x e5m2 and odd block-scaled FP8 shapes on cuBLASLt 13.1 answer NOT_SUPPORTED).
  EXPECT_TRUE(runtime::cublaslt_heuristic_declined(CUBLAS_STATUS_SUCCESS, 0));
  EXPECT_TRUE(runtime::cublaslt_heuristic_declined(CUBLAS_STATUS_NOT_SUPPORTED, 0));
  EXPECT_FALSE(runtime::cublaslt_heuristic_declined(CUBLAS_STATUS_SUCCESS, 1));
  EXPECT_FALSE(runtime::cublaslt_heuristic_declined(CUBLAS_STATUS_INVALID_VALUE, 0));
  EXPECT_FALSE(runtime::cublaslt_heuristic_declined(CUBLAS_STATUS_ALLOC_FAILED, 0));
}

// M or N not a multiple of 4 (or a library without block scaling) is declined before any device
// work: by the matmul, and by the scale conversion the bench runs first, whose layout only that
// matmul reads. Still an InvalidArgument naming the argument, for callers that catch that.
TEST(CublasLtChecks, BlockScalingLimitsAreRefusalsInTheCallAndTheScaleConversion) {
  const GemmProblem odd = fp8_problem(1531, 2732, 2048, Layout::nt, Scaling::block_1x128_128x128);
  const GemmOperands ops = fake_operands();
  auto check = [&](const std::function<void()>& call, const char* what) {
    try {
      call();
      ADD_FAILURE() << what << ": not declined";
    } catch (const runtime::CublasLtRefusal& refusal) {
      const std::string reason = refusal.reason();
      if (const std::string why = runtime::cublaslt_block_scaling_unavailable(); !why.empty()) {
        EXPECT_EQ(reason, why) << what;
        return;
      }
      EXPECT_NE(reason.find("m = 1531"), std::string::npos) << what << ": " << reason;
      EXPECT_NE(reason.find("multiples of 4"), std::string::npos) << what << ": " << reason;
      const auto* invalid = dynamic_cast<const InvalidArgument*>(&refusal);
      ASSERT_NE(invalid, nullptr) << what;
      EXPECT_EQ(invalid->argument(), "m") << what;
      EXPECT_STREQ(invalid->what(), refusal.reason()) << what;
    }
  };
  check([&] { runtime::cublaslt_gemm(odd, ops, nullptr); }, "cublaslt_gemm");
  float* lt_scales = reinterpret_cast<float*>(0x60000);   // never written: declined first
  check([&] {
    runtime::to_cublaslt_block_scales(odd, ops.scale_a, ops.scale_b, lt_scales, lt_scales,
                                      nullptr);
  }, "to_cublaslt_block_scales");
}

// Errors in the arguments are failures, not refusals: a bench row with one FAILS.
TEST(CublasLtChecks, ArgumentErrorsAreNotRefusals) {
  GemmOperands no_d = fake_operands();
  no_d.d = nullptr;
  try {
    runtime::cublaslt_gemm(fp8_problem(128, 128, 256, Layout::nt, Scaling::per_tensor), no_d,
                           nullptr);
    FAIL() << "no error for a null D";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "operands.d");
    EXPECT_FALSE(is_refusal(e)) << e.what();
  }
  EXPECT_FALSE(is_refusal(rejection(fp8_problem(128, 128, 128, Layout::nn, Scaling::per_tensor))));
  EXPECT_FALSE(is_refusal(CudaError("cudaMallocAsync(cuBLASLt block scales): out of memory")));
}

// cuBLASLt's fused epilogues are a bias, relu and gelu (tanh form): the others are declined by
// name as a refusal (the bench's baseline is then n/a), before any device work.
TEST(CublasLtChecks, FusedEpilogueOnlyWhereCublasLtHasIt) {
  Epilogue bias_gelu;
  bias_gelu.bias = DType::bf16;
  bias_gelu.activation = Activation::gelu_tanh;
  EXPECT_EQ(runtime::cublaslt_epilogue_unavailable(bias_gelu, 0.0f), "");
  EXPECT_EQ(runtime::cublaslt_epilogue_unavailable(Epilogue{}, 1.0f), "");
  EXPECT_NE(runtime::cublaslt_epilogue_unavailable(bias_gelu, 0.5f).find("before its activation"),
            std::string::npos);
  Epilogue silu = bias_gelu, scaled = bias_gelu, erf = bias_gelu;
  silu.activation = Activation::silu;
  erf.activation = Activation::gelu_erf;
  scaled.col_scale = true;
  for (const Epilogue& e : {silu, erf, scaled}) {
    SCOPED_TRACE(e.describe());
    EXPECT_NE(runtime::cublaslt_epilogue_unavailable(e, 0.0f), "");
    GemmProblem p = fp8_problem(128, 128, 256, Layout::nt, Scaling::none);
    p.a_type = p.b_type = DType::bf16;
    p.epilogue = e;
    GemmOperands ops = fake_operands();
    ops.scale_a = ops.scale_b = nullptr;
    ops.bias = reinterpret_cast<const void*>(0x60000);
    if (e.col_scale) ops.col_scale = reinterpret_cast<const float*>(0x70000);
    try {
      runtime::cublaslt_gemm(p, ops, nullptr);
      FAIL() << "no refusal";
    } catch (const runtime::CublasLtLimit& refusal) {
      EXPECT_EQ(refusal.argument(), "epilogue");
      EXPECT_EQ(refusal.value(), e.describe());
    }
  }
}
