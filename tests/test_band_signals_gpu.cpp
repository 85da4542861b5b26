// GPU tests of row-band signals (GemmProblem::signal_bands; skipped without a Hopper GPU): the
// GEMM is checked against the float64 reference (poisoned D, guard rows, padded leading
// dimensions) while the kernel walks its bands and raises their flags; after each of two calls
// every flag is 1 and every counter back to 0; a second stream that waits for band 0's flag
// (cuStreamWaitValue32, as the tensor-parallel copies do) copies that band's finished rows while
// the GEMM runs on. C gated by band flags (GemmOperands::c_band_flags): the kernel starts while C
// is poison and each band's rows of C arrive later, flagged by another stream. Bad band
// arguments are refused naming the argument, before any launch.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "autogemm/gemm.hpp"
#include "bench/tensors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/driver.hpp"
#include "error_test_util.hpp"
#include "gpu_gemm_util.hpp"
#include "gpu_test_util.hpp"
#include "plan_test_util.hpp"

using namespace autogemm;

namespace {

std::vector<uint32_t> download_words(const bench::DeviceBuffer& b, std::size_t words) {
  std::vector<uint32_t> out(words);
  cuda_check(cudaMemcpy(out.data(), b.get(), words * 4, cudaMemcpyDeviceToHost), "cudaMemcpy(words)");
  return out;
}

// The GEMM through `config` with `ends` as its bands, called twice on the same operands.
void expect_signalled(int64_t m, int64_t n, int64_t k, const char* config,
                      const std::vector<int64_t>& ends, float beta) {
  GemmProblem p = autogemm::testing::problem(m, n, k);
  p.signal_bands = int(ends.size());
  const std::size_t bands = ends.size();
  bench::DeviceBuffer counters(bands * 4), flags(bands * 4);
  cuda_check(cudaMemset(counters.get(), 0, bands * 4), "cudaMemset(counters)");
  GemmOptions options;
  options.config = GemmConfig::parse(config);
  const auto check = autogemm::testing::run_call_and_check(
      p, 0.5f, beta, 7, true, nullptr,
      [&](const GemmProblem& q, const GemmOperands& ops_in, cudaStream_t s) {
        GemmOperands ops = ops_in;
        ops.band_ends = ends.data();
        ops.band_counters = static_cast<uint32_t*>(counters.get());
        ops.band_flags = static_cast<uint32_t*>(flags.get());
        GemmReport r;
        for (int call = 0; call < 2; ++call) {
          cuda_check(cudaMemset(flags.get(), 0, bands * 4), "cudaMemset(flags)");
          r = gemm(q, ops, s, options);
          cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(band signals)");
          EXPECT_EQ(download_words(flags, bands), std::vector<uint32_t>(bands, 1u))
              << config << " call " << call << ": every band's flag raised";
          EXPECT_EQ(download_words(counters, bands), std::vector<uint32_t>(bands, 0u))
              << config << " call " << call << ": every counter left at 0";
        }
        return r;
      });
  EXPECT_FALSE(check.used_vendor);
  AUTOGEMM_EXPECT_GEMM_OK(check, config << " " << m << "x" << n << "x" << k << " beta " << beta);
}

}  // namespace

TEST(BandSignalsGpu, EveryBandFlaggedAndTheResultExact) {
  AUTOGEMM_REQUIRE_GPU();
  // 2 x 1 clusters: bands of whole 256-row cluster tiles, a thin last one; one band; N with a
  // tile tail (1000 = 3 x 256 + 232); 1 x 2 clusters over 15 tiles along N (a partner past the
  // edge stores nothing and counts nothing).
  expect_signalled(1536, 1000, 1024, "128x256x64 s3 c2 p g8 cl2x1/b", {512, 1024, 1280, 1536}, 0.0f);
  expect_signalled(1536, 4096, 512, "128x256x64 s3 c2 p g8 cl2x1/b", {1536}, 1.0f);
  expect_signalled(1024, 1904, 704, "128x128x64 s4 c2 p g8 cl1x2/a", {128, 256, 1024}, 1.0f);
  // No cluster: 128-row bands; ping-pong consumers (one store per tile); eight bands.
  expect_signalled(1024, 3000, 512, "128x224x64 s3 c2 p g8", {384, 768, 896, 1024}, 1.0f);
  expect_signalled(1024, 3000, 512, "128x128x64 s4 c2 p g8 pp",
                   {128, 256, 384, 512, 640, 768, 896, 1024}, 0.0f);
}

