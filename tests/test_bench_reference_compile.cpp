// The reference GEMM's device code compiles with NVRTC (no GPU needed), for the oldest and the
// newest architectures the bench may meet.
#include <gtest/gtest.h>

#include "jit/jit.hpp"
#include "jit/ptxas_usage.hpp"

using namespace autogemm;

namespace {

// An embedded helper kernel (extern "C" `kernel` in `header`) compiled for `arch`.
jit::CompiledKernel compile_helper(const std::string& header, const std::string& kernel,
                                   const char* arch) {
  jit::KernelSource src;
  src.name = kernel + "_test";
  src.source = "#include \"" + header + "\"\n";
  src.kernel_name = kernel;
  src.arch = arch;
  return jit::compile_to_cubin(src);
}

}  // namespace

TEST(BenchReferenceKernel, CompilesWithNvrtc) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const jit::CompiledKernel compiled =
        compile_helper("reference/reference_gemm.cuh", "autogemm_reference_gemm", arch);
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

// The hold kernel ahead of warm-L2 timing loops only waits: it reads the nanosecond timer and
// sleeps, and touches no memory.
TEST(BenchGpuHoldKernel, CompilesWithNvrtcAndOnlyWaits) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const jit::CompiledKernel compiled =
        compile_helper("bench/gpu_hold.cuh", "autogemm_gpu_hold", arch);
    EXPECT_FALSE(compiled.cubin.empty()) << arch;
    EXPECT_NE(compiled.ptx.find("%globaltimer"), std::string::npos) << compiled.ptx;
    EXPECT_NE(compiled.ptx.find("nanosleep"), std::string::npos) << compiled.ptx;
    EXPECT_EQ(compiled.ptx.find("st.global"), std::string::npos) << compiled.ptx;
    EXPECT_EQ(compiled.ptx.find("ld.global"), std::string::npos) << compiled.ptx;
  }
}

// The bench's L2 flush only reads (kernels/bench/l2_flush.cuh): 16-byte loads, and its one
// store is conditional, so no dirty lines are left for the timed call.
TEST(BenchL2FlushKernel, CompilesWithNvrtcAndOnlyReads) {
  for (const char* arch : {"sm_80", "sm_90"}) {
    const jit::CompiledKernel compiled =
        compile_helper("bench/l2_flush.cuh", "autogemm_l2_flush", arch);
    EXPECT_FALSE(compiled.cubin.empty()) << arch;
    EXPECT_NE(compiled.ptx.find("ld.global.v4.u32"), std::string::npos) << compiled.ptx;
    const std::size_t first_store = compiled.ptx.find("st.global");
    ASSERT_NE(first_store, std::string::npos);
    EXPECT_EQ(compiled.ptx.find("st.global", first_store + 1), std::string::npos) << compiled.ptx;
  }
}
