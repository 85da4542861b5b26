// FP8 quantisation without a GPU: argument checks (they come before any CUDA call), scale counts,
// and the device code compiling with NVRTC for sm_90a and sm_89.
#include <gtest/gtest.h>

#include <string>

#include "autogemm/errors.hpp"
#include "autogemm/quantize.hpp"
#include "error_test_util.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"

using namespace autogemm;

namespace {

// Addresses that are never dereferenced: every call below throws before launching.
void* fake_device(std::uintptr_t address) { return reinterpret_cast<void*>(address); }
float* fake_scales() { return static_cast<float*>(fake_device(0x20000)); }

using autogemm::testing::expect_invalid;

}  // namespace

TEST(Quantize, ScaleCounts) {
  EXPECT_EQ(fp8_scale_count_1x128(257, 300), 257 * 3);
  EXPECT_EQ(fp8_scale_count_1x128(1, 129), 2);
  EXPECT_EQ(fp8_scale_count_1x128(130, 7), 130);
  EXPECT_EQ(fp8_scale_count_1x128(4, 128), 4);
  EXPECT_EQ(fp8_scale_count_128x128(257, 300), 3 * 3);
  EXPECT_EQ(fp8_scale_count_128x128(128, 128), 1);
  EXPECT_EQ(fp8_scale_count_128x128(129, 7), 2);
}

TEST(Quantize, ArgumentsAreCheckedBeforeLaunch) {
  void* x = fake_device(0x10000);
  void* q = fake_device(0x30000);
  float* s = fake_scales();
  for (auto quantize : {quantize_fp8_1x128, quantize_fp8_128x128}) {
    expect_invalid([&] { quantize(nullptr, DType::bf16, 4, 4, 4, q, s, nullptr); }, "x");
    expect_invalid([&] { quantize(x, DType::bf16, 4, 4, 4, nullptr, s, nullptr); }, "q");
    expect_invalid([&] { quantize(x, DType::bf16, 4, 4, 4, q, nullptr, nullptr); }, "scales");
    const std::string type = expect_invalid(
        [&] { quantize(x, DType::fp16, 4, 4, 4, q, s, nullptr); }, "x_type");
    EXPECT_NE(type.find("fp16"), std::string::npos) << type;
    expect_invalid([&] { quantize(x, DType::e4m3, 4, 4, 4, q, s, nullptr); }, "x_type");
    expect_invalid([&] { quantize(x, DType::bf16, 0, 4, 4, q, s, nullptr); }, "rows");
    expect_invalid([&] { quantize(x, DType::bf16, 4, 0, 4, q, s, nullptr); }, "cols");
    expect_invalid([&] { quantize(x, DType::bf16, -1, 4, 4, q, s, nullptr); }, "rows");
    const std::string ld = expect_invalid(
        [&] { quantize(x, DType::bf16, 4, 300, 299, q, s, nullptr); }, "ld");
    EXPECT_NE(ld.find("300"), std::string::npos) << ld;  // names the rule's bound
    // bf16 needs 2-byte, fp32 4-byte alignment; scales 4.
    expect_invalid([&] { quantize(fake_device(0x10001), DType::bf16, 4, 4, 4, q, s, nullptr); },
                   "x");
    expect_invalid([&] { quantize(fake_device(0x10002), DType::fp32, 4, 4, 4, q, s, nullptr); },
                   "x");
    expect_invalid(
        [&] { quantize(x, DType::bf16, 4, 4, 4, q, static_cast<float*>(fake_device(0x20002)), nullptr); },
        "scales");
    expect_invalid([&] { quantize(x, DType::bf16, int64_t(1) << 62, 4, 8, q, s, nullptr); },
                   "rows");  // rows * ld overflows
  }
}