TEST(BandSignalsGpu, AStreamWaitingForABandCopiesItsFinishedRows) {
  AUTOGEMM_REQUIRE_GPU();
  const int64_t m = 2048, n = 8192, k = 4096;
  GemmProblem p = autogemm::testing::problem(m, n, k);
  p.signal_bands = 2;
  const std::vector<int64_t> ends = {256, 2048};
  bench::DeviceBuffer a(std::size_t(m * k * 2)), b(std::size_t(n * k * 2)), d(std::size_t(m * n * 2));
  bench::DeviceBuffer copy(std::size_t(256 * n * 2)), words(4 * 4);
  bench::fill_random(a.get(), std::size_t(m * k), DType::bf16, 3);
  bench::fill_random(b.get(), std::size_t(n * k), DType::bf16, 4);
  cuda_check(cudaMemset(words.get(), 0, 16), "cudaMemset(words)");
  auto* counters = static_cast<uint32_t*>(words.get());
  uint32_t* flags = counters + 2;
  GemmOperands ops;
  ops.a = a.get(), ops.b = b.get(), ops.d = d.get();
  ops.band_ends = ends.data(), ops.band_counters = counters, ops.band_flags = flags;
  GemmOptions options;
  options.config = GemmConfig::parse("128x256x64 s3 c2 p g8 cl2x1/b");
  cudaStream_t gemm_stream = nullptr, copy_stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&gemm_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const driver::Api& api = driver::api();
  // Once first, so that the kernel is loaded before a stream waits on a flag: loading a module
  // can wait for the whole GPU to go idle (CUDA's lazy loading), which a waiting stream never
  // does (tp_exec.cpp prepares every kernel before it enqueues anything, for the same reason).
  gemm(p, ops, gemm_stream, options);
  cuda_check(cudaStreamSynchronize(gemm_stream), "sync");
  cuda_check(cudaMemset(flags, 0, 8), "clear the flags");
  for (int call = 0; call < 3; ++call) {
    cuda_check(cudaMemsetAsync(d.get(), 0xff, std::size_t(m * n * 2), gemm_stream), "poison D");
    cuda_check(cudaMemsetAsync(copy.get(), 0, std::size_t(256 * n * 2), gemm_stream), "clear");
    cuda_check(cudaStreamSynchronize(gemm_stream), "sync");
    driver::check(api.cuStreamWaitValue32(copy_stream, CUdeviceptr(flags), 1, CU_STREAM_WAIT_VALUE_EQ),
                  "cuStreamWaitValue32");
    driver::check(api.cuStreamWriteValue32(copy_stream, CUdeviceptr(flags), 0, CU_STREAM_WRITE_VALUE_DEFAULT),
                  "cuStreamWriteValue32");
    cuda_check(cudaMemcpyAsync(copy.get(), d.get(), std::size_t(256 * n * 2), cudaMemcpyDeviceToDevice,
                               copy_stream), "copy band 0");
    gemm(p, ops, gemm_stream, options);
    cuda_check(cudaStreamSynchronize(copy_stream), "sync copy");
    cuda_check(cudaStreamSynchronize(gemm_stream), "sync gemm");
    std::vector<uint16_t> got(std::size_t(256 * n)), want(std::size_t(256 * n));
    cuda_check(cudaMemcpy(got.data(), copy.get(), got.size() * 2, cudaMemcpyDeviceToHost), "down");
    cuda_check(cudaMemcpy(want.data(), d.get(), want.size() * 2, cudaMemcpyDeviceToHost), "down");
    EXPECT_EQ(got, want) << "call " << call << ": band 0 copied after its flag, as D holds it";
    std::vector<uint32_t> w(4);
    cuda_check(cudaMemcpy(w.data(), words.get(), 16, cudaMemcpyDeviceToHost), "down");
    EXPECT_EQ(w, (std::vector<uint32_t>{0, 0, 0, 1})) << "counters 0, band 0's flag taken, band 1's up";
    cuda_check(cudaMemset(flags + 1, 0, 4), "take band 1's flag");
  }
  cudaStreamDestroy(gemm_stream);
  cudaStreamDestroy(copy_stream);
}

