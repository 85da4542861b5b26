// The cuBLASLt path against the float64 reference: every layout, odd shapes, leading
// dimensions, alpha/beta with C, output types, FP8 per-tensor and block-scaled; the scale
// relayout; errors; concurrent calls on several streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "autogemm/errors.hpp"
#include "bench/compare.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "gpu_test_util.hpp"
#include "runtime/cublaslt.hpp"
#include "cuda/cuda_check.hpp"

using namespace autogemm;
using namespace autogemm::bench;

namespace {

GemmProblem problem(int64_t m, int64_t n, int64_t k, DType in = DType::bf16,
                    Layout layout = Layout::nt, DType out = DType::bf16) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in;
  p.d_type = out;
  p.layout = layout;
  if (in == DType::e4m3 || in == DType::e5m2) p.scaling = Scaling::block_1x128_128x128;
  return p;
}

std::size_t a_elements(const GemmProblem& p) {
  return std::size_t((a_is_k_major(p.layout) ? p.m : p.k) * p.lda_or_packed());
}
std::size_t b_elements(const GemmProblem& p) {
  return std::size_t((b_is_k_major(p.layout) ? p.n : p.k) * p.ldb_or_packed());
}
std::size_t a_scale_count(const GemmProblem& p) {
  if (p.scaling == Scaling::per_tensor) return 1;
  return std::size_t(p.m * ((p.k + 127) / 128));
}
std::size_t b_scale_count(const GemmProblem& p) {
  if (p.scaling == Scaling::per_tensor) return 1;
  return std::size_t((p.n + 127) / 128 * ((p.k + 127) / 128));
}

struct LtCheck {
  CheckReport report;
};

// cuBLASLt and the reference on the same random inputs; `a_offset_bytes` shifts A off its
// allocation's 256-byte alignment.
LtCheck run_lt(GemmProblem p, float alpha, float beta, uint64_t seed, cudaStream_t stream = nullptr,
               std::size_t a_offset_bytes = 0) {
  const int in_bytes = dtype_bytes(p.a_type), out_bytes = dtype_bytes(p.d_type);
  p.reads_c = beta != 0.0f;
  DeviceBuffer a(a_elements(p) * in_bytes + a_offset_bytes), b(b_elements(p) * in_bytes);
  DeviceBuffer c(std::size_t(p.m * p.ldc_or_packed()) * out_bytes);
  DeviceBuffer d(std::size_t(p.m * p.ldd_or_packed()) * out_bytes);
  DeviceBuffer ref(std::size_t(p.m * p.n) * sizeof(double));
  void* a_ptr = static_cast<char*>(a.get()) + a_offset_bytes;
  fill_random(a_ptr, a_elements(p), p.a_type, seed);
  fill_random(b.get(), b_elements(p), p.b_type, seed + 1);
  fill_random(c.get(), std::size_t(p.m * p.ldc_or_packed()), p.d_type, seed + 2);
  fill_poison(d.get(), std::size_t(p.m * p.ldd_or_packed()), p.d_type);
  DeviceBuffer scale_a, scale_b;
  GemmOperands ops;
  if (p.scaling != Scaling::none) {
    scale_a = DeviceBuffer(a_scale_count(p) * sizeof(float));
    scale_b = DeviceBuffer(b_scale_count(p) * sizeof(float));
    // Not powers of two and different per block: a misread scale layout changes the result.
    fill_uniform(scale_a.get(), a_scale_count(p), DType::fp32, seed + 3, 0.5, 2.0);
    fill_uniform(scale_b.get(), b_scale_count(p), DType::fp32, seed + 4, 0.5, 2.0);
    ops.scale_a = static_cast<const float*>(scale_a.get());
    ops.scale_b = static_cast<const float*>(scale_b.get());
  }
  ops.a = a_ptr;
  ops.b = b.get();
  ops.c = beta != 0.0f ? c.get() : nullptr;
  ops.d = d.get();
  ops.alpha = alpha;
  ops.beta = beta;
  runtime::cublaslt_gemm(p, ops, stream);
  reference_gemm(p, ops, static_cast<double*>(ref.get()), stream);
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

  const auto got = download_as_double(d.get(), std::size_t(p.m * p.ldd_or_packed()), p.d_type);
  std::vector<double> want(std::size_t(p.m * p.n));
  cuda_check(cudaMemcpy(want.data(), ref.get(), want.size() * sizeof(double), cudaMemcpyDeviceToHost),
             "cudaMemcpy(reference)");
  // Output rounding dominates (bf16 8 significant bits, fp16 11, fp32 24); FP32 accumulation
  // adds about K * 2^-24 relative.
  double rtol = p.d_type == DType::bf16 ? 1.0 / 128 : p.d_type == DType::fp16 ? 1.0 / 1024 : 1e-5;
  double atol = rtol + 1e-6 * double(p.k);
  if (p.a_type == DType::e4m3 || p.a_type == DType::e5m2) {
    // Hopper's FP8 tensor cores accumulate with about 14 bits of mantissa (DeepSeek-V3 report;
    // hopper-facts.md 2.2): even with cuBLASLt's periodic promotion into FP32 (fast accumulation
    // off), each partial sum carries a relative error near 2^-14 of its own size, so results are
    // good to about 1e-4 relative (measured: 9.5e-5 on an H200), not to FP32's 1e-5. Allowed: 1e-3
    // relative (the FP8 threshold) plus 2^-14 of the largest possible |sum of products|
    // (|a|, |b| <= 1, scales < 2: 4 K), which covers results that cancel to near zero.
    // A misread scale changes results by tens of percent, far outside this.
    rtol = std::max(rtol, 1e-3);
    atol = std::max(atol, std::ldexp(4.0 * double(p.k), -14));
  }
  LtCheck out;
  out.report = check_result(got, p.ldd_or_packed(), want, p.m, p.n, atol, rtol, 512, seed + 5);
  return out;
}

