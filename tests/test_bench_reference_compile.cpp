// The reference GEMM's device code compiles with NVRTC (no GPU needed), for the oldest and the
// newest architectures the bench may meet.
#include <gtest/gtest.h>

#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"

using namespace autogemm;

TEST(BenchReferenceKernel, CompilesWithNvrtc) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    jit::KernelSource src;
    src.name = "reference_gemm_test";
    src.source = "#include \"reference/reference_gemm.cuh\"\n";
    src.kernel_name = "autogemm_reference_gemm";
    src.arch = arch;
    const jit::CompiledKernel compiled = jit::compile_to_cubin(src);
    EXPECT_FALSE(compiled.cubin.empty()) << arch;
    EXPECT_EQ(compiled.lowered_name, "autogemm_reference_gemm") << arch;
    // Float64 math, no local-memory spills.
    EXPECT_NE(compiled.ptx.find("fma.rn.f64"), std::string::npos) << arch;
    const jit::PtxasUsage usage = jit::parse_ptxas_usage(compiled.log);
    EXPECT_FALSE(usage.has_spills()) << compiled.log;
    // 2 tiles of 16 x 17 doubles (reference_gemm.cuh).
    EXPECT_EQ(usage.static_smem_bytes, 2 * 16 * 17 * 8) << compiled.log;
  }
}