// The kernel is enqueued while its C holds NaN poison and every band's flag is 0; the host waits
// 20 ms (the kernel spins on band 0's flag), then another stream copies C's bands in from the
// host, last band first, raising each band's flag after its copy (cuStreamWriteValue32, as
// tp_exec.cpp's peers do after their peer copies). D must match the reference with the real C: a C load that did not wait for its band
// would read the poison.
void expect_c_gated(int64_t m, int64_t n, int64_t k, const char* config,
                    const std::vector<int64_t>& ends) {
  GemmProblem p = autogemm::testing::problem(m, n, k);
  p.signal_bands = int(ends.size());
  const std::size_t bands = ends.size();
  bench::DeviceBuffer words(3 * bands * 4);
  auto* counters = static_cast<uint32_t*>(words.get());
  uint32_t* flags = counters + bands;
  uint32_t* c_flags = flags + bands;
  GemmOptions options;
  options.config = GemmConfig::parse(config);
  cudaStream_t copy_stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  const driver::Api& api = driver::api();
  const auto check = autogemm::testing::run_call_and_check(
      p, 0.5f, 1.0f, 11, false, nullptr,
      [&](const GemmProblem& q, const GemmOperands& ops_in, cudaStream_t s) {
        const int64_t ldc = q.ldc_or_packed(), row_bytes = ldc * 2;
        bench::DeviceBuffer late_c(std::size_t(q.m * row_bytes));
        // C's bands come from pinned host memory: a copy engine moves them. (A copy inside the
        // GPU may run as a kernel, which would wait for SMs the spinning GEMM holds.)
        void* host_c = nullptr;
        cuda_check(cudaMallocHost(&host_c, std::size_t(q.m * row_bytes)), "cudaMallocHost(C)");
        cuda_check(cudaMemcpy(host_c, ops_in.c, std::size_t(q.m * row_bytes), cudaMemcpyDeviceToHost),
                   "C to the host");
        GemmOperands ops = ops_in;
        ops.c = late_c.get();
        ops.band_ends = ends.data();
        ops.band_counters = counters;
        ops.band_flags = flags;
        ops.c_band_flags = c_flags;
        // Loaded once first (a module load can wait for the GPU to go idle, which a spinning
        // kernel never lets it), with C in place and its flags up.
        cuda_check(cudaMemset(words.get(), 0, 3 * bands * 4), "cudaMemset(words)");
        std::vector<uint32_t> ones(bands, 1u);
        cuda_check(cudaMemcpy(c_flags, ones.data(), bands * 4, cudaMemcpyHostToDevice), "flags up");
        gemm(q, ops, s, options);
        cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(first call)");
        cuda_check(cudaMemset(words.get(), 0, 3 * bands * 4), "cudaMemset(words)");
        bench::fill_poison(late_c.get(), std::size_t(q.m * ldc), q.d_type);
        cuda_check(cudaDeviceSynchronize(), "poison C");
        const GemmReport r = gemm(q, ops, s, options);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        for (std::size_t b = bands; b-- > 0;) {
          const int64_t begin = b > 0 ? ends[b - 1] : 0;
          cuda_check(cudaMemcpyAsync(static_cast<char*>(late_c.get()) + begin * row_bytes,
                                     static_cast<const char*>(host_c) + begin * row_bytes,
                                     std::size_t((ends[b] - begin) * row_bytes),
                                     cudaMemcpyHostToDevice, copy_stream),
                     "copy C's band");
          driver::check(api.cuStreamWriteValue32(copy_stream, CUdeviceptr(c_flags + b), 1,
                                                 CU_STREAM_WRITE_VALUE_DEFAULT),
                        "cuStreamWriteValue32(C's band flag)");
        }
        cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize(gated call)");
        cudaFreeHost(host_c);
        EXPECT_EQ(download_words(words, 3 * bands),
                  [&] {
                    std::vector<uint32_t> want(3 * bands, 1u);
                    std::fill(want.begin(), want.begin() + std::ptrdiff_t(bands), 0u);
                    return want;
                  }())
            << config << ": counters 0, every band flagged, C's flags left as they were set";
        return r;
      });
  cudaStreamDestroy(copy_stream);
  EXPECT_FALSE(check.used_vendor);
  AUTOGEMM_EXPECT_GEMM_OK(check, config << " " << m << "x" << n << "x" << k << " C gated");
}

