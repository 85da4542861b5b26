// Driver entry points, error messages, and module loading (the load/launch test needs a GPU).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "gpu_test_util.hpp"
#include "jit/jit.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/driver.hpp"
#include "jit/module.hpp"
#include "test_jit_util.hpp"
#include "cli_test_util.hpp"
#include "autogemm/device.hpp"

using namespace autogemm;

TEST(JitDriver, ApiResolvesEveryEntryPointOrSaysWhyNot) {
  try {
    const driver::Api& api = driver::api();
    EXPECT_NE(api.cuGetErrorString, nullptr);
    EXPECT_NE(api.cuGetErrorName, nullptr);
    EXPECT_NE(api.cuModuleLoadData, nullptr);
    EXPECT_NE(api.cuModuleUnload, nullptr);
    EXPECT_NE(api.cuModuleGetFunction, nullptr);
    EXPECT_NE(api.cuFuncSetAttribute, nullptr);
    EXPECT_NE(api.cuLaunchKernelEx, nullptr);
    EXPECT_NE(api.cuTensorMapEncodeTiled, nullptr);
    EXPECT_NE(api.cuOccupancyMaxActiveClusters, nullptr);
    EXPECT_NE(api.cuOccupancyMaxPotentialClusterSize, nullptr);
    EXPECT_NE(api.cuCtxGetCurrent, nullptr);
    EXPECT_EQ(&driver::api(), &api);  // resolved once
  } catch (const NoDevice& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(std::string(kNoDriverOrGpu), 0), 0u) << what;
    // The reason names the failing call and its runtime error.
    EXPECT_NE(what.find("cudaError"), std::string::npos) << what;
    // A second call fails the same way (the failure is remembered, not retried).
    try {
      driver::api();
      ADD_FAILURE() << "api() succeeded after failing";
    } catch (const NoDevice& again) {
      EXPECT_EQ(std::string(again.what()), what);
    }
  }
}

TEST(JitDriver, CheckNamesTheCallAndTheError) {
  EXPECT_NO_THROW(driver::check(CUDA_SUCCESS, "cuNothing"));
  try {
    driver::check(CUDA_ERROR_INVALID_VALUE, "cuModuleLoadData(x)");
    FAIL() << "no error";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("cuModuleLoadData(x): ", 0), 0u) << what;
    // The driver supplies the name when there is one; otherwise the number is given.
    const bool has_driver = [] {
      try { driver::api(); return true; } catch (const NoDevice&) { return false; }
    }();
    EXPECT_NE(what.find(has_driver ? "CUDA_ERROR_INVALID_VALUE" : "CUresult 1"),
              std::string::npos) << what;
  }
}

TEST(JitDriver, CudaCheckNamesTheCallAndTheError) {
  EXPECT_NO_THROW(cuda_check(cudaSuccess, "cudaNothing"));
  try {
    cuda_check(cudaErrorInvalidValue, "cudaMemcpy(d, h)");
    FAIL() << "no error";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what, std::string("cudaMemcpy(d, h): cudaErrorInvalidValue: ") +
                        cudaGetErrorString(cudaErrorInvalidValue));
  }
}

// No driver or no GPU reads as that, from the runtime and the driver API alike: the runtime
// calls a missing driver cudaErrorInsufficientDriver, "CUDA driver version is insufficient for
// CUDA runtime version", which asked users to upgrade a driver they did not have.
TEST(JitDriver, NoDriverOrGpuIsSaidSo) {
  EXPECT_EQ(cuda_error_text(cudaErrorNoDevice, "cudaSetDevice"),
            std::string(kNoDriverOrGpu) + " (cudaSetDevice: cudaErrorNoDevice)");
  EXPECT_THROW(cuda_check(cudaErrorNoDevice, "cudaSetDevice"), NoDevice);
  int driver = 0;
  const bool driver_loaded = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  const std::string insufficient = cuda_error_text(cudaErrorInsufficientDriver, "cudaFree(0)");
  EXPECT_EQ(insufficient.rfind(std::string(kNoDriverOrGpu), 0) == 0, !driver_loaded)
      << insufficient;
  EXPECT_EQ(insufficient.find("insufficient"), std::string::npos) << insufficient;
  for (const CUresult r : {CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NOT_INITIALIZED}) {
    try {
      driver::check(r, "cuCtxGetCurrent");
      ADD_FAILURE() << "no error for CUresult " << int(r);
    } catch (const NoDevice& e) {
      EXPECT_EQ(std::string(e.what()).rfind(std::string(kNoDriverOrGpu), 0), 0u) << e.what();
    }
  }
}

// Every command that looks for a GPU and finds none says so in those words.
TEST(JitDriver, CommandsWithoutAGpuNeverAskForANewerDriver) {
  for (const char* args : {"profile", "kernels", "plan --m 64 --n 64 --k 64",
                           "bench --m 64 --n 64 --k 64", "plan --m 64 --n 64 --k 64 --device 0",
                           "advise --model llama-3-8b"}) {
    const auto run = autogemm::testing::run_cli(args);
    EXPECT_EQ(run.out.find("insufficient"), std::string::npos) << args << "\n" << run.out;
    if (profile_gpus().gpus.empty())
      EXPECT_NE(run.out.find(std::string(kNoDriverOrGpu)), std::string::npos)
          << args << "\n" << run.out;
  }
}

TEST(JitDriver, LoadKernelRejectsAnEmptyCubin) {
  jit::CompiledKernel empty;
  empty.lowered_name = "k";
  EXPECT_THROW(jit::load_kernel(empty), InvalidArgument);
}

TEST(JitDriver, LoadsOnceAndLaunchesACompiledKernel) {
  AUTOGEMM_REQUIRE_GPU();
  const auto compiled = jit::get_or_compile(autogemm::testing::fence_kernel_source("launch"));
  const auto loaded = jit::load_kernel(*compiled);
  ASSERT_NE(loaded->function, nullptr);
  EXPECT_EQ(jit::load_kernel(*compiled), loaded);  // once per device and key

  constexpr int kThreads = 128;  // one warpgroup, as wgmma.fence expects
  int* device_out = nullptr;
  cuda_check(cudaMalloc(reinterpret_cast<void**>(&device_out), kThreads * sizeof(int)),
             "cudaMalloc");
  void* args[] = {&device_out};
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = kThreads;
  config.blockDimY = config.blockDimZ = 1;
  driver::check(driver::api().cuLaunchKernelEx(&config, loaded->function, args, nullptr),
                "cuLaunchKernelEx");
  std::vector<int> host(kThreads);
  cuda_check(cudaMemcpy(host.data(), device_out, kThreads * sizeof(int), cudaMemcpyDeviceToHost),
             "cudaMemcpy");
  cuda_check(cudaFree(device_out), "cudaFree");
  for (int t = 0; t < kThreads; ++t) ASSERT_EQ(host[t], t * 3 + 1) << "thread " << t;
}
