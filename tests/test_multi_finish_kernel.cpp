// Split K's finish kernel over several GPUs (kernels/multi_gpu/partial_sum_finish.cuh) compiles
// with NVRTC for the architectures the multi-GPU path runs on, with no GPU.
#include <gtest/gtest.h>

#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"

using namespace autogemm;

TEST(MultiFinishKernel, CompilesWithNvrtcAndRoundsOnce) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    jit::KernelSource src;
    src.name = "partial_sum_finish_test";
    src.source = "#include \"multi_gpu/partial_sum_finish.cuh\"\n";
    src.kernel_name = "autogemm_partial_sum_finish";
    src.arch = arch;
    const jit::CompiledKernel compiled = jit::compile_to_cubin(src);
    EXPECT_FALSE(compiled.cubin.empty()) << arch;
    EXPECT_EQ(compiled.lowered_name, "autogemm_partial_sum_finish") << arch;
    // One round to nearest even per output type: bf16 and f16 conversions from fp32.
    EXPECT_NE(compiled.ptx.find("cvt.rn.bf16x2.f32"), std::string::npos) << arch;
    EXPECT_NE(compiled.ptx.find("cvt.rn.f16x2.f32"), std::string::npos) << arch;
    EXPECT_FALSE(jit::parse_ptxas_usage(compiled.log).has_spills()) << compiled.log;
  }
}