TEST(BandSignalsGpu, CGatedByBandFlagsIsReadOnlyOnceItsBandArrives) {
  AUTOGEMM_REQUIRE_GPU();
  // C loaded ahead under the k-loop (two consumers, 2 x 1 clusters); one consumer a tile
  // (ping-pong). (FP8 block-scaled inputs load C in the epilogue instead: the tensor-parallel
  // tests' FP8 rings run that path.)
  expect_c_gated(2048, 4096, 1024, "128x256x64 s3 c2 p g8 cl2x1/b", {512, 1536, 1792, 2048});
  expect_c_gated(1024, 3000, 512, "128x128x64 s4 c2 p g8 pp", {128, 640, 1024});
}

TEST(BandSignalsGpu, BadBandsAreRefusedNamingTheArgument) {
  AUTOGEMM_REQUIRE_GPU();
  GemmProblem p = autogemm::testing::problem(1024, 1024, 256);
  p.signal_bands = 2;
  bench::DeviceBuffer a(1024 * 256 * 2), b(1024 * 256 * 2), d(1024 * 1024 * 2), words(16);
  GemmOperands ops;
  ops.a = a.get(), ops.b = b.get(), ops.d = d.get();
  ops.band_counters = static_cast<uint32_t*>(words.get());
  ops.band_flags = ops.band_counters + 2;
  GemmOptions options;
  options.config = GemmConfig::parse("128x256x64 s3 c2 p g8 cl2x1/b");
  auto call = [&] { gemm(p, ops, nullptr, options); };
  using autogemm::testing::expect_invalid;
  expect_invalid(call, "band_ends");  // null
  const std::vector<int64_t> not_whole = {384, 1024}, short_of_m = {256, 768}, backwards = {512, 256};
  ops.band_ends = not_whole.data();
  EXPECT_NE(expect_invalid(call, "band_ends[0]").find("256 rows"), std::string::npos);
  ops.band_ends = short_of_m.data();
  expect_invalid(call, "band_ends[1]");
  ops.band_ends = backwards.data();
  expect_invalid(call, "band_ends[1]");
  const std::vector<int64_t> good = {256, 1024};
  ops.band_ends = good.data();
  ops.c_band_flags = ops.band_counters;
  expect_invalid(call, "c_band_flags");  // beta = 0: no C to gate
  ops.c_band_flags = nullptr;
  p.signal_bands = 0;
  expect_invalid(call, "band_ends");  // pointers without bands
  p.signal_bands = 17;
  expect_invalid(call, "signal_bands");
}