#define EXPECT_LT_OK(check, label)                                                         \
  do {                                                                                     \
    EXPECT_LT((check).report.diff, 1e-5) << label;                                         \
    EXPECT_EQ((check).report.unwritten, 0) << label;                                       \
    EXPECT_EQ((check).report.spot_failures, 0) << label << ": " << (check).report.first_failure; \
  } while (0)

}  // namespace

TEST(CublasLtGpu, Bf16AllLayoutsAlignedAndOdd) {
  AUTOGEMM_REQUIRE_GPU();
  for (Layout layout : {Layout::nt, Layout::nn, Layout::tn, Layout::tt}) {
    EXPECT_LT_OK(run_lt(problem(256, 384, 512, DType::bf16, layout), 1.0f, 0.0f, 1),
                 "aligned " << to_string(layout));
    // Odd sizes: rows of 77 or 129 elements are not 16-byte aligned, cuBLASLt must cope.
    EXPECT_LT_OK(run_lt(problem(257, 129, 77, DType::bf16, layout), 1.0f, 0.0f, 2),
                 "257x129x77 " << to_string(layout));
  }
}

TEST(CublasLtGpu, Fp16AndOutputTypes) {
  AUTOGEMM_REQUIRE_GPU();
  for (DType in : {DType::bf16, DType::fp16})
    for (DType out : {DType::bf16, DType::fp16, DType::fp32})
      for (Layout layout : {Layout::nt, Layout::tn}) {
        if (in == DType::fp16 && out == DType::bf16) continue;  // mixed 16-bit types: not a cuBLASLt combination
        if (in == DType::bf16 && out == DType::fp16) continue;
        EXPECT_LT_OK(run_lt(problem(200, 136, 264, in, layout, out), 1.0f, 0.0f, 3),
                     to_string(in) << " -> " << to_string(out) << " " << to_string(layout));
      }
}

