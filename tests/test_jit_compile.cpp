// compile_to_cubin with NVRTC (no GPU needed): exact arch, embedded headers, errors, options.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "autogemm/errors.hpp"
#include "jit/jit.hpp"
#include "jit/nvrtc_options.hpp"
#include "jit/ptxas_usage.hpp"
#include "kernels/sm90/gemm_layout.cuh"
#include "test_jit_util.hpp"

using namespace autogemm;

TEST(JitCompile, WgmmaFenceCompilesForSm90a) {
  const jit::KernelSource src = autogemm::testing::fence_kernel_source();
  const jit::CompiledKernel kernel = jit::compile_to_cubin(src);
  EXPECT_NE(kernel.ptx.find("wgmma.fence.sync.aligned"), std::string::npos) << kernel.ptx;
  EXPECT_NE(kernel.ptx.find(".target sm_90a"), std::string::npos);
  ASSERT_GE(kernel.cubin.size(), 4u);
  EXPECT_TRUE(std::equal(kernel.cubin.begin(), kernel.cubin.begin() + 4, "\x7f" "ELF"));
  EXPECT_EQ(kernel.lowered_name, "fence_kernel");  // extern "C": not mangled
  EXPECT_GT(kernel.compile_ms, 0.0);
  EXPECT_FALSE(kernel.from_disk_cache);
  EXPECT_EQ(kernel.cache_key, jit::cache_key(src));
  // --ptxas-options=-v puts the resource report in the log.
  EXPECT_NE(kernel.log.find("Used "), std::string::npos) << kernel.log;
}

TEST(JitCompile, EmbeddedHeaderResolvesByNameAndAgreesWithHost) {
  // The host computes the layout with the same header; the device static_asserts the value,
  // so this fails if the header does not resolve or if host and NVRTC disagree.
  constexpr auto host = sm90::make_smem_layout(128, 256, 64, 4, 2, 2, 256, 0);
  jit::KernelSource src;
  src.name = "test_layout";
  src.source = R"(
#include "sm90/gemm_layout.cuh"
namespace autogemm_test {
template <int kStages>
__global__ void layout_kernel(int* out) {
  constexpr auto layout = autogemm::sm90::make_smem_layout(128, 256, 64, kStages, 2, 2, 256, 0);
  static_assert(layout.total_bytes == EXPECTED_TOTAL_BYTES, "host and device layouts differ");
  out[0] = layout.total_bytes;
}
}  // namespace autogemm_test
)";
  src.kernel_name = "autogemm_test::layout_kernel<4>";
  src.extra_options = {"-DEXPECTED_TOTAL_BYTES=" + std::to_string(host.total_bytes)};
  const jit::CompiledKernel kernel = jit::compile_to_cubin(src);
  EXPECT_FALSE(kernel.cubin.empty());
  // A template instance gets its Itanium-mangled name, which the module lookup needs.
  EXPECT_EQ(kernel.lowered_name.rfind("_Z", 0), 0u) << kernel.lowered_name;
  EXPECT_NE(kernel.lowered_name.find("layout_kernel"), std::string::npos);

  // And a wrong expectation really fails (the static_assert is live).
  src.extra_options = {"-DEXPECTED_TOTAL_BYTES=" + std::to_string(host.total_bytes + 8)};
  EXPECT_THROW(jit::compile_to_cubin(src), CudaError);
}

TEST(JitCompile, CompileErrorThrowsCudaErrorWithTheNvrtcLog) {
  jit::KernelSource src = autogemm::testing::fence_kernel_source();
  src.source += "__global__ void broken() { int x = undeclared_identifier_xyz; }\n";
  try {
    jit::compile_to_cubin(src);
    FAIL() << "no error for a source that does not compile";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NVRTC_ERROR_COMPILATION"), std::string::npos) << what;
    EXPECT_NE(what.find("undeclared_identifier_xyz"), std::string::npos) << what;
    EXPECT_NE(what.find(src.name), std::string::npos) << what;
  }
}

TEST(JitCompile, UnknownKernelNameIsACompileError) {
  jit::KernelSource src = autogemm::testing::fence_kernel_source();
  src.kernel_name = "no_such_kernel";
  try {
    jit::compile_to_cubin(src);
    FAIL() << "no error for a name expression that names nothing";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
  }
}

TEST(JitCompile, RejectsVirtualArchAndEmptyKernelName) {
  jit::KernelSource src = autogemm::testing::fence_kernel_source();
  src.arch = "compute_90a";
  try {
    jit::compile_to_cubin(src);
    FAIL() << "no error for a virtual architecture";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "arch");
    EXPECT_EQ(e.value(), "compute_90a");
  }
  src = autogemm::testing::fence_kernel_source();
  src.kernel_name.clear();
  EXPECT_THROW(jit::compile_to_cubin(src), InvalidArgument);
}

TEST(JitCompile, WgmmaNeedsTheArchSpecificTarget) {
  // sm_90 (without "a") lacks wgmma: proves the arch option reaches ptxas unchanged.
  jit::KernelSource src = autogemm::testing::fence_kernel_source();
  src.arch = "sm_90";
  EXPECT_THROW(jit::compile_to_cubin(src), CudaError);
}

TEST(JitCompile, OptionsAreExactArchCxx20VerbosePtxasNoFastMath) {
  jit::KernelSource src = autogemm::testing::fence_kernel_source();
  src.extra_options = {"-DAUTOGEMM_DEBUG=1"};
  const auto options = jit::nvrtc_options(src);
  auto has = [&](const std::string& o) {
    return std::find(options.begin(), options.end(), o) != options.end();
  };
  EXPECT_TRUE(has("--gpu-architecture=sm_90a"));
  EXPECT_TRUE(has("-std=c++20"));
  EXPECT_TRUE(has("--ptxas-options=-v"));
  EXPECT_TRUE(has("-default-device"));
  EXPECT_TRUE(has("-lineinfo"));
  EXPECT_FALSE(has("--use_fast_math"));
  EXPECT_EQ(options.back(), "-DAUTOGEMM_DEBUG=1");  // user options last: they can override
  EXPECT_TRUE(std::any_of(options.begin(), options.end(),
                          [](const std::string& o) { return o.rfind("-I", 0) == 0; }))
      << "no CUDA include directory found";
}
