// parse_ptxas_usage on logs from real NVRTC compilations (and the multi-function rule).
#include <gtest/gtest.h>

#include "autogemm/errors.hpp"
#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"
#include "test_jit_util.hpp"

using namespace autogemm;

TEST(JitPtxasUsage, SmallKernelHasRegistersAndNoSpills) {
  const jit::CompiledKernel kernel = jit::compile_to_cubin(autogemm::testing::fence_kernel_source());
  const jit::PtxasUsage usage = jit::parse_ptxas_usage(kernel.log);
  EXPECT_EQ(usage.function, "fence_kernel");
  EXPECT_GT(usage.registers, 0);
  EXPECT_LE(usage.registers, 255);  // sm_90 per-thread register limit
  EXPECT_FALSE(usage.has_spills()) << kernel.log;
  EXPECT_EQ(usage.stack_frame_bytes, 0);
}

// 64 accumulators live across a loop need far more than 24 registers: ptxas must spill.
static jit::KernelSource register_hungry_kernel() {
  jit::KernelSource src;
  src.name = "test_spills";
  src.source = R"(
extern "C" __global__ void hungry(const float* in, float* out, int n) {
  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = in[i * blockDim.x + threadIdx.x];
  for (int k = 0; k < n; ++k) {
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = acc[i] * acc[(i + 7) % 64] + in[k + i];
  }
  float sum = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) sum += acc[i] * float(i + 1);
  __shared__ float staged[128];
  staged[threadIdx.x % 128] = sum;
  __syncthreads();
  out[threadIdx.x] = staged[(threadIdx.x + 1) % 128];
}
)";
  src.kernel_name = "hungry";
  src.extra_options = {"--maxrregcount=24"};
  return src;
}

TEST(JitPtxasUsage, RegisterCapForcesSpillsThatAreReported) {
  const jit::CompiledKernel kernel = jit::compile_to_cubin(register_hungry_kernel());
  const jit::PtxasUsage usage = jit::parse_ptxas_usage(kernel.log);
  EXPECT_LE(usage.registers, 24) << kernel.log;
  EXPECT_TRUE(usage.has_spills()) << kernel.log;
  EXPECT_GT(usage.spill_store_bytes, 0);
  EXPECT_GT(usage.stack_frame_bytes, 0);  // spills go to the local-memory stack frame
  EXPECT_EQ(usage.static_smem_bytes, 128 * 4) << kernel.log;  // __shared__ float[128]
}

TEST(JitPtxasUsage, SeveralFunctionsGiveTheWorstCase) {
  jit::KernelSource src = autogemm::testing::fence_kernel_source();
  src.source += R"(
extern "C" __global__ void second(const float* in, float* out) {
  __shared__ float tile[256];
  tile[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[255 - threadIdx.x];
}
)";
  const jit::CompiledKernel kernel = jit::compile_to_cubin(src);
  const auto functions = jit::parse_ptxas_functions(kernel.log);
  ASSERT_EQ(functions.size(), 2u) << kernel.log;
  const jit::PtxasUsage worst = jit::parse_ptxas_usage(kernel.log);
  EXPECT_TRUE(worst.function.empty());
  EXPECT_EQ(worst.registers, std::max(functions[0].registers, functions[1].registers));
  EXPECT_EQ(worst.static_smem_bytes, 256 * 4);
}

TEST(JitPtxasUsage, LogWithoutReportIsAnError) {
  EXPECT_THROW(jit::parse_ptxas_usage("warning: something unrelated\n"), Error);
  EXPECT_TRUE(jit::parse_ptxas_functions("").empty());
}