TEST(CublasLtGpu, AlphaBetaCAndLeadingDimensions) {
  AUTOGEMM_REQUIRE_GPU();
  for (Layout layout : {Layout::nt, Layout::nn, Layout::tn, Layout::tt})
    for (DType out : {DType::bf16, DType::fp32}) {
      GemmProblem p = problem(150, 200, 96, DType::bf16, layout, out);
      p.lda = (a_is_k_major(layout) ? p.k : p.m) + 24;
      p.ldb = (b_is_k_major(layout) ? p.k : p.n) + 40;
      p.ldc = p.n + 8;
      p.ldd = p.n + 16;
      EXPECT_LT_OK(run_lt(p, 0.75f, -1.5f, 4),
                   "alpha/beta/ld " << to_string(layout) << " -> " << to_string(out));
    }
}

TEST(CublasLtGpu, MisalignedPointer) {
  AUTOGEMM_REQUIRE_GPU();
  // A starts 2 bytes past a 256-byte boundary: the preference tells cuBLASLt so.
  EXPECT_LT_OK(run_lt(problem(128, 128, 128), 1.0f, 0.0f, 5, nullptr, 2), "A offset by 2 bytes");
}

TEST(CublasLtGpu, Fp8PerTensor) {
  AUTOGEMM_REQUIRE_GPU();
  for (DType out : {DType::bf16, DType::fp32}) {
    GemmProblem p = problem(256, 384, 512, DType::e4m3, Layout::nt, out);
    p.scaling = Scaling::per_tensor;
    EXPECT_LT_OK(run_lt(p, 1.0f, 0.0f, 6), "e4m3 per-tensor -> " << to_string(out));
  }
}

// Block scaling is a cuBLAS 12.9+ feature: an older library is a reason to skip, not a failure.
#define REQUIRE_CUBLASLT_BLOCK_SCALING()                                                 \
  do {                                                                                    \
    const std::string why_not_ = runtime::cublaslt_block_scaling_unavailable();           \
    if (!why_not_.empty()) GTEST_SKIP() << why_not_;                                      \
  } while (0)

TEST(CublasLtGpu, Fp8BlockScaledAligned) {
  AUTOGEMM_REQUIRE_GPU();
  REQUIRE_CUBLASLT_BLOCK_SCALING();
  for (DType out : {DType::bf16, DType::fp32})
    EXPECT_LT_OK(run_lt(problem(256, 384, 512, DType::e4m3, Layout::nt, out), 1.0f, 0.0f, 7),
                 "e4m3 block-scaled -> " << to_string(out));
}

TEST(CublasLtGpu, Fp8BlockScaledPartialBlocks) {
  AUTOGEMM_REQUIRE_GPU();
  REQUIRE_CUBLASLT_BLOCK_SCALING();
  // N = 320: the last 128-column block of B is partial; K = 384: 3 K blocks, padded to 4 in
  // cuBLASLt's B-scale rows; M = 200 is not a multiple of 128.
  EXPECT_LT_OK(run_lt(problem(200, 320, 384, DType::e4m3), 1.0f, 0.0f, 8),
               "e4m3 block-scaled 200x320x384");
}