TEST(Quantize, TransposedArgumentsAreCheckedBeforeLaunch) {
  void* x = fake_device(0x10000);
  void* qt = fake_device(0x30000);
  float* st = fake_scales();
  void* q = fake_device(0x40000);
  float* s = static_cast<float*>(fake_device(0x50000));
  expect_invalid([&] { quantize_fp8_1x128_transposed(nullptr, DType::bf16, 4, 4, 4, qt, st); },
                 "x");
  expect_invalid([&] { quantize_fp8_1x128_transposed(x, DType::bf16, 4, 4, 4, nullptr, st); },
                 "q_t");
  expect_invalid([&] { quantize_fp8_1x128_transposed(x, DType::bf16, 4, 4, 4, qt, nullptr); },
                 "scales_t");
  expect_invalid([&] { quantize_fp8_1x128_transposed(x, DType::bf16, 4, 4, 4, qt, st, q); },
                 "scales");
  expect_invalid(
      [&] { quantize_fp8_1x128_transposed(x, DType::bf16, 4, 4, 4, qt, st, nullptr, s); }, "q");
  expect_invalid([&] { quantize_fp8_1x128_transposed(x, DType::fp16, 4, 4, 4, qt, st); },
                 "x_type");
  expect_invalid([&] { quantize_fp8_1x128_transposed(x, DType::bf16, 4, 300, 299, qt, st); },
                 "ld");
  const int64_t too_wide = int64_t(65536) * 128;   // 65536 column tiles: past the grid's y
  const std::string cols = expect_invalid(
      [&] { quantize_fp8_1x128_transposed(x, DType::bf16, 4, too_wide, too_wide, qt, st); },
      "cols");
  EXPECT_NE(cols.find("65535"), std::string::npos) << cols;
}

TEST(Quantize, DequantizeArgumentsAreChecked) {
  const void* q = fake_device(0x30000);
  const float* s = fake_scales();
  void* y = fake_device(0x40000);
  for (auto dequantize : {dequantize_fp8_1x128, dequantize_fp8_128x128}) {
    expect_invalid([&] { dequantize(nullptr, s, 4, 4, y, DType::bf16, 4, nullptr); }, "q");
    expect_invalid([&] { dequantize(q, nullptr, 4, 4, y, DType::bf16, 4, nullptr); }, "scales");
    expect_invalid([&] { dequantize(q, s, 4, 4, nullptr, DType::bf16, 4, nullptr); }, "y");
    expect_invalid([&] { dequantize(q, s, 4, 4, y, DType::fp16, 4, nullptr); }, "y_type");
    expect_invalid([&] { dequantize(q, s, 0, 4, y, DType::bf16, 4, nullptr); }, "rows");
    expect_invalid([&] { dequantize(q, s, 4, 4, y, DType::fp32, 3, nullptr); }, "ld");
    expect_invalid([&] { dequantize(q, s, 4, 4, fake_device(0x40002), DType::fp32, 4, nullptr); },
                   "y");
  }
}

TEST(QuantizeKernels, CompileWithNvrtc) {
  struct Kernel {
    const char* header;
    const char* name;
    int static_smem_bytes;
  };
  const Kernel kernels[] = {
      {"quant/quantize_1x128.cuh", "autogemm_quantize_fp8_1x128", 0},
      {"quant/quantize_128x128.cuh", "autogemm_quantize_fp8_128x128", 8 * 4},  // warp maxima
      {"quant/dequantize.cuh", "autogemm_dequantize_fp8", 0},
  };
  // sm_89 is the first architecture with the e4m3 conversions; sm_90a is what our GEMM targets.
  for (const char* arch : {"sm_89", "sm_90a"})
    for (const Kernel& k : kernels) {
      jit::KernelSource src;
      src.name = std::string(k.name) + "_test";
      src.source = std::string("#include \"") + k.header + "\"\n";
      src.kernel_name = k.name;
      src.arch = arch;
      const jit::CompiledKernel compiled = jit::compile_to_cubin(src);
      const std::string label = std::string(k.name) + " " + arch;
      EXPECT_FALSE(compiled.cubin.empty()) << label;
      EXPECT_EQ(compiled.lowered_name, k.name) << label;
      const jit::PtxasUsage usage = jit::parse_ptxas_usage(compiled.log);
      EXPECT_FALSE(usage.has_spills()) << label << "\n" << compiled.log;
      EXPECT_EQ(usage.static_smem_bytes, k.static_smem_bytes) << label << "\n" << compiled.log;
      if (std::string(k.name).find("dequantize") != std::string::npos) {
        EXPECT_NE(compiled.ptx.find("cvt.rn.f16x2.e4m3x2"), std::string::npos) << label;
      } else {
        // The conversion rounds to nearest even and saturates; the scale and its reciprocal are
        // IEEE divisions, x times the reciprocal an IEEE multiply (the host model in
        // test_quantize_gpu.cpp assumes all three).
        EXPECT_NE(compiled.ptx.find("cvt.rn.satfinite.e4m3x2.f32"), std::string::npos) << label;
        EXPECT_NE(compiled.ptx.find("div.rn.f32"), std::string::npos) << label;
        EXPECT_NE(compiled.ptx.find("mul.rn.f32"), std::string::npos) << label;
      }
    }
}