TEST(CublasLtGpu, BlockScaleRelayout) {
  AUTOGEMM_REQUIRE_GPU();
  // 5 K blocks (padded to 8), 3 N blocks; M a multiple of 4 (block scaling declines others) but
  // not of 8.
  const GemmProblem p = problem(12, 300, 640, DType::e4m3);
  const int64_t k_blocks = 5, n_blocks = 3, k_padded = 8;
  std::vector<double> a_scales(std::size_t(p.m * k_blocks)), b_scales(std::size_t(n_blocks * k_blocks));
  for (std::size_t i = 0; i < a_scales.size(); ++i) a_scales[i] = double(i + 1);
  for (std::size_t i = 0; i < b_scales.size(); ++i) b_scales[i] = double(1000 + i);
  const auto sizes = runtime::cublaslt_block_scale_sizes(p);
  ASSERT_EQ(sizes.a_floats, std::size_t(k_blocks * p.m));
  ASSERT_EQ(sizes.b_floats, std::size_t(n_blocks * k_padded));
  DeviceBuffer ours_a(a_scales.size() * 4), ours_b(b_scales.size() * 4);
  DeviceBuffer lt_a(sizes.a_floats * 4), lt_b(sizes.b_floats * 4);
  upload_from_double(ours_a.get(), a_scales, DType::fp32);
  upload_from_double(ours_b.get(), b_scales, DType::fp32);
  runtime::to_cublaslt_block_scales(p, static_cast<const float*>(ours_a.get()),
                                    static_cast<const float*>(ours_b.get()),
                                    static_cast<float*>(lt_a.get()), static_cast<float*>(lt_b.get()),
                                    nullptr);
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const auto got_a = download_as_double(lt_a.get(), sizes.a_floats, DType::fp32);
  const auto got_b = download_as_double(lt_b.get(), sizes.b_floats, DType::fp32);
  for (int64_t row = 0; row < p.m; ++row)
    for (int64_t kb = 0; kb < k_blocks; ++kb)
      EXPECT_EQ(got_a[std::size_t(kb * p.m + row)], a_scales[std::size_t(row * k_blocks + kb)])
          << "A scale row " << row << " block " << kb;
  for (int64_t nb = 0; nb < n_blocks; ++nb)
    for (int64_t kb = 0; kb < k_blocks; ++kb)
      EXPECT_EQ(got_b[std::size_t(nb * k_padded + kb)], b_scales[std::size_t(nb * k_blocks + kb)])
          << "B scale block " << nb << ", " << kb;
}

TEST(CublasLtGpu, ErrorsNameTheProblem) {
  AUTOGEMM_REQUIRE_GPU();
  GemmProblem p = problem(64, 64, 64);
  GemmOperands ops;
  EXPECT_THROW(runtime::cublaslt_gemm(p, ops, nullptr), InvalidArgument);  // null pointers
  // E5M2 x E5M2 has no cuBLASLt kernel (cuBLAS docs, cublasLtMatmul FP8 type table).
  GemmProblem e5 = problem(128, 128, 128, DType::e5m2);
  e5.scaling = Scaling::per_tensor;
  DeviceBuffer a(128 * 128), b(128 * 128), d(128 * 128 * 2), s(8);
  fill_uniform(s.get(), 2, DType::fp32, 1, 1.0, 2.0);
  ops.a = a.get();
  ops.b = b.get();
  ops.d = d.get();
  ops.scale_a = static_cast<const float*>(s.get());
  ops.scale_b = static_cast<const float*>(s.get()) + 1;
  try {
    runtime::cublaslt_gemm(e5, ops, nullptr);
    FAIL() << "no error for e5m2 x e5m2";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("no algorithm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("e5m2"), std::string::npos) << e.what();
  }
}

TEST(CublasLtGpu, ConcurrentCallsOnSeveralStreams) {
  AUTOGEMM_REQUIRE_GPU();
  // The shared workspace is ordered between streams by an event; four threads, four streams.
  std::vector<LtCheck> checks(4);
  const auto errors = autogemm::testing::run_on_own_streams(4, [&checks](int t, cudaStream_t stream) {
    for (int rep = 0; rep < 3; ++rep)
      checks[std::size_t(t)] = run_lt(problem(512, 256 + 64 * t, 1024), 1.0f, 0.0f, 100 + t, stream);
  });
  for (int t = 0; t < 4; ++t) {
    EXPECT_EQ(errors[std::size_t(t)], "") << "thread " << t;
    EXPECT_LT_OK(checks[std::size_t(t)], "thread " << t);
  }
}
